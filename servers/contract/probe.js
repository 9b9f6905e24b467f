'use strict';
// What the harness asks a server (../contract.js): who it is (/__whoami), its event-loop utilisation over the
// measured window (/__elu/start, /__elu/stop, /__elu/sample) and its memory over that window.
const { performance } = require('node:perf_hooks');
const { dbBusy } = require('./pool.js');

// With NODEBENCH_PROBE=hook, how long /__elu/stop waits for the window's requests still in flight
// before it gives up and says so (the harness then fails the run rather than report a short count).
const DRAIN_TIMEOUT_MS = Number(process.env.NODEBENCH_DRAIN_TIMEOUT_MS || 2000);

// /__whoami, /__elu/* and anything else under /__ is the harness talking to the server,
// never a request of the workload: no probe is ever counted or waited for.
const isProbe = (url) => url.startsWith('/__');

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

// Memory over the ELU window: process.memoryUsage() (RSS from /proc/self/stat, through libuv; the V8 heap from V8)
// sampled every MEMORY_SAMPLE_MS and at both ends, its highest figures kept. A sample costs about 10 us of the
// event loop, 10 a second: 0.01 % of its time. The kernel's own high-water mark (VmHWM) covers the process's
// whole life, boot and warm-up included; resetting it takes a write to /proc/self/clear_refs, which a server
// under test is better without.
const MEMORY_SAMPLE_MS = 100;

// The highest memoryUsage() figures from now until stop(): {rss_peak_bytes, heap_*_peak_bytes, ...}.
function memoryPeaks() {
  const peak = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, samples: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    peak.samples += 1;
    if (m.rss > peak.rss) peak.rss = m.rss;
    if (m.heapUsed > peak.heapUsed) peak.heapUsed = m.heapUsed;
    if (m.heapTotal > peak.heapTotal) peak.heapTotal = m.heapTotal;
    if (m.external > peak.external) peak.external = m.external;
  };
  sample();
  const timer = setInterval(sample, MEMORY_SAMPLE_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      return {
        rss_peak_bytes: peak.rss,
        heap_used_peak_bytes: peak.heapUsed,
        heap_total_peak_bytes: peak.heapTotal,
        external_peak_bytes: peak.external,
        memory_samples: peak.samples,
      };
    },
  };
}

// How the window's requests are counted, from NODEBENCH_PROBE:
//   unset   (the pipeline) nothing is added to any request: the window's count is the load generator's, whose
//           run lies wholly inside the window (the harness opens it before the client starts and closes it after
//           the client exits), so /__elu/stop and /__elu/sample give no request counts (null). A per-request hook
//           cost the cheapest server about 2 % of its CPU per request (docs/performance.md, "The per-request hook,
//           again"), above the instrument's budget; no listener costs nothing.
//   'hook'  the previous instrument, kept so its cost can still be measured (tests/benchmarks/precision.py): a
//           listener prepended to every request, a 'close' listener and a symbol on every response, the server's
//           own count of its window's completed responses by status, and a drain at /__elu/stop.
const PROBE_MODES = ['', 'hook'];
const PROBE_MODE = process.env.NODEBENCH_PROBE || '';
if (!PROBE_MODES.includes(PROBE_MODE)) {
  console.error(`NODEBENCH_PROBE must be unset or 'hook', got ${JSON.stringify(PROBE_MODE)}`);
  process.exit(2);
}
const HOOKED = PROBE_MODE === 'hook';

// The window a response belongs to (null: none), set when its request arrives (hook only).
const kWindow = Symbol('nodebench.window');
const SETTLED = Symbol('nodebench.settled');

// Identity, the ELU window and the cumulative sample. The window also carries process
// CPU over the same interval, which counts GC and thread-pool work that ELU does not.
//
// By default the window touches no request: /__elu/stop reads ELU, CPU and memory at once and gives
// no count (the harness divides by the load generator's). With NODEBENCH_PROBE=hook a request counts
// when its response has been sent (finished: handed to the kernel), and only if it arrived while the
// window was open; one whose connection closed first is `aborted`. /__elu/stop then stops admitting
// requests to the window, waits (at most DRAIN_TIMEOUT_MS) until the window's requests in flight have
// finished, and only then reads ELU, CPU and the count, so the window holds the whole work of what it counts.
function makeProbe(name, framework, frameworkVersion) {
  let window = null;
  // Since the server started, for /__elu/sample (hook only): finished responses and requests in flight
  // (probes excluded); the sample also says how many queries are still at the database (db_busy).
  let completed = 0;
  let inFlight = 0;
  // One listener per response, shared (no closure per request): the probe must cost the measured
  // requests as little as it can. A response emits 'close' once, after 'finish' when it was sent,
  // or when its connection went away first; writableFinished tells the two apart.
  function onResponseClose() {
    const w = this[kWindow];
    if (w === SETTLED) return;
    this[kWindow] = SETTLED;
    const finished = this.writableFinished;
    inFlight -= 1;
    if (finished) completed += 1;
    if (w === null) return;
    w.inFlight -= 1;
    if (finished) {
      w.requests += 1;
      const code = this.statusCode;
      w.statuses[code] = (w.statuses[code] || 0) + 1;
    } else w.aborted += 1;
    if (w.inFlight === 0 && w.onDrained !== null) w.onDrained();
  }
  // Without the hook the window waits for nothing: nothing it could wait for is known.
  async function drain(w) {
    if (!HOOKED || w.inFlight === 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        w.onDrained = null;
        resolve(false);
      }, DRAIN_TIMEOUT_MS);
      w.onDrained = () => {
        w.onDrained = null;
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
  return {
    hooked: HOOKED,
    // Listens (first) to the node:http server's 'request' event, which every framework here sits on.
    onRequest(req, res) {
      if (isProbe(req.url)) return;
      inFlight += 1;
      const w = window !== null && window.open ? window : null;
      if (w !== null) w.inFlight += 1;
      res[kWindow] = w;
      res.on('close', onResponseClose);
    },
    whoami() {
      return { name, framework, framework_version: frameworkVersion, node_version: process.version, pid: process.pid };
    },
    eluStart() {
      if (window !== null) window.memory.stop();
      window = {
        open: true,
        elu: performance.eventLoopUtilization(),
        cpu: process.cpuUsage(),
        ru: process.resourceUsage(),
        memory: memoryPeaks(),
        t0: process.hrtime.bigint(),
        requests: 0,
        // Completed responses by status code: the harness checks each is the scenario's.
        statuses: {},
        aborted: 0,
        inFlight: 0,
        onDrained: null,
      };
      return { ok: true };
    },
    async eluStop() {
      const w = window;
      if (w === null || !w.open) return { status: 409, body: { error: '/__elu/start was not called' } };
      w.open = false;
      const inFlightAtStop = w.inFlight;
      const drainStart = process.hrtime.bigint();
      const drained = await drain(w);
      const t1 = process.hrtime.bigint();
      const elu = performance.eventLoopUtilization(w.elu);
      const cpu = process.cpuUsage(w.cpu);
      const ru = process.resourceUsage();
      const memory = w.memory.stop();
      if (window === w) window = null;
      // The server's own count, only where the hook kept one (null: the load generator's count is the window's).
      const counted = (value) => (HOOKED ? value : null);
      return {
        status: 200,
        body: {
          idle_ms: elu.idle,
          active_ms: elu.active,
          utilization: elu.utilization,
          cpu_user_us: cpu.user,
          cpu_system_us: cpu.system,
          wall_ms: Number(t1 - w.t0) / 1e6,
          // Monotonic clock (CLOCK_MONOTONIC, the one Python's time.monotonic reads) at the window's two ends.
          mono_start_ms: Number(w.t0) / 1e6,
          mono_stop_ms: Number(t1) / 1e6,
          requests: counted(w.requests),
          statuses: counted(w.statuses),
          aborted: counted(w.aborted),
          in_flight_at_stop: counted(inFlightAtStop),
          drain_ms: counted(Number(t1 - drainStart) / 1e6),
          drained: counted(drained),
          in_flight_after_drain: counted(w.inFlight),
          invol_csw: ru.involuntaryContextSwitches - w.ru.involuntaryContextSwitches,
          vol_csw: ru.voluntaryContextSwitches - w.ru.voluntaryContextSwitches,
          ...memory,
        },
      };
    },
    // Cumulative counters since the server started; reads only, so it never disturbs a window.
    // completed and in_flight need the hook (null without it); db_busy reads the pools and needs none.
    sample() {
      const elu = performance.eventLoopUtilization();
      const cpu = process.cpuUsage();
      return {
        t_ms: nowMs(),
        elu_active_ms: elu.active,
        elu_idle_ms: elu.idle,
        cpu_user_us: cpu.user,
        cpu_system_us: cpu.system,
        completed: HOOKED ? completed : null,
        in_flight: HOOKED ? inFlight : null,
        db_busy: dbBusy(),
      };
    },
  };
}

// An installed package's version, also for packages whose "exports" hide package.json (hono).
function packageVersion(name) {
  const fs = require('node:fs');
  const path = require('node:path');
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (pkg.name === name) return pkg.version;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`cannot find the package.json of ${name}`);
    dir = up;
  }
}

module.exports = { DRAIN_TIMEOUT_MS, isProbe, makeProbe, packageVersion };

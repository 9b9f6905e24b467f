'use strict';
// Open-loop HTTP load client (the wrk2 design): requests go out on a fixed schedule,
// whatever the server is doing, and each latency is counted from the request's
// SCHEDULED send time to the end of its response, so a stall of the server shows
// in the percentiles instead of hiding in fewer requests (coordinated omission).
// Node.js built-ins only. See docs/openloop.md.
//
//   node servers/loadgen/openloop.js --url http://127.0.0.1:PORT/path --rate R --duration S
//        [--warmup W] [--arrivals constant|poisson] [--seed N] [--connections MAX]
//        [--grace G] [--max-lag-p99-ms L] [--sleep | --nap] [--driver] [--dry-schedule K]
//
//   --url URL          http:// only, and only a loopback host (127.0.0.0/8, ::1, localhost);
//                      anything else is refused (exit 2).
//   --rate R           target arrival rate, requests per second (> 0).
//   --duration S       the measured window, seconds (> 0).
//   --warmup W         seconds of load sent before the window (default 3), at the same rate; its
//                      answers are awaited (at most --grace) and discarded, then the window's
//                      schedule starts afresh on the same connections. The client's
//                      own JIT needs it: after 1 s its sends at 1000 req/s were late by 2.5-2.9 ms
//                      at p99 (V8 compiling and tiering up), after 3 s by 0.2-0.5 ms
//                      (two runs each, 2026-12-03).
//   --arrivals MODE    constant (default): one request every 1/R s; poisson: exponential
//                      gaps of mean 1/R s from a seeded PRNG (mulberry32), so the stream
//                      is reproducible.
//   --seed N           the PRNG seed, a 32-bit unsigned integer (default 1).
//   --connections MAX  keep-alive connections: the pool opens them as needed, up to MAX
//                      (default 256). A request due while all MAX are busy waits, in order,
//                      for a free one; its latency still counts from its scheduled time
//                      (queued_max in the output: the most that waited at once).
//   --grace G          seconds after the window's end for the last responses (default 2);
//                      a window request still unanswered then counts as an error (a timeout).
//   --max-lag-p99-ms L refusal threshold on the client's own lateness, its schedule lag p99 (default 1;
//                      0: none).
//   --max-client-effect F  refusal threshold on how far the client's lateness moved a reported
//                      percentile: refused when p50, p90, p99 or p99.9 exceeds the same percentile of
//                      the latencies net of the client's lateness by more than F of itself and more than
//                      0.1 ms (default 0: none). The pipeline uses --max-lag-p99-ms 0 --max-client-effect 0.1.
//   --sleep            let the scheduler sleep (setTimeout) between sends that are more than
//                      3 ms apart, instead of spinning its CPU at 100% for the whole run (the
//                      default). Cheaper, but on a virtual machine a response that arrives
//                      while the CPU sleeps pays its wake-up (about 0.3 ms here) in its latency.
//   --nap              sleep between sends whatever their gap, woken --nap-lead-ms before each by a
//                      timer thread (Atomics.wait: a futex, whose timeout is not rounded to the
//                      millisecond as libuv's timers are), and busy (setImmediate turns that poll I/O)
//                      only that last stretch. Responses still wake the loop at once (it sleeps in
//                      epoll). For a client that shares its CPU with the database: the CPU is free
//                      for it between sends.
//   --nap-lead-ms D    with --nap, how long before a send the timer thread wakes the loop (default 0.15).
//   --driver           speak the harness's protocol on stdin/stdout (./driver.js; driven() below) and open
//                      and close the server's ELU window around the measured phase; a run that
//                      falls behind is then reported as refused (latencies null), not exit 3.
//   --lead-in L        seconds at the start of each phase whose requests are sent, answered and counted
//                      but not timed (default 0; the pipeline uses 1): a CPU that idled before the window
//                      runs slow for its first few hundred ms here (see the comment at timedFrom).
//   --dry-schedule K   print the first K scheduled send offsets (ms from the start, JSON
//                      array) and exit without sending anything.
//
// The client measures its own lateness: for each request, the moment its scheduler dispatches
// it (writes it on a free connection, or queues it when all MAX are busy) minus its scheduled
// time (the "schedule lag"). If the window's lag p99 exceeds --max-lag-p99-ms, the run is
// REFUSED: a message naming the figure on stderr, exit status 3, and no result on stdout
// (such a run measures the client, not the server).
// It is refused too, at once, if the scheduler ever falls more than 1 s behind. Sends are
// made between event-loop turns, so a client saturated by its own work (reading responses)
// shows as lag too, not as the server's latency.
//
// Output (exit 0): one JSON object on stdout, e.g.
//   {"tool":"openloop","url":...,"arrivals":"poisson","seed":1,"target_rate":200,
//    "warmup_s":3,"duration_s":5,"grace_s":2,"connections_max":256,"connections_opened":3,
//    "sent":1000,"completed":1000,"errors":0,"timeouts":0,"non2xx":0,"status_counts":{"200":1000},
//    "delivered_rate":200,"latency_ms":{"p50":..,"p90":..,"p99":..,"p99_9":..,"max":..,"mean":..},
//    "bytes":..,"lag_ms":{"p50":..,"p99":..,"max":..},"max_lag_p99_ms":1,"refused":null,"queued_max":0}
// sent/completed/errors/... count the window's requests; bytes: the answers' whole size (status
// lines, headers and bodies); errors include the timeouts; seed is null with constant arrivals; delivered_rate =
// completed / duration_s. Exit 2: bad arguments; 3: refused; 4: fatal.
//
// Percentiles are exact, nearest-rank, over every window request's latency kept in a
// Float64Array (8 bytes a request: 100k req/s for 60 s is 48 MB). node:perf_hooks'
// createHistogram records integers with 3 significant figures, which would be fine for the
// tails but adds a bucketing error at the 1 ms scale where the client is validated
// (tests/test_openloop.py checks a 1 ms p50 within 0.2 ms); exact values cost little here.
//
// Its parts: this file (options, the scheduler: Loader.phase, and the result), openloop/schedule.js (when each
// request is due), openloop/connections.js (the connection pool and its HTTP/1.1 reader), openloop/waker.js
// (--nap's timer thread) and driver.js (the harness's protocol, shared with autocannon.js).
const net = require('node:net');
const { drive, write } = require('./driver.js');
const { Connections } = require('./openloop/connections.js');
const { makeSchedule } = require('./openloop/schedule.js');
const { Waker } = require('./openloop/waker.js');

const ignore = () => {};
const { performance } = require('node:perf_hooks');

const EXIT_USAGE = 2;
const EXIT_REFUSED = 3;
const EXIT_FATAL = 4;
const ABORT_BEHIND_MS = 1000;
const MAX_BATCH = 2000; // dispatches per scheduler turn, so timers and I/O still run when behind
const SPIN_MS = 0.02; // a send due this soon is spun to, not yielded for
const IDLE_SPIN_MS = 0.02; // after a turn with no I/O, spin this long before the next
// --nap: the timer thread wakes the loop this long before a send, and the loop turns (polling I/O) for the rest. A futex's
// timeout fired 0.10 ms late at p50 and 0.15-0.19 ms at p99 here (idle CPU, 2026-12-06: the kernel's 50 us
// timer slack and the virtual CPU's wake-up). Against a 1 ms server at 1,000-5,000 req/s (2026-12-06), leads of
// 0.25 / 0.15 / 0.08 / 0 ms kept the schedule lag's p50 at 0.001 / 0.001-0.002 / 0.03-0.07 / 0.13-0.16 ms, for
// 0.31-0.76 / 0.25-0.60 / 0.24-0.52 / 0.24-0.49 of a CPU (spinning: 0.98-0.99).
const NAP_LEAD_MS = 0.15; // the default of --nap-lead-ms

function die(code, message) {
  process.stderr.write(`openloop: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const opts = {
    url: null,
    rate: null,
    duration: null,
    warmup: 3,
    arrivals: 'constant',
    seed: 1,
    connections: 256,
    grace: 2,
    maxLagP99Ms: 1,
    maxClientEffect: 0,
    drySchedule: 0,
    leadIn: 0,
    sleep: false,
    nap: false,
    napLeadMs: NAP_LEAD_MS,
    driver: false,
  };
  const names = {
    '--url': 'url',
    '--rate': 'rate',
    '--duration': 'duration',
    '--warmup': 'warmup',
    '--arrivals': 'arrivals',
    '--seed': 'seed',
    '--connections': 'connections',
    '--grace': 'grace',
    '--max-lag-p99-ms': 'maxLagP99Ms',
    '--max-client-effect': 'maxClientEffect',
    '--dry-schedule': 'drySchedule',
    '--lead-in': 'leadIn',
    '--nap-lead-ms': 'napLeadMs',
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '--sleep' || arg === '--nap' || arg === '--driver') {
      opts[arg.slice(2)] = true;
      continue;
    }
    let value;
    const eq = arg.indexOf('=');
    if (eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const key = names[arg];
    if (!key) die(EXIT_USAGE, `unknown option ${arg}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) die(EXIT_USAGE, `${arg} needs a value`);
      value = argv[++i];
    }
    opts[key] = value;
  }
  const num = (key, flag, { min = 0, integer = false, allowZero = false } = {}) => {
    const v = Number(opts[key]);
    if (!Number.isFinite(v) || v < min || (!allowZero && v === 0) || (integer && !Number.isInteger(v))) {
      die(EXIT_USAGE, `${flag} must be a ${integer ? 'whole' : ''} number${allowZero ? ' >= 0' : ' > 0'}, got ${opts[key]}`);
    }
    return v;
  };
  if (!['constant', 'poisson'].includes(opts.arrivals)) {
    die(EXIT_USAGE, `--arrivals must be constant or poisson, got ${opts.arrivals}`);
  }
  if (opts.sleep && opts.nap) die(EXIT_USAGE, '--sleep and --nap are two ways to wait: give one');
  if (opts.rate === null) die(EXIT_USAGE, '--rate is required');
  opts.rate = num('rate', '--rate');
  opts.seed = num('seed', '--seed', { integer: true, allowZero: true });
  if (opts.seed > 0xffffffff) die(EXIT_USAGE, '--seed must fit in 32 bits');
  opts.drySchedule = num('drySchedule', '--dry-schedule', { integer: true, allowZero: true });
  if (opts.drySchedule > 0) return opts;
  if (opts.url === null) die(EXIT_USAGE, '--url is required');
  if (opts.duration === null) die(EXIT_USAGE, '--duration is required');
  opts.duration = num('duration', '--duration');
  opts.warmup = num('warmup', '--warmup', { allowZero: true });
  opts.grace = num('grace', '--grace', { allowZero: true });
  opts.leadIn = num('leadIn', '--lead-in', { allowZero: true });
  if (opts.leadIn >= opts.duration) die(EXIT_USAGE, `--lead-in (${opts.leadIn} s) must be shorter than --duration (${opts.duration} s)`);
  opts.connections = num('connections', '--connections', { integer: true, min: 1 });
  opts.maxLagP99Ms = num('maxLagP99Ms', '--max-lag-p99-ms', { allowZero: true });
  opts.maxClientEffect = num('maxClientEffect', '--max-client-effect', { allowZero: true });
  opts.napLeadMs = num('napLeadMs', '--nap-lead-ms', { allowZero: true });
  let url;
  try {
    url = new URL(opts.url);
  } catch {
    die(EXIT_USAGE, `--url is not a URL: ${opts.url}`);
  }
  if (url.protocol !== 'http:') die(EXIT_USAGE, `only http:// URLs, got ${url.protocol}`);
  if (!isLoopback(url.hostname)) die(EXIT_USAGE, `refusing a non-loopback host: ${url.hostname}`);
  opts.parsedUrl = url;
  return opts;
}

function isLoopback(hostname) {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.split('.')[0] === '127';
  if (net.isIPv6(host)) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

// A growable Float64Array of samples with exact nearest-rank percentiles.
class Samples {
  constructor(capacity) {
    this.data = new Float64Array(Math.max(16, capacity));
    this.n = 0;
    this.sorted = null;
  }
  add(v) {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = v;
    this.sorted = null;
  }
  percentile(p) {
    if (this.n === 0) return null;
    if (!this.sorted) this.sorted = this.data.slice(0, this.n).sort();
    const rank = Math.max(1, Math.ceil((p / 100) * this.n));
    return this.sorted[rank - 1];
  }
  max() {
    return this.percentile(100);
  }
  mean() {
    if (this.n === 0) return null;
    let s = 0;
    for (let i = 0; i < this.n; i++) s += this.data[i];
    return s / this.n;
  }
}

const round3 = (v) => (v === null ? null : Math.round(v * 1000) / 1000);

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.drySchedule > 0) {
    const next = makeSchedule(opts.arrivals, opts.rate, opts.seed);
    const out = [];
    for (let i = 0; i < opts.drySchedule; i++) out.push(next());
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  (opts.driver ? driven(opts) : standalone(opts)).catch((err) => die(EXIT_FATAL, `fatal: ${err.stack || err}`));
}

// Standalone: the warm-up's schedule, its answers awaited, then the window's; one result, or a refusal (exit 3).
async function standalone(opts) {
  const loader = new Loader(opts);
  if (opts.warmup > 0) await loader.phase(opts.warmup * 1000, false);
  const win = await loader.phase(opts.duration * 1000, true);
  loader.close();
  if (win.refused) die(EXIT_REFUSED, `REFUSED: ${win.refused}; the client cannot keep this schedule, so nothing is reported`);
  await write(result(opts, loader, win));
  process.exit(0);
}

// Driver (--driver), for the pipeline's harness: the protocol of ./driver.js, as autocannon.js speaks it. The
// server's ELU window opens right before the window's first scheduled request and closes after its last answer.
//   warm-up line: "openloop": {sent, completed, errors, unsent, refused}; result line: "openloop": <result>
// A window the client could not keep on schedule is reported as refused (result.refused says why, and its
// latencies are null): the run's other figures stand, its latencies are never reported.
async function driven(opts) {
  const loader = new Loader(opts);
  await drive({
    tool: 'openloop',
    base: opts.parsedUrl,
    warmup: async () => {
      const warm = opts.warmup > 0 ? await loader.phase(opts.warmup * 1000, false) : null;
      return warm && { sent: warm.sent, completed: warm.completed, errors: warm.errors, unsent: warm.unsent, refused: warm.refused };
    },
    // Between warm-up and window the harness settles its query counter: keep this CPU busy meanwhile (the
    // default mode never lets it idle), so that the window does not start on a CPU waking up.
    idle: () => {
      let waiting = !opts.sleep && !opts.nap;
      const spin = () => {
        if (waiting) setImmediate(spin);
      };
      spin();
      return () => {
        waiting = false;
      };
    },
    window: () => loader.phase(opts.duration * 1000, true),
    report: (win) => {
      loader.close();
      return { result: result(opts, loader, win) };
    },
  });
  process.exit(0);
}

function result(opts, loader, win) {
  const pct = (p) => (win.refused ? null : round3(win.latency.percentile(p)));
  return {
    tool: 'openloop',
    url: opts.parsedUrl.href,
    arrivals: opts.arrivals,
    seed: opts.arrivals === 'poisson' ? opts.seed : null,
    wait: opts.nap ? 'nap' : opts.sleep ? 'sleep' : 'spin',
    target_rate: opts.rate,
    warmup_s: opts.warmup,
    duration_s: opts.duration,
    lead_in_s: opts.leadIn,
    grace_s: opts.grace,
    connections_max: opts.connections,
    connections_opened: loader.connectionsOpened,
    sent: win.sent,
    completed: win.completed,
    errors: win.errors,
    timeouts: win.timeouts,
    non2xx: win.non2xx,
    status_counts: win.status,
    bytes: win.bytes,
    delivered_rate: round3(win.completed / opts.duration),
    // How many latencies the percentiles are taken over (the window's answered requests less the lead-in's).
    timed: win.latency.n,
    latency_ms: {
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      p99_9: pct(99.9),
      max: pct(100),
      mean: win.refused ? null : round3(win.latency.mean()),
    },
    lag_ms: { p50: round3(win.lag.percentile(50)), p99: round3(win.lag.percentile(99)), max: round3(win.lag.max()) },
    // Each percentile less that of the latencies net of the client's own lateness: how much its lateness moved it.
    client_effect_ms: win.refused ? null : {
      p50: round3(win.latency.percentile(50) - win.net.percentile(50)),
      p90: round3(win.latency.percentile(90) - win.net.percentile(90)),
      p99: round3(win.latency.percentile(99) - win.net.percentile(99)),
      p99_9: round3(win.latency.percentile(99.9) - win.net.percentile(99.9)),
    },
    max_lag_p99_ms: opts.maxLagP99Ms,
    max_client_effect: opts.maxClientEffect,
    backlog_at_end: win.backlogAtEnd,
    refused: win.refused,
    queued_max: win.queuedMax,
    unsent: win.unsent,
    abandoned: win.abandoned,
  };
}

// The percentiles reported, and the smallest move of one by the client's lateness that can refuse a run, ms.
const REPORTED = [50, 90, 99, 99.9];
const EFFECT_FLOOR_MS = 0.1;

// Why the client's lateness refuses a measured phase, or null: a reported percentile moved by more than
// --max-client-effect of itself (and EFFECT_FLOOR_MS) from that of the latencies net of the lateness.
function clientEffect(opts, ph) {
  if (!(opts.maxClientEffect > 0) || ph.latency.n === 0) return null;
  for (const q of REPORTED) {
    const raw = ph.latency.percentile(q);
    const moved = raw - ph.net.percentile(q);
    if (moved > Math.max(EFFECT_FLOOR_MS, opts.maxClientEffect * raw)) {
      return (
        `the client's own lateness (lag p99 ${round3(ph.lag.percentile(99))} ms) moved p${q} by ${round3(moved)} ms ` +
        `of its ${round3(raw)} ms (over ${opts.maxClientEffect * 100} % and ${EFFECT_FLOOR_MS} ms) at ${opts.rate} req/s`
      );
    }
  }
  return null;
}

// The connections and the schedule's machinery, kept across phases (the warm-up's connections, and the
// client's JIT, serve the window). One phase at a time.
class Loader {
  constructor(opts) {
    const url = opts.parsedUrl;
    this.opts = opts;
    this.conns = new Connections(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 80), `${url.pathname}${url.search}`, opts.connections);
    // Requests due while all MAX connections are busy wait here, in order, for the next free
    // one (an array read from a head index, never shifted: O(1) a request however many queue).
    this.pending = [];
    this.pendingHead = 0;
    this.inFlight = 0;
    this.waker = opts.nap ? new Waker((err) => die(EXIT_FATAL, `the --nap timer thread failed: ${err.stack || err}`)) : null;
  }

  get connectionsOpened() {
    return this.conns.opened;
  }

  close() {
    this.conns.close();
    if (this.waker) this.waker.close();
  }

  // Send on the schedule for durationMs, then wait (at most --grace) for the answers. Resolves with the
  // phase's counts, latencies and lag; a measured phase also has `refused` (null, or why). The warm-up records
  // exactly as the window does, so that the window runs code the warm-up has already compiled: with the
  // recording left out of the warm-up, the window's first 100-600 ms ran behind at 26,000 req/s and showed as
  // 40-180 ms of latency (2026-12-03).
  phase(durationMs, measured) {
    const opts = this.opts;
    const expected = Math.ceil((opts.rate * durationMs) / 1000 * 1.2) + 64;
    const ph = {
      measured,
      sent: 0,
      completed: 0,
      errors: 0,
      timeouts: 0,
      non2xx: 0,
      status: {},
      bytes: 0,
      latency: new Samples(expected),
      net: new Samples(expected),
      lag: new Samples(expected),
      queuedMax: 0,
      unsent: 0, // scheduled but never sent: given up when the client fell too far behind
      abandoned: 0, // sent, and still unanswered when a refused phase ended
      backlogAtEnd: null,
      open: 0, // requests sent or queued, not yet answered or failed
      over: false,
      refused: null,
    };
    const next = makeSchedule(opts.arrivals, opts.rate, opts.seed);
    let nextOffset = next();
    let scheduleDone = false;
    let abandoned = null; // why the schedule was given up, when it was
    let lastTurnEnd = 0;
    // Start 20 ms from now so that the first turn is not already late.
    const t0 = performance.now() + 20;
    // Requests due in the lead-in are sent, answered and counted like the others, but not timed: after an idle
    // pause (the harness settling the query counter between warm-up and window) this machine ran at about half
    // speed for its first 100-600 ms, client and server alike (also against a server that answers at once).
    const timedFrom = t0 + Math.min(opts.leadIn * 1000, durationMs / 2);
    return new Promise((resolve) => {
      const end = (refused) => {
        if (ph.over) return;
        ph.over = true;
        clearTimeout(endTimer);
        if (this.waker) this.waker.disarm();
        if (refused === null) refused = abandoned;
        if (refused === null && nextOffset < durationMs) {
          refused = `the schedule was not finished by the window's end + grace (lag p99 ${round3(ph.lag.percentile(99))} ms)`;
        }
        const lagP99 = ph.lag.percentile(99);
        if (refused === null && measured && opts.maxLagP99Ms > 0 && lagP99 !== null && lagP99 > opts.maxLagP99Ms) {
          refused =
            `schedule lag p99 ${lagP99.toFixed(3)} ms exceeds ${opts.maxLagP99Ms} ms ` +
            `(p50 ${ph.lag.percentile(50).toFixed(3)} ms, max ${ph.lag.max().toFixed(3)} ms) at ${opts.rate} req/s`;
        }
        if (refused === null && measured) refused = clientEffect(opts, ph);
        // Still waiting for a connection at the end: never sent, so no timeout of the server's, but the
        // schedule was not kept.
        const unsent = (this.pending.length - this.pendingHead) / 2;
        if (unsent > 0) {
          ph.open -= unsent;
          ph.sent -= unsent;
          ph.unsent += unsent;
          this.pending = [];
          this.pendingHead = 0;
        }
        // Requests still waiting for a connection at the end are not the client's lateness: every connection was
        // waiting for an answer, so the system did not sustain the rate. The phase is a result (`unsent` says how
        // many; the harness judges it not sustained), not refused; what is in flight is left, not a timeout.
        ph.refused = refused;
        if (refused === null && ph.unsent === 0) {
          ph.timeouts = ph.open; // sent, and not answered within the grace period while the client kept up
          ph.errors += ph.open;
        } else ph.abandoned = ph.open; // a refused phase's leftovers say nothing of the server
        this.conns.onAnswer = ignore;
        this.conns.onFail = ignore;
        if (ph.open > 0) {
          // Left over past the grace: drop them, so the next phase (or the end) starts clean.
          this.conns.close();
          this.pending = [];
          this.pendingHead = 0;
          this.inFlight = 0;
        }
        resolve(ph);
      };

      const done = () => {
        // One request of this phase is over (answered or failed): the phase ends with the last one.
        ph.open--;
        if (scheduleDone && ph.open === 0) setImmediate(() => end(null));
      };

      const send = (scheduledAbs, dispatchedAbs) => {
        this.inFlight++;
        this.conns.send(scheduledAbs, dispatchedAbs);
      };
      // A connection is free again: the next queued request goes out on it.
      this.conns.onAnswer = (scheduledAbs, dispatchedAbs, status, now, length) => {
        this.inFlight--;
        this.pump(send);
        ph.completed++;
        ph.bytes += length; // the whole answer, status line and headers too, as wrk and autocannon count
        ph.status[status] = (ph.status[status] || 0) + 1;
        if (status < 200 || status > 299) ph.non2xx++;
        // Latency from the SCHEDULED send time (not from the send): the wrk2 design.
        if (scheduledAbs >= timedFrom) {
          ph.latency.add(now - scheduledAbs);
          // The same, less the client's own lateness (dispatch - schedule; a wait for a connection stays in).
          ph.net.add(now - dispatchedAbs);
        }
        done();
      };
      this.conns.onFail = () => {
        this.inFlight--;
        this.pump(send);
        ph.errors++;
        done();
      };

      const dispatch = (scheduledAbs) => {
        const dispatchedAbs = performance.now();
        if (scheduledAbs >= timedFrom) ph.lag.add(dispatchedAbs - scheduledAbs);
        ph.sent++;
        ph.open++;
        if (this.inFlight < opts.connections) {
          send(scheduledAbs, dispatchedAbs);
          return;
        }
        this.pending.push(scheduledAbs, dispatchedAbs);
        const queued = (this.pending.length - this.pendingHead) / 2;
        if (queued > ph.queuedMax) ph.queuedMax = queued;
      };

      const tick = () => {
        if (ph.over) return;
        let now = performance.now();
        // How long the loop was away since the last turn ended: under 10 us, it had no I/O to do.
        const idleTurn = now - lastTurnEnd < 0.01;
        let n = 0;
        for (;;) {
          while (nextOffset < durationMs && t0 + nextOffset <= now && n < MAX_BATCH) {
            const scheduledAbs = t0 + nextOffset;
            if (now - scheduledAbs > ABORT_BEHIND_MS) {
              // Give up: send nothing more (what waited for a connection is dropped unsent), let what is
              // in flight be answered, and end refused.
              abandoned =
                `schedule lag reached ${(now - scheduledAbs).toFixed(1)} ms (over ${ABORT_BEHIND_MS} ms) ` +
                `at ${opts.rate} req/s; lag p99 so far ${round3(ph.lag.percentile(99))} ms`;
              const unsent = (this.pending.length - this.pendingHead) / 2;
              ph.open -= unsent;
              ph.sent -= unsent;
              ph.unsent += unsent;
              this.pending = [];
              this.pendingHead = 0;
              scheduleDone = true;
              if (ph.open === 0) end(null);
              return;
            }
            dispatch(scheduledAbs);
            nextOffset = next();
            n++;
            if ((n & 63) === 0) now = performance.now();
          }
          if (nextOffset >= durationMs) {
            scheduleDone = true; // everything sent: the phase ends with its last answer, or at the end timer
            ph.backlogAtEnd = ph.open; // sent or queued and not answered yet, as the last send goes out
            if (ph.open === 0) end(null);
            return;
          }
          if (n >= MAX_BATCH) break; // behind: let timers and I/O run before the next batch
          now = performance.now();
          const wait = t0 + nextOffset - now;
          if (wait > SPIN_MS) break;
          // The next send is due within SPIN_MS: spin to it rather than yield. The spin compares
          // process.hrtime.bigint() values: a loop on performance.now() allocates a heap number a
          // call (25 million a second; V8 then scavenged every few ms), this does not.
          const untilNs = process.hrtime.bigint() + BigInt(Math.ceil(wait * 1e6));
          while (process.hrtime.bigint() < untilNs) {
            // spin
          }
          now = performance.now();
        }
        let wait = t0 + nextOffset - performance.now();
        if (idleTurn && !opts.sleep && !opts.nap && wait > 0) {
          // Nothing to read last turn: spin up to IDLE_SPIN_MS before the next. Each turn allocates
          // (an Immediate, a timestamp), and at a million idle turns a second V8 scavenged 200
          // times a second, enough to make 1% of sends late at 1000 req/s. A response arriving
          // meanwhile is read at most IDLE_SPIN_MS late; when there is I/O, turns do not spin.
          const spinMs = Math.min(wait, IDLE_SPIN_MS);
          const untilNs = process.hrtime.bigint() + BigInt(Math.ceil(spinMs * 1e6));
          while (process.hrtime.bigint() < untilNs) {
            // spin
          }
          wait -= spinMs;
        }
        lastTurnEnd = performance.now();
        // By default the loop never sleeps: one setImmediate turn after another, each of which
        // polls I/O (responses) without blocking, so its CPU never idles and a response never
        // waits for the CPU to wake up (0.2-0.3 ms on a virtual machine, counted in its latency).
        // Sends go out at the first turn at or after their time, so a turn made long by work (many
        // responses to read) makes them late: the lag measures the client's own saturation too.
        // With --sleep it sleeps with setTimeout until 2 ms before a send more than 3 ms away
        // (setTimeout fires up to 1-2 ms late: libuv's timers have millisecond resolution).
        // With --nap it sleeps in epoll (a response wakes it) until the timer thread wakes it --nap-lead-ms
        // before the next send; the lead itself is setImmediate turns as above, each polling I/O, so that no
        // answer waits unread while a send is spun to (only the last SPIN_MS is spun, in both modes).
        if (opts.nap && wait > opts.napLeadMs) this.waker.arm(wait - opts.napLeadMs, tick);
        else if (opts.sleep && wait > 3) setTimeout(tick, wait - 2);
        else setImmediate(tick);
      };

      // The phase is bounded: it ends at its schedule's end + grace whatever happens (sooner when its
      // last request has its answer).
      const endTimer = setTimeout(() => end(null), t0 - performance.now() + durationMs + opts.grace * 1000);
      setTimeout(tick, Math.max(0, t0 - performance.now() - 2));
    });
  }

  // Hand queued requests to connections as they free up.
  pump(send) {
    while (this.inFlight < this.opts.connections && this.pendingHead < this.pending.length) {
      const scheduledAbs = this.pending[this.pendingHead];
      const dispatchedAbs = this.pending[this.pendingHead + 1];
      this.pendingHead += 2;
      send(scheduledAbs, dispatchedAbs);
    }
    if (this.pendingHead === this.pending.length) {
      this.pending.length = 0;
      this.pendingHead = 0;
    } else if (this.pendingHead > 65536 && this.pendingHead * 2 > this.pending.length) {
      this.pending.splice(0, this.pendingHead);
      this.pendingHead = 0;
    }
  }
}

process.on('uncaughtException', (err) => die(EXIT_FATAL, `fatal: ${err.stack || err}`));
main();

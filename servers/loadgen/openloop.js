'use strict';
// Open-loop HTTP load client (the wrk2 design): requests go out on a fixed schedule,
// whatever the server is doing, and each latency is counted from the request's
// SCHEDULED send time to the end of its response, so a stall of the server shows
// in the percentiles instead of hiding in fewer requests (coordinated omission).
// Node.js built-ins only. See docs/openloop.md.
//
//   node servers/loadgen/openloop.js --url http://127.0.0.1:PORT/path --rate R --duration S
//        [--warmup W] [--arrivals constant|poisson] [--seed N] [--connections MAX]
//        [--grace G] [--max-lag-p99-ms L] [--sleep] [--dry-schedule K]
//
//   --url URL          http:// only, and only a loopback host (127.0.0.0/8, ::1, localhost);
//                      anything else is refused (exit 2).
//   --rate R           target arrival rate, requests per second (> 0).
//   --duration S       the measured window, seconds (> 0).
//   --warmup W         seconds of load sent before the window (default 3); its requests are
//                      sent on the same schedule but their results are discarded. The client's
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
//   --max-lag-p99-ms L refusal threshold on the client's own lateness (default 1).
//   --sleep            let the scheduler sleep (setTimeout) between sends that are more than
//                      3 ms apart, instead of spinning its CPU at 100% for the whole run (the
//                      default). Cheaper, but on a virtual machine a response that arrives
//                      while the CPU sleeps pays its wake-up (about 0.3 ms here) in its latency.
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
//    "lag_ms":{"p50":..,"p99":..,"max":..},"queued_max":0,"warmup":{"sent":..,"completed":..,"errors":..}}
// sent/completed/errors/... count the window's requests (scheduled at or after the warm-up's
// end); errors include the timeouts; seed is null with constant arrivals; delivered_rate =
// completed / duration_s. Exit 2: bad arguments; 3: refused; 4: fatal.
//
// Percentiles are exact, nearest-rank, over every window request's latency kept in a
// Float64Array (8 bytes a request: 100k req/s for 60 s is 48 MB). node:perf_hooks'
// createHistogram records integers with 3 significant figures, which would be fine for the
// tails but adds a bucketing error at the 1 ms scale where the client is validated
// (tests/benchmarks/openloop_validation.py checks a 1 ms p50 within 0.2 ms); exact values cost little here.
const http = require('node:http');
const net = require('node:net');
const { performance } = require('node:perf_hooks');

const EXIT_USAGE = 2;
const EXIT_REFUSED = 3;
const EXIT_FATAL = 4;
const ABORT_BEHIND_MS = 1000;
const MAX_BATCH = 2000; // dispatches per scheduler turn, so timers and I/O still run when behind
const SPIN_MS = 0.02; // a send due this soon is spun to, not yielded for
const IDLE_SPIN_MS = 0.02; // after a turn with no I/O, spin this long before the next

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
    drySchedule: 0,
    sleep: false,
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
    '--dry-schedule': 'drySchedule',
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '--sleep') {
      opts.sleep = true;
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
  opts.connections = num('connections', '--connections', { integer: true, min: 1 });
  opts.maxLagP99Ms = num('maxLagP99Ms', '--max-lag-p99-ms');
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

// mulberry32: a small, fast 32-bit PRNG; the same seed gives the same stream everywhere.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The schedule: a function giving the next send offset (ms from the start) each call.
function makeSchedule(arrivals, rate, seed) {
  const intervalMs = 1000 / rate;
  if (arrivals === 'constant') {
    let i = 0;
    return () => i++ * intervalMs; // i * interval, so no rounding error accumulates
  }
  const rand = mulberry32(seed);
  let t = 0;
  let first = true;
  return () => {
    if (first) {
      first = false;
      return 0;
    }
    t += -Math.log(1 - rand()) * intervalMs; // 1 - u is in (0, 1]: never log(0)
    return t;
  };
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
  run(opts);
}

function run(opts) {
  const url = opts.parsedUrl;
  const warmupMs = opts.warmup * 1000;
  const endMs = warmupMs + opts.duration * 1000; // the schedule: offsets in [0, endMs)
  const expected = Math.ceil(opts.rate * opts.duration * 1.2) + 64;
  const latency = new Samples(expected);
  const lag = new Samples(expected);
  const win = { sent: 0, completed: 0, errors: 0, timeouts: 0, non2xx: 0, status: {} };
  const warm = { sent: 0, completed: 0, errors: 0 };
  let windowOpen = 0; // window requests sent or queued, not yet answered or failed
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections, scheduling: 'fifo' });
  const seenSockets = new WeakSet();
  let connectionsOpened = 0;
  let queuedMax = 0;
  let finished = false;
  let scheduleDone = false;
  let lastTurnEnd = 0;
  const reqOptions = {
    agent,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port || 80,
    path: `${url.pathname}${url.search}`,
    method: 'GET',
  };

  const next = makeSchedule(opts.arrivals, opts.rate, opts.seed);
  let nextOffset = next();
  // Start 20 ms from now so that the first turn is not already late.
  const t0 = performance.now() + 20;

  // Requests due while all MAX connections are busy wait here, in order, for the next free
  // one (an array read from a head index: http.Agent's own queue shifts an array, O(n) a
  // request, which made the client collapse once 100,000 requests queued). At most MAX are
  // ever handed to the agent, so its queue stays empty.
  const pending = [];
  let pendingHead = 0;
  let inFlight = 0;

  function dispatch(scheduledAbs, inWindow) {
    const now = performance.now();
    if (inWindow) {
      lag.add(now - scheduledAbs);
      win.sent++;
      windowOpen++;
    } else {
      warm.sent++;
    }
    if (inFlight < opts.connections) {
      send(scheduledAbs, inWindow);
      return;
    }
    pending.push(scheduledAbs, inWindow);
    const queued = (pending.length - pendingHead) / 2;
    if (queued > queuedMax) queuedMax = queued;
  }

  function pump() {
    while (inFlight < opts.connections && pendingHead < pending.length) {
      const scheduledAbs = pending[pendingHead];
      const inWindow = pending[pendingHead + 1];
      pendingHead += 2;
      send(scheduledAbs, inWindow);
    }
    if (pendingHead === pending.length) {
      pending.length = 0;
      pendingHead = 0;
    } else if (pendingHead > 65536 && pendingHead * 2 > pending.length) {
      pending.splice(0, pendingHead);
      pendingHead = 0;
    }
  }

  // One window request is over (answered or failed): the run ends with the last one.
  function windowDone() {
    windowOpen--;
    if (scheduleDone && windowOpen === 0) setImmediate(finish);
  }

  function send(scheduledAbs, inWindow) {
    inFlight++;
    let over = false;
    const done = () => {
      over = true;
      inFlight--;
      if (!finished) pump();
    };
    const req = http.request(reqOptions, (res) => {
      res.on('end', () => {
        // Latency from the SCHEDULED send time (not from the send): the wrk2 design.
        const ms = performance.now() - scheduledAbs;
        if (over) return;
        done();
        if (finished) return; // past the window's end + grace: already counted as a timeout
        if (!inWindow) {
          warm.completed++;
          return;
        }
        win.completed++;
        latency.add(ms);
        const code = res.statusCode;
        win.status[code] = (win.status[code] || 0) + 1;
        if (code < 200 || code > 299) win.non2xx++;
        windowDone();
      });
      res.resume();
    });
    req.on('socket', (sock) => {
      if (!seenSockets.has(sock)) {
        seenSockets.add(sock);
        connectionsOpened++;
      }
    });
    req.on('error', () => {
      if (over) return;
      done();
      if (finished) return;
      if (!inWindow) {
        warm.errors++;
        return;
      }
      win.errors++;
      windowDone();
    });
    req.end();
  }

  function refuse(message) {
    finished = true;
    agent.destroy();
    die(EXIT_REFUSED, `REFUSED: ${message}; the client cannot keep this schedule, so nothing is reported`);
  }

  function tick() {
    if (finished) return;
    let now = performance.now();
    // How long the loop was away since the last turn ended: under 10 us, it had no I/O to do.
    const idleTurn = now - lastTurnEnd < 0.01;
    let n = 0;
    for (;;) {
      while (nextOffset < endMs && t0 + nextOffset <= now && n < MAX_BATCH) {
        const scheduledAbs = t0 + nextOffset;
        if (now - scheduledAbs > ABORT_BEHIND_MS) {
          refuse(
            `schedule lag reached ${(now - scheduledAbs).toFixed(1)} ms (over ${ABORT_BEHIND_MS} ms) ` +
              `at ${opts.rate} req/s; lag p99 so far ${round3(lag.percentile(99))} ms`,
          );
          return;
        }
        dispatch(scheduledAbs, nextOffset >= warmupMs);
        nextOffset = next();
        n++;
        if ((n & 63) === 0) now = performance.now();
      }
      if (nextOffset >= endMs) {
        scheduleDone = true; // everything sent: the run ends with its last response, or at the end timer
        if (windowOpen === 0) finish();
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
    if (idleTurn && !opts.sleep && wait > 0) {
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
    if (opts.sleep && wait > 3) setTimeout(tick, wait - 2);
    else setImmediate(tick);
  }

  function finish() {
    if (finished) return;
    finished = true;
    if (nextOffset < endMs) {
      refuse(`the schedule was not finished by the window's end + grace (lag p99 ${round3(lag.percentile(99))} ms)`);
      return;
    }
    win.timeouts = windowOpen; // in flight or still queued for a connection
    win.errors += windowOpen;
    agent.destroy();
    const lagP99 = lag.percentile(99);

    if (lagP99 !== null && lagP99 > opts.maxLagP99Ms) {
      die(
        EXIT_REFUSED,
        `REFUSED: schedule lag p99 ${lagP99.toFixed(3)} ms exceeds ${opts.maxLagP99Ms} ms ` +
          `(p50 ${lag.percentile(50).toFixed(3)} ms, max ${lag.max().toFixed(3)} ms) at ${opts.rate} req/s; ` +
          'the client cannot keep this schedule, so nothing is reported',
      );
    }
    const result = {
      tool: 'openloop',
      url: url.href,
      arrivals: opts.arrivals,
      seed: opts.arrivals === 'poisson' ? opts.seed : null,
      target_rate: opts.rate,
      warmup_s: opts.warmup,
      duration_s: opts.duration,
      grace_s: opts.grace,
      connections_max: opts.connections,
      connections_opened: connectionsOpened,
      sent: win.sent,
      completed: win.completed,
      errors: win.errors,
      timeouts: win.timeouts,
      non2xx: win.non2xx,
      status_counts: win.status,
      delivered_rate: round3(win.completed / opts.duration),
      latency_ms: {
        p50: round3(latency.percentile(50)),
        p90: round3(latency.percentile(90)),
        p99: round3(latency.percentile(99)),
        p99_9: round3(latency.percentile(99.9)),
        max: round3(latency.max()),
        mean: round3(latency.mean()),
      },
      lag_ms: { p50: round3(lag.percentile(50)), p99: round3(lagP99), max: round3(lag.max()) },
      queued_max: queuedMax,
      warmup: warm,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
  }

  // The run is bounded: it ends at the window's end + grace whatever happens (sooner when the
  // last window request has its answer).
  setTimeout(finish, t0 - performance.now() + endMs + opts.grace * 1000);
  setTimeout(tick, Math.max(0, t0 - performance.now() - 2));
}

process.on('uncaughtException', (err) => die(EXIT_FATAL, `fatal: ${err.stack || err}`));
main();

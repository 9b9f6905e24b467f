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
//   --nap              sleep between sends whatever their gap, woken NAP_LEAD_MS before each by a
//                      timer thread (Atomics.wait: a futex, whose timeout is not rounded to the
//                      millisecond as libuv's timers are) and spinning only that last stretch.
//                      Responses still wake the loop at once (it sleeps in epoll). For a client that
//                      shares its CPU with the database: the CPU is free for it between sends.
//   --nap-lead-ms D    with --nap, how long before a send the timer thread wakes the loop (default 0.15).
//   --driver           speak the harness's protocol on stdin/stdout (see drive() below) and open
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
// (tests/benchmarks/openloop_validation.py checks a 1 ms p50 within 0.2 ms); exact values cost little here.
const http = require('node:http');
const net = require('node:net');

const ignore = () => {};
const { performance } = require('node:perf_hooks');

const EXIT_USAGE = 2;
const EXIT_REFUSED = 3;
const EXIT_FATAL = 4;
const ABORT_BEHIND_MS = 1000;
const MAX_BATCH = 2000; // dispatches per scheduler turn, so timers and I/O still run when behind
const SPIN_MS = 0.02; // a send due this soon is spun to, not yielded for
const IDLE_SPIN_MS = 0.02; // after a turn with no I/O, spin this long before the next
// --nap: the timer thread wakes the loop this long before a send, and the loop spins the rest. A futex's
// timeout fired 0.10 ms late at p50 and 0.15-0.19 ms at p99 here (idle CPU, 2026-12-06: the kernel's 50 us
// timer slack and the virtual CPU's wake-up). Against a 1 ms server at 1,000-5,000 req/s (2026-12-06), leads of
// 0.25 / 0.15 / 0.08 / 0 ms kept the schedule lag's p50 at 0.001 / 0.001-0.002 / 0.04-0.06 / 0.12-0.17 ms, for
// 0.32-0.78 / 0.26-0.62 / 0.23-0.53 / 0.24-0.50 of a CPU (spinning: 0.98-0.99).
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
  (opts.driver ? drive(opts) : standalone(opts)).catch((err) => die(EXIT_FATAL, `fatal: ${err.stack || err}`));
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

const write = (line) => new Promise((resolve) => process.stdout.write(`${JSON.stringify(line)}\n`, resolve));

// Driver (--driver), for the pipeline's harness, as servers/loadgen/autocannon.js does for autocannon: the
// server's ELU window opens right before the window's first scheduled request and closes after its last answer.
//   -> {"event":"loaded"}                         then waits for "warmup\n" on stdin
//   -> {"event":"warmup", "openloop": {sent, completed, errors, unsent, refused}}   then waits for "go\n"
//   -> {"event":"window"}                         the server's window is open
//   -> {"event":"result", "openloop": <result>, "elu": <server window>, "window_s", "client_cpu_*_us"}
// A window the client could not keep on schedule is reported as refused (result.refused says why, and its
// latencies are null): the run's other figures stand, its latencies are never reported.
async function drive(opts) {
  const readline = require('node:readline');
  const commands = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const waitFor = async (word) => {
    const { value, done } = await commands.next();
    if (done) throw new Error(`stdin closed before "${word}"`);
    if (value.trim() !== word) throw new Error(`expected "${word}" on stdin, got ${JSON.stringify(value)}`);
  };
  const loader = new Loader(opts);
  await write({ event: 'loaded' });
  await waitFor('warmup');
  const warm = opts.warmup > 0 ? await loader.phase(opts.warmup * 1000, false) : null;
  await write({
    event: 'warmup',
    openloop: warm && { sent: warm.sent, completed: warm.completed, errors: warm.errors, unsent: warm.unsent, refused: warm.refused },
  });
  // Between warm-up and window the harness settles its query counter: keep this CPU busy meanwhile (the
  // default mode never lets it idle), so that the window does not start on a CPU waking up.
  let waiting = !opts.sleep && !opts.nap;
  const spin = () => {
    if (waiting) setImmediate(spin);
  };
  spin();
  await waitFor('go');
  waiting = false;
  await getJson(opts.parsedUrl, '/__elu/start');
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await write({ event: 'window' });
  const win = await loader.phase(opts.duration * 1000, true);
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const elu = await getJson(opts.parsedUrl, '/__elu/stop');
  loader.close();
  await write({
    event: 'result',
    openloop: result(opts, loader, win),
    elu,
    window_s: Number(t1 - t0) / 1e9,
    client_cpu_user_us: cpu.user,
    client_cpu_system_us: cpu.system,
  });
  process.exit(0);
}

function getJson(base, path) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: base.hostname, port: base.port, path, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (data += chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path} answered ${res.statusCode}: ${data}`));
        try {
          resolve(JSON.parse(data));
        } catch (err) {
          reject(new Error(`GET ${path} answered invalid JSON (${err.message}): ${data.slice(0, 200)}`));
        }
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`GET ${path} timed out after 5 s`)));
    req.on('error', reject);
  });
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

// HTTP/1.1 keep-alive on raw sockets (node:net), one request at a time per connection. node:http's client
// allocates a request and a response object, their headers and their streams for every request; on one CPU it
// topped out near 15,000 req/s and its garbage collections made its own sends 1-2 ms late at p99 even at
// 3,000 req/s. This writes one prebuilt request and reads the status, the length (Content-Length, or a chunked
// body) and nothing else.
const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

// A complete response at the start of buf: {end, status, close}, null when more bytes are needed; throws on
// what is not an HTTP/1.1 response.
function parseResponse(buf) {
  const headEnd = buf.indexOf(CRLFCRLF);
  if (headEnd < 0) return null;
  if (buf.toString('latin1', 0, 5) !== 'HTTP/') throw new Error(`not an HTTP response: ${JSON.stringify(buf.toString('latin1', 0, 40))}`);
  const status = (buf[9] - 48) * 100 + (buf[10] - 48) * 10 + (buf[11] - 48);
  const head = buf.toString('latin1', 0, headEnd).toLowerCase();
  const bodyStart = headEnd + 4;
  const close = head.includes('\r\nconnection: close');
  const cl = head.indexOf('\r\ncontent-length:');
  if (cl >= 0) {
    const lineEnd = head.indexOf('\r\n', cl + 2);
    const length = parseInt(head.slice(cl + 17, lineEnd < 0 ? head.length : lineEnd), 10);
    if (!(length >= 0)) throw new Error('a response with an unreadable content-length');
    const end = bodyStart + length;
    return end <= buf.length ? { end, status, close } : null;
  }
  if (head.includes('\r\ntransfer-encoding: chunked')) {
    let pos = bodyStart;
    for (;;) {
      const lineEnd = buf.indexOf(CRLF, pos);
      if (lineEnd < 0) return null;
      const size = parseInt(buf.toString('latin1', pos, lineEnd), 16);
      if (!(size >= 0)) throw new Error('a chunked response with an unreadable chunk size');
      if (size === 0) {
        const end = lineEnd + 4; // no trailers: the size line, then an empty line
        return end <= buf.length ? { end, status, close } : null;
      }
      pos = lineEnd + 2 + size + 2;
      if (pos > buf.length) return null;
    }
  }
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) return { end: bodyStart, status, close };
  throw new Error('a response with neither content-length nor a chunked body (reading to the close is not supported)');
}

class Connections {
  // onAnswer(scheduledAbs, dispatchedAbs, status, now, length) for each response; onFail() for each request lost.
  constructor(host, port, path, max) {
    this.host = host;
    this.port = port;
    this.max = max;
    // What node:http's client sends with a keep-alive agent (the harness sizes the answer from the same bytes).
    this.request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${host.includes(':') ? `[${host}]` : host}:${port}\r\nConnection: keep-alive\r\n\r\n`, 'latin1');
    this.idle = []; // a stack: the most recently used first, so idle ones stay idle and few stay busy
    this.all = new Set();
    this.opened = 0;
    this.onAnswer = null;
    this.onFail = null;
  }

  open() {
    const sock = net.connect({ host: this.host, port: this.port });
    sock.setNoDelay(true);
    const c = { sock, scheduled: -1, dispatched: -1, buf: null, used: false, dead: false };
    this.all.add(c);
    this.opened++;
    sock.on('data', (chunk) => this.data(c, chunk));
    const gone = () => this.gone(c);
    sock.on('error', gone);
    sock.on('close', gone);
    return c;
  }

  // Send the request due at scheduledAbs on an idle connection, or a new one (the caller keeps at most max busy).
  send(scheduledAbs, dispatchedAbs) {
    let c = this.idle.pop();
    while (c !== undefined && c.dead) c = this.idle.pop();
    if (c === undefined) c = this.open();
    c.scheduled = scheduledAbs;
    c.dispatched = dispatchedAbs;
    c.sock.write(this.request);
  }

  data(c, chunk) {
    c.buf = c.buf === null ? chunk : Buffer.concat([c.buf, chunk]);
    let res;
    try {
      res = parseResponse(c.buf);
    } catch (err) {
      process.stderr.write(`openloop: ${err.message}\n`);
      c.sock.destroy();
      return;
    }
    if (res === null) return;
    const now = performance.now();
    const scheduled = c.scheduled;
    if (scheduled < 0 || res.end !== c.buf.length) {
      process.stderr.write('openloop: the server sent bytes no request asked for\n');
      c.sock.destroy();
      return;
    }
    c.buf = null;
    c.scheduled = -1;
    c.used = true;
    if (res.close) {
      c.dead = true;
      c.sock.end();
    } else this.idle.push(c);
    this.onAnswer(scheduled, c.dispatched, res.status, now, res.end);
  }

  gone(c) {
    if (c.dead && !this.all.has(c)) return;
    c.dead = true;
    this.all.delete(c);
    c.sock.destroy();
    const scheduled = c.scheduled;
    c.scheduled = -1;
    if (scheduled < 0) return;
    // A reused connection the server closed as the request went out (its keep-alive timeout): send it again on
    // a new one, once, still timed from its schedule. Anything else is a lost request.
    if (c.used && c.buf === null) {
      const fresh = this.open();
      fresh.used = false;
      fresh.scheduled = scheduled;
      fresh.dispatched = c.dispatched;
      fresh.sock.write(this.request);
      return;
    }
    this.onFail(scheduled);
  }

  close() {
    for (const c of this.all) {
      c.dead = true;
      c.sock.destroy();
    }
    this.all.clear();
    this.idle = [];
  }
}

// --nap's timer thread. libuv's timers have millisecond resolution, so the loop cannot sleep for the 0.3-1 ms
// between sends at 1,000-3,000 req/s with setTimeout. A worker thread sleeps instead, in Atomics.wait (a futex
// with a nanosecond timeout), and wakes the loop with a message (libuv's async handle: an eventfd its epoll
// watches, as it watches the sockets). One wake-up is armed at a time; arming again replaces it.
const WAKER_THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const seq = new Int32Array(workerData, 0, 1); // bumped at each arming; -1: stop
const at = new BigInt64Array(workerData, 8, 1); // when to wake the loop (process.hrtime.bigint ns)
let seen = 0;
for (;;) {
  Atomics.wait(seq, 0, seen);
  seen = Atomics.load(seq, 0);
  if (seen < 0) break;
  for (;;) {
    const left = Number(Atomics.load(at, 0) - process.hrtime.bigint()) / 1e6;
    if (left <= 0) {
      parentPort.postMessage(seen);
      break;
    }
    if (Atomics.wait(seq, 0, seen, left) !== 'timed-out') {
      seen = Atomics.load(seq, 0); // armed again (or stopped) meanwhile: wait for the new time
      if (seen < 0) process.exit(0);
    }
  }
}
`;

class Waker {
  constructor() {
    const { Worker } = require('node:worker_threads');
    const shared = new SharedArrayBuffer(16);
    this.seq = new Int32Array(shared, 0, 1);
    this.at = new BigInt64Array(shared, 8, 1);
    this.onWake = ignore;
    this.thread = new Worker(WAKER_THREAD, { eval: true, workerData: shared });
    // Only the wake-up of the latest arming runs the scheduler; an earlier one (armed, then replaced) is stale.
    this.thread.on('message', (armed) => {
      if (armed !== Atomics.load(this.seq, 0)) return;
      const fn = this.onWake;
      this.onWake = ignore;
      this.thread.unref();
      fn();
    });
    this.thread.on('error', (err) => die(EXIT_FATAL, `the --nap timer thread failed: ${err.stack || err}`));
    this.thread.unref();
  }

  // Call fn once, in ms milliseconds (fractional), unless armed again or disarmed first.
  arm(ms, fn) {
    this.onWake = fn;
    Atomics.store(this.at, 0, process.hrtime.bigint() + BigInt(Math.round(ms * 1e6)));
    Atomics.add(this.seq, 0, 1);
    Atomics.notify(this.seq, 0);
    this.thread.ref(); // an armed wake-up keeps the process alive, as a timer would
  }

  disarm() {
    this.onWake = ignore;
    this.thread.unref();
  }

  close() {
    this.disarm();
    Atomics.store(this.seq, 0, -1);
    Atomics.notify(this.seq, 0);
  }
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
    this.waker = opts.nap ? new Waker() : null;
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
          if (wait > (opts.nap ? opts.napLeadMs : SPIN_MS)) break;
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
        // With --nap it sleeps in epoll (a response wakes it) until the timer thread wakes it NAP_LEAD_MS
        // before the next send.
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

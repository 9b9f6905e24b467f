'use strict';
// The contract every server configuration answers: the same routes, the same SQL
// text, the same pool, the same payloads. Only the framework around it differs.
const { performance } = require('node:perf_hooks');
const { Pool } = require('pg');

const POOL_SIZE = Number(process.env.NODEBENCH_POOL_SIZE || 10);
const HOST = '127.0.0.1';
// The listen queue: Node's default (511) is below the 512 connections of the largest
// sweep, and a load generator opens all of them at once. When the queue overflows the
// kernel drops the handshake and the client waits for a SYN retransmit (1 s, then 3 s),
// which is then measured as the server's latency. The kernel caps it at
// net.core.somaxconn; the harness fails a run whose window saw the queue overflow.
const LISTEN_BACKLOG = 4096;

const COLUMNS = 'id, username, email, full_name, city, country, bio, score, active';
const SQL = {
  userById: `SELECT ${COLUMNS} FROM users WHERE id = $1`,
  list: `SELECT ${COLUMNS} FROM users ORDER BY id LIMIT 100`,
  createUser: 'INSERT INTO signups (name, age) VALUES ($1, $2) RETURNING id, name, age',
};

// The `empty` workload answers this fixed object without I/O; it has the same shape
// and size as a row so that `empty` and `point-lookup` differ only by the query.
// require() rather than a file read, so the workflow sees this file among the server's inputs.
const STATIC_USER = require('./fixtures/static-user.json');

// JSON Schema of one row, in column order, for fastify-schema's response schema.
const USER_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    username: { type: 'string' },
    email: { type: 'string' },
    full_name: { type: 'string' },
    city: { type: 'string' },
    country: { type: 'string' },
    bio: { type: 'string' },
    score: { type: 'integer' },
    active: { type: 'boolean' },
  },
  required: ['id', 'username', 'email', 'full_name', 'city', 'country', 'bio', 'score', 'active'],
};
const ERROR_SCHEMA = { type: 'object', properties: { error: { type: 'string' } } };

// Every pool this server made, so /__elu/sample can say how many queries are still at the database.
const pools = [];

function createPool() {
  // Connection settings come from the standard PG* environment variables.
  const pool = new Pool({ max: POOL_SIZE, host: process.env.PGHOST || HOST });
  pool.on('error', (err) => console.error(`pg pool error: ${err.message}`));
  pools.push(pool);
  return pool;
}

// Queries the server has handed to its pools and not yet had back: clients checked out
// (running a query or connecting for one) and queries queued for a client. A request whose
// connection closed first still has its query here. It reads the pools only, so it needs no
// per-request hook: the harness waits on it before the window (verify.server_idle_count).
const dbBusy = () => pools.reduce((n, p) => n + p.totalCount - p.idleCount + p.waitingCount, 0);

// Handlers return {status, body}; frameworks only route and serialise.
function makeHandlers(pool) {
  return {
    async user(rawId) {
      if (rawId === undefined || rawId === '') return { status: 404, body: { error: 'not found' } };
      if (!/^[0-9]{1,9}$/.test(rawId)) return { status: 400, body: { error: 'id must be a positive integer' } };
      const { rows } = await pool.query(SQL.userById, [Number(rawId)]);
      if (rows.length === 0) return { status: 404, body: { error: 'not found' } };
      return { status: 200, body: rows[0] };
    },
    async list() {
      const { rows } = await pool.query(SQL.list);
      return { status: 200, body: rows };
    },
    staticUser() {
      return { status: 200, body: STATIC_USER };
    },
  };
}

// --- The scenarios (scripts/nodebench/catalogue/workloads.py): answers, limits and the hand validators ---
//
// Fastify validates with JSON Schema (below, its native way); every other server validates
// with these functions, plain code written once, so the comparison is of frameworks, not of
// validation libraries. Both accept and refuse the same bodies: Fastify's Ajv runs without
// type coercion (see FASTIFY_OPTIONS), so "3" is no integer for either.

const HELLO = { hello: 'world' };
// Routes registered for `routes-400`: ROUTES static ones (/r<i>) and ROUTES with parameters.
const ROUTES = 200;
const paramRoute = (i) => `/p${i}/:id/items/:item`;
// The largest request body any server accepts (413 above it) and the most items in a bulk body.
const BODY_LIMIT_BYTES = 100 * 1024;
const MAX_ITEMS = 500;
const TEA_KINDS = ['green', 'black', 'oolong'];
// `answer-100`: 100 objects built once in memory (about 17 KB as JSON).
const TEAS = Array.from({ length: 100 }, (_, i) => ({
  id: i + 1,
  name: `Tea number ${i + 1}`,
  tags: ['leaf', TEA_KINDS[i % 3], i % 2 === 0 ? 'hot' : 'iced'],
  price: Math.round((2.5 + i * 0.37) * 100) / 100,
  inStock: i % 4 !== 0,
  meta: { created: '2026-01-01T08:00:00.000Z', updated: '2026-06-01T08:00:00.000Z' },
}));
const MIDDLEWARES = 3;

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isId = (raw) => typeof raw === 'string' && /^[0-9]{1,9}$/.test(raw);
// Only application/json bodies are parsed (415 otherwise), as Fastify does natively.
const isJsonType = (ctype) => typeof ctype === 'string' && /^application\/json\s*(;|$)/i.test(ctype);

// An email address as Ajv's "email" format reads one (fast mode).
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;
// Seed 001's stand-in for the database: a fixed setTimeout in its slow variant.
const CRUD_DELAY_MS = 2;
// Each returns null for a valid value, or the message of the 400 it gets.
const check = {
  user(b) {
    if (!isObject(b)) return 'body must be a JSON object';
    if (typeof b.name !== 'string' || b.name.length === 0) return 'name must be a non-empty string';
    if (!Number.isInteger(b.age)) return 'age must be an integer';
    return null;
  },
  // Seed 001's CRUD body (its Fastify schema's rules; Express configurations use express-validator instead).
  account(b) {
    if (!isObject(b)) return 'body must be a JSON object';
    if (typeof b.email !== 'string' || !EMAIL.test(b.email)) return 'email must be an email address';
    if (typeof b.name !== 'string' || b.name.length < 1 || b.name.length > 100) return 'name must be 1 to 100 characters';
    if (!Number.isInteger(b.age) || b.age < 0 || b.age > 150) return 'age must be an integer from 0 to 150';
    return null;
  },
  teas(b) {
    if (!isObject(b) || !Array.isArray(b.items)) return 'body must be an object with an items array';
    if (b.items.length < 1 || b.items.length > MAX_ITEMS) return `items must hold 1 to ${MAX_ITEMS} objects`;
    for (let i = 0; i < b.items.length; i++) {
      const t = b.items[i];
      if (!isObject(t)) return `items[${i}] must be an object`;
      if (typeof t.name !== 'string' || t.name.length === 0) return `items[${i}].name must be a non-empty string`;
      if (!TEA_KINDS.includes(t.kind)) return `items[${i}].kind must be one of ${TEA_KINDS.join(', ')}`;
      if (!Number.isInteger(t.grams) || t.grams < 1) return `items[${i}].grams must be an integer >= 1`;
      if (typeof t.price !== 'number' || !(t.price >= 0)) return `items[${i}].price must be a number >= 0`;
    }
    return null;
  },
};

// The same rules as JSON Schema, for Fastify.
const SCHEMAS = {
  idParam: { type: 'object', properties: { id: { type: 'string', pattern: '^[0-9]{1,9}$' } }, required: ['id'] },
  fieldsQuery: { type: 'object', properties: { fields: { type: 'string' } } },
  userBody: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer' } },
    required: ['name', 'age'],
  },
  // Seed 001's schema, as it wrote it.
  accountBody: {
    type: 'object',
    required: ['email', 'name', 'age'],
    properties: {
      email: { type: 'string', format: 'email' },
      name: { type: 'string', minLength: 1, maxLength: 100 },
      age: { type: 'integer', minimum: 0, maximum: 150 },
    },
  },
  teasBody: {
    type: 'object',
    properties: {
      items: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_ITEMS,
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1 },
            kind: { enum: TEA_KINDS },
            grams: { type: 'integer', minimum: 1 },
            price: { type: 'number', minimum: 0 },
          },
          required: ['name', 'kind', 'grams', 'price'],
        },
      },
    },
    required: ['items'],
  },
};
// Response schemas for fastify-schema (fast-json-stringify), one per answer.
const RESPONSE_SCHEMAS = {
  hello: { type: 'object', properties: { hello: { type: 'string' } } },
  params: { type: 'object', properties: { id: { type: 'integer' }, fields: { type: 'string' } } },
  created: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' }, age: { type: 'integer' } } },
  count: { type: 'object', properties: { count: { type: 'integer' } } },
  account: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      email: { type: 'string' },
      name: { type: 'string' },
      age: { type: 'integer' },
      createdAt: { type: 'string' },
    },
  },
  teas: {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        id: { type: 'integer' },
        name: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' } },
        price: { type: 'number' },
        inStock: { type: 'boolean' },
        meta: { type: 'object', properties: { created: { type: 'string' }, updated: { type: 'string' } } },
      },
    },
  },
  route: { type: 'object', properties: { route: { type: 'integer' }, id: { type: 'string' }, item: { type: 'string' } } },
  n: { type: 'object', properties: { n: { type: 'integer' } } },
  asyncId: { type: 'object', properties: { id: { type: 'string' } } },
};
// Fastify everywhere: no type coercion (the hand validators do none), the contract's body limit.
const FASTIFY_OPTIONS = {
  logger: false,
  bodyLimit: BODY_LIMIT_BYTES,
  ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
};

// Seed 003's synchronous work per /block request, spun on the clock so it is BLOCK_MS on any machine.
const BLOCK_MS = 20;
const FAST = { fast: true };
const BLOCKED = { blocked_ms: BLOCK_MS };
// The longest wait /delay/:ms accepts.
const MAX_DELAY_MS = 1000;
const isDelay = (raw) => /^[0-9]{1,4}$/.test(raw) && Number(raw) <= MAX_DELAY_MS;
const NOT_FOUND = { status: 404, body: { error: 'not found' } };
const bad = (message) => ({ status: 400, body: { error: message } });

// The scenarios' work after routing, parsing and validation, as {status, body}.
function makeScenarios(pool) {
  return {
    hello: () => ({ status: 200, body: HELLO }),
    params: (rawId, fields) =>
      isId(rawId) ? { status: 200, body: { id: Number(rawId), fields: String(fields ?? '') } } : bad('id must be a positive integer'),
    // The small-body user is never stored: the answer always carries id 1 (create-user-db stores it).
    createUser: (b) => ({ status: 201, body: { id: 1, name: b.name, age: b.age } }),
    async createUserDb(b) {
      const { rows } = await pool.query(SQL.createUser, [b.name, b.age]);
      return { status: 201, body: rows[0] };
    },
    bulkTeas: (b) => ({ status: 201, body: { count: b.items.length } }),
    teas: () => ({ status: 200, body: TEAS }),
    staticRoute: (i) => ({ status: 200, body: { route: i } }),
    paramRoute: (i, id, item) => ({ status: 200, body: { route: i, id, item } }),
    middlewares: (n) => ({ status: 200, body: { n } }),
    async later(id) {
      await new Promise(setImmediate);
      return { status: 200, body: { id } };
    },
    // Seed 001's CRUD answer after validation: the fields back with a time id and stamp, after the
    // slow variant's setTimeout (its simulated database).
    account: (delayMs) => async (b) => {
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return {
        status: 201,
        body: { id: Date.now(), email: b.email, name: b.name, age: b.age, createdAt: new Date().toISOString() },
      };
    },
    // Seed 003's routes: /fast awaits one microtask; /block holds the thread BLOCK_MS by the clock.
    async fast() {
      await null;
      return { status: 200, body: FAST };
    },
    block() {
      const until = performance.now() + BLOCK_MS;
      while (performance.now() < until);
      return { status: 200, body: BLOCKED };
    },
    // Seed 000's naive benchmark: a fixed setTimeout where a query would be, then `empty`'s answer.
    async delayed(rawMs) {
      if (!isDelay(rawMs)) return bad(`delay must be a whole number of milliseconds up to ${MAX_DELAY_MS}`);
      await new Promise((resolve) => setTimeout(resolve, Number(rawMs)));
      return { status: 200, body: STATIC_USER };
    },
  };
}

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

// Listen on loopback, print the readiness line, close server and pool on SIGTERM.
// `server` is the node:http Server under the framework; `listen` starts it.
function serve({ name, server, probe, listen, close }) {
  // Only with NODEBENCH_PROBE=hook (see PROBE_MODE), and then first, so it sees each request before the
  // framework can answer it. By default no request is touched.
  if (probe.hooked) server.prependListener('request', probe.onRequest);
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port <= 0) {
    console.error(`${name}: PORT must be set to a port number, got ${JSON.stringify(process.env.PORT)}`);
    process.exit(2);
  }
  listen(port, HOST)
    .then(() => {
      process.stdout.write(`READY ${name} ${HOST}:${port} pid=${process.pid}\n`);
    })
    .catch((err) => {
      console.error(`${name}: cannot listen on ${HOST}:${port}: ${err.code || ''} ${err.message}`);
      process.exit(3);
    });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(0), 3000);
    force.unref();
    close()
      .then(() => process.exit(0))
      .catch((err) => {
        console.error(`${name}: error while stopping: ${err.message}`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// Promise wrapper for a node:http Server: closes idle keep-alive sockets too.
function listenHttp(server) {
  return (port, host) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
}

function closeHttp(server, pool) {
  return () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }).then(() => pool.end());
}

module.exports = {
  BODY_LIMIT_BYTES,
  LISTEN_BACKLOG,
  CRUD_DELAY_MS,
  FASTIFY_OPTIONS,
  MIDDLEWARES,
  NOT_FOUND,
  RESPONSE_SCHEMAS,
  ROUTES,
  SCHEMAS,
  bad,
  check,
  isJsonType,
  makeScenarios,
  paramRoute,
  DRAIN_TIMEOUT_MS,
  POOL_SIZE,
  isProbe,
  SQL,
  STATIC_USER,
  USER_SCHEMA,
  ERROR_SCHEMA,
  createPool,
  makeHandlers,
  makeProbe,
  packageVersion,
  serve,
  listenHttp,
  closeHttp,
};

'use strict';
// The contract every server configuration answers: the same routes, the same SQL
// text, the same pool, the same payloads. Only the framework around it differs.
const { performance } = require('node:perf_hooks');
const { Pool } = require('pg');

const POOL_SIZE = Number(process.env.NODEBENCH_POOL_SIZE || 10);
const HOST = '127.0.0.1';

const COLUMNS = 'id, username, email, full_name, city, country, bio, score, active';
const SQL = {
  userById: `SELECT ${COLUMNS} FROM users WHERE id = $1`,
  list: `SELECT ${COLUMNS} FROM users ORDER BY id LIMIT 100`,
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

function createPool() {
  // Connection settings come from the standard PG* environment variables.
  const pool = new Pool({ max: POOL_SIZE, host: process.env.PGHOST || HOST });
  pool.on('error', (err) => console.error(`pg pool error: ${err.message}`));
  return pool;
}

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

// How long /__elu/stop waits for the window's requests still in flight before it
// gives up and says so (the harness then fails the run rather than report a short count).
const DRAIN_TIMEOUT_MS = Number(process.env.NODEBENCH_DRAIN_TIMEOUT_MS || 2000);

// /__whoami, /__elu/* and anything else under /__ is the harness talking to the server,
// never a request of the workload: no probe is ever counted or waited for.
const isProbe = (url) => url.startsWith('/__');

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

// The window a response belongs to (null: none), set when its request arrives.
const kWindow = Symbol('nodebench.window');
const SETTLED = Symbol('nodebench.settled');

// Identity, the ELU window and the cumulative sample. The window also carries process
// CPU over the same interval, which counts GC and thread-pool work that ELU does not.
//
// A request counts when its response has been sent (finished: handed to the kernel),
// and only if it arrived while the window was open; one whose connection
// closed first is `aborted`. /__elu/stop stops admitting requests to the window, waits
// (at most DRAIN_TIMEOUT_MS) until the window's requests in flight have finished, and only
// then reads ELU, CPU and the count, so the window holds the whole work of what it counts.
function makeProbe(name, framework, frameworkVersion) {
  let window = null;
  // Since the server started, for /__elu/sample: finished responses and requests in flight (probes excluded).
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
    if (finished) w.requests += 1;
    else w.aborted += 1;
    if (w.inFlight === 0 && w.onDrained !== null) w.onDrained();
  }
  return {
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
      window = {
        open: true,
        elu: performance.eventLoopUtilization(),
        cpu: process.cpuUsage(),
        ru: process.resourceUsage(),
        t0: process.hrtime.bigint(),
        requests: 0,
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
      let drained = true;
      if (w.inFlight > 0) {
        drained = await new Promise((resolve) => {
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
      const t1 = process.hrtime.bigint();
      const elu = performance.eventLoopUtilization(w.elu);
      const cpu = process.cpuUsage(w.cpu);
      const ru = process.resourceUsage();
      if (window === w) window = null;
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
          requests: w.requests,
          aborted: w.aborted,
          in_flight_at_stop: inFlightAtStop,
          drain_ms: Number(t1 - drainStart) / 1e6,
          drained,
          in_flight_after_drain: w.inFlight,
          invol_csw: ru.involuntaryContextSwitches - w.ru.involuntaryContextSwitches,
          vol_csw: ru.voluntaryContextSwitches - w.ru.voluntaryContextSwitches,
        },
      };
    },
    // Cumulative counters since the server started; reads only, so it never disturbs a window.
    sample() {
      const elu = performance.eventLoopUtilization();
      const cpu = process.cpuUsage();
      return {
        t_ms: nowMs(),
        elu_active_ms: elu.active,
        elu_idle_ms: elu.idle,
        cpu_user_us: cpu.user,
        cpu_system_us: cpu.system,
        completed,
        in_flight: inFlight,
      };
    },
  };
}

// Listen on loopback, print the readiness line, close server and pool on SIGTERM.
// `server` is the node:http Server under the framework; `listen` starts it.
function serve({ name, server, probe, listen, close }) {
  // First, so it sees each request before the framework can answer it.
  server.prependListener('request', probe.onRequest);
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
      server.listen(port, host, () => {
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
  serve,
  listenHttp,
  closeHttp,
};

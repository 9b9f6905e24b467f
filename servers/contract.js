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

// Identity and the ELU window. The window also carries process CPU over the same
// interval, which counts GC and thread-pool work that ELU does not.
function makeProbe(name, framework, frameworkVersion) {
  let window = null;
  return {
    // Listens to the node:http server's 'request' event, which every framework here
    // sits on: requests that reached the server while the window was open.
    onRequest() {
      if (window !== null) window.requests += 1;
    },
    whoami() {
      return { name, framework, framework_version: frameworkVersion, node_version: process.version, pid: process.pid };
    },
    eluStart() {
      window = { elu: performance.eventLoopUtilization(), cpu: process.cpuUsage(), t0: process.hrtime.bigint(), requests: 0 };
      return { ok: true };
    },
    eluStop() {
      if (window === null) return { status: 409, body: { error: '/__elu/start was not called' } };
      const elu = performance.eventLoopUtilization(window.elu);
      const cpu = process.cpuUsage(window.cpu);
      const wallMs = Number(process.hrtime.bigint() - window.t0) / 1e6;
      // Less this /__elu/stop request itself.
      const requests = window.requests - 1;
      window = null;
      return {
        status: 200,
        body: {
          idle_ms: elu.idle,
          active_ms: elu.active,
          utilization: elu.utilization,
          cpu_user_us: cpu.user,
          cpu_system_us: cpu.system,
          wall_ms: wallMs,
          requests,
        },
      };
    },
  };
}

// Listen on loopback, print the readiness line, close server and pool on SIGTERM.
// `server` is the node:http Server under the framework; `listen` starts it.
function serve({ name, server, probe, listen, close }) {
  server.on('request', probe.onRequest);
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
  POOL_SIZE,
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

'use strict';
// The database pool every server uses (../contract.js), and how many of its queries are still at the database.
const { Pool } = require('pg');
const { HOST } = require('./serve.js');

const POOL_SIZE = Number(process.env.NODEBENCH_POOL_SIZE || 10);

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

module.exports = { POOL_SIZE, createPool, dbBusy };

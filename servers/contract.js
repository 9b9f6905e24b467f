'use strict';
// The contract every server configuration answers: the same routes, the same SQL
// text, the same pool, the same payloads. Only the framework around it differs.
// This file holds the routes' work, answers and validation; beside it, contract/pool.js (the database pool),
// contract/probe.js (what the harness asks the server: /__whoami, /__elu/*, memory) and contract/serve.js
// (listening, readiness and shutdown). A server file requires this one only.
const { performance } = require('node:perf_hooks');
const { POOL_SIZE, createPool } = require('./contract/pool.js');
const { DRAIN_TIMEOUT_MS, isProbe, makeProbe, packageVersion } = require('./contract/probe.js');
const { LISTEN_BACKLOG, closeHttp, listenHttp, serve } = require('./contract/serve.js');

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

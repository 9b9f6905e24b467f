'use strict';
// Fastify 5 with a JSON Schema on every response, which switches on fast-json-stringify.
const fastify = require('fastify');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const probe = c.makeProbe('fastify-schema', 'fastify', require('fastify/package.json').version);

const app = fastify({ logger: false });
const reply = (rep, r) => rep.code(r.status).send(r.body);
const one = { response: { 200: c.USER_SCHEMA, '4xx': c.ERROR_SCHEMA } };
const many = { response: { 200: { type: 'array', items: c.USER_SCHEMA } } };

app.get('/static/:id', { schema: one }, async (req, rep) => reply(rep, h.staticUser()));
app.get('/users/:id', { schema: one }, async (req, rep) => reply(rep, await h.user(req.params.id)));
app.get('/list', { schema: many }, async (req, rep) => reply(rep, await h.list()));
app.get('/__whoami', async () => probe.whoami());
app.get('/__elu/start', async () => probe.eluStart());
app.get('/__elu/stop', async (req, rep) => reply(rep, await probe.eluStop()));
app.get('/__elu/sample', async () => probe.sample());

c.serve({
  name: 'fastify-schema',
  server: app.server,
  probe,
  listen: (port, host) => app.listen({ port, host }),
  close: () => app.close().then(() => pool.end()),
});

'use strict';
// Fastify 5 with its defaults: no response schema, so replies go through JSON.stringify.
const fastify = require('fastify');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const probe = c.makeProbe('fastify', 'fastify', require('fastify/package.json').version);

const app = fastify({ logger: false });
const reply = (rep, r) => rep.code(r.status).send(r.body);

app.get('/static/:id', async (req, rep) => reply(rep, h.staticUser()));
app.get('/users/:id', async (req, rep) => reply(rep, await h.user(req.params.id)));
app.get('/list', async (req, rep) => reply(rep, await h.list()));
app.get('/__whoami', async () => probe.whoami());
app.get('/__elu/start', async () => probe.eluStart());
app.get('/__elu/stop', async (req, rep) => reply(rep, await probe.eluStop()));
app.get('/__elu/sample', async () => probe.sample());

c.serve({
  name: 'fastify',
  server: app.server,
  probe,
  listen: (port, host) => app.listen({ port, host }),
  close: () => app.close().then(() => pool.end()),
});

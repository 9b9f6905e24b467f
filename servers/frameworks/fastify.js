'use strict';
// Fastify on the contract, for every Fastify configuration (servers/fastify*.js name theirs;
// fastify4.js runs Fastify 4 through its npm alias).
// Requests are validated with JSON Schema (Fastify's own way); with `responseSchemas` every
// answer is also serialised from a schema (fast-json-stringify).
const c = require('../contract.js');

// options: {name, pkg (the npm package), responseSchemas}
module.exports = function start({ name, pkg = 'fastify', responseSchemas = false }) {
  const fastify = require(pkg);
  const pool = c.createPool();
  const h = c.makeHandlers(pool);
  const s = c.makeScenarios(pool);
  const probe = c.makeProbe(name, 'fastify', require(`${pkg}/package.json`).version);
  const R = c.RESPONSE_SCHEMAS;

  const app = fastify(c.FASTIFY_OPTIONS);
  // JSON bodies only, as every server here: another content type is a 415.
  app.removeContentTypeParser('text/plain');
  const reply = (rep, r) => rep.code(r.status).send(r.body);
  // A route's schema: its request parts, and its answers' when responseSchemas is on.
  const schema = (request, response) =>
    responseSchemas ? { schema: { ...request, response: { ...response, '4xx': c.ERROR_SCHEMA } } } : { schema: request };
  const one = { 200: c.USER_SCHEMA };

  app.get('/static/:id', schema({}, one), async (req, rep) => reply(rep, h.staticUser()));
  app.get('/users/:id', schema({}, one), async (req, rep) => reply(rep, await h.user(req.params.id)));
  app.get('/list', schema({}, { 200: { type: 'array', items: c.USER_SCHEMA } }), async (req, rep) =>
    reply(rep, await h.list()),
  );
  app.get('/hello', schema({}, { 200: R.hello }), async (req, rep) => reply(rep, s.hello()));
  app.get(
    '/people/:id',
    schema({ params: c.SCHEMAS.idParam, querystring: c.SCHEMAS.fieldsQuery }, { 200: R.params }),
    async (req, rep) => reply(rep, s.params(req.params.id, req.query.fields)),
  );
  app.post('/users', schema({ body: c.SCHEMAS.userBody }, { 201: R.created }), async (req, rep) =>
    reply(rep, s.createUser(req.body)),
  );
  app.post('/signups', schema({ body: c.SCHEMAS.userBody }, { 201: R.created }), async (req, rep) =>
    reply(rep, await s.createUserDb(req.body)),
  );
  app.post('/teas/bulk', schema({ body: c.SCHEMAS.teasBody }, { 201: R.count }), async (req, rep) =>
    reply(rep, s.bulkTeas(req.body)),
  );
  // Seed 001's route as it wrote it: the body schema and the 201 response schema (every configuration).
  const account = { schema: { body: c.SCHEMAS.accountBody, response: { 201: R.account } } };
  app.post('/crud/users', account, async (req, rep) => reply(rep, await s.account(0)(req.body)));
  app.post('/crud/users-2ms', account, async (req, rep) => reply(rep, await s.account(c.CRUD_DELAY_MS)(req.body)));
  app.get('/teas', schema({}, { 200: R.teas }), async (req, rep) => reply(rep, s.teas()));
  app.get('/fast', async (req, rep) => reply(rep, await s.fast()));
  app.get('/block', async (req, rep) => reply(rep, s.block()));
  for (let i = 0; i < c.ROUTES; i++) {
    app.get(`/r${i}`, schema({}, { 200: R.route }), async (req, rep) => reply(rep, s.staticRoute(i)));
    app.get(c.paramRoute(i), schema({}, { 200: R.route }), async (req, rep) =>
      reply(rep, s.paramRoute(i, req.params.id, req.params.item)),
    );
  }
  // Three onRequest hooks on this route only, each setting a header and counting.
  const hooks = Array.from({ length: c.MIDDLEWARES }, (_, i) => (req, rep, done) => {
    rep.header(`x-mw-${i + 1}`, '1');
    req.mw = (req.mw || 0) + 1;
    done();
  });
  app.get('/mw', { onRequest: hooks, ...schema({}, { 200: R.n }) }, async (req, rep) =>
    reply(rep, s.middlewares(req.mw)),
  );
  app.get('/async/:id', schema({}, { 200: R.asyncId }), async (req, rep) => reply(rep, await s.later(req.params.id)));
  app.get('/delay/:ms', schema({}, one), async (req, rep) => reply(rep, await s.delayed(req.params.ms)));
  app.get('/__whoami', async () => probe.whoami());
  app.get('/__elu/start', async () => probe.eluStart());
  app.get('/__elu/stop', async (req, rep) => reply(rep, await probe.eluStop()));
  app.get('/__elu/sample', async () => probe.sample());
  app.setNotFoundHandler((req, rep) => reply(rep, c.NOT_FOUND));

  c.serve({
    name,
    server: app.server,
    probe,
    listen: (port, host) => app.listen({ port, host, backlog: c.LISTEN_BACKLOG }),
    close: () => app.close().then(() => pool.end()),
  });
};

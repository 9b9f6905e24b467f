'use strict';
// Express on the contract, for every Express configuration (servers/express*.js name theirs;
// express4.js runs Express 4 through its npm alias).
// Bodies are parsed by express.json() on the POST routes only and validated by the contract's
// hand validators; errors (413, 400 for JSON that does not parse) are answered as JSON.
const http = require('node:http');
const { body, validationResult } = require('express-validator');
const c = require('../contract.js');

// options: {name, pkg (the npm package, so a configuration can name another major), lean}
module.exports = function start({ name, pkg = 'express', lean = false }) {
  const express = require(pkg);
  const pool = c.createPool();
  const h = c.makeHandlers(pool);
  const s = c.makeScenarios(pool);
  const version = require(`${pkg}/package.json`).version;
  const probe = c.makeProbe(name, 'express', version);
  // Express 5 passes a rejected async handler's error to the error handler; Express 4 does not
  // (the rejection is unhandled and ends the process), so on Express 4 every async handler is
  // wrapped the way Express 4 applications must do it.
  const handle = Number(version.split('.')[0]) >= 5 ? (fn) => fn : (fn) => (req, res, next) => Promise.resolve(fn(req, res, next)).catch(next);

  const app = express();
  if (lean) {
    app.set('etag', false);
    app.disable('x-powered-by');
  }
  const reply = (res, r) => res.status(r.status).json(r.body);
  const json = express.json({ limit: c.BODY_LIMIT_BYTES, type: () => true });
  const onlyJson = (req, res, next) =>
    c.isJsonType(req.headers['content-type']) ? next() : reply(res, { status: 415, body: { error: 'content type must be application/json' } });
  const post = (check, work) => [
    onlyJson,
    json,
    handle(async (req, res) => {
      const problem = check(req.body);
      if (problem) return reply(res, c.bad(problem));
      reply(res, await work(req.body));
    }),
  ];

  app.get('/static/:id', (req, res) => reply(res, h.staticUser()));
  app.get('/users/:id', handle(async (req, res) => reply(res, await h.user(req.params.id))));
  app.get('/list', handle(async (req, res) => reply(res, await h.list())));
  app.get('/hello', (req, res) => reply(res, s.hello()));
  app.get('/people/:id', (req, res) => reply(res, s.params(req.params.id, req.query.fields)));
  app.post('/users', ...post(c.check.user, s.createUser));
  app.post('/signups', ...post(c.check.user, s.createUserDb));
  app.post('/teas/bulk', ...post(c.check.teas, s.bulkTeas));
  app.get('/teas', (req, res) => reply(res, s.teas()));
  app.get('/fast', handle(async (req, res) => reply(res, await s.fast())));
  app.get('/block', (req, res) => reply(res, s.block()));
  // Seed 003's failure modes, wrong on purpose: a middleware that forgets next() (the request hangs) and
  // an async handler that throws, not wrapped (Express 4 leaves the rejection unhandled; Express 5 answers 500).
  // eslint-disable-next-line no-unused-vars
  app.get('/hang', (req, res, next) => {}, (req, res) => reply(res, s.hello()));
  app.get('/throws', async () => {
    throw new Error('thrown in an async handler');
  });
  // Seed 001's route as it wrote it: express-validator's chain, then validationResult.
  const account = (delayMs) => [
    onlyJson,
    json,
    body('email').isEmail(),
    body('name').isString().isLength({ min: 1, max: 100 }),
    body('age').isInt({ min: 0, max: 150 }),
    handle(async (req, res) => {
      const errors = validationResult(req);
      if (!errors.isEmpty()) return res.status(400).json({ error: 'invalid body', errors: errors.array() });
      reply(res, await s.account(delayMs)(req.body));
    }),
  ];
  app.post('/crud/users', ...account(0));
  app.post('/crud/users-2ms', ...account(c.CRUD_DELAY_MS));
  for (let i = 0; i < c.ROUTES; i++) {
    app.get(`/r${i}`, (req, res) => reply(res, s.staticRoute(i)));
    app.get(c.paramRoute(i), (req, res) => reply(res, s.paramRoute(i, req.params.id, req.params.item)));
  }
  const middlewares = Array.from({ length: c.MIDDLEWARES }, (_, i) => (req, res, next) => {
    res.set(`x-mw-${i + 1}`, '1');
    req.mw = (req.mw || 0) + 1;
    next();
  });
  app.get('/mw', ...middlewares, (req, res) => reply(res, s.middlewares(req.mw)));
  app.get('/async/:id', handle(async (req, res) => reply(res, await s.later(req.params.id))));
  app.get('/delay/:ms', handle(async (req, res) => reply(res, await s.delayed(req.params.ms))));
  app.get('/__whoami', (req, res) => res.json(probe.whoami()));
  app.get('/__elu/start', (req, res) => res.json(probe.eluStart()));
  app.get('/__elu/stop', handle(async (req, res) => reply(res, await probe.eluStop())));
  app.get('/__elu/sample', (req, res) => res.json(probe.sample()));
  app.use((req, res) => reply(res, c.NOT_FOUND));
  // Express's own error handler answers HTML; the contract answers JSON with the error's status.
  // eslint-disable-next-line no-unused-vars
  app.use((err, req, res, next) => {
    const status = err.status >= 400 && err.status < 500 ? err.status : 500;
    reply(res, { status, body: { error: status === 500 ? err.message : err.type || err.message } });
  });

  const server = http.createServer(app);
  c.serve({ name, server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });
};

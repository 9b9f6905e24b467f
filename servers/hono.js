'use strict';
// Hono 4 on @hono/node-server, with hand validation (the contract's) and Hono's body limit.
const { Hono } = require('hono');
const { bodyLimit } = require('hono/body-limit');
const { createAdaptorServer } = require('@hono/node-server');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const s = c.makeScenarios(pool);
const probe = c.makeProbe('hono', 'hono', c.packageVersion('hono'));

const app = new Hono();
const reply = (ctx, r) => ctx.json(r.body, r.status);
const limit = bodyLimit({ maxSize: c.BODY_LIMIT_BYTES, onError: (ctx) => reply(ctx, { status: 413, body: { error: 'body too large' } }) });
// A POST route: JSON only (415), within the limit (413), parsed (400) and validated (400) before `work`.
const post = (check, work) => [
  limit,
  async (ctx) => {
    if (!c.isJsonType(ctx.req.header('content-type'))) {
      return reply(ctx, { status: 415, body: { error: 'content type must be application/json' } });
    }
    let body;
    try {
      body = await ctx.req.json();
    } catch {
      return reply(ctx, c.bad('body is not valid JSON'));
    }
    const problem = check(body);
    if (problem) return reply(ctx, c.bad(problem));
    return reply(ctx, await work(body));
  },
];

app.get('/static/:id', (ctx) => reply(ctx, h.staticUser()));
app.get('/users/:id', async (ctx) => reply(ctx, await h.user(ctx.req.param('id'))));
app.get('/list', async (ctx) => reply(ctx, await h.list()));
app.get('/hello', (ctx) => reply(ctx, s.hello()));
app.get('/people/:id', (ctx) => reply(ctx, s.params(ctx.req.param('id'), ctx.req.query('fields'))));
app.post('/users', ...post(c.check.user, s.createUser));
app.post('/signups', ...post(c.check.user, s.createUserDb));
app.post('/teas/bulk', ...post(c.check.teas, s.bulkTeas));
app.post('/crud/users', ...post(c.check.account, s.account(0)));
app.post('/crud/users-2ms', ...post(c.check.account, s.account(c.CRUD_DELAY_MS)));
app.get('/teas', (ctx) => reply(ctx, s.teas()));
app.get('/fast', async (ctx) => reply(ctx, await s.fast()));
app.get('/block', (ctx) => reply(ctx, s.block()));
for (let i = 0; i < c.ROUTES; i++) {
  app.get(`/r${i}`, (ctx) => reply(ctx, s.staticRoute(i)));
  app.get(c.paramRoute(i), (ctx) => reply(ctx, s.paramRoute(i, ctx.req.param('id'), ctx.req.param('item'))));
}
const middlewares = Array.from({ length: c.MIDDLEWARES }, (_, i) => async (ctx, next) => {
  ctx.header(`x-mw-${i + 1}`, '1');
  ctx.set('mw', (ctx.get('mw') || 0) + 1);
  await next();
});
app.get('/mw', ...middlewares, (ctx) => reply(ctx, s.middlewares(ctx.get('mw'))));
app.get('/async/:id', async (ctx) => reply(ctx, await s.later(ctx.req.param('id'))));
app.get('/delay/:ms', async (ctx) => reply(ctx, await s.delayed(ctx.req.param('ms'))));
app.get('/__whoami', (ctx) => ctx.json(probe.whoami()));
app.get('/__elu/start', (ctx) => ctx.json(probe.eluStart()));
app.get('/__elu/stop', async (ctx) => reply(ctx, await probe.eluStop()));
app.get('/__elu/sample', (ctx) => ctx.json(probe.sample()));
app.notFound((ctx) => reply(ctx, c.NOT_FOUND));
app.onError((err, ctx) => reply(ctx, { status: 500, body: { error: err.message } }));

const server = createAdaptorServer({ fetch: app.fetch });
c.serve({ name: 'hono', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

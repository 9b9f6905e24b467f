'use strict';
// Koa 3 with @koa/router and @koa/bodyparser, with hand validation (the contract's).
const http = require('node:http');
const Koa = require('koa');
const Router = require('@koa/router');
const { bodyParser } = require('@koa/bodyparser');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const s = c.makeScenarios(pool);
const probe = c.makeProbe('koa', 'koa', require('koa/package.json').version);

const app = new Koa();
const router = new Router();
const reply = (ctx, r) => {
  ctx.status = r.status;
  ctx.body = r.body;
};
// Errors (413 too large, 400 JSON that does not parse, 415) answered as the contract's JSON.
app.use(async (ctx, next) => {
  try {
    await next();
  } catch (err) {
    const status = err.status >= 400 && err.status < 500 ? err.status : 500;
    reply(ctx, { status, body: { error: err.message } });
  }
});
const parse = bodyParser({ enableTypes: ['json'], jsonLimit: c.BODY_LIMIT_BYTES, encoding: 'utf-8' });
const post = (check, work) => [
  async (ctx, next) => {
    if (!c.isJsonType(ctx.get('content-type'))) {
      return reply(ctx, { status: 415, body: { error: 'content type must be application/json' } });
    }
    await next();
  },
  parse,
  async (ctx) => {
    const problem = check(ctx.request.body);
    if (problem) return reply(ctx, c.bad(problem));
    reply(ctx, await work(ctx.request.body));
  },
];

router.get('/static/:id', (ctx) => reply(ctx, h.staticUser()));
router.get('/users/:id', async (ctx) => reply(ctx, await h.user(ctx.params.id)));
router.get('/list', async (ctx) => reply(ctx, await h.list()));
router.get('/hello', (ctx) => reply(ctx, s.hello()));
router.get('/people/:id', (ctx) => reply(ctx, s.params(ctx.params.id, ctx.query.fields)));
router.post('/users', ...post(c.check.user, s.createUser));
router.post('/signups', ...post(c.check.user, s.createUserDb));
router.post('/teas/bulk', ...post(c.check.teas, s.bulkTeas));
router.post('/crud/users', ...post(c.check.account, s.account(0)));
router.post('/crud/users-2ms', ...post(c.check.account, s.account(c.CRUD_DELAY_MS)));
router.get('/teas', (ctx) => reply(ctx, s.teas()));
router.get('/fast', async (ctx) => reply(ctx, await s.fast()));
router.get('/block', (ctx) => reply(ctx, s.block()));
for (let i = 0; i < c.ROUTES; i++) {
  router.get(`/r${i}`, (ctx) => reply(ctx, s.staticRoute(i)));
  router.get(c.paramRoute(i), (ctx) => reply(ctx, s.paramRoute(i, ctx.params.id, ctx.params.item)));
}
const middlewares = Array.from({ length: c.MIDDLEWARES }, (_, i) => async (ctx, next) => {
  ctx.set(`x-mw-${i + 1}`, '1');
  ctx.state.mw = (ctx.state.mw || 0) + 1;
  await next();
});
router.get('/mw', ...middlewares, (ctx) => reply(ctx, s.middlewares(ctx.state.mw)));
router.get('/async/:id', async (ctx) => reply(ctx, await s.later(ctx.params.id)));
router.get('/delay/:ms', async (ctx) => reply(ctx, await s.delayed(ctx.params.ms)));
router.get('/__whoami', (ctx) => reply(ctx, { status: 200, body: probe.whoami() }));
router.get('/__elu/start', (ctx) => reply(ctx, { status: 200, body: probe.eluStart() }));
router.get('/__elu/stop', async (ctx) => reply(ctx, await probe.eluStop()));
router.get('/__elu/sample', (ctx) => reply(ctx, { status: 200, body: probe.sample() }));
app.use(router.routes());
app.use((ctx) => reply(ctx, c.NOT_FOUND));

const server = http.createServer(app.callback());
c.serve({ name: 'koa', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

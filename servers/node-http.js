'use strict';
// Baseline: bare node:http with hand routing (its own small matcher) and hand validation.
// What every framework adds is measured against this.
const http = require('node:http');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const s = c.makeScenarios(pool);
const probe = c.makeProbe('node-http', 'node:http', process.versions.node);

function send(res, status, body, headers) {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

const reply = (res, r) => send(res, r.status, r.body);
const fail = (res) => (err) => send(res, 500, { error: err.message });

// The router: exact paths in one Map, patterns ("/p7/:id/items/:item") by their first segment,
// matched segment by segment; each route gets (req, res, params, query).
function makeRouter() {
  const exact = new Map();
  const patterns = new Map();
  return {
    add(method, path, handler) {
      const parts = path.split('/').slice(1);
      if (!parts.some((p) => p.startsWith(':'))) {
        exact.set(`${method} ${path}`, handler);
        return;
      }
      const key = `${method} ${parts[0]}`;
      if (!patterns.has(key)) patterns.set(key, []);
      patterns.get(key).push({ parts, handler });
    },
    find(method, path) {
      const handler = exact.get(`${method} ${path}`);
      if (handler) return { handler, params: {} };
      const parts = path.split('/').slice(1);
      for (const route of patterns.get(`${method} ${parts[0]}`) || []) {
        if (route.parts.length !== parts.length) continue;
        const params = {};
        let ok = true;
        for (let i = 1; i < parts.length && ok; i++) {
          const want = route.parts[i];
          if (want.startsWith(':')) {
            if (parts[i] === '') ok = false;
            else params[want.slice(1)] = decodeURIComponent(parts[i]);
          } else if (want !== parts[i]) ok = false;
        }
        if (ok) return { handler: route.handler, params };
      }
      return null;
    },
  };
}

// A JSON body: 415 for another content type, 413 above the limit, 400 when it does not parse.
function readJson(req, res, then) {
  if (!c.isJsonType(req.headers['content-type'])) {
    send(res, 415, { error: 'content type must be application/json' });
    req.resume();
    return;
  }
  if (Number(req.headers['content-length']) > c.BODY_LIMIT_BYTES) {
    send(res, 413, { error: 'body too large' }, { connection: 'close' });
    req.resume();
    return;
  }
  const chunks = [];
  let size = 0;
  let refused = false;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > c.BODY_LIMIT_BYTES && !refused) {
      refused = true;
      send(res, 413, { error: 'body too large' }, { connection: 'close' });
    }
    if (!refused) chunks.push(chunk);
  });
  req.on('end', () => {
    if (refused) return;
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      send(res, 400, { error: 'body is not valid JSON' });
      return;
    }
    then(body);
  });
}

// A POST route whose body `check` validates before `work` runs.
const post = (check, work) => (req, res) =>
  readJson(req, res, (body) => {
    const problem = check(body);
    if (problem) return send(res, 400, { error: problem });
    Promise.resolve(work(body)).then((r) => reply(res, r), fail(res));
  });

const router = makeRouter();
router.add('GET', '/static/:id', (req, res) => reply(res, h.staticUser()));
router.add('GET', '/users/:id', (req, res, p) => h.user(p.id).then((r) => reply(res, r), fail(res)));
router.add('GET', '/list', (req, res) => h.list().then((r) => reply(res, r), fail(res)));
router.add('GET', '/hello', (req, res) => reply(res, s.hello()));
router.add('GET', '/people/:id', (req, res, p, q) => reply(res, s.params(p.id, q.get('fields'))));
router.add('POST', '/users', post(c.check.user, s.createUser));
router.add('POST', '/signups', post(c.check.user, s.createUserDb));
router.add('POST', '/teas/bulk', post(c.check.teas, s.bulkTeas));
router.add('POST', '/crud/users', post(c.check.account, s.account(0)));
router.add('POST', '/crud/users-2ms', post(c.check.account, s.account(c.CRUD_DELAY_MS)));
router.add('GET', '/teas', (req, res) => reply(res, s.teas()));
router.add('GET', '/fast', (req, res) => s.fast().then((r) => reply(res, r), fail(res)));
router.add('GET', '/block', (req, res) => reply(res, s.block()));
for (let i = 0; i < c.ROUTES; i++) {
  router.add('GET', `/r${i}`, (req, res) => reply(res, s.staticRoute(i)));
  router.add('GET', c.paramRoute(i), (req, res, p) => reply(res, s.paramRoute(i, p.id, p.item)));
}
// Three middlewares, each setting a header and counting, then the handler.
const middlewares = Array.from({ length: c.MIDDLEWARES }, (_, i) => (req, res) => {
  res.setHeader(`x-mw-${i + 1}`, '1');
  req.mw = (req.mw || 0) + 1;
});
router.add('GET', '/mw', (req, res) => {
  for (const m of middlewares) m(req, res);
  reply(res, s.middlewares(req.mw));
});
router.add('GET', '/async/:id', (req, res, p) => s.later(p.id).then((r) => reply(res, r), fail(res)));
router.add('GET', '/delay/:ms', (req, res, p) => s.delayed(p.ms).then((r) => reply(res, r), fail(res)));
router.add('GET', '/__whoami', (req, res) => send(res, 200, probe.whoami()));
router.add('GET', '/__elu/start', (req, res) => send(res, 200, probe.eluStart()));
router.add('GET', '/__elu/stop', (req, res) => probe.eluStop().then((r) => reply(res, r), fail(res)));
router.add('GET', '/__elu/sample', (req, res) => send(res, 200, probe.sample()));

const server = http.createServer((req, res) => {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  let found;
  try {
    found = router.find(req.method, path);
  } catch {
    return send(res, 400, { error: 'malformed path' });
  }
  if (found === null) return reply(res, c.NOT_FOUND);
  const query = q === -1 ? null : new URLSearchParams(url.slice(q + 1));
  found.handler(req, res, found.params, query || new URLSearchParams());
});

c.serve({ name: 'node-http', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

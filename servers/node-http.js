'use strict';
// Baseline: bare node:http with hand routing. What every framework adds is measured against this.
const http = require('node:http');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const probe = c.makeProbe('node-http', 'node:http', process.versions.node);

function send(res, status, body) {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

function reply(res, result) {
  send(res, result.status, result.body);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'GET') return send(res, 404, { error: 'not found' });
  const url = req.url;
  if (url.startsWith('/users/')) {
    h.user(url.slice(7)).then((r) => reply(res, r), (err) => send(res, 500, { error: err.message }));
  } else if (url === '/list') {
    h.list().then((r) => reply(res, r), (err) => send(res, 500, { error: err.message }));
  } else if (url.startsWith('/static/')) {
    reply(res, h.staticUser());
  } else if (url === '/__whoami') {
    send(res, 200, probe.whoami());
  } else if (url === '/__elu/start') {
    send(res, 200, probe.eluStart());
  } else if (url === '/__elu/stop') {
    probe.eluStop().then((r) => reply(res, r), (err) => send(res, 500, { error: err.message }));
  } else if (url === '/__elu/sample') {
    send(res, 200, probe.sample());
  } else {
    send(res, 404, { error: 'not found' });
  }
});

c.serve({ name: 'node-http', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

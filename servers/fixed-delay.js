'use strict';
// The instrument's calibration, not a framework: it answers `empty` and `point-lookup` exactly as every server does
// (the contract's answer, the point-lookup's query) but holds each answer until FIXED_DELAY_MS after its request
// arrived. Its latency is that delay, so what an open loop measures above it is the instrument's own error: the
// client, the kernel, the loopback and this machine's wake-ups at that rate, beside the servers it measures
// (docs/openloop.md, "The instrument in every round"). The delay is spun (a setImmediate loop until
// performance.now() has passed it), not a timer: libuv's timers have millisecond resolution and fire late. The loop
// never blocks: other requests and the query's answer are read meanwhile. Its event loop never sleeps either (a
// setImmediate loop for the process's life), so a request never pays its CPU's wake-up from idle (0.3 ms on this
// virtual machine; docs/openloop.md): that is the machine's, which a server under test meets at low rates, not the
// instrument's. Its CPU and ELU are the spin's, so its cost per request means nothing: reports keep it out of the
// cost tables. Other paths answer 404.
const http = require('node:http');
const { performance } = require('node:perf_hooks');
const c = require('./contract.js');

// Kept equal to nodebench/catalogue/calibration.py's DELAY_MS (tests/unit/test_calibration.py reads both).
const FIXED_DELAY_MS = 1;

const pool = c.createPool();
const h = c.makeHandlers(pool);
const probe = c.makeProbe('fixed-delay', 'node:http', process.versions.node);

function send(res, status, body) {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

// Answers r at `due` (performance.now() ms), or at once when it is already past.
function answerAt(res, due, r) {
  const spin = () => (performance.now() >= due ? send(res, r.status, r.body) : setImmediate(spin));
  spin();
}

const server = http.createServer((req, res) => {
  const due = performance.now() + FIXED_DELAY_MS;
  const url = req.url;
  if (url === '/__whoami') return send(res, 200, probe.whoami());
  if (url === '/__elu/start') return send(res, 200, probe.eluStart());
  if (url === '/__elu/sample') return send(res, 200, probe.sample());
  if (url === '/__elu/stop') {
    return probe.eluStop().then(
      (r) => send(res, r.status, r.body),
      (err) => send(res, 500, { error: err.message }),
    );
  }
  if (req.method === 'GET' && url.startsWith('/static/')) return answerAt(res, due, h.staticUser());
  if (req.method === 'GET' && url.startsWith('/users/')) {
    return h.user(url.slice('/users/'.length)).then(
      (r) => answerAt(res, due, r),
      (err) => send(res, 500, { error: err.message }),
    );
  }
  return send(res, c.NOT_FOUND.status, c.NOT_FOUND.body);
});

const keepBusy = () => setImmediate(keepBusy);
keepBusy();

c.serve({ name: 'fixed-delay', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

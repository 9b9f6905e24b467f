'use strict';
// Listening, the readiness line and shutdown, for every server (../contract.js).
const HOST = '127.0.0.1';
// The listen queue: Node's default (511) is below the 512 connections of the largest
// sweep, and a load generator opens all of them at once. When the queue overflows the
// kernel drops the handshake and the client waits for a SYN retransmit (1 s, then 3 s),
// which is then measured as the server's latency. The kernel caps it at
// net.core.somaxconn; the harness fails a run whose window saw the queue overflow.
const LISTEN_BACKLOG = 4096;

// Listen on loopback, print the readiness line, close server and pool on SIGTERM.
// `server` is the node:http Server under the framework; `listen` starts it.
function serve({ name, server, probe, listen, close }) {
  // Only with NODEBENCH_PROBE=hook (see PROBE_MODE), and then first, so it sees each request before the
  // framework can answer it. By default no request is touched.
  if (probe.hooked) server.prependListener('request', probe.onRequest);
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port <= 0) {
    console.error(`${name}: PORT must be set to a port number, got ${JSON.stringify(process.env.PORT)}`);
    process.exit(2);
  }
  listen(port, HOST)
    .then(() => {
      process.stdout.write(`READY ${name} ${HOST}:${port} pid=${process.pid}\n`);
    })
    .catch((err) => {
      console.error(`${name}: cannot listen on ${HOST}:${port}: ${err.code || ''} ${err.message}`);
      process.exit(3);
    });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(0), 3000);
    force.unref();
    close()
      .then(() => process.exit(0))
      .catch((err) => {
        console.error(`${name}: error while stopping: ${err.message}`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// Promise wrapper for a node:http Server: closes idle keep-alive sockets too.
function listenHttp(server) {
  return (port, host) =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
}

function closeHttp(server, pool) {
  return () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }).then(() => pool.end());
}

module.exports = { HOST, LISTEN_BACKLOG, closeHttp, listenHttp, serve };

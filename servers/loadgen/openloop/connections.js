'use strict';
// The open loop's connection pool and its HTTP/1.1 reader (../openloop.js): one request at a time per connection.
const net = require('node:net');
const { performance } = require('node:perf_hooks');

// HTTP/1.1 keep-alive on raw sockets (node:net), one request at a time per connection. node:http's client
// allocates a request and a response object, their headers and their streams for every request; on one CPU it
// topped out near 15,000 req/s and its garbage collections made its own sends 1-2 ms late at p99 even at
// 3,000 req/s. This writes one prebuilt request and reads the status, the length (Content-Length, or a chunked
// body) and nothing else.
const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

// A complete response at the start of buf: {end, status, close}, null when more bytes are needed; throws on
// what is not an HTTP/1.1 response.
function parseResponse(buf) {
  const headEnd = buf.indexOf(CRLFCRLF);
  if (headEnd < 0) return null;
  if (buf.toString('latin1', 0, 5) !== 'HTTP/') throw new Error(`not an HTTP response: ${JSON.stringify(buf.toString('latin1', 0, 40))}`);
  const status = (buf[9] - 48) * 100 + (buf[10] - 48) * 10 + (buf[11] - 48);
  const head = buf.toString('latin1', 0, headEnd).toLowerCase();
  const bodyStart = headEnd + 4;
  const close = head.includes('\r\nconnection: close');
  const cl = head.indexOf('\r\ncontent-length:');
  if (cl >= 0) {
    const lineEnd = head.indexOf('\r\n', cl + 2);
    const length = parseInt(head.slice(cl + 17, lineEnd < 0 ? head.length : lineEnd), 10);
    if (!(length >= 0)) throw new Error('a response with an unreadable content-length');
    const end = bodyStart + length;
    return end <= buf.length ? { end, status, close } : null;
  }
  if (head.includes('\r\ntransfer-encoding: chunked')) {
    let pos = bodyStart;
    for (;;) {
      const lineEnd = buf.indexOf(CRLF, pos);
      if (lineEnd < 0) return null;
      const size = parseInt(buf.toString('latin1', pos, lineEnd), 16);
      if (!(size >= 0)) throw new Error('a chunked response with an unreadable chunk size');
      if (size === 0) {
        const end = lineEnd + 4; // no trailers: the size line, then an empty line
        return end <= buf.length ? { end, status, close } : null;
      }
      pos = lineEnd + 2 + size + 2;
      if (pos > buf.length) return null;
    }
  }
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) return { end: bodyStart, status, close };
  throw new Error('a response with neither content-length nor a chunked body (reading to the close is not supported)');
}

class Connections {
  // onAnswer(scheduledAbs, dispatchedAbs, status, now, length) for each response; onFail() for each request lost.
  constructor(host, port, path, max) {
    this.host = host;
    this.port = port;
    this.max = max;
    // What node:http's client sends with a keep-alive agent (the harness sizes the answer from the same bytes).
    this.request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${host.includes(':') ? `[${host}]` : host}:${port}\r\nConnection: keep-alive\r\n\r\n`, 'latin1');
    this.idle = []; // a stack: the most recently used first, so idle ones stay idle and few stay busy
    this.all = new Set();
    this.opened = 0;
    this.onAnswer = null;
    this.onFail = null;
  }

  open() {
    const sock = net.connect({ host: this.host, port: this.port });
    sock.setNoDelay(true);
    const c = { sock, scheduled: -1, dispatched: -1, buf: null, used: false, dead: false };
    this.all.add(c);
    this.opened++;
    sock.on('data', (chunk) => this.data(c, chunk));
    const gone = () => this.gone(c);
    sock.on('error', gone);
    sock.on('close', gone);
    return c;
  }

  // Send the request due at scheduledAbs on an idle connection, or a new one (the caller keeps at most max busy).
  send(scheduledAbs, dispatchedAbs) {
    let c = this.idle.pop();
    while (c !== undefined && c.dead) c = this.idle.pop();
    if (c === undefined) c = this.open();
    c.scheduled = scheduledAbs;
    c.dispatched = dispatchedAbs;
    c.sock.write(this.request);
  }

  data(c, chunk) {
    c.buf = c.buf === null ? chunk : Buffer.concat([c.buf, chunk]);
    let res;
    try {
      res = parseResponse(c.buf);
    } catch (err) {
      process.stderr.write(`openloop: ${err.message}\n`);
      c.sock.destroy();
      return;
    }
    if (res === null) return;
    const now = performance.now();
    const scheduled = c.scheduled;
    if (scheduled < 0 || res.end !== c.buf.length) {
      process.stderr.write('openloop: the server sent bytes no request asked for\n');
      c.sock.destroy();
      return;
    }
    c.buf = null;
    c.scheduled = -1;
    c.used = true;
    if (res.close) {
      c.dead = true;
      c.sock.end();
    } else this.idle.push(c);
    this.onAnswer(scheduled, c.dispatched, res.status, now, res.end);
  }

  gone(c) {
    if (c.dead && !this.all.has(c)) return;
    c.dead = true;
    this.all.delete(c);
    c.sock.destroy();
    const scheduled = c.scheduled;
    c.scheduled = -1;
    if (scheduled < 0) return;
    // A reused connection the server closed as the request went out (its keep-alive timeout): send it again on
    // a new one, once, still timed from its schedule. Anything else is a lost request.
    if (c.used && c.buf === null) {
      const fresh = this.open();
      fresh.used = false;
      fresh.scheduled = scheduled;
      fresh.dispatched = c.dispatched;
      fresh.sock.write(this.request);
      return;
    }
    this.onFail(scheduled);
  }

  close() {
    for (const c of this.all) {
      c.dead = true;
      c.sock.destroy();
    }
    this.all.clear();
    this.idle = [];
  }
}

module.exports = { Connections, parseResponse };

'use strict';
// Express 5 with ETag and X-Powered-By off: compares the frameworks rather than their defaults.
const express = require('express');
const c = require('./contract.js');

const pool = c.createPool();
const h = c.makeHandlers(pool);
const probe = c.makeProbe('express-lean', 'express', require('express/package.json').version);

const app = express();
app.set('etag', false);
app.disable('x-powered-by');
const reply = (res, r) => res.status(r.status).json(r.body);

app.get('/static/:id', (req, res) => reply(res, h.staticUser()));
app.get('/users/:id', async (req, res) => reply(res, await h.user(req.params.id)));
app.get('/list', async (req, res) => reply(res, await h.list()));
app.get('/__whoami', (req, res) => res.json(probe.whoami()));
app.get('/__elu/start', (req, res) => res.json(probe.eluStart()));
app.get('/__elu/stop', async (req, res) => reply(res, await probe.eluStop()));
app.get('/__elu/sample', (req, res) => res.json(probe.sample()));

const server = require('node:http').createServer(app);
c.serve({ name: 'express-lean', server, probe, listen: c.listenHttp(server), close: c.closeHttp(server, pool) });

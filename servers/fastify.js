'use strict';
// Fastify 5 with its defaults: no response schema, so replies go through JSON.stringify.
require('./frameworks/fastify.js')({ name: 'fastify' });

'use strict';
// Fastify 5 with a JSON Schema on every response, which switches on fast-json-stringify.
require('./frameworks/fastify.js')({ name: 'fastify-schema', responseSchemas: true });

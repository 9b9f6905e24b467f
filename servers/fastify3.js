'use strict';
// Fastify 3.27.4 (npm alias fastify3), the version seed 002 measured, on the same framework module.
require('./frameworks/fastify.js')({ name: 'fastify3', pkg: 'fastify3' });

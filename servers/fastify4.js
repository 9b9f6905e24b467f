'use strict';
// Fastify 4 (the last 4.x, npm alias fastify4) with its defaults, on the same contract file as
// Fastify 5: the Fastify 4 to 5 change at equal work.
require('./frameworks/fastify.js')({ name: 'fastify4', pkg: 'fastify4' });

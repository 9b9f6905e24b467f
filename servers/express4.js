'use strict';
// Express 4 (the last 4.x, npm alias express4) with its defaults, on the same framework module as
// Express 5: the Express 4 to 5 change at equal work. Express 4 does not catch a rejected async
// handler, so the module wraps its async handlers the way Express 4 applications must.
require('./frameworks/express.js')({ name: 'express4', pkg: 'express4' });

'use strict';
// Express 4 (the last 4.x, npm alias express4) with its defaults, on the same contract file as
// Express 5: the Express 4 to 5 change at equal work. Express 4 does not catch a rejected async
// handler; no route here rejects unless the database fails, which fails the run either way.
require('./frameworks/express.js')({ name: 'express4', pkg: 'express4' });

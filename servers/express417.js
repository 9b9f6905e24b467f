'use strict';
// Express 4.17.3 (npm alias express417), the version seed 002 measured, on the same framework module.
require('./frameworks/express.js')({ name: 'express417', pkg: 'express417' });

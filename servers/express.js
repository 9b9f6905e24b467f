'use strict';
// Express 5 with its defaults: weak ETag and X-Powered-By on (see express-lean.js).
require('./frameworks/express.js')({ name: 'express' });

'use strict';
// Express 5 with ETag and X-Powered-By off: compares the frameworks rather than their defaults.
require('./frameworks/express.js')({ name: 'express-lean', lean: true });

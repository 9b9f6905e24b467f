'use strict';
// Drives autocannon for one measurement, speaking the harness's driver protocol (./driver.js: the ELU window
// opens right before the first request and closes right after the last, in this process).
//   argv[2]: {"url", "connections", "warmup_s", "duration_s", "method", "body", "headers"} or, for a fixed count,
//            {"url", "connections", "warmup_s", "amount"} (autocannon gives each
//            connection amount / connections requests)
// Its warm-up line carries autocannon's whole warm-up result; its result line autocannon's result and, for a
// fixed count, connection_finishes (below).
const autocannon = require('autocannon');
const { drive } = require('./driver.js');

const opts = JSON.parse(process.argv[2]);
const base = new URL(opts.url);

// stop: {duration: seconds} or {amount: requests}. onResponse, when given, sees every response.
function run(stop, onResponse) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: opts.url, connections: opts.connections, pipelining: 1, method: opts.method || 'GET', body: opts.body, headers: opts.headers, ...stop },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    // Without a listener autocannon prints nothing; keep it that way (no progress bar).
    instance.on('error', () => {});
    if (onResponse) instance.on('response', onResponse);
  });
}

// For a fixed count: when each connection got its last response (seconds after t0)
// and how many responses all connections had by then, in order of finishing.
// autocannon ends a fixed-count run only at its next once-a-second sample tick after
// the last connection finished, so these say how long the work really took.
function connectionClock(t0) {
  const last = new Map();
  let total = 0;
  return {
    onResponse: (client) => last.set(client, [performance.now(), ++total]),
    finishes: () =>
      [...last.values()].sort((a, b) => a[0] - b[0]).map(([t, n]) => ({ s: (t - t0) / 1000, responses: n })),
  };
}

const counted = opts.amount !== undefined;
let clock = null;

drive({
  tool: 'autocannon',
  base,
  // The whole warm-up result, so the harness can say what went wrong with it.
  warmup: () => (opts.warmup_s > 0 ? run({ duration: opts.warmup_s }) : null),
  window: () => {
    clock = counted ? connectionClock(performance.now()) : null;
    return run(counted ? { amount: opts.amount } : { duration: opts.duration_s }, clock?.onResponse);
  },
  report: (result) => ({ result, connection_finishes: clock ? clock.finishes() : null }),
}).catch((err) => {
  process.stderr.write(`autocannon driver: ${err.message}\n`);
  process.exit(1);
});

'use strict';
// Drives autocannon for one measurement so that the ELU window and the load run
// share one process: the window opens right before the first request and closes
// right after the last, and this process's own CPU over the window is the load
// generator's cost. Protocol (one JSON object per stdout line):
//   argv[2]: {"url", "connections", "warmup_s", "duration_s", "method", "body", "headers"} or, for a fixed count,
//            {"url", "connections", "warmup_s", "amount"} (autocannon gives each
//            connection amount / connections requests)
//   -> {"event":"loaded"}        then waits for "warmup\n" on stdin
//   -> {"event":"warmup", ...}   then waits for "go\n" on stdin
//   -> {"event":"window"}        the server's window is open (the harness samples host CPU now)
//   -> {"event":"result", "autocannon": <autocannon result>, "elu": <server window>, ...}
const autocannon = require('autocannon');
const http = require('node:http');
const readline = require('node:readline');

const opts = JSON.parse(process.argv[2]);
const base = new URL(opts.url);

function getJson(path) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: base.hostname, port: base.port, path, agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (data += chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path} answered ${res.statusCode}: ${data}`));
        try {
          resolve(JSON.parse(data));
        } catch (err) {
          reject(new Error(`GET ${path} answered invalid JSON (${err.message}): ${data.slice(0, 200)}`));
        }
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`GET ${path} timed out after 5 s`)));
    req.on('error', reject);
  });
}

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

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// Commands arrive one per line on stdin; the harness sends each when it is ready.
const commands = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function waitFor(word) {
  const { value, done } = await commands.next();
  if (done) throw new Error(`stdin closed before "${word}"`);
  if (value.trim() !== word) throw new Error(`expected "${word}" on stdin, got ${JSON.stringify(value)}`);
}

async function main() {
  // Loading autocannon takes a while; say so, so the harness can start us early.
  emit({ event: 'loaded' });
  await waitFor('warmup');
  const warm = opts.warmup_s > 0 ? await run({ duration: opts.warmup_s }) : null;
  // The whole warm-up result, so the harness can say what went wrong with it.
  emit({ event: 'warmup', autocannon: warm });
  await waitFor('go');
  await getJson('/__elu/start');
  const cpu0 = process.cpuUsage();
  const counted = opts.amount !== undefined;
  const t0 = process.hrtime.bigint();
  emit({ event: 'window' });
  const clock = counted ? connectionClock(performance.now()) : null;
  const result = await run(counted ? { amount: opts.amount } : { duration: opts.duration_s }, clock?.onResponse);
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const elu = await getJson('/__elu/stop');
  emit({
    event: 'result',
    autocannon: result,
    elu,
    window_s: Number(t1 - t0) / 1e9,
    connection_finishes: clock ? clock.finishes() : null,
    client_cpu_user_us: cpu.user,
    client_cpu_system_us: cpu.system,
  });
}

main().catch((err) => {
  process.stderr.write(`autocannon driver: ${err.message}\n`);
  process.exit(1);
});

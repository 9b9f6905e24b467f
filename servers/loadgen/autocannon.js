'use strict';
// Drives autocannon for one measurement so that the ELU window and the load run
// share one process: the window opens right before the first request and closes
// right after the last, and this process's own CPU over the window is the load
// generator's cost. Protocol (one JSON object per stdout line):
//   argv[2]: {"url", "connections", "warmup_s", "duration_s"}
//   -> {"event":"warmup", ...}   then waits for "go\n" on stdin
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
          reject(new Error(`GET ${path} answered invalid JSON: ${data.slice(0, 200)}`));
        }
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`GET ${path} timed out after 5 s`)));
    req.on('error', reject);
  });
}

function run(durationS) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: opts.url, connections: opts.connections, pipelining: 1, duration: durationS },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    // Without a listener autocannon prints nothing; keep it that way (no progress bar).
    instance.on('error', () => {});
  });
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function waitForGo() {
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.once('line', (line) => {
      rl.close();
      line.trim() === 'go' ? resolve() : reject(new Error(`expected "go" on stdin, got ${JSON.stringify(line)}`));
    });
    rl.once('close', () => reject(new Error('stdin closed before "go"')));
  });
}

async function main() {
  const warm = opts.warmup_s > 0 ? await run(opts.warmup_s) : null;
  emit({
    event: 'warmup',
    requests: warm ? warm.requests.total : 0,
    errors: warm ? warm.errors : 0,
    timeouts: warm ? warm.timeouts : 0,
    non2xx: warm ? warm.non2xx : 0,
  });
  await waitForGo();
  await getJson('/__elu/start');
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const result = await run(opts.duration_s);
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const elu = await getJson('/__elu/stop');
  emit({
    event: 'result',
    autocannon: result,
    elu,
    window_s: Number(t1 - t0) / 1e9,
    client_cpu_user_us: cpu.user,
    client_cpu_system_us: cpu.system,
  });
}

main().catch((err) => {
  process.stderr.write(`autocannon driver: ${err.message}\n`);
  process.exit(1);
});

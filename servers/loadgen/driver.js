'use strict';
// The harness's driver protocol, one for every load generator written in Node.js (autocannon.js, openloop.js):
// the server's ELU window and the load run share one process, so the window opens right before the first
// request and closes right after the last, and this process's own CPU over the window is the load generator's
// cost. One JSON object per stdout line; commands one per line on stdin, each sent when the harness is ready:
//   -> {"event":"loaded"}                  then waits for "warmup\n"
//   -> {"event":"warmup", <tool>: <its warm-up summary or null>}   then waits for "go\n"
//   -> {"event":"window"}                  the server's window is open (the harness samples host CPU now)
//   -> {"event":"result", <tool>: <its result>, "elu": <the server's window>, "window_s",
//       "client_cpu_user_us", "client_cpu_system_us", ...what the tool adds}
// scripts/nodebench/harness/loadgen.py's Driver reads it. A client written in Node.js supplies its warm-up, its
// window and its result to drive(); docs/extending.md says what else adding a client takes.
const http = require('node:http');
const readline = require('node:readline');

// GET a JSON answer from the server under test (its /__elu endpoints), on a connection of its own.
function getJson(base, path) {
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

// One protocol line on stdout, resolved once written.
const write = (line) => new Promise((resolve) => process.stdout.write(`${JSON.stringify(line)}\n`, resolve));

// Runs the protocol for one tool:
//   tool      the result's key ("autocannon", "openloop")
//   base      the server's URL (a URL object)
//   warmup()  the warm-up, resolving with its summary (or null)
//   idle()    optional: called once the warm-up's summary is out; returns what to call when "go" arrives
//   window()  the measured run, resolving with its state
//   report(state)  after the window has closed: { result, ...extra fields of the result line }
// The result's figures are made after the server's window closes, so making them (sorting latencies) is not in it.
async function drive({ tool, base, warmup, idle, window, report }) {
  const commands = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const waitFor = async (word) => {
    const { value, done } = await commands.next();
    if (done) throw new Error(`stdin closed before "${word}"`);
    if (value.trim() !== word) throw new Error(`expected "${word}" on stdin, got ${JSON.stringify(value)}`);
  };
  await write({ event: 'loaded' });
  await waitFor('warmup');
  await write({ event: 'warmup', [tool]: await warmup() });
  const wake = idle ? idle() : null;
  await waitFor('go');
  if (wake) wake();
  await getJson(base, '/__elu/start');
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await write({ event: 'window' });
  const state = await window();
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const elu = await getJson(base, '/__elu/stop');
  const { result, ...extra } = report(state);
  await write({
    event: 'result',
    [tool]: result,
    elu,
    window_s: Number(t1 - t0) / 1e9,
    ...extra,
    client_cpu_user_us: cpu.user,
    client_cpu_system_us: cpu.system,
  });
}

module.exports = { drive, getJson, write };

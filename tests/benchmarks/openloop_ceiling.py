"""Ceiling benchmark (not a test): the highest rate at which the open-loop client keeps its schedule.

    .venv/bin/python tests/benchmarks/openloop_ceiling.py [--rates 1000,2000,...] [--trials 3] [--duration 3]

Against the fastest trivial node:http server (tests/fixtures/openloop/fast.js), pinned to the
first CPU of this process's affinity mask, the client (servers/loadgen/openloop.js) runs pinned
to the second, stepping the rate up, with at most 50 connections (the latency experiment's). Each run
reports its schedule lag (each request's dispatch time minus its scheduled time); the client's refusal
threshold is lifted (--max-lag-p99-ms 0) so that the figure is printed rather than refused, except when
the client falls more than 1 s behind, which it always refuses. The ceiling is the highest rate whose
median lag p99 over the trials is within 1 ms, every lower rate's too (the issue's definition). Also
printed: the delivered rate, the requests still unanswered as the last was sent (backlog at end: more than
the 50 connections means the client and server pair could not keep the rate), the latency p50, and how far
the client's own lateness moved the latency p99 (client effect): the rate up to which the client "keeps
up" by the pipeline's refusal rules. First, the machine's own noise floor: how
often a busy loop on the client CPU is paused, and for how long (a pause delays every send due
during it, whatever the client does).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts")]

from nodebench.harness import procs  # noqa: E402

CLIENT = REPO / "servers" / "loadgen" / "openloop.js"
SERVER = REPO / "tests" / "fixtures" / "openloop" / "fast.js"
NODE = shutil.which("node")
LAG_LIMIT_MS = 1.0

NOISE_PROBE = """
const { performance } = require('node:perf_hooks');
const seconds = Number(process.argv[2]);
const end = performance.now() + seconds * 1000;
const over = { '0.05': 0, '0.2': 0, '0.5': 0, '1': 0, '2': 0 };
let last = performance.now(), lost = 0, worst = 0;
for (;;) {
  const t = performance.now();
  if (t > end) break;
  const gap = t - last;
  if (gap > 0.05) lost += gap;
  if (gap > worst) worst = gap;
  for (const k in over) if (gap > Number(k)) over[k]++;
  last = t;
}
console.log(JSON.stringify({ seconds, pauses_over_ms: over, lost_ms: lost, worst_ms: worst }));
"""


def pinning() -> tuple[list[str], list[str]]:
    cpus = sorted(os.sched_getaffinity(0))
    taskset = shutil.which("taskset")
    if len(cpus) < 2 or taskset is None:
        return [], []
    return [taskset, "-c", str(cpus[0])], [taskset, "-c", str(cpus[1])]


def noise_floor(client_cpu: list[str], seconds: float = 3) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as f:
        f.write(NOISE_PROBE)
    try:
        done = subprocess.run([*client_cpu, NODE, f.name, str(seconds)], capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return json.loads(done.stdout)


def one_run(client_cpu: list[str], port: int, rate: int, duration: float) -> dict:
    cmd = [*client_cpu, NODE, str(CLIENT), "--url", f"http://127.0.0.1:{port}/", "--rate", str(rate)]
    cmd += ["--duration", str(duration), "--warmup", "3", "--max-lag-p99-ms", "0", "--connections", "50"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30)
    if done.returncode != 0:
        return {"failed": done.stderr.strip()}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1000,2000,5000,10000,15000,20000,30000,40000,50000")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3)
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    server_cpu, client_cpu = pinning()
    print(f"CPUs: server {server_cpu[-1:] or 'any'}, client {client_cpu[-1:] or 'any'}; node {NODE}")
    print(f"noise floor on the client CPU: {json.dumps(noise_floor(client_cpu))}")

    port = procs.free_port()
    server = subprocess.Popen(
        [*server_cpu, NODE, str(SERVER), str(port)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    rows = []
    try:
        assert server.stdout.readline().strip() == "READY"
        header = (
            f"{'rate':>7} | {'lag p50 ms':>22} | {'lag p99 ms':>22} | {'lag max ms':>22} | "
            f"{'delivered req/s':>26} | {'backlog at end':>18} | {'latency p50 ms':>20} | {'client effect p99 ms':>22}"
        )
        print(header)
        print("-" * len(header))
        for rate in rates:
            runs = [one_run(client_cpu, port, rate, args.duration) for _ in range(args.trials)]
            ok = [r for r in runs if "failed" not in r]

            def cells(key, sub=None, runs=runs):
                vals = [(r[key][sub] if sub else r[key]) if "failed" not in r else None for r in runs]
                return " ".join("behind" if v is None else f"{v:g}" for v in vals)

            p99s = [r["lag_ms"]["p99"] if "failed" not in r else float("inf") for r in runs]
            median_p99 = statistics.median(p99s)
            # Keeps up: no more unanswered at the schedule's end than the connections, and its own lateness
            # moved the latency p99 by at most a tenth (the pipeline's refusal rule).
            kept = [
                "failed" not in r and r["backlog_at_end"] <= 50
                and r["client_effect_ms"]["p99"] <= max(0.1, 0.1 * r["latency_ms"]["p99"])
                for r in runs
            ]  # fmt: skip
            rows.append((rate, median_p99, sum(kept) * 2 > len(kept)))
            print(
                f"{rate:>7} | {cells('lag_ms', 'p50'):>22} | {cells('lag_ms', 'p99'):>22} | "
                f"{cells('lag_ms', 'max'):>22} | {cells('delivered_rate'):>26} | {cells('backlog_at_end'):>18} | "
                f"{cells('latency_ms', 'p50'):>20} | {cells('client_effect_ms', 'p99'):>22}"
            )
            for r in runs:
                if "failed" in r:
                    print(f"        {r['failed']}")
            if not ok:
                break
    finally:
        server.kill()
        server.wait(timeout=10)
    ceiling = None
    for rate, p99, _ in rows:
        if p99 > LAG_LIMIT_MS:
            break
        ceiling = rate
    keeps = None
    for rate, _, kept in rows:
        if not kept:
            break
        keeps = rate
    print(f"median lag p99 by rate: {', '.join(f'{r}: {p:g} ms' for r, p, _ in rows)}")
    print(f"ceiling (median lag p99 <= {LAG_LIMIT_MS:g} ms here and at every lower rate): {ceiling} req/s")
    print(
        "keeps up (most trials: backlog at end <= 50 and client effect on p99 <= 10 %, every lower rate too): "
        f"{keeps} req/s"
    )


if __name__ == "__main__":
    main()

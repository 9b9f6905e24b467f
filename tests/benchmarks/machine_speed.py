"""Machine-speed benchmark (a benchmark, not a test): does the same work cost the same CPU time from minute to minute?

    .venv/bin/python tests/benchmarks/machine_speed.py [--minutes 6] [--every 2] [--cpu 0] [--busy-cpu 1]
        [--json out.json]

The servers' cost per request moves from round to round by more than the harness can explain (issue 34: round CVs
of 4-11 % with nothing measured taking the server's CPU). This isolates the machine: one Node.js process pinned
to one CPU does a fixed unit of pure JavaScript work (JSON, strings, arithmetic: no I/O, no allocation growth) every
few seconds, and each unit's on-CPU time is read three ways: process.cpuUsage() inside, the main thread's
sum_exec_runtime from /proc/<pid>/task/<pid>/schedstat outside, and its run-queue wait from the same file, with
the CPU's steal, irq and softirq from /proc/stat. Prints the on-CPU time per unit (median, CV of all units, CV of
the per-minute medians: what a round of the pipeline would see), the share of wall time spent waiting for the CPU
and stolen, and the largest minute-to-minute step. If the per-minute CV is near the servers' round CV while wait
and steal stay near 0, the noise is the machine's speed (other tenants' use of the shared core's caches, memory
bandwidth or clock), which no counter the harness reads can see: only a quieter machine or more rounds lower it.
With --busy-cpu, every other unit runs while a busy loop spins on that CPU (stopped with SIGSTOP between
its units): paired unit by unit, whether load on the machine's other CPU (where the pipeline's load generator
runs) slows this one, as a shared physical core or shared caches would. Nothing else may measure meanwhile.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

WORK = r"""
const readline = require('readline');
function unit() {
  let h = 0;
  const o = { id: 7, name: 'nodebench', tags: ['a', 'b', 'c'], nested: { x: 1.5, y: [1, 2, 3, 4, 5] } };
  for (let i = 0; i < 6000; i++) {
    const s = JSON.stringify(o) + i;
    const p = JSON.parse(s.slice(0, -String(i).length));
    h = (h * 31 + s.length + p.nested.y[i % 5]) | 0;
    for (let j = 0; j < 40; j++) h = (h ^ (h << 5) ^ (j * 2654435761)) | 0;
  }
  return h;
}
for (let i = 0; i < 30; i++) unit();  // past the JIT's tiers
process.stdout.write('ready\n');
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', () => {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const h = unit();
  const t1 = process.hrtime.bigint();
  const c = process.cpuUsage(c0);
  process.stdout.write(JSON.stringify({ cpu_us: c.user + c.system, wall_us: Number(t1 - t0) / 1000, h }) + '\n');
});
"""


def schedstat(pid: int) -> tuple[int, int]:
    """(on-CPU ns, run-queue wait ns) of the process's main thread."""
    run, wait, _ = open(f"/proc/{pid}/task/{pid}/schedstat").read().split()
    return int(run), int(wait)


def cpu_ticks(cpu: int) -> dict:
    """The CPU's /proc/stat counters (ticks): irq, softirq, steal and the total."""
    for line in open("/proc/stat"):
        if line.startswith(f"cpu{cpu} "):
            v = [int(x) for x in line.split()[1:]]
            return {"irq": v[5], "softirq": v[6], "steal": v[7], "total": sum(v[:8])}
    raise RuntimeError(f"no cpu{cpu} in /proc/stat")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=6.0)
    ap.add_argument("--every", type=float, default=2.0, help="seconds between units")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--busy-cpu", type=int, help="every other unit with a busy loop spinning on this CPU")
    ap.add_argument("--json", help="write every unit's figures here")
    args = ap.parse_args()
    if args.minutes <= 0 or args.minutes > 120 or args.every < 0.2:
        ap.error("--minutes must be in (0, 120] and --every at least 0.2")
    n = int(args.minutes * 60 / args.every)
    print(f"{n} units, one every {args.every:g} s on CPU {args.cpu}: about {args.minutes:g} minutes", flush=True)
    node = subprocess.Popen(
        ["taskset", "-c", str(args.cpu), "node", "-e", WORK],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    units = []
    busy = None
    if args.busy_cpu is not None:
        busy = subprocess.Popen(["taskset", "-c", str(args.busy_cpu), sys.executable, "-c", "while True: pass"])
        os.kill(busy.pid, signal.SIGSTOP)
    try:
        if node.stdout.readline().strip() != "ready":
            raise RuntimeError("the work process did not start")
        start = time.monotonic()
        for i in range(n):
            loaded = busy is not None and i % 2 == 1
            if loaded:
                os.kill(busy.pid, signal.SIGCONT)
                time.sleep(0.2)
            s0, k0 = schedstat(node.pid), cpu_ticks(args.cpu)
            node.stdin.write("go\n")
            node.stdin.flush()
            got = json.loads(node.stdout.readline())
            s1, k1 = schedstat(node.pid), cpu_ticks(args.cpu)
            if loaded:
                os.kill(busy.pid, signal.SIGSTOP)
            span = max(k1["total"] - k0["total"], 1)
            units.append(
                {
                    "t_s": time.monotonic() - start,
                    "busy_beside": loaded,
                    "cpu_ms": got["cpu_us"] / 1000,
                    "oncpu_ms": (s1[0] - s0[0]) / 1e6,
                    "wait_ms": (s1[1] - s0[1]) / 1e6,
                    "wall_ms": got["wall_us"] / 1000,
                    "steal_share": (k1["steal"] - k0["steal"]) / span,
                    "irq_share": (k1["irq"] + k1["softirq"] - k0["irq"] - k0["softirq"]) / span,
                }
            )
            if (i + 1) % max(1, n // 6) == 0:
                print(f"  {i + 1} of {n} units ({(time.monotonic() - start) / 60:.1f} min)", flush=True)
            time.sleep(max(0.0, args.every - units[-1]["wall_ms"] / 1000))
    finally:
        for proc in (node, busy):
            if proc is not None:
                proc.kill()
                proc.wait()
    oncpu = np.array([u["oncpu_ms"] for u in units])
    minute = np.array([int(u["t_s"] // 60) for u in units])
    per_minute = np.array([np.median(oncpu[minute == m]) for m in np.unique(minute)])
    wall = np.array([u["wall_ms"] for u in units])
    wait = np.array([u["wait_ms"] for u in units])
    cv = lambda x: float(np.std(x, ddof=1) / np.mean(x)) if len(x) > 1 else float("nan")  # noqa: E731
    steps = np.abs(np.diff(np.log(per_minute))) if len(per_minute) > 1 else np.array([np.nan])
    print(f"on-CPU time per unit (schedstat): median {np.median(oncpu):.1f} ms, min {oncpu.min():.1f}, "
          f"max {oncpu.max():.1f}; CV of all {len(oncpu)} units {cv(oncpu):.2%}")  # fmt: skip
    print(f"per-minute medians ({len(per_minute)}): {', '.join(f'{v:.1f}' for v in per_minute)} ms; "
          f"CV {cv(per_minute):.2%}; largest minute-to-minute step {np.nanmax(steps):.2%} (log)")  # fmt: skip
    print(f"inside (process.cpuUsage) against outside (schedstat): median ratio "
          f"{np.median([u['cpu_ms'] / u['oncpu_ms'] for u in units]):.3f}")  # fmt: skip
    print(f"waiting for the CPU: {wait.sum() / wall.sum():.2%} of the units' wall time; steal "
          f"{np.mean([u['steal_share'] for u in units]):.2%}, irq+softirq "
          f"{np.mean([u['irq_share'] for u in units]):.2%} of CPU {args.cpu}'s time around the units")  # fmt: skip
    if busy is not None:
        quiet, loaded = oncpu[0::2], oncpu[1::2]
        pairs = loaded[: len(quiet)] / quiet[: len(loaded)]
        print(f"with CPU {args.busy_cpu} busy / idle, paired unit by unit: median {np.median(pairs):.3f} "
              f"[{np.percentile(pairs, 25):.3f}-{np.percentile(pairs, 75):.3f} quartiles]; medians "
              f"{np.median(loaded):.1f} / {np.median(quiet):.1f} ms")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": args.cpu, "every_s": args.every, "units": units, "host": os.uname().nodename}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

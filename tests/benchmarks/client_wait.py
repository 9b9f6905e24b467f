"""Client-wait benchmark (a benchmark, not a test): what the open-loop client's napping costs and gives.

    .venv/bin/python tests/benchmarks/client_wait.py [--rounds 4] [--servers express,fastify]
        [--workloads point-lookup,empty] [--loads 50,90] [--duration 5] [--warmup 3] [--keep DIR]

On this 2-core machine the open-loop client and the embedded PostgreSQL share a CPU. `openloop` naps between
sends there (servers/loadgen/openloop.js --nap: asleep in epoll, woken 0.15 ms before each send by a timer
thread); `openloop_spin` spins its CPU for the whole run, as every open loop did before 2026-12-06. This measures
both through the real pipeline, in one block (the same servers, workloads and loads, each client's cells beside
the other's in every round, at a share of the capacity wrk measured in that round), in a copy of this checkout,
and prints, per workload, server and load, paired by round (nap over spin, median and min-max over rounds: the
median's order-statistic interval, 75 % coverage at 3 rounds, 87.5 % at 4):

- the client's own CPU over the window (cores), PostgreSQL's (cores) and the client CPU set's busy share;
- the latency percentiles p50 and p99, and the client's schedule lag p99;
- the server's ELU and its event-loop CPU per request;
- how many runs each client had refused, and why.

On `empty` no query reaches the database, so both clients spin: its pairs are an A/A check of the comparison.
Takes about servers x (2 + 2 x loads) x workloads x (warm-up + window + 3 s) per round: about 16 minutes for 3
rounds at the defaults. Nothing else may measure meanwhile.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(HERE.parent)]

from conftest import make_project  # noqa: E402

SCOPE = "client-wait"
CLIENTS = ("openloop", "openloop_spin")


def experiment(servers, workloads, loads, duration, rounds) -> dict:
    return {
        "experiments": {
            SCOPE: {
                "description": "openloop (naps beside the database) against openloop_spin, paired by round",
                "rounds": rounds,
                "matrices": [
                    {"servers": servers, "workloads": workloads, "connections": [50], "clients": list(CLIENTS),
                     "durations_s": [duration], "loads_pct": loads},
                ],
            }
        }
    }  # fmt: skip


def figures(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs.copy()
    window = pd.to_numeric(r["sample_window_s"], errors="coerce")
    r["client_cores"] = (r["client_cpu_user_us"] + r["client_cpu_system_us"]) / 1e6 / window
    r["stop"] = r["stop"].astype(str)
    return r


def paired(open_runs: pd.DataFrame, column: str) -> tuple[float, float, float, float, float, int]:
    """(nap median, spin median, ratio median, ratio min, ratio max, pairs) over rounds where both have a value."""
    wide = open_runs.pivot_table(index="round", columns="client", values=column, aggfunc="first")
    if not set(CLIENTS) <= set(wide.columns):
        return (np.nan,) * 5 + (0,)
    wide = wide[list(CLIENTS)].apply(pd.to_numeric, errors="coerce").dropna()
    if wide.empty:
        return (np.nan,) * 5 + (0,)
    ratio = wide["openloop"] / wide["openloop_spin"]
    return (float(wide["openloop"].median()), float(wide["openloop_spin"].median()), float(ratio.median()),
            float(ratio.min()), float(ratio.max()), len(wide))  # fmt: skip


COLUMNS = {
    "client_cores": "client CPU (cores)",
    "db_cpu_util": "PostgreSQL CPU (cores)",
    "client_cpus_busy": "client CPU set busy",
    "latency_p50_ms": "latency p50 (ms)",
    "latency_p99_ms": "latency p99 (ms)",
    "openloop_lag_p99_ms": "schedule lag p99 (ms)",
    "elu_utilization": "server ELU",
    "us_per_req_elu": "server ELU us/request",
}


def report(runs: pd.DataFrame) -> str:
    r = figures(runs)
    if "us_per_req_elu" not in r:
        r["us_per_req_elu"] = r["elu_utilization"] * 1e6 / r["server_req_per_s"]
    lines = []
    open_runs = r[r["client"].astype(str).isin(CLIENTS)]
    for (workload, server, stop), g in open_runs.groupby(["workload", "server", "stop"], observed=True):
        waits = sorted(set(g["openloop_wait"].dropna().astype(str)))
        lines.append(f"\n{workload} / {server} / {stop} (waits recorded: {', '.join(waits)})")
        lines.append(f"  {'figure':28s} {'openloop':>10s} {'spin':>10s} {'nap/spin':>9s} {'min-max':>15s} pairs")
        for col, name in COLUMNS.items():
            if col not in g:
                continue
            nap, spin, med, lo, hi, n = paired(g, col)
            lines.append(f"  {name:28s} {nap:10.3f} {spin:10.3f} {med:9.3f} {lo:7.3f}-{hi:7.3f} {n:5d}")
        for client in CLIENTS:
            mine = g[g["client"].astype(str) == client]
            refused = mine["openloop_refused"].dropna().astype(str)
            if len(refused):
                why = "; ".join(sorted(set(refused)))[:300]
                lines.append(f"  {client} refused {len(refused)} of {len(mine)}: {why}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--servers", default="express,fastify")
    ap.add_argument("--workloads", default="point-lookup,empty")
    ap.add_argument("--loads", default="50,90")
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--keep", type=Path, help="measure in this directory and keep it (default: a temporary one)")
    args = ap.parse_args()
    servers, workloads = args.servers.split(","), args.workloads.split(",")
    loads = [int(x) for x in args.loads.split(",")]
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    config = {"servers": servers, "workloads": {w: {"connections": [50]} for w in workloads},
              "warmup_s": args.warmup, "duration_s": args.duration, "rounds": args.rounds,
              "control": default["control"] if default["control"] in servers else None}  # fmt: skip
    where = args.keep or Path(tempfile.mkdtemp(prefix="client-wait-"))
    if where.exists():
        shutil.rmtree(where)
    project = make_project(where, yaml.safe_dump(config, sort_keys=False))
    (project / "experiments.yaml").write_text(
        yaml.safe_dump(experiment(servers, workloads, loads, args.duration, args.rounds), sort_keys=False)
    )
    per_round = len(servers) * len(workloads) * (2 + 2 * len(loads))  # capacity before and after, and the sweep
    minutes = args.rounds * per_round * (args.warmup + args.duration + 3) / 60
    print(f"client-wait: {args.rounds} rounds of {per_round} runs in {project}; about {minutes:.0f} min", flush=True)
    started = time.monotonic()
    table = f"data/{SCOPE}/runs.parquet"
    try:
        res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", table], cwd=project,
                             capture_output=True, text=True)  # fmt: skip
        if res.returncode:
            sys.exit(f"snakemake failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        runs = pd.read_parquet(project / table)
        print(f"measured in {(time.monotonic() - started) / 60:.1f} min")
        print(report(runs))
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Precision benchmark (a benchmark, not a test): how precise each figure is, and what the instrument costs.

    .venv/bin/python tests/benchmarks/precision.py [--rounds 10] [--workloads empty,point-lookup]
        [--connections 50] [--warmup 3] [--duration 5] [--no-bare] [--json out.json] [--keep DIR]

Measures the default servers (config.yaml's, with the A/A twin of its control) on the given
workloads at one connection count, in rounds, through the real pipeline in a copy of this
checkout (each round is one `snakemake data/overall/runs.parquet` with `rounds` raised by one,
so round r is measured whole before round r + 1). After each round, unless --no-bare, every
server is also measured without the instrument's per-request hook (NODEBENCH_PROBE=bare) by
plain wrk on the same CPUs, with nothing else running: the instrument's cost is the paired
ratio of the pipeline's figure to that one, on `empty` (the cheapest workload, where a fixed
cost per request weighs most).

Prints, for each figure (us_per_req_elu, us_per_req_oncpu, us_per_req_threads):
- the A/A twin's ratio per workload: median and order-statistic interval over rounds;
- the round-to-round CV of every cell: median and worst;
- every headline comparison (each server against express and against the control, paired by
  round): the log half-width of its interval at 5 rounds, at 6 and at 10 (where measured);
- the instrument's cost per server (pipeline / bare), median and interval.
Takes about (servers + 1) x workloads x (warm-up + window + 1.5 s) per round, plus
servers x (warm-up + window + 1 s) for the bare runs: 12 minutes for 6 rounds of the
default five servers on two workloads at 3 s + 5 s. Nothing else may measure meanwhile.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(HERE.parent)]

from conftest import make_project  # noqa: E402
from nodebench.analysis.intervals import median_interval  # noqa: E402
from nodebench.harness.hostsample import thread_schedstat  # noqa: E402

FIGURES = ("us_per_req_elu", "us_per_req_oncpu", "us_per_req_threads")


def config_text(servers, control, workloads, connections, warmup, duration, rounds) -> str:
    return yaml.safe_dump(
        {
            "servers": servers,
            "workloads": {w: {"connections": [connections]} for w in workloads},
            "warmup_s": warmup,
            "duration_s": duration,
            "rounds": rounds,
            "control": control,
        },
        sort_keys=False,
    )


def wrk(port: int, path: str, connections: int, seconds: int, cpu: int) -> dict:
    """One wrk run pinned to cpu; its JSON report line (servers/loadgen/wrk-report.lua)."""
    out = subprocess.run(
        ["taskset", "-c", str(cpu), "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s",
         str(REPO / "servers/loadgen/wrk-report.lua"), f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(next(line for line in out.splitlines() if line.startswith('{"wrk_report"')))


def bare_run(project: Path, server: str, args, port: int, cpus: tuple[int, int]) -> dict:
    """The server without the per-request hook, under plain wrk: ELU and main-thread CPU per request."""
    env = {**os.environ, "PORT": str(port), "NODE_ENV": "production", "NODEBENCH_PROBE": "bare", "PGPORT": "1"}
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpus[0]), "node", f"{server}.js"], cwd=project / "servers", env=env,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        if not proc.stdout.readline().startswith("READY"):
            raise RuntimeError(f"{server} did not start")
        wrk(port, "/static/1", args.connections, args.warmup, cpus[1])

        def get(path):
            return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read())

        get("/__elu/start")
        t0 = thread_schedstat(proc.pid)[proc.pid][0]
        report = wrk(port, "/static/1", args.connections, args.duration, cpus[1])
        t1 = thread_schedstat(proc.pid)[proc.pid][0]
        elu = get("/__elu/stop")
        n = report["requests"]
        return {"us_per_req_elu": elu["active_ms"] * 1000 / n, "us_per_req_oncpu": (t1 - t0) / 1e3 / n,
                "req_per_s": n / (report["duration_us"] / 1e6)}  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)


def half_width(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (np.log(hi) - np.log(lo)) / 2


def paired(runs: pd.DataFrame, figure: str, a: str, b: str, workload: str) -> np.ndarray:
    """a's figure over b's, per round (NaN where either lacks the round)."""
    w = runs[runs["workload"] == workload].pivot_table(index="round", columns="server", values=figure)
    if a not in w or b not in w:
        return np.array([])
    return (w[a] / w[b]).to_numpy()


def summarise(runs: pd.DataFrame, bare: pd.DataFrame, control: str) -> dict:
    out = {}
    twin = f"{control}-aa"
    servers = [s for s in runs["server"].unique() if s != twin]
    for fig in FIGURES:
        res = {"aa": {}, "cv": {}, "half_widths": {}}
        for w in sorted(runs["workload"].unique()):
            r = paired(runs, fig, twin, control, w)
            if r.size:
                m, lo, hi, n, cov = (float(x[0]) for x in median_interval(r[None, :]))
                res["aa"][w] = {"median": m, "lo": lo, "hi": hi, "n": int(n), "coverage": cov}
            for s in runs["server"].unique():
                v = runs[(runs["workload"] == w) & (runs["server"] == s)][fig].to_numpy(dtype=float)
                if len(v) > 1:
                    res["cv"][f"{w}/{s}"] = float(np.std(v, ddof=1) / np.mean(v))
            for base in ("express", control):
                for s in servers:
                    if s == base:
                        continue
                    r = paired(runs, fig, s, base, w)
                    hw = {}
                    for k in (5, 6, 10):
                        if len(r) >= k:
                            _, lo, hi, _, _ = median_interval(r[None, :k])
                            hw[k] = float(half_width(lo, hi)[0])
                    m = float(np.nanmedian(r)) if r.size else float("nan")
                    res["half_widths"][f"{w}: {s}/{base}"] = {"median": m, **{str(k): v for k, v in hw.items()}}
        if not bare.empty and fig in bare:
            cost = {}
            piped = runs[runs["workload"] == "empty"].set_index(["server", "round"])[fig]
            for s, rows in bare.groupby("server"):
                r = np.array([piped.get((s, rnd), np.nan) / v for rnd, v in zip(rows["round"], rows[fig], strict=True)])
                m, lo, hi, n, _ = (float(x[0]) for x in median_interval(r[None, :]))
                cost[s] = {"median": m, "lo": lo, "hi": hi, "n": int(n)}
            res["instrument_cost"] = cost
        out[fig] = res
    return out


def report(summary: dict) -> str:
    lines = []
    for fig, res in summary.items():
        lines.append(f"\n== {fig}")
        for w, a in res["aa"].items():
            lines.append(f"A/A {w}: {a['median']:.4f} [{a['lo']:.4f}-{a['hi']:.4f}] (n={a['n']})")
        cvs = np.array(list(res["cv"].values()))
        if cvs.size:
            worst = max(res["cv"], key=res["cv"].get)
            lines.append(f"round CV: median {np.median(cvs):.2%}, worst {cvs.max():.2%} ({worst})")
        hws = res["half_widths"]
        for k in ("5", "6", "10"):
            vals = [v[k] for v in hws.values() if k in v]
            if vals:
                over = sum(v > 0.03 for v in vals)
                lines.append(f"log half-width at {k} rounds: median {np.median(vals):.4f}, worst {max(vals):.4f}, "
                             f"{over} of {len(vals)} above 0.03")  # fmt: skip
        for name, v in hws.items():
            widths = ", ".join(f"{k} rounds {v[k]:.4f}" for k in ("5", "6", "10") if k in v)
            lines.append(f"  {name}: {v['median']:.3f}x ({widths})")
        for s, c in res.get("instrument_cost", {}).items():
            lines.append(
                f"instrument cost, {s} on empty: pipeline / bare {c['median']:.4f} [{c['lo']:.4f}-{c['hi']:.4f}]"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workloads", default="empty,point-lookup")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--no-bare", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", type=Path, help="measure in this directory and keep it (default: a temporary one)")
    args = ap.parse_args()
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    servers, control = default["servers"], default["control"]
    workloads = args.workloads.split(",")
    where = args.keep or Path(tempfile.mkdtemp(prefix="precision-"))
    if where.exists():
        shutil.rmtree(where)
    project = make_project(where, config_text(servers, control, workloads, args.connections, args.warmup,
                                              args.duration, 1))  # fmt: skip
    cpus = sorted(os.sched_getaffinity(0))[:2]
    bare_rows = []
    started = time.monotonic()
    try:
        for r in range(1, args.rounds + 1):
            (project / "config.yaml").write_text(
                config_text(servers, control, workloads, args.connections, args.warmup, args.duration, r)
            )
            res = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "data/overall/runs.parquet"],
                                 cwd=project, capture_output=True, text=True)  # fmt: skip
            if res.returncode:
                sys.exit(f"round {r}: snakemake failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
            if not args.no_bare and "empty" in workloads:
                order = servers[:]
                random.Random(r).shuffle(order)
                for i, s in enumerate(order):
                    bare_rows.append({"server": s, "round": r, **bare_run(project, s, args, 19000 + 10 * r + i, cpus)})
            took = time.monotonic() - started
            print(f"round {r} of {args.rounds} measured ({took / 60:.1f} min so far, "
                  f"{took / r * (args.rounds - r) / 60:.1f} min to go)", flush=True)  # fmt: skip
        runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
        disturbed = int(runs["disturbed"].fillna(False).sum())
        remeasured = int((runs["measurement_count"].fillna(1) > 1).sum())
        summary = summarise(runs, pd.DataFrame(bare_rows), control)
        text = report(summary)
        print(f"{len(runs)} runs in {args.rounds} rounds ({time.strftime('%Y-%m-%d')}); {remeasured} measured again, "
              f"{disturbed} still disturbed")  # fmt: skip
        print(text)
        if args.json:
            args.json.write_text(json.dumps({"summary": summary, "bare": bare_rows}, indent=1, default=float))
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()

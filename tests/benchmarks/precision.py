"""Precision benchmark (a benchmark, not a test): how precise each figure is, and what the instrument costs.

    .venv/bin/python tests/benchmarks/precision.py [--rounds 10] [--workloads empty,point-lookup]
        [--connections 50] [--warmup 3] [--duration 5] [--no-bare] [--json out.json] [--keep DIR]
        [--calibrate]

Measures the default servers (config.yaml's, with the A/A twin of its control) on the given
workloads at one connection count, in rounds, through the real pipeline in a copy of this
checkout (each round is one `snakemake data/overall/runs.parquet` with `rounds` raised by one,
so round r is measured whole before round r + 1). After each round, unless --no-bare, every
server is also measured bare (the contract as the pipeline runs it, which touches no request)
by plain wrk on the same CPUs, with nothing else running, and again with the old per-request
hook (NODEBENCH_PROBE=hook), and with no instrument at all (not even the ELU window: the
main thread's on-CPU time read from outside only), in an order shuffled per round: the
harness's cost is the paired ratio of the pipeline's figure to the bare one, on `empty` (the
cheapest workload, where a fixed cost per request weighs most), the hook's that of hook to
bare, and, on on-CPU time, each of pipeline, window and hook against no instrument.

Prints, for each figure (us_per_req_elu, us_per_req_oncpu, us_per_req_threads):
- the A/A twin's ratio per workload: median and order-statistic interval over rounds;
- the round-to-round CV of every cell: median and worst;
- every headline comparison (each server against express and against the control, paired by
  round): the log half-width of its interval at 5 rounds, at 6 and at 10 (where measured);
- the instrument's cost per server (pipeline / bare) and the hook's (hook / bare), median and interval;
- on main-thread on-CPU time, the pipeline, the window alone and the hook against no instrument at all.
With --calibrate it writes the pipeline's cost against no instrument, per server, to
data/calibration/instrument.json, which every later main-matrix and workload report of this
checkout shows (and is written again for).
Takes about (servers + 1) x workloads x (warm-up + window + 1.5 s) per round, plus
3 x servers x (warm-up + window + 1 s) for the runs under plain wrk: about 25 minutes for 6 rounds
of the default five servers on two workloads at 3 s + 5 s. Nothing else may measure meanwhile.
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


#: The instrument in a run under plain wrk: "bare" (the contract as the pipeline runs it: no per-request hook, the
#: ELU window opened and closed around wrk's run), "hook" (the old per-request hook as well) or "none" (not even
#: the window: only the main thread's on-CPU time, read from outside, so ELU is not measured).
PROBES = ("bare", "hook", "none")


def bare_run(project: Path, server: str, args, port: int, cpus: tuple[int, int], probe: str = "bare") -> dict:
    """The server under plain wrk, as the pipeline runs it (probe "bare") or with the per-request hook ("hook"):
    ELU and main-thread CPU per request over wrk's count."""
    env = {**os.environ, "PORT": str(port), "NODE_ENV": "production", "PGPORT": "1"}
    env.pop("NODEBENCH_PROBE", None)
    if probe == "hook":
        env["NODEBENCH_PROBE"] = "hook"
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

        window = probe != "none"
        if window:
            get("/__elu/start")
        t0 = thread_schedstat(proc.pid)[proc.pid][0]
        report = wrk(port, "/static/1", args.connections, args.duration, cpus[1])
        t1 = thread_schedstat(proc.pid)[proc.pid][0]
        elu = get("/__elu/stop") if window else None
        n = report["requests"]
        return {"us_per_req_elu": elu["active_ms"] * 1000 / n if window else float("nan"),
                "us_per_req_oncpu": (t1 - t0) / 1e3 / n, "req_per_s": n / (report["duration_us"] / 1e6)}  # fmt: skip
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


def interval(ratios: np.ndarray) -> dict:
    """Median and order-statistic interval of paired ratios, with how many there were."""
    m, lo, hi, n, _ = (float(x[0]) for x in median_interval(ratios[None, :]))
    return {"median": m, "lo": lo, "hi": hi, "n": int(n), "min": float(np.nanmin(ratios)),
            "max": float(np.nanmax(ratios))}  # fmt: skip


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
            cost, hook = {}, {}
            piped = runs[runs["workload"] == "empty"].set_index(["server", "round"])[fig]
            plain = bare[bare["probe"] == "bare"]
            hooked = bare[bare["probe"] == "hook"].set_index(["server", "round"])[fig]
            for s, rows in plain.groupby("server"):
                pairs = list(zip(rows["round"], rows[fig], strict=True))
                cost[s] = interval(np.array([piped.get((s, rnd), np.nan) / v for rnd, v in pairs]))
                h = np.array([hooked.get((s, rnd), np.nan) / v for rnd, v in pairs])
                if np.isfinite(h).any():
                    hook[s] = interval(h[np.isfinite(h)])
            res["instrument_cost"] = cost
            res["hook_cost"] = hook
            # Against no instrument at all (no window either; on-CPU time only): the pipeline's whole cost, the
            # window's alone, and the hook's.
            nothing = bare[bare["probe"] == "none"].set_index(["server", "round"])[fig]
            against = {}
            if np.isfinite(nothing.to_numpy(dtype=float)).any():
                for label, mine in (("pipeline", piped), ("window", plain.set_index(["server", "round"])[fig]),
                                    ("hook", hooked)):  # fmt: skip
                    for (srv, rnd), v in nothing.items():
                        against.setdefault(label, {}).setdefault(srv, []).append(mine.get((srv, rnd), np.nan) / v)
                against = {lab: {srv: interval(np.array(v)[np.isfinite(v)]) for srv, v in per.items()
                                 if np.isfinite(v).any()} for lab, per in against.items()}  # fmt: skip
            res["against_nothing"] = against
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
        for s, c in res.get("hook_cost", {}).items():
            lines.append(
                f"hook cost, {s} on empty: hook / bare {c['median']:.4f} [{c['lo']:.4f}-{c['hi']:.4f}] "
                f"(min {c['min']:.4f}, max {c['max']:.4f}, n={c['n']})"
            )
        for label, per in res.get("against_nothing", {}).items():
            for s, c in per.items():
                lines.append(
                    f"{label} / no instrument, {s} on empty: {c['median']:.4f} [{c['lo']:.4f}-{c['hi']:.4f}] "
                    f"(min {c['min']:.4f}, max {c['max']:.4f}, n={c['n']})"
                )
    return "\n".join(lines)


#: Where --calibrate writes the instrument's cost (nodebench.targets.CALIBRATION; the reports read it).
CALIBRATION = REPO / "data" / "calibration" / "instrument.json"


def write_calibration(summary: dict, runs: pd.DataFrame, rounds: int) -> None:
    """The pipeline's main-thread CPU per request over no instrument at all, per server on `empty`, with the
    window's and the hook's alone beside it, for every later report of this checkout to show."""
    against = summary.get("us_per_req_oncpu", {}).get("against_nothing", {})
    if not against.get("pipeline"):
        sys.exit("--calibrate needs the runs under plain wrk (no --no-bare) on `empty`, in at least two rounds")
    cal = {
        "date": time.strftime("%Y-%m-%d"),
        "cpu_model": str(runs["cpu_model"].iloc[0]),
        "rounds": rounds,
        "figure": "us_per_req_oncpu",
        "servers": against["pipeline"],
        "window_only": against.get("window", {}),
        "hook": against.get("hook", {}),
    }
    CALIBRATION.parent.mkdir(parents=True, exist_ok=True)
    CALIBRATION.write_text(json.dumps(cal, indent=1, default=float) + "\n")
    print(f"calibration written to {CALIBRATION.relative_to(REPO)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workloads", default="empty,point-lookup")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--no-bare", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--calibrate", action="store_true", help="write the instrument's cost per server for the reports")
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
                order = [(s, p) for s in servers for p in PROBES]
                random.Random(r).shuffle(order)
                for i, (s, p) in enumerate(order):
                    port = 19000 + 20 * r + i
                    bare_rows.append({"server": s, "round": r, "probe": p, **bare_run(project, s, args, port, cpus, p)})
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
        if args.calibrate:
            write_calibration(summary, runs, args.rounds)
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()

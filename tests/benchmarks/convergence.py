"""Convergence study (a benchmark, not a test): how long a warm-up and a window the default run needs.

    .venv/bin/python tests/benchmarks/convergence.py [rounds] [--client wrk|autocannon] [--json out.json]

For express and fastify on `empty` and `point-lookup` at 50 connections, in rounds (every
cell once per round, shuffled), the harness starts the server and its private database
exactly as a measurement job does, verifies the answer, then loads the server for one
continuous run of REFERENCE_END seconds while this script reads the server's cumulative
counters (GET /__elu/sample: event-loop busy time and completed responses, counted by the
per-request hook, NODEBENCH_PROBE=hook, which this study switches on) every
SAMPLE_S seconds. Event-loop CPU per request over any stretch [a, b] of the run is then
(busy(b) - busy(a)) * 1000 / (completed(b) - completed(a)), with both counters
interpolated linearly between samples. Each warm-up w and window d (the pipeline's
warm-up, then its window) is compared with the reference: the stretch from 5 s to 35 s.

Printed: per cell and (w, d), the median over rounds of |estimate / reference - 1|, and
the worst round; then the same across the four cells. A sub-stretch of one continuous
run stands in for the pipeline's separate warm-up and window runs (which restart the
client's connections between them): what this measures is how long the server needs
to settle and how much a short window wanders, not the cost of reconnecting.
"""

import argparse
import json
import os
import random
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts")]

from nodebench.catalogue.clients import Stop  # noqa: E402
from nodebench.catalogue.workloads import WORKLOADS  # noqa: E402
from nodebench.harness import procs, server, verify  # noqa: E402
from nodebench.harness.measure import Cell, Options, Paths, split_cpus, start  # noqa: E402

SERVERS = ["express", "fastify"]
WORKLOAD_NAMES = ["empty", "point-lookup"]
CONNECTIONS = 50
WARMUPS_S = [1, 3, 5]
WINDOWS_S = [2, 3, 5, 10]
REFERENCE = (5.0, 35.0)
REFERENCE_END = 36
SAMPLE_S = 0.2


def sampler(port: int, stop: threading.Event, out: list) -> None:
    while not stop.is_set():
        try:
            out.append(server.get_json(port, "/__elu/sample"))
        except Exception as e:  # noqa: BLE001  (a failed read is reported, the run goes on)
            out.append({"error": str(e)})
        stop.wait(SAMPLE_S)


def one_run(workload: str, name: str, client: str, log) -> list[dict]:
    """One continuous loaded run of a fresh server and database; the server's samples over it."""
    cell = Cell(name, workload, CONNECTIONS, 1, client, Stop("duration", REFERENCE_END))
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    database = {"dsn": "", "run_as": config["database"]["run_as"], "settings": config["database"]["settings"]}
    # The running count of completed responses needs the per-request hook (the pipeline runs without it).
    opts = Options(0.0, config["pool_size"], 0, database, "auto", "node", probe="hook")
    fixture = WORKLOADS[workload].answer_fixture
    paths = Paths(
        server_file=(REPO / "servers" / f"{name}.js").resolve(),
        client_file=REPO
        / ("servers/loadgen/autocannon.js" if client == "autocannon" else "servers/loadgen/wrk-report.lua"),
        lockfile=REPO / "servers/package-lock.json",
        answer_fixture=REPO / "servers/fixtures" / fixture if fixture else None,
        template=REPO / "data/database/template",
        run_schema=REPO / "workflow/schemas/run-record.schema.yaml",
    )
    with ExitStack() as stack:
        # start() moves this process onto the client's CPUs; the next run starts from all of them again.
        stack.callback(os.sched_setaffinity, 0, os.sched_getaffinity(0))
        stack.enter_context(procs.one_measurement_per_machine(cell.label(), log))
        s = start(cell, opts, paths, split_cpus(opts), stack, log)
        import psycopg

        admin = stack.enter_context(psycopg.connect(s.admin_conninfo, autocommit=True))
        verify.verify_answers(
            s.port, WORKLOADS[workload], verify.expected_answer(WORKLOADS[workload], admin, paths.answer_fixture)
        )
        samples, done = [], threading.Event()
        thread = threading.Thread(target=sampler, args=(s.port, done, samples), daemon=True)
        thread.start()
        try:
            s.client.measure(REFERENCE_END + 60)
        finally:
            done.set()
            thread.join()
        procs.stop(s.proc)
    bad = [x["error"] for x in samples if "error" in x]
    if bad:
        raise SystemExit(f"{workload}/{name}: {len(bad)} samples failed, first: {bad[0]}")
    return samples


def stretches(samples: list[dict]) -> dict:
    """us/req for every (warm-up, window) and the reference, from one run's samples."""
    t = np.array([x["t_ms"] for x in samples]) / 1000
    busy = np.array([x["elu_active_ms"] for x in samples])
    done = np.array([x["completed"] for x in samples], dtype=float)
    # The verification's requests are already counted: load began after the last sample before the count rose.
    rising = np.flatnonzero(done > done[0])
    if not len(rising):
        raise SystemExit("no request completed during the loaded run")
    t0 = t[max(rising[0] - 1, 0)]

    def us(a: float, b: float) -> float:
        ta, tb = t0 + a, t0 + b
        if tb > t[-1]:
            return float("nan")
        return float(
            (np.interp(tb, t, busy) - np.interp(ta, t, busy)) * 1000 / (np.interp(tb, t, done) - np.interp(ta, t, done))
        )

    out = {"reference": us(*REFERENCE)}
    for w in WARMUPS_S:
        for d in WINDOWS_S:
            out[(w, d)] = us(w, w + d)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--client", default="wrk", choices=["wrk", "autocannon"])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (REPO / "data/database/template").exists():
        raise SystemExit("no database template: run `.venv/bin/snakemake --cores 1 data/database/database.json` first")
    cells = [(w, s) for w in WORKLOAD_NAMES for s in SERVERS]
    results = []

    def log(msg):
        print(f"  {msg}", file=sys.stderr, flush=True)

    began = time.monotonic()
    for r in range(1, args.rounds + 1):
        order = cells[:]
        random.Random(f"convergence/{r}").shuffle(order)
        for workload, name in order:
            print(
                f"round {r}: {workload}/{name} ({time.monotonic() - began:.0f} s so far)", file=sys.stderr, flush=True
            )
            samples = one_run(workload, name, args.client, lambda m: None)
            found = stretches(samples)
            results.append(
                {
                    "round": r,
                    "workload": workload,
                    "server": name,
                    **{str(k): v for k, v in found.items()},
                    "samples": samples,
                }
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(
        f"\nConvergence of event-loop us/req with {args.client} at c{CONNECTIONS}, {args.rounds} rounds; "
        f"reference: {REFERENCE[0]:g}-{REFERENCE[1]:g} s of one run.\n"
        "|estimate / reference - 1|, median (worst) over rounds:\n"
    )
    header = "| cell | reference us/req | " + " | ".join(f"w{w} d{d}" for w in WARMUPS_S for d in WINDOWS_S) + " |"
    print(header)
    print("|" + "---|" * (2 + len(WARMUPS_S) * len(WINDOWS_S)))
    errs_all = {(w, d): [] for w in WARMUPS_S for d in WINDOWS_S}
    for workload, name in cells:
        mine = [x for x in results if x["workload"] == workload and x["server"] == name]
        ref = np.array([x["reference"] for x in mine])
        row = [f"{workload}/{name}", f"{np.median(ref):.1f}"]
        for w in WARMUPS_S:
            for d in WINDOWS_S:
                e = np.abs(np.array([x[str((w, d))] for x in mine]) / ref - 1)
                errs_all[(w, d)] += list(e)
                row.append(f"{np.median(e) * 100:.1f} % ({e.max() * 100:.1f})")
        print("| " + " | ".join(row) + " |")
    row = ["all cells", ""]
    for e in errs_all.values():
        e = np.array(e)
        row.append(f"{np.median(e) * 100:.1f} % ({e.max() * 100:.1f})")
    print("| " + " | ".join(row) + " |")
    print(f"\n{len(results)} runs in {time.monotonic() - began:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()

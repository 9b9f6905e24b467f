"""A disturbed run is measured again, not dropped: a CPU hog on the server's CPU during a tiny real run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TWO_CELLS, leftovers, make_project, snakemake

# One cell, one more measurement allowed: the hog runs for the whole job, so both are disturbed.
ONE_CELL = TWO_CELLS.replace("servers: [node-http, fastify]", "servers: [fastify]") + "remeasure: {attempts: 1}\n"

needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a measurement job needs two CPUs: one for the server, one for the client"
)


@needs_two_cpus
def test_a_cpu_hog_on_the_servers_cpu_is_measured_and_the_run_measured_again(tmp_path: Path):
    project = make_project(tmp_path / "p", ONE_CELL)
    # The server gets the first CPU of the job's mask (measure.split_cpus): a busy loop pinned there takes
    # about half of it from the server for the whole job.
    server_cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen(
        ["taskset", "-c", str(server_cpu), sys.executable, "-c", "while True: pass"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        res = snakemake(project, "data/overall/runs.parquet")
    finally:
        hog.kill()
        hog.wait()
    assert res.returncode == 0, res.stdout[-4000:]
    (path,) = (project / "data" / "runs").rglob("r1.json")
    rec = json.loads(path.read_text())
    # Both measurements were disturbed by the hog, both are kept; the record is the less disturbed one, flagged.
    assert rec["measurement_count"] == 2 and len(rec["measurements"]) == 2
    shares = [m["stolen_share"] for m in rec["measurements"]]
    assert all(s > 0.2 for s in shares), shares
    assert rec["stolen_share"] == min(shares) and rec["measurement_used"] == shares.index(min(shares)) + 1
    assert rec["disturbed"] is True and all(m["disturbed"] for m in rec["measurements"])
    assert rec["server_cpu_others_ms"] > 0.2 * rec["elu_window_ms"]
    assert "measuring again (1 of 1 more)" in res.stdout and "kept and flagged" in res.stdout
    assert not leftovers(project)


@needs_two_cpus
def test_an_undisturbed_run_records_its_threads_and_cpus(tmp_path: Path):
    project = make_project(tmp_path / "p", ONE_CELL)
    res = snakemake(project, "data/overall/runs.parquet")
    assert res.returncode == 0, res.stdout[-4000:]
    (path,) = (project / "data" / "runs").rglob("r1.json")
    rec = json.loads(path.read_text())
    # From outside the server: its main thread's work is most of its event loop's busy time, and every thread's
    # at least the main thread's; the figures per request follow from them.
    assert 0 < rec["main_oncpu_ms"] <= rec["threads_oncpu_ms"] <= rec["elu_window_ms"] * 1.05
    assert rec["main_oncpu_ms"] > 0.5 * rec["elu_active_ms"]
    assert rec["us_per_req_oncpu"] == pytest.approx(rec["main_oncpu_ms"] * 1000 / rec["requests"])
    assert rec["us_per_req_threads"] == pytest.approx(rec["threads_oncpu_ms"] * 1000 / rec["requests"])
    assert rec["server_requests"] is None  # the window's count is the client's
    assert rec["server_threads_seen"] >= 2 and rec["server_cpu_busy_ms"] > 0
    # Every measurement the job made is in the record, and the one used is among them.
    assert len(rec["measurements"]) == rec["measurement_count"] >= rec["measurement_used"] >= 1
    assert rec["measurements"][rec["measurement_used"] - 1]["stolen_share"] == rec["stolen_share"]
    assert not leftovers(project)

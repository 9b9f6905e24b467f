"""Bad input and faults: each one fails with a message that names it, leaving nothing behind."""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from conftest import (
    REPO,
    TINY_CONFIG,
    TWO_CELLS,
    leftovers,
    make_project,
    pipeline_processes,
    planned_cells,
    scratch_postgres,
    snakemake,
)
from nodebench import runs
from nodebench.harness import pgcluster, procs
from nodebench.plan import MAIN_BLOCK


def record(
    project: Path, server: str, workload: str = "point-lookup", connections: int = 10, client: str = "autocannon"
) -> Path:
    return project / runs.record_path(MAIN_BLOCK, workload, server, connections, client, "1s", 1)


def measure_one(project: Path, server: str, *extra, connections: int = 10):
    """Build one record; node-http faults use a cell outside the tiny matrix so its records stay intact."""
    target = record(project, server, connections=connections).relative_to(project)
    return snakemake(project, str(target), "--config", f"servers=[{server}]", *extra)


def assert_failed(res, *phrases):
    assert res.returncode != 0, res.stdout[-3000:]
    for phrase in phrases:
        assert phrase in res.stdout, f"{phrase!r} not in output:\n{res.stdout[-3000:]}"


def test_port_in_use_is_refused(project: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = measure_one(project, "node-http", f"server_port={port}", connections=20)
    assert_failed(res, f"port {port} on 127.0.0.1 is already in use by pid")
    assert not record(project, "node-http", connections=20).exists()
    assert not leftovers(project)


def test_server_with_another_name_is_refused(project: Path):
    res = measure_one(project, "impostor")
    assert_failed(res, "says it is 'express', not 'impostor'; refusing to measure it")
    assert not record(project, "impostor").exists()


def test_wrong_answer_fails_before_measuring(project: Path):
    res = measure_one(project, "wrong-row")
    assert_failed(res, "differs from what the database holds")
    assert (
        "warm-up done"
        not in (project / "data/logs/measure/main/point-lookup/wrong-row/c10/autocannon-1s/r1.log").read_text()
    )
    assert not record(project, "wrong-row").exists()


def test_server_crash_in_window_fails_and_leaves_nothing(project: Path):
    res = measure_one(project, "crashy")
    assert_failed(res, "server crashy exited with status 7 during the measured window")
    assert not record(project, "crashy").exists()
    assert not leftovers(project)


def test_non_2xx_answers_fail_and_are_counted(project: Path):
    res = measure_one(project, "flaky")
    assert_failed(res, "non-2xx responses (", "x HTTP 503)")
    assert not record(project, "flaky").exists()


def test_a_server_doing_the_wrong_number_of_queries_fails(project: Path):
    # Its answers are right; the window's query count (twice the client's requests) is above the one query per
    # counted request plus one per connection that the database check allows.
    res = measure_one(project, "doubled")
    assert_failed(res, "workload queries for the", "1 per request, and at most one more request for each of the 10")
    assert not record(project, "doubled").exists()


def test_database_that_cannot_start(project: Path):
    res = measure_one(project, "node-http", "database={settings: {shared_buffers: banana}}", connections=20)
    assert_failed(res, "PostgreSQL exited with status", "shared_buffers")
    assert not leftovers(project)


def test_missing_template_is_a_clear_error(project: Path):
    marker = project / "data" / "database" / "template" / "PG_VERSION"
    saved, dir_stat = marker.read_bytes(), marker.parent.stat()
    marker.unlink()
    try:
        res = measure_one(project, "node-http", connections=20)
    finally:
        marker.write_bytes(saved)
        os.utime(marker.parent, ns=(dir_stat.st_atime_ns, dir_stat.st_mtime_ns))
    assert_failed(res, "the database template", "is missing or incomplete")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--config", "duraton_s=2"], "config key 'duraton_s' (= 2) is unknown; did you mean 'duration_s'?"),
        (["--config", "duration_s=ten"], "config key 'duration_s' is 'ten': must be of type number"),
        (["--config", "servers=[expresss]"], "config key 'servers' names 'expresss', which has no file"),
        (["--config", "rounds=0"], "config key 'rounds' is 0: must be at least 1"),
    ],
)
def test_invalid_config_is_rejected_before_any_job(project: Path, args, phrase):
    res = snakemake(project, "reports/all", *args)
    assert_failed(res, phrase)
    assert "[measure] start" not in res.stdout


def test_unknown_workload_is_rejected(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workloads:\n  lists: {connections: [10]}\n")
    proj = make_project(tmp_path / "p")
    res = snakemake(proj, "--dry-run", "reports/all", "--configfile", str(bad))
    assert_failed(res, "names workload 'lists', which is not in the catalogue")
    assert "available: empty, point-lookup, list" in res.stdout


def test_ctrl_c_stops_everything_and_only_that_cell_reruns(project: Path):
    rec = record(project, "fastify", client="wrk")  # the main matrix's cell
    saved = rec.read_bytes()
    # As if the run had been interrupted before this cell and everything downstream of it.
    log = project / "data/logs/measure/main/point-lookup/fastify/c10/wrk-1s/r1.log"
    downstream = ("data/overall/runs.parquet", "reports/overall/summary.md", "reports/all")

    def logged(line: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = log.read_text() if log.exists() else ""
            if line in text:
                return text
            time.sleep(0.02)
        pytest.fail(f"the measurement job never logged {line!r}")

    # The window is 1 s: on a busy machine the interrupt can land after it has closed, and the job then rightly
    # writes its record. Such a try says nothing about an interrupted window: made again, up to three times.
    late = []
    try:
        for _ in range(3):
            for path in [rec, log, *(project / p for p in downstream)]:
                path.unlink(missing_ok=True)
            proc = subprocess.Popen(
                [sys.executable, "-m", "snakemake", "--cores", "1", "reports/all"],
                cwd=project,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                # The job's processes, looked at during its warm-up (its server verified, the load on): looking takes
                # a second or more on a busy machine, longer than the 1 s window, so it is done before it opens.
                logged("verified on port")
                assert {p.name() for p in pipeline_processes(str(project))} == {"node"}
                assert pipeline_processes("/nodebench-"), "the job's PostgreSQL is not running"
                # Interrupt inside the measured window: the job logs the end of the warm-up just before it opens.
                logged("warm-up done")
                # Read just before the signal: a window already closed makes this try late.
                closed = "window closed" in log.read_text()
                # What a terminal does on Ctrl-C: SIGINT to the whole foreground process group.
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
            deadline = time.monotonic() + 5
            while leftovers(project) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not leftovers(project)
            if closed:
                late.append(log.read_text())
                shutil.rmtree(project / ".snakemake" / "incomplete", ignore_errors=True)
                continue
            assert not rec.exists(), log.read_text()
            res = snakemake(project, "--dry-run", "reports/all")
            assert planned_cells(res.stdout) == {("point-lookup", "fastify")}
            break
        else:
            pytest.fail(f"three interrupts in a row landed after the 1 s window had closed: {late[-1][-2000:]}")
    finally:
        if not rec.exists():
            rec.parent.mkdir(parents=True, exist_ok=True)
            rec.write_bytes(saved)
        shutil.rmtree(project / ".snakemake" / "incomplete", ignore_errors=True)
        assert snakemake(project, "reports/all").returncode == 0


def test_a_single_cpu_is_refused(project: Path):
    target = record(project, "node-http", connections=30).relative_to(project)
    res = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", "snakemake", "--cores", "1", str(target)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert_failed(res, "the job may run only on CPU [0]", "allow_shared_cpu")
    assert not leftovers(project)


def test_no_warm_up_is_allowed(project: Path):
    res = measure_one(project, "node-http", "warmup_s=0", connections=40)
    assert res.returncode == 0, res.stdout[-3000:]
    assert json.loads(record(project, "node-http", connections=40).read_text())["warmup_requests"] == 0


@pytest.fixture
def external_postgres(tmp_path: Path):
    """A separate PostgreSQL standing in for a user's existing server (trust auth on loopback)."""
    with scratch_postgres("external-pg-") as port:
        with psycopg.connect(pgcluster.conninfo(port), autocommit=True) as conn:
            conn.execute("CREATE DATABASE ext")
        with psycopg.connect(pgcluster.conninfo(port, dbname="ext"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        yield port


def test_existing_server_through_a_dsn(tmp_path: Path, external_postgres: int):
    dsn = f"host=127.0.0.1 port={external_postgres} user=postgres dbname=ext"
    config = TINY_CONFIG.replace("database:\n  rows: 20000\n", f"database:\n  rows: 20000\n  dsn: '{dsn}'\n")
    proj = make_project(tmp_path / "dsn", config)
    # A users table that is not the seed is never overwritten.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((REPO / "sql/schema.sql").read_text())
        conn.execute("INSERT INTO users VALUES (1, 'someone', 'e', 'n', 'c', 'XX', 'b', 1, true)")
    res = snakemake(proj, "data/database/database.json")
    assert_failed(res, "already holds 1 rows that are not the benchmark's seed", "refusing to overwrite")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM users")
    target = "data/runs/main/point-lookup/express/c10/autocannon-1s/r1.json"
    res = snakemake(proj, target, "--config", "servers=[express]")
    assert res.returncode == 0, res.stdout[-3000:]
    rec = json.loads((proj / target).read_text())
    assert rec["database_mode"] == "dsn" and f"port={external_postgres}" in rec["database_dsn"]
    assert rec["requests"] <= rec["db_queries"] <= rec["requests"] + rec["connections"]
    assert rec["server_requests"] is None and rec["server_statuses"] is None
    assert rec["db_cpu_s"] is None and rec["db_cpu_util"] is None  # not our processes
    assert 0 <= rec["client_cpus_busy"] <= 1
    assert not leftovers(proj)


def test_two_checkouts_never_measure_at_once(tmp_path: Path):
    checkouts = [make_project(tmp_path / name, TWO_CELLS) for name in ("a", "b")]
    for project in checkouts:  # packages and template first, so that the two runs below overlap in measuring
        res = snakemake(project, "servers/node_modules/.nodebench-installed", "data/database/database.json")
        assert res.returncode == 0, res.stdout[-3000:]
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "reports/empty/all"]
    runs = [
        subprocess.Popen(cmd, cwd=p, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for p in checkouts
    ]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    for run, out in zip(runs, outputs, strict=True):
        assert run.returncode == 0, out[-3000:]
    waited = [line for out in outputs for line in out.splitlines() if "waiting for the measurement lock" in line]
    assert waited and "held by pid" in waited[0] and "checkout" in waited[0]
    records = [json.loads(f.read_text()) for p in checkouts for f in (p / "data" / "runs").rglob("*.json")]
    assert len(records) == 4

    def at(stamp: str) -> float:
        return datetime.fromisoformat(stamp).timestamp()

    # Each job's part under the lock, from taking it to the end of its stop phase (the record is built
    # after): no two overlap, within the timestamps' millisecond.
    def held(r: dict) -> tuple[float, float]:
        phases = sum(v for k, v in r.items() if k.startswith("phase_"))
        return at(r["started_at"]) + r["phase_lock_s"], at(r["started_at"]) + phases

    spans = sorted(held(r) for r in records)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start + 0.002, spans
    assert sum(r["phase_lock_s"] > 0.5 for r in records) >= 1

    # Asked not to wait, a job fails at once and says who holds the lock.
    lock = os.open(procs.measurement_lock_path(), os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "NODEBENCH_MEASURE_LOCK_WAIT": "0"}
        res = snakemake(checkouts[0], "--forcerun", "measure_run", "reports/empty/all", env=env)
    finally:
        os.close(lock)
    assert_failed(res, "another measurement is running on this machine")
    assert leftovers(checkouts[0]) == []

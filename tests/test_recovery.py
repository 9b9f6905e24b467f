"""Recovery after a hard kill, retries of a transient failure, and a data/ that cannot be written.

The unit tests run in seconds; the end-to-end ones run the real pipeline on tiny configs.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import psutil
import psycopg
import pytest

from conftest import REPO, TWO_CELLS, leftovers, make_project, planned_cells, snakemake
from nodebench import recovery
from nodebench.harness import attempts, procs, storage, workspace
from nodebench.harness.errors import (
    DatabaseError,
    PortInUseError,
    RunError,
    StartError,
    StorageError,
    database_error,
)

# --- a job's scratch space, swept after its owner died -----------------------------------


def spawn(*args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(list(args), start_new_session=True, **kwargs)


def dead_identity() -> dict:
    """The identity of a process that has exited (its pid may be reused later: the start time tells)."""
    proc = spawn("sleep", "30")
    who = workspace.identity(proc.pid)
    proc.kill()
    proc.wait()
    return who


def fake_scratch(base: Path, owner: dict, children=()) -> Path:
    scratch = base / f"{workspace.PREFIX}test{len(list(base.iterdir()))}"
    (scratch / "pgdata").mkdir(parents=True)
    (scratch / "pgdata" / "big").write_bytes(b"\0" * 4096)
    doc = {"pipeline": "nodebench", **owner, "checkout": "/somewhere", "cell": "empty/x c10 wrk-1s r1"}
    (scratch / workspace.OWNER).write_text(json.dumps({**doc, "children": list(children)}))
    return scratch


def gone(proc: subprocess.Popen, timeout: float = 5.0) -> bool:
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_sweep_stops_what_a_dead_job_left_running_and_removes_its_scratch(tmp_path: Path):
    server = spawn("sleep", "300")
    scratch = fake_scratch(tmp_path, dead_identity(), [{"name": "server", **workspace.identity(server.pid)}])
    # A process the owner file does not name but that holds a file in the directory (a load generator).
    with open(scratch / "wrk.out", "w") as out:
        holder = spawn("sleep", "300", stdout=out)
    try:
        said = []
        done = workspace.sweep([str(tmp_path)], said.append)
        assert gone(server) and gone(holder)
        assert not scratch.exists()
        assert done == said and len(done) == 1
        assert f"server pid {server.pid}" in done[0] and f"pid {holder.pid}" in done[0]
        assert "died without cleaning up" in done[0] and "checkout /somewhere" in done[0]
    finally:
        for p in (server, holder):
            p.kill()


def test_sweep_leaves_a_live_job_another_host_and_foreign_directories_alone(tmp_path: Path):
    alive = fake_scratch(tmp_path, workspace.identity(os.getpid()))
    elsewhere = fake_scratch(tmp_path, {**dead_identity(), "host": socket.gethostname() + "-other"})
    unowned = tmp_path / f"{workspace.PREFIX}old-layout"
    unowned.mkdir()
    not_ours = fake_scratch(tmp_path, dead_identity())
    (not_ours / workspace.OWNER).write_text(json.dumps({"pipeline": "something-else", "pid": 1}))
    assert workspace.sweep([str(tmp_path)]) == []
    assert alive.exists() and elsewhere.exists() and unowned.exists() and not_ours.exists()


def test_sweep_never_stops_a_process_whose_pid_was_reused_or_from_another_boot(tmp_path: Path):
    me = workspace.identity(os.getpid())
    # The owner's pid is alive but started at another time: a reused pid, so the owner is dead. Its
    # "children" are this test's own process, with the wrong start time, and from another boot.
    reused = fake_scratch(
        tmp_path, {**me, "started": me["started"] - 1}, [{"name": "server", **me, "started": me["started"] - 1}]
    )
    rebooted = fake_scratch(tmp_path, {**me, "boot_id": "another-boot"}, [{"name": "postgres", **me}])
    done = workspace.sweep([str(tmp_path)])
    assert len(done) == 2 and not reused.exists() and not rebooted.exists()
    assert all("stopped" not in line for line in done)  # and this process is still here to check


def test_a_job_scratch_names_its_owner_and_children(tmp_path: Path):
    scratch = workspace.create(str(tmp_path), "empty/node-http c10 wrk-1s r1")
    workspace.adopt(scratch, "server", os.getpid())
    owner = workspace.read_owner(scratch)
    assert owner["pid"] == os.getpid() and owner["checkout"] == os.getcwd()
    assert owner["cell"] == "empty/node-http c10 wrk-1s r1" and owner["children"][0]["name"] == "server"
    assert workspace.same_process(owner) and not workspace.owner_dead(owner)
    assert oct(scratch.stat().st_mode & 0o777) == "0o700"


# --- retries ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (StartError("server x exited with status 3 before it was ready"), True),
        (DatabaseError("PostgreSQL exited with status 1 while starting"), True),
        (PortInUseError("port 3000 on 127.0.0.1 is already in use"), True),
        (RunError("GET /users/1 answered a different row"), False),
        (RunError("the window saw 12 non-2xx responses"), False),
        (StorageError("cannot write data/runs: the disk is full"), False),
        (OSError(28, "No space left on device"), False),
        (OSError(24, "Too many open files"), True),
        (ValueError("a harness bug"), True),
    ],
)
def test_which_failures_are_transient(error, transient):
    assert attempts.transient(error) is transient


def test_a_database_shut_down_under_the_job_is_not_retried_and_other_database_errors_are():
    # What a Ctrl-C does to the job's PostgreSQL (SIGINT, its fast shutdown) while the job queries it.
    shut = database_error(psycopg.errors.AdminShutdown("terminating connection due to administrator command"))
    assert isinstance(shut, DatabaseError) and attempts.transient(shut) is False
    assert "shut down while the job used it" in str(shut)
    lost = database_error(psycopg.OperationalError("connection to server at 127.0.0.1 failed: Connection refused"))
    assert attempts.transient(lost) is True and str(lost).startswith("database error: ")


STOPPED = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)  # a runner started in the background may have it ignored
sys.path.insert(0, sys.argv[1])
from nodebench.harness import procs
assert procs.stopping() is None and not procs.stopped_by_user()
procs.unwind_on_signals()
try:
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    signal.pause()
except KeyboardInterrupt:
    print(procs.stopping(), procs.stopped_by_user())
"""


@pytest.mark.parametrize(("name", "by_user"), [("SIGINT", True), ("SIGTERM", False), ("SIGHUP", True)])
def test_a_job_knows_which_signal_is_stopping_it(name, by_user):
    done = subprocess.run(
        [sys.executable, "-c", STOPPED, str(REPO / "scripts"), name], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(int(getattr(signal, name))), str(by_user)]


def stopped_job(tmp_path: Path, monkeypatch, failure, dsn: str = "") -> list[dict]:
    """measure_run's main on a job whose measurement fails with failure() (the measuring itself stubbed, nothing
    started); what it saved for the next attempt."""
    import measure_run

    log = tmp_path / "r1.log"
    j = SimpleNamespace(
        inputs={}, out=tmp_path / "r1.json", log=log, attempt=1, round=1, round_position=1, round_size=1,
        options={"runtime": "system", "database": {"dsn": dsn}},
    )  # fmt: skip
    monkeypatch.setattr(procs, "_stopping", [])
    monkeypatch.setattr(procs, "unwind_on_signals", lambda: None)  # pytest's own handlers stay
    monkeypatch.setattr(
        measure_run,
        "job",
        SimpleNamespace(
            parse=lambda argv: j, cell=lambda j: SimpleNamespace(label=lambda: "empty/fastify c10 wrk-1s r1"),
            server_node=lambda j: {}, paths=lambda j: SimpleNamespace(), options=lambda j, node: SimpleNamespace(
                remeasure_attempts=0),
        ),
    )  # fmt: skip
    monkeypatch.setattr(measure_run, "measure", lambda *a: failure())
    with pytest.raises((KeyboardInterrupt, SystemExit)):
        measure_run.main([])
    assert not j.out.exists()
    return attempts.earlier(log, 2)


def interrupted(signum: int):
    def failure():
        procs._stopping.append(int(signum))
        raise KeyboardInterrupt(f"signal {signum}")

    return failure


def test_a_job_stopped_by_ctrl_c_is_not_retried_and_one_stopped_by_sigterm_may_be(tmp_path, monkeypatch):
    # Snakemake may still start its retry after a Ctrl-C: that attempt must fail at once, not measure.
    saved = stopped_job(tmp_path, monkeypatch, interrupted(signal.SIGINT))
    assert [(s["transient"], s["error"]) for s in saved] == [
        (False, "stopped by signal 2 (Ctrl-C or a closed terminal)")
    ]
    # A scheduler's time limit sends SIGTERM: nothing is saved, so a retry measures, as before.
    assert stopped_job(tmp_path, monkeypatch, interrupted(signal.SIGTERM)) == []


def test_a_database_shut_down_under_a_job_is_not_retried_unless_it_is_the_users_server(tmp_path, monkeypatch):
    def shut_down():
        raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")

    (own,) = stopped_job(tmp_path, monkeypatch, shut_down)
    assert own["transient"] is False and "shut down while the job used it" in own["error"]
    (users,) = stopped_job(tmp_path, monkeypatch, shut_down, dsn="postgresql://db.example/bench")
    assert users["transient"] is True and users["error"].startswith("database error: ")

    def refused_after_ctrl_c():  # what a child that died of the same Ctrl-C first looks like
        procs._stopping.append(int(signal.SIGINT))
        raise DatabaseError("connection to server at 127.0.0.1 failed: Connection refused")

    (after,) = stopped_job(tmp_path, monkeypatch, refused_after_ctrl_c)
    assert after["transient"] is False and after["error"].endswith("(the job was being stopped by signal 2)")


def test_a_failed_attempt_is_kept_for_the_next_one(tmp_path: Path):
    log = tmp_path / "r1.log"
    log.write_text("t0 start\nt1 error: boom\n")
    attempts.save(log, 1, "server x exited", True, [])
    log.unlink()  # what Snakemake does before the next attempt
    before = attempts.earlier(log, 2)
    assert before == [
        {"attempt": 1, "error": "server x exited", "transient": True, "log": "t0 start\nt1 error: boom\n"}
    ]
    text = attempts.preamble(before)
    assert text.splitlines() == [
        "attempt 1 | failed (transient, retried): server x exited",
        "attempt 1 | t0 start",
        "attempt 1 | t1 error: boom",
    ]
    # A first attempt of a later run drops what an earlier run left.
    assert attempts.earlier(log, 1) == [] and not attempts.saved_path(log).exists()


# --- manifests that name missing files -----------------------------------------------------


def test_a_manifest_that_lists_a_missing_file_is_removed(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for f in ("data/runs/a.json", "data/runs/b.json", "data/x/runs.parquet"):
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("{}")
    Path("reports/x").mkdir(parents=True)
    Path("reports/x/all").write_text("data/runs/a.json\ndata/runs/b.json\ndata/x/runs.parquet\n")
    Path("reports/all").write_text("data/runs/a.json\n")
    said = []
    assert recovery.drop_false_manifests(["reports/all", "reports/x/all", "reports/y/all"], said.append) == []
    Path("data/runs/b.json").unlink()
    # A dry run names it and removes nothing.
    would = recovery.drop_false_manifests(["reports/all", "reports/x/all"], said.append, dry_run=True)
    assert would == [Path("reports/x/all")] and Path("reports/x/all").exists()
    assert said == [
        "reports/x/all lists data/runs/b.json, which does not exist (a job killed while it re-measured, or a "
        "file removed by hand): a run would remove it and rebuild what it lists (this dry run removes nothing "
        "and plans that)"
    ]
    said.clear()
    removed = recovery.drop_false_manifests(["reports/all", "reports/x/all"], said.append)
    assert removed == [Path("reports/x/all")] and Path("reports/all").exists()
    assert said == [
        "reports/x/all listed data/runs/b.json, which does not exist (a job killed while it re-measured, or a "
        "file removed by hand): removed it, so that this run rebuilds what it lists"
    ]


# --- a data/ that cannot be written ---------------------------------------------------------


@contextmanager
def tmpfs(where: Path, size: str = "256k", read_only: bool = False):
    """A tiny file system mounted at where (root only: skips the test otherwise)."""
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(where: Path) -> None:
    """Fill a file system up to its last byte."""
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_read_only_or_full_directory_is_named_before_anything_is_written(tmp_path: Path):
    with tmpfs(tmp_path / "ro", read_only=True) as ro:
        with pytest.raises(StorageError, match=rf"cannot write {ro}: the file system is read-only \[EROFS\]"):
            storage.probe(ro)
    with tmpfs(tmp_path / "full", size="64k") as full:
        fill(full)
        with pytest.raises(StorageError, match=rf"cannot write {full}: the disk is full: free some space \[ENOSPC\]"):
            storage.probe(full)
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_a_record_is_written_whole_or_not_at_all(tmp_path: Path):
    with tmpfs(tmp_path / "data", size="64k") as data:
        record = data / "r1.json"
        storage.write_atomically(record, '{"old": true}\n')
        fill(data)
        with pytest.raises(StorageError, match=rf"cannot write {record}: the disk is full"):
            storage.write_atomically(record, json.dumps({"figures": "x" * 100_000}))
        assert record.read_text() == '{"old": true}\n'  # the old record, whole
        assert sorted(p.name for p in data.iterdir()) == ["filler", "r1.json"]  # no temporary file


# --- end to end: a hard kill, a transient failure, a bad cell, a read-only data/ ------------------


def record(project: Path, server: str, connections: int = 10) -> Path:
    return project / f"data/runs/main/empty/{server}/c{connections}/wrk-1s/r1.json"


def job_log(project: Path, server: str, connections: int = 10) -> Path:
    return project / f"data/logs/measure/main/empty/{server}/c{connections}/wrk-1s/r1.log"


def read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def owned_scratch(pid: int) -> Path:
    """The scratch directory whose owner file names pid."""
    for base in workspace.bases():
        for scratch in Path(base).glob(f"{workspace.PREFIX}*"):
            owner = workspace.read_owner(scratch)
            if owner and owner["pid"] == pid:
                return scratch
    raise AssertionError(f"no scratch directory is owned by pid {pid}")


def test_a_hard_kill_while_re_measuring_is_recovered_by_the_next_run(tmp_path: Path):
    project = make_project(tmp_path / "p", TWO_CELLS)
    res = snakemake(project, "reports/empty/all")
    assert res.returncode == 0, res.stdout[-3000:]
    saved = {s: record(project, s).read_bytes() for s in ("node-http", "fastify")}
    for s in saved:
        job_log(project, s).unlink()
    snake = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--forcerun", "measure_run", "reports/empty/all"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        killed = None
        while killed is None and time.monotonic() < deadline:
            killed = next((s for s in saved if "warm-up done" in read(job_log(project, s))), None)
            if killed is None:
                time.sleep(0.02)
        assert killed, "no measurement job reached its window"
        kept = next(s for s in saved if s != killed)
        children = psutil.Process(snake.pid).children(recursive=True)
        job = next(p for p in children if "measure_run" in " ".join(p.cmdline()))
        scratch = owned_scratch(job.pid)
        # kill -9 of Snakemake and of the measuring job, in the middle of the window.
        os.kill(snake.pid, signal.SIGKILL)
        job.kill()
        snake.wait(10)
        job.wait(10)
        # What is left: the dead job's scratch (the database copy), Snakemake's lock; the record is gone.
        assert scratch.is_dir() and (scratch / "pgdata").is_dir()
        assert workspace.owner_dead(workspace.read_owner(scratch))
        assert not record(project, killed).exists()
        assert record(project, kept).read_bytes() == saved[kept]
        locked = snakemake(project, "--dry-run", "reports/empty/all").stdout
        assert "Directory cannot be locked" in locked
        # Loading the workflow already found the manifest false; a dry run says so and leaves it.
        listed = record(project, killed).relative_to(project)
        assert f"reports/empty/all lists {listed}, which does not exist" in locked
        assert (project / "reports/empty/all").exists()
        # What the README says to do, then the same command again: --unlock and the dry run remove nothing, the
        # dry run plans the interrupted cell; the real run removes the false manifest and rebuilds it.
        assert snakemake(project, "--unlock").returncode == 0
        assert (project / "reports/empty/all").exists()
        res = snakemake(project, "--dry-run", "reports/empty/all")
        assert planned_cells(res.stdout) == {("empty", killed)}, res.stdout[-3000:]
        assert (project / "reports/empty/all").exists()
        res = snakemake(project, "reports/empty/all")
        assert res.returncode == 0, res.stdout[-3000:]
        assert f"reports/empty/all listed {listed}, which does not exist" in res.stdout
        assert f"removed {scratch}, left by a job that died without cleaning up (pid {job.pid}" in res.stdout
        assert not scratch.exists()
        # Only the interrupted cell was measured again, and every manifest lists only files that exist.
        assert record(project, kept).read_bytes() == saved[kept]
        assert json.loads(record(project, killed).read_text())["session"] != json.loads(saved[killed])["session"]
        for manifest in ("reports/empty/all", "reports/overall/all"):
            if (project / manifest).exists():
                lines = (project / manifest).read_text().split()
                assert str(listed) in lines and all((project / f).exists() for f in lines)
        assert "Nothing to be done" in snakemake(project, "--dry-run", "reports/empty/all").stdout
        assert not leftovers(project)
    finally:
        if snake.poll() is None:
            snake.kill()


FAULTY = TWO_CELLS.replace("servers: [node-http, fastify]", "servers: [node-http, stumbles, impostor]")


@pytest.fixture(scope="module")
def faulty(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One run with --keep-going over a good cell, one that fails to start once, and one that fails a check."""
    project = make_project(tmp_path_factory.mktemp("faulty") / "p", FAULTY)
    return project, snakemake(project, "--keep-going", "reports/empty/all")


def test_a_transient_failure_is_retried_once_and_a_failed_check_is_not(faulty):
    project, res = faulty
    assert res.returncode != 0
    # The other cells ran.
    assert json.loads(record(project, "node-http").read_text())["attempt"] == 1
    # The server that failed its first start was measured by the second attempt, and says so.
    stumbled = json.loads(record(project, "stumbles").read_text())
    assert stumbled["attempt"] == 2
    assert "server stumbles exited with status 3 before it was ready" in stumbled["retried_after"]
    text = job_log(project, "stumbles").read_text()
    assert "attempt 1 | failed (transient, retried): server stumbles exited with status 3" in text
    assert "attempt 1 | " in text and "done  empty/stumbles" in text
    assert "[measure] FAILED empty/stumbles c10 wrk-1s r1 (attempt 1, transient)" in res.stdout
    assert not attempts.saved_path(job_log(project, "stumbles")).exists()
    # The server that failed a check was measured once: its second attempt failed at once.
    assert not record(project, "impostor").exists()
    text = job_log(project, "impostor").read_text()
    assert "attempt 1 | failed (not transient, not retried): the server on port" in text
    second = [line for line in text.splitlines() if not line.startswith("attempt 1 | ")]
    assert not any("start empty/impostor" in line for line in second), second
    assert "FAILED (attempt 2, not transient, not retried): attempt 1 failed, and that is not retried" in second[-1]
    # The README's way to see which cells failed and why.
    out = subprocess.run(
        ["grep", "-rE", "--include=*.log", r"^\S+ FAILED", "data/logs/measure"],
        cwd=project,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert len(out) == 1 and out[0].startswith("data/logs/measure/main/empty/impostor/c10/wrk-1s/r1.log:")
    assert "says it is 'express', not 'impostor'" in out[0]
    assert not leftovers(project)


def test_a_read_only_data_directory_is_named_before_anything_runs(tmp_path: Path):
    project = make_project(tmp_path / "p", TWO_CELLS)
    with tmpfs(project / "data" / "runs", read_only=True):
        res = snakemake(project, "reports/empty/all")
    assert res.returncode != 0
    runs = project / "data" / "runs"
    assert f"cannot write data/runs ({runs}): the file system is read-only [EROFS]; nothing was run" in res.stdout
    assert not (project / "data" / "database").exists() and not leftovers(project)


def test_a_full_record_directory_is_named_before_measuring(faulty):
    project, _ = faulty
    target = record(project, "node-http", connections=20)
    with tmpfs(target.parent, size="64k") as full:
        fill(full)
        res = snakemake(project, str(target.relative_to(project)), "--config", "servers=[node-http]")
        left = sorted(p.name for p in full.iterdir())
    assert res.returncode != 0
    where = target.parent.relative_to(project)
    assert f"cannot write {where} ({target.parent}): the disk is full: free some space [ENOSPC]" in res.stdout
    text = job_log(project, "node-http", connections=20).read_text()
    assert "start empty/node-http" not in text  # nothing was started, let alone measured
    assert left == ["filler"] and not leftovers(project)


def test_a_dry_run_says_which_stale_look_it_would_remove_and_removes_nothing(tmp_path: Path):
    # Snakemake sets workflow.dryrun only after the Snakefile has run, so the Snakefile's own tidying read it as
    # False: `snakemake -n` removed stale looks and the reports they fed (targets.dry_run_asked).
    config = (Path(__file__).parents[1] / "config.yaml").read_text() + "\nadaptive: {half_width: 0.03, looks: [2, 3]}\n"
    project = make_project(tmp_path / "project", config)
    look = project / "data" / "looks" / "main" / "n2.json"
    look.parent.mkdir(parents=True)
    look.write_text("not a look")
    for args in (["-n"], ["-np"], ["--dry-run"]):
        res = snakemake(project, *args, "reports/all", timeout=120)
        assert res.returncode == 0, res.stdout[-3000:]
        assert look.exists(), (args, res.stdout[-3000:])
        assert "is stale (unreadable" in res.stdout and "would remove it" in res.stdout, res.stdout[-3000:]

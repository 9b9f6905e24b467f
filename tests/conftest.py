"""Shared fixtures: a throw-away copy of the pipeline with a tiny config, run for real once."""

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "data",
    "reports",
    ".snakemake",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "tests",
)
#: The tiny configurations the integration tests run, as files (tests/config/).
CONFIGS = Path(__file__).resolve().parent / "config"
TINY_CONFIG = (CONFIGS / "tiny.yaml").read_text()


TWO_CELLS = (CONFIGS / "two-cells.yaml").read_text()


def make_project(dest: Path, config: str = TINY_CONFIG) -> Path:
    """A copy of the pipeline with its own config, data and reports, plus the fault servers."""
    shutil.copytree(REPO, dest, ignore=COPY_IGNORE)
    (dest / "config.yaml").write_text(config)
    for f in (FIXTURES / "servers").glob("*.js"):
        shutil.copy(f, dest / "servers" / f.name)
    (dest / "data").mkdir(exist_ok=True)
    (dest / "reports").mkdir(exist_ok=True)
    return dest


def snakemake(project: Path, *args, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """Run the real Snakemake in project; stdout and stderr together in .stdout."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def planned_cells(output: str) -> set[tuple[str, str]]:
    """(workload, server) of every measure_run job a dry-run planned."""
    cells = set()
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("wildcards:") and "server=" in line:
            wc = dict(part.strip().split("=", 1) for part in line[len("wildcards:") :].split(","))
            cells.add((wc["workload"], wc["server"]))
    return cells


def pipeline_processes(marker: str) -> list[psutil.Process]:
    """Node, PostgreSQL and load-generator processes whose command line mentions marker."""
    found = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
        except psutil.Error:
            continue
        if p.pid != os.getpid() and p.info["name"] in ("node", "postgres") and marker in cmd:
            found.append(p)
    return found


SCRATCH_GLOBS = ["/dev/shm/nodebench-*", f"{tempfile.gettempdir()}/nodebench-*"]


def leftovers(project: Path) -> list[str]:
    """Processes a run in project (or any job scratch dir) left running, and scratch dirs left behind."""
    procs = pipeline_processes(str(project)) + pipeline_processes("/nodebench-")
    found = [f"{p.pid} {' '.join(p.cmdline())[:150]}" for p in procs if p.is_running()]
    return found + [d for pattern in SCRATCH_GLOBS for d in glob.glob(pattern)]


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=20000",
    "--window-size=1400,4000",
]


def render_in_chromium(page: Path, tmp: Path) -> tuple[str, Path]:
    """The page's DOM after its scripts ran in headless Chromium, and a screenshot of it."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Chromium is needed for the browser check: bash scripts/setup.sh --tests installs it"
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    shot = tmp / "index.png"
    subprocess.run([*common, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    return dom.stdout, shot


@pytest.fixture(scope="session")
def project(tmp_path_factory) -> Path:
    """The tiny pipeline, run end to end once (npm ci, template, measurements, Parquet, summary)."""
    dest = make_project(tmp_path_factory.mktemp("pipeline") / "project")
    res = snakemake(dest, "reports/all")
    assert res.returncode == 0, res.stdout[-4000:]
    # What the run printed, for the tests of its closing lines.
    (dest / "data" / "logs" / "reports-all.out").write_text(res.stdout)
    yield dest
    left = leftovers(dest)
    for line in left:
        if line[0].isdigit():
            os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not left, f"processes left running after the suite: {left}"


@contextlib.contextmanager
def scratch_postgres(prefix: str):
    """A throw-away PostgreSQL from the embedded install, run as nobody; yields its port, stops it on the way out.

    Like a job's, it takes only password connections: its superuser's password is in
    PGPASSWORD while it runs, where libpq (and so psycopg, and Snakemake's jobs) find it.
    """
    from nodebench.harness import pgcluster, procs

    user = pgcluster.run_as_account("nobody")
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    password, saved = pgcluster.new_password(), os.environ.get("PGPASSWORD")
    proc = None
    try:
        pgcluster.hand_over(scratch, user)
        install = pgcluster.usable_install(user, scratch)
        pgcluster.initdb(install, scratch / "pgdata", password)
        port = procs.free_port()
        proc = pgcluster.start(install, scratch / "pgdata", port, {}, scratch / "pg.log")
        pgcluster.wait_ready(proc, port, scratch / "pg.log", password)
        os.environ["PGPASSWORD"] = password
        yield port
    finally:
        if saved is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = saved
        pgcluster.stop(proc, immediate=True)
        shutil.rmtree(scratch, ignore_errors=True)

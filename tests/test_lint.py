"""The linters are part of the test command: ruff, snakefmt and ESLint."""

import shutil
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


def test_eslint(tmp_path: Path):
    # The servers and the fault-fixture servers, linted without running the pipeline: its npm ci install where a
    # run made one here (servers/node_modules), else one of its own from the lockfile.
    servers = tmp_path / "servers"
    shutil.copytree(REPO / "servers", servers, ignore=shutil.ignore_patterns("node_modules"))
    for f in (REPO / "tests" / "fixtures" / "servers").glob("*.js"):
        shutil.copy(f, servers / f.name)
    installed = REPO / "servers" / "node_modules"
    if (installed / ".bin" / "eslint").exists():
        (servers / "node_modules").symlink_to(installed)
    else:
        res = run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=servers)
        assert res.returncode == 0, res.stdout + res.stderr
    res = run(["npx", "--no-install", "eslint", "."], cwd=servers)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "crashy.js" in run(["npx", "--no-install", "eslint", "--debug", "."], cwd=servers).stderr


#: Snakemake's lints this workflow does not follow, each with the reason.
ACCEPTED_LINTS = {
    # The pipeline's software comes from its own lockfiles (requirements.txt, servers/package-lock.json)
    # through scripts/setup.sh; no conda channel or container registry is reachable where it runs.
    "Specify a conda environment or container for each rule.",
    # PYTHON is the interpreter running Snakemake (sys.executable), not configuration; as a param it would
    # be part of every record's rerun trigger, and a checkout moved to another path would re-measure all.
    "Shell command directly uses variable PYTHON from outside of the rule",
}


def test_snakemake_lint_finds_nothing_but_the_accepted():
    res = run([sys.executable, "-m", "snakemake", "--lint"])
    titles = {
        line.strip()[2:].rstrip(":") for line in (res.stdout + res.stderr).splitlines() if line.startswith("    * ")
    }
    # The linter ran: it lists lints, or says there are none.
    assert titles or "good condition" in res.stdout + res.stderr, res.stdout + res.stderr
    assert titles <= ACCEPTED_LINTS, titles - ACCEPTED_LINTS

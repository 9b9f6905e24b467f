"""Every shell command the README and docs/ show, run as written: Snakemake's as dry-runs in a fresh copy."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, make_project, planned_cells

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.M | re.S)
# Commands no test here runs, each with the reason and where it does run.
NOT_RUN = {
    "bash scripts/setup.sh": "needs the network (pip); .ci/as_user.sh runs it as an ordinary user",
    "bash scripts/setup.sh --tests": "needs the network (pip, apt-get); .ci/run runs it",
    # A and B stand for two finished runs' folders; tests/unit/test_results.py runs the script end to end on two.
    ".venv/bin/python scripts/compare_results.py A/reports/compare B/reports/compare --all": (
        "needs two finished result sets; tests/unit/test_results.py runs it on two"
    ),
}


def documented_commands() -> list[tuple[str, str]]:
    """(document, command) for every command of every fenced shell block, each once; `a && b` is two commands."""
    found = {}
    for doc in DOCUMENTS:
        for block in FENCE.findall(doc.read_text()):
            for line in block.splitlines():
                line = re.sub(r"\s+#\s.*$", "", line).strip()
                for part in filter(None, (p.strip() for p in line.split(" && "))):
                    found.setdefault(part, (doc.name, part))
    return list(found.values())


COMMANDS = documented_commands()


def how_to_run(command: str) -> tuple[str, str, set[int]] | None:
    """(what to run, where: a fresh checkout or the finished tiny run, the exit statuses that pass), or None.

    Snakemake's commands run as dry-runs, except those that change nothing (--unlock) or
    read a finished run (--report, which runs there); pytest (the whole suite or a tier) only collects; a grep may find
    nothing (status 1) but must not fail (2).
    """
    if command.startswith(".venv/bin/snakemake "):
        if "--report" in command:
            return command, "finished", {0}
        if "--unlock" in command:
            return command, "fresh", {0}
        return f"{command} --dry-run", "fresh", {0}
    if command == ".venv/bin/python -m pytest" or command.startswith(".venv/bin/python -m pytest tests/"):
        return f"{command} --collect-only -q -p no:cacheprovider", "fresh", {0}
    if command.startswith("grep "):
        return command, "finished", {0, 1}
    if command.startswith(".venv/bin/python scripts/compare_results.py A/"):
        return command, "two finished", {0}
    if command.startswith(".venv/bin/python -c 'import sys, yaml;") and command.endswith(" my-config.yaml"):
        # On a config with a YAML mistake on its line 2: it fails, naming the file and the line.
        return f"printf 'rounds: 2\\nservers: [a, b\\nduration_s: 1\\n' > my-config.yaml; {command}", "fresh", {1}
    return None


def test_the_documents_show_commands():
    assert len(COMMANDS) >= 12, COMMANDS
    assert ("cluster.md", ".venv/bin/snakemake --profile profiles/kubernetes reports/all") in COMMANDS


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A fresh copy of the checkout with the config as shipped, its tests, and .venv where the README says."""
    dest = make_project(tmp_path_factory.mktemp("readme") / "project", (REPO / "config.yaml").read_text())
    shutil.copytree(REPO / "tests", dest / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / ".venv").symlink_to(Path(sys.prefix))
    return dest


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command through bash, as a user would type it."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(("doc", "command"), COMMANDS, ids=[f"{d}: {c}" for d, c in COMMANDS])
def test_command_works_as_written(doc: str, command: str, checkout: Path, request):
    if command in NOT_RUN:
        pytest.skip(NOT_RUN[command])
    how = how_to_run(command)
    assert how, f"{doc} shows {command!r}, which this test does not know how to run: add it to how_to_run or NOT_RUN"
    runnable, where, passing = how
    if "profiles/kubernetes" in command:
        request.getfixturevalue("s3_bucket")  # where the profile keeps its files; see the fixture
    if where == "finished":
        where = request.getfixturevalue("project")
        if not (where / ".venv").exists():
            (where / ".venv").symlink_to(Path(sys.prefix))
    elif where == "two finished":
        where = request.getfixturevalue("two_finished")
    res = run(runnable, checkout if where == "fresh" else where)
    assert res.returncode in passing, f"{doc}: {runnable}\n{res.stdout[-3000:]}"
    if "yaml.safe_load" in command:
        assert re.search(r'in "my-config.yaml", line [23]', res.stdout), res.stdout[-3000:]
    if runnable.endswith("--dry-run") and "reports/" in command:
        assert planned_cells(res.stdout), f"{doc}: {runnable} planned no measurement\n{res.stdout[-3000:]}"


@pytest.fixture
def two_finished(request, tmp_path: Path) -> Path:
    """A folder holding A and B, two finished runs' checkouts, with .venv and scripts/ where the command expects them.

    A is the suite's finished tiny run; B a copy of its reports, so the command reads real results.csv files as
    written (two different runs, with a CPU that differs, are tests/unit/test_results.py's)."""
    project = request.getfixturevalue("project")
    (tmp_path / "A").symlink_to(project)
    shutil.copytree(project / "reports", tmp_path / "B" / "reports")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "scripts").symlink_to(REPO / "scripts")
    return tmp_path


@pytest.fixture
def s3_bucket(checkout: Path, monkeypatch):
    """The profile's bucket, with the repository's files under its prefix, in a local S3 (moto).

    A dry-run reads the storage: it asks the bucket whether every input exists and how old
    it is, so it needs what a real run needs, the storage credentials and the repository's
    files uploaded under the prefix (docs/cluster.md), though no Kubernetes cluster. Only
    the endpoint is changed here, through the plugin's own environment variable.
    """
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        pytest.fail(f"{e.name} is not installed; it is in requirements.txt: bash scripts/setup.sh")

    profile = yaml.safe_load((checkout / "profiles" / "kubernetes" / "config.yaml").read_text())
    bucket, _, prefix = profile["default-storage-prefix"].removeprefix("s3://").partition("/")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        keys = {"SNAKEMAKE_STORAGE_S3_ACCESS_KEY": "nodebench-test", "SNAKEMAKE_STORAGE_S3_SECRET_KEY": "not-secret"}
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=keys["SNAKEMAKE_STORAGE_S3_ACCESS_KEY"],
            aws_secret_access_key=keys["SNAKEMAKE_STORAGE_S3_SECRET_KEY"],
        )
        s3.create_bucket(Bucket=bucket)
        # What the profile's `aws s3 sync` uploads: the checkout without .git, .venv, data, reports, node_modules.
        skip = {".git", ".venv", "data", "reports", "node_modules", ".snakemake", "__pycache__"}
        for f in checkout.rglob("*"):
            rel = f.relative_to(checkout)
            if f.is_file() and not skip.intersection(rel.parts):
                s3.upload_file(str(f), bucket, f"{prefix}/{rel}")
        monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_ENDPOINT_URL", endpoint)
        for key, value in keys.items():
            monkeypatch.setenv(key, value)
        # No cluster: a dry-run must not need one.
        monkeypatch.setenv("KUBECONFIG", str(checkout / "no-such-kubeconfig"))
        yield
    finally:
        server.stop()

"""The cluster profiles: profiles/slurm on a real one-node SLURM, profiles/kubernetes as a dry-run.

The SLURM test stands up munged, slurmctld and slurmd from Debian's packages
(scripts/slurm_local.sh), runs a tiny matrix through profiles/slurm with test overrides
for partition and timings, and checks SLURM's own record of every measurement job (the
JobComp file, one line per finished job) next to outputs of the same kind as a local run's.
"""

import importlib.util
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, TINY_CONFIG, leftovers, make_project, planned_cells

SLURM_LOCAL = REPO / "scripts" / "slurm_local.sh"
# Two servers instead of three: every cell is a SLURM job of its own, one after another on one node.
SLURM_CONFIG = TINY_CONFIG.replace("servers: [node-http, express, fastify]", "servers: [node-http, fastify]")
SLURM_CELLS = {(w, s) for w in ("empty", "point-lookup") for s in ("node-http", "node-http-aa", "fastify")}
# The whole Snakemake run through SLURM (a few minutes on two cores).
RUN_LIMIT_S = 900
# Jobs may wait this long with nothing running before the run is called stuck.
STUCK_PENDING_S = 120

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="standing up SLURM needs root: it installs Debian packages and runs munged and slurmd"
)
needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a measurement job needs two CPUs: one for the server, one for the client"
)


class Cluster:
    """The one-node SLURM of a state directory, and the environment that reaches it."""

    def __init__(self, state: Path):
        self.state = state
        self.env = {
            **os.environ,
            "SLURM_CONF": str(state / "slurm.conf"),
            # The plugin reads $USER to look for an account; CI may not set it.
            "USER": pwd.getpwuid(os.getuid()).pw_name,
        }

    def query(self, *args: str, timeout: float = 10) -> str | None:
        """A SLURM command's output, or None if it failed."""
        try:
            res = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout if res.returncode == 0 else None

    def show(self, *args: str) -> str:
        """A SLURM command's output for a message, or a note that it failed."""
        out = self.query(*args)
        return f"({' '.join(args)} failed)" if out is None else out

    def jobcomp(self) -> dict[str, dict[str, str]]:
        """SLURM's record of every finished job, by job id, from the JobComp file."""
        path = self.state / "jobcomp.log"
        records = {}
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                fields = dict(re.findall(r"(\w+)=(\S*)", line))
                if "JobId" in fields:
                    records[fields["JobId"]] = fields
        return records

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.state / "log" / name
        text = path.read_text(errors="replace").splitlines() if path.exists() else ["(no log)"]
        return f"--- {path}:\n" + "\n".join(text[-lines:])


def slurm_local(action: str, state: Path, log: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run scripts/slurm_local.sh; its output goes to a file (the daemons it starts must not hold our pipes)."""
    with open(log, "a") as out:
        return subprocess.run(
            ["timeout", "-k", "10", str(int(timeout)), "bash", str(SLURM_LOCAL), action, str(state)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout + 30,
        )


@pytest.fixture
def slurm(tmp_path: Path):
    """A running one-node SLURM, stopped (every job cancelled, every daemon ended) afterwards."""
    # A short path: slurmstepd's sockets live under it, and socket paths are short.
    state, log = Path(tempfile.mkdtemp(prefix="nbslurm-", dir="/tmp")), tmp_path / "slurm_local.log"
    cluster = Cluster(state)
    try:
        # Installing the packages is most of it (apt-get update on a fresh machine).
        start = slurm_local("start", state, log, timeout=900)
        assert start.returncode == 0, f"slurm_local.sh start failed ({start.returncode}):\n{log.read_text()}"
        yield cluster
    finally:
        stop = slurm_local("stop", state, log, timeout=120)
        pid_files = [state / "run" / f"{name}.pid" for name in ("slurmctld", "slurmd", "munged")]
        alive = [f.name for f in pid_files if f.exists() and _alive(f.read_text())]
        if (state / "log").is_dir():
            shutil.copytree(state / "log", tmp_path / "slurm-logs", dirs_exist_ok=True)
        if not alive:
            shutil.rmtree(state, ignore_errors=True)
        assert stop.returncode == 0, f"slurm_local.sh stop failed ({stop.returncode}):\n{log.read_text()}"
        assert not alive, f"still running after stop: {alive}\n{log.read_text()}"


def _alive(pid_text: str) -> bool:
    try:
        os.kill(int(pid_text.strip()), 0)
    except (ValueError, ProcessLookupError):
        return False
    return True


def slurm_test_profile(tmp_path: Path, cpus: int) -> Path:
    """profiles/slurm with the test's overrides: this cluster's partition, its CPUs, short timings, kept logs."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    profile["default-resources"].update({"slurm_partition": "'debug'", "runtime": 10})
    profile["set-resources"]["measure_run"].update({"cpus_per_task": cpus, "runtime": 10})
    profile.update(
        {
            # The first status check 2 s after submission instead of 10 (MinJobAge 300 >= 3 x 2).
            "slurm-init-seconds-before-status-checks": 2,
            # Keep each job's SLURM log: it holds the measurement's own lines.
            "slurm-keep-successful-logs": True,
            "latency-wait": 5,
        }
    )
    path = tmp_path / "profile" / "config.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    return path.parent


def run_watched(cmd: list[str], cwd: Path, cluster: Cluster, out_path: Path) -> tuple[int, str]:
    """Run Snakemake, but stop it at once if SLURM can never run a job (node down, or a job pending on a free node)."""
    stalled: dict[str, float] = {}
    with open(out_path, "w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=cluster.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        problem = None
        try:
            deadline = time.monotonic() + RUN_LIMIT_S + 30
            while proc.poll() is None:
                time.sleep(2)
                problem = cluster_problem(cluster, stalled)
                if problem is None and time.monotonic() > deadline:
                    problem = f"Snakemake still running after {RUN_LIMIT_S + 30} s"
                if problem:
                    break
        finally:
            if proc.poll() is None:
                # The plugin may ignore SIGTERM while it waits on SLURM: SIGKILL follows.
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    output = out_path.read_text(errors="replace")
    if problem:
        pytest.fail(f"{problem}\n\nSnakemake's last output:\n{output[-3000:]}\n{cluster.log_tail('slurmctld.log')}")
    return proc.returncode, output


def cluster_problem(cluster: Cluster, stalled: dict[str, float]) -> str | None:
    """Why no job can make progress, or None while SLURM can still run them.

    stalled["since"] remembers when jobs began to wait with nothing running.
    """
    nodes = cluster.query("sinfo", "-h", "-N", "-o", "%N %T")
    queue = cluster.query("squeue", "-h", "-o", "%i|%T|%r")
    if nodes is None or queue is None:
        return None  # slurmctld busy for a moment; Snakemake's own timeout still holds
    for line in nodes.splitlines():
        name, _, node_state = line.partition(" ")
        if node_state.endswith("*") or any(bad in node_state for bad in ("down", "drain", "fail", "inval")):
            return f"node {name} is {node_state}:\n{cluster.show('sinfo', '-R')}\n{cluster.log_tail('slurmd.log')}"
    jobs = [line.split("|", 2) for line in queue.splitlines() if line.count("|") >= 2]
    pending = [(job_id, reason) for job_id, state, reason in jobs if state == "PENDING"]
    if not pending or any(state in ("RUNNING", "COMPLETING", "CONFIGURING") for _, state, _ in jobs):
        stalled.pop("since", None)
        return None
    since = stalled.setdefault("since", time.monotonic())
    if time.monotonic() - since < STUCK_PENDING_S:
        return None
    job_id, reason = pending[0]
    return (
        f"SLURM job {job_id} has been pending for {STUCK_PENDING_S} s with nothing running ({reason}):\n"
        f"{cluster.show('scontrol', 'show', 'job', job_id)}"
    )


def failure_report(dest: Path, cluster: Cluster, output: str) -> str:
    """SLURM's word on every job that did not complete, with its log, and the end of Snakemake's output."""
    parts = [f"Snakemake's last output:\n{output[-4000:]}"]
    logs = {p.stem: p for p in (dest / ".snakemake" / "slurm_logs").rglob("*.log")}
    for job_id, record in sorted(cluster.jobcomp().items()):
        if record.get("JobState") != "COMPLETED":
            parts.append(f"SLURM job {job_id}: {record.get('JobState')} exit {record.get('ExitCode')}")
            if job_id in logs:
                parts.append(f"--- {logs[job_id]}:\n{logs[job_id].read_text(errors='replace')[-2000:]}")
    parts.append(cluster.log_tail("slurmctld.log"))
    return "\n\n".join(parts)


def measurements_in_flight(output: str) -> int:
    """The most measure_run jobs Snakemake had submitted to SLURM and not yet seen finish, from its log."""
    in_flight, peak = set(), 0
    for line in output.splitlines():
        submitted = re.search(r"Job (\d+) has been submitted with SLURM jobid \d+ \(log: (.+?)\)", line)
        if submitted and "/rule_measure_run/" in submitted.group(2):
            in_flight.add(submitted.group(1))
            peak = max(peak, len(in_flight))
        finished = re.search(r"Finished jobid: (\d+) \(Rule: measure_run\)", line)
        if finished:
            in_flight.discard(finished.group(1))
    return peak


def manifest_kinds(manifest: str) -> list[str]:
    """The manifest's paths with each run record's cell left out."""
    return sorted({re.sub(r"^data/runs/.*\.json$", "data/runs/<cell>.json", line) for line in manifest.split()})


@needs_root
@needs_two_cpus
def test_measurements_run_as_slurm_jobs(slurm: Cluster, project: Path, tmp_path: Path):
    dest = make_project(tmp_path / "project", SLURM_CONFIG)
    profile = slurm_test_profile(tmp_path, cpus=2)
    # --verbose: the plugin logs each sbatch line at debug level.
    cmd = ["timeout", "-k", "15", str(RUN_LIMIT_S), sys.executable, "-m", "snakemake"]
    cmd += ["--profile", str(profile), "--verbose", "reports/all"]
    started = time.monotonic()
    rc, output = run_watched(cmd, dest, slurm, tmp_path / "snakemake.log")
    wall_s = time.monotonic() - started
    assert rc == 0, failure_report(dest, slurm, output)

    # The profile's bench=16 was the limit in force, not a single unit from profiles/default (which
    # Snakemake loads after any --profile, its entries winning), so Snakemake handed SLURM several
    # measurements at once; SLURM then ran them one by one on this node (--exclusive).
    provided = re.search(r"Provided resources: (.*)", output)
    assert provided and re.search(r'\bbench=(?:Resource\("bench", )?16\b', provided.group(1)), (
        provided.group(0) if provided else output[-3000:]
    )
    in_flight = measurements_in_flight(output)
    assert in_flight > 1, f"Snakemake never had more than {in_flight} measurement job in SLURM at once"

    # SLURM's own record: every measurement was a SLURM job of this run that completed
    # with two CPUs in the partition asked for, and the measurement ran inside it.
    run_id = re.search(r"SLURM run ID: (\S+)", output)
    assert run_id, output[-3000:]
    submitted = re.findall(r"submitted with SLURM jobid (\d+) \(log: (.+?)\)", output)
    measure_logs = {job_id: Path(log) for job_id, log in submitted if "/rule_measure_run/" in log}
    assert len(measure_logs) == len(SLURM_CELLS), submitted
    deadline = time.monotonic() + 10
    while not set(measure_logs) <= set(slurm.jobcomp()) and time.monotonic() < deadline:
        time.sleep(0.5)
    records = slurm.jobcomp()
    for job_id, log in measure_logs.items():
        record = records.get(job_id)
        assert record, f"SLURM has no record of job {job_id} ({log.parent.name}): {sorted(records)}"
        assert record.get("JobState") == "COMPLETED", record
        assert record.get("Name") == run_id.group(1), record
        assert record.get("Partition") == "debug", record
        assert int(record.get("ProcCnt", 0)) >= 2, record
        assert "[measure] done" in log.read_text(errors="replace"), log.read_text(errors="replace")[-2000:]
    # What one measurement job asked SLURM for (the plugin logs its sbatch line in --verbose).
    sbatch = [line.split("sbatch call: ", 1)[1] for line in output.splitlines() if "sbatch call: " in line]
    measure_sbatch = [line.split(" --wrap", 1)[0] for line in sbatch if "rule_measure_run" in line]
    assert len(measure_sbatch) == len(SLURM_CELLS), sbatch
    assert "--exclusive" in measure_sbatch[0] and "--cpus-per-task=2" in measure_sbatch[0], measure_sbatch[0]
    # The light rules ran where Snakemake runs (localrules), not through sbatch.
    assert not [line for line in sbatch if re.search(r"rule_(aggregate_runs|write_summary|list_outputs)", line)]
    print(
        f"\nSLURM run of {len(SLURM_CELLS)} cells: {wall_s:.0f} s, up to {in_flight} measurement jobs in SLURM"
        f" at once; one measurement job: {measure_sbatch[0]}"
    )

    # Outputs of the same kind as the local run's: same columns and types, same files.
    runs = pd.read_parquet(dest / "data" / "overall" / "runs.parquet")
    local = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
    assert list(runs.columns) == list(local.columns)
    assert runs.dtypes.astype(str).to_dict() == local.dtypes.astype(str).to_dict()
    assert set(zip(runs["workload"], runs["server"], strict=True)) == SLURM_CELLS
    assert (runs["requests"] > 100).all() and not runs["cpu_shared"].any()
    # The same kinds of output as the local run, less the ratio chart: this matrix has no express.
    local_kinds = [k for k in manifest_kinds((project / "reports" / "all").read_text()) if "ratio-vs-express" not in k]
    assert manifest_kinds((dest / "reports" / "all").read_text()) == local_kinds
    assert "## point-lookup" in (dest / "reports" / "overall" / "summary.md").read_text()
    assert not leftovers(dest)


def test_kubernetes_profile_plans_every_job_without_a_cluster(tmp_path: Path):
    for module, package in (
        ("snakemake_executor_plugin_kubernetes", "snakemake-executor-plugin-kubernetes"),
        ("snakemake_storage_plugin_fs", "snakemake-storage-plugin-fs"),
    ):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"{package} is not installed; it is in requirements.txt: bash scripts/setup.sh")
    dest = make_project(tmp_path / "project")
    profile = yaml.safe_load((dest / "profiles" / "kubernetes" / "config.yaml").read_text())
    threads = profile["set-threads"]["measure_run"]
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/kubernetes", "--dry-run", "reports/all"]
    # No bucket here: the storage the pods would read and write is this directory.
    cmd += ["--default-storage-provider", "fs", "--default-storage-prefix", str(dest)]
    # A dry-run caps threads at --cores (1 unless given); a cluster run has no such cap.
    cmd += ["--cores", str(threads)]
    res = subprocess.run(
        cmd,
        cwd=dest,
        # No cluster either: a dry-run must not need one.
        env={**os.environ, "KUBECONFIG": str(tmp_path / "no-such-kubeconfig")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-4000:]
    assert planned_cells(res.stdout) == {
        (w, s) for w in ("empty", "point-lookup") for s in ("node-http", "node-http-aa", "express", "fastify")
    }
    measure_jobs = job_blocks(res.stdout, "measure_run")
    assert len(measure_jobs) == 8, res.stdout[-4000:]
    for block in measure_jobs:
        # Four whole CPUs with limits equal to requests: the Guaranteed QoS class.
        assert f"threads: {threads}" in block, block
        assert any(line.startswith("resources:") and "scale=0" in line for line in block), block


def job_blocks(output: str, rule: str) -> list[list[str]]:
    """The lines of each job of rule in a dry-run's output, one list per job."""
    blocks, current = [], None
    for line in output.splitlines():
        text = line.strip()
        if re.fullmatch(r"(local)?(rule|checkpoint) \S+:", text):
            current = [] if text.split()[-1] == f"{rule}:" else None
            if current is not None:
                blocks.append(current)
        elif current is not None:
            current.append(text)
    return blocks

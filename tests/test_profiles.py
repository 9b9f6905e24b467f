"""The limits Snakemake schedules by under each documented command: `bench` and the local defaults.

`bench` is the global resource every measure_run job takes one unit of: one on one machine, so that
measurements never overlap, and 16 under the cluster profiles, where it only caps how many nodes measure
at once. Where the value comes from is not obvious: Snakemake also loads profiles/default (the workflow
profile next to the Snakefile) under every --profile, and a workflow profile's entries win over a
--profile's; common.smk then registers bench=1 if nothing set it. So these tests do not read the
command line as parsed: each runs the documented command as a dry-run in a copy of the checkout and
reads the resources from Snakemake's own job scheduler, built after the Snakefile has run. Each takes
a few seconds and measures nothing.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, make_project

MARK = "SCHEDULER:"
# Snakemake's command line in this interpreter, with its job scheduler's constructor wrapped: once the
# scheduler exists (the Snakefile has run, the DAG is built) it prints the global resources it will
# schedule by, and two of the local profile's settings, as one JSON line. A dry-run builds the same
# scheduler a real run does, from the same workflow.global_resources.
PROBE = f"""
import json, sys
import snakemake.cli
from snakemake.scheduling.job_scheduler import JobScheduler

built = JobScheduler.__init__

def probe(self, workflow, *args, **kwargs):
    built(self, workflow, *args, **kwargs)
    found = {{
        "resources": {{name: value for name, value in self.resources.items() if not name.startswith("_")}},
        "rerun_incomplete": workflow.dag_settings.force_incomplete,
        "printshellcmds": workflow.output_settings.printshellcmds,
        # Workflow.is_local without its local_exec clause, which holds for every rule in a dry-run.
        "local_rules": sorted(
            rule.name for rule in workflow.rules
            if rule.group is None and (rule.name in workflow._localrules or rule.norun or rule.is_template_engine)
        ),
        "rules": sorted(rule.name for rule in workflow.rules),
    }}
    print({MARK!r}, json.dumps(found), flush=True)

JobScheduler.__init__ = probe
sys.exit(snakemake.cli.main(sys.argv[1:]))
"""

# The commands as README.md and docs/cluster.md show them, and the `bench` each must end up with.
COMMANDS = {
    "local": (["--cores", "1", "reports/all"], 1),
    "slurm": (["--profile", "profiles/slurm", "reports/all"], 16),
    # The profile's S3 storage would make the dry-run ask the bucket about every input, which needs
    # credentials, an endpoint and the files uploaded (tests/test_readme_commands.py does that against
    # a local S3). The fs storage over the checkout's copy (the snakemake-storage-plugin-fs that
    # tests/test_slurm.py uses too) plans the same jobs from here; it sets no resource.
    "kubernetes": (
        ["--profile", "profiles/kubernetes", "reports/all", "--default-storage-provider", "fs"],
        16,
    ),
}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the checkout with the config as shipped (the dry-run's start-up may tidy data/)."""
    return make_project(tmp_path_factory.mktemp("profiles") / "project", (REPO / "config.yaml").read_text())


def scheduled(checkout: Path, args: list[str]) -> tuple[dict, str]:
    """What the scheduler of `snakemake ARGS --dry-run` was built with, and Snakemake's output."""
    if "--default-storage-provider" in args:
        args = [*args, "--default-storage-prefix", str(checkout)]
    res = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--dry-run"],
        cwd=checkout,
        # No cluster: a dry-run must not need one.
        env={**os.environ, "KUBECONFIG": str(checkout / "no-such-kubeconfig")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout[-4000:]
    found = [line.split(MARK, 1)[1] for line in res.stdout.splitlines() if line.startswith(MARK)]
    assert len(found) == 1, res.stdout[-4000:]
    return json.loads(found[0]), res.stdout


@pytest.mark.parametrize(("args", "bench"), COMMANDS.values(), ids=COMMANDS.keys())
def test_documented_command_schedules_with_its_bench(checkout: Path, args: list[str], bench: int):
    found, output = scheduled(checkout, args)
    # Snakemake's own line naming the profiles it loaded, in the order they override each other.
    loaded = [line for line in output.splitlines() if line.startswith("Using ")]
    assert found["resources"].get("bench") == bench, (found, loaded)
    # profiles/default's other settings hold under every command.
    assert found["rerun_incomplete"] and not found["printshellcmds"], found


#: The rules whose jobs a cluster runs: the measurements, the failures a claim expects (each starts a server and
#: its load) and the database template. Everything else runs where Snakemake runs.
CLUSTER_RULES = {"measure_run", "expect_failure", "build_database_template", "prepare_external_database"}


def test_under_the_cluster_profile_only_the_measurements_and_the_database_leave_the_submitting_host(checkout: Path):
    found, _ = scheduled(checkout, COMMANDS["slurm"][0])
    rules = set(found["rules"]) - {"all"}
    # Every light rule local, with the rules `use rule` derives from them (aggregate_claim_runs, the claims' and
    # the whole run's list_outputs), which the hand-kept list missed.
    assert set(found["local_rules"]) - {"all"} == rules - CLUSTER_RULES, found
    assert {"aggregate_claim_runs", "list_claims_outputs", "list_all_outputs"} <= set(found["local_rules"])
    assert CLUSTER_RULES & rules >= {"measure_run", "build_database_template"}

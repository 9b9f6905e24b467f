import json
import os
import re
import sys
import time
from pathlib import Path

import yaml
from snakemake.exceptions import IncompleteCheckpointException
from snakemake.io import checkpoint_target
from snakemake.utils import validate

# This checkout's nodebench package, here and in every job (jobs inherit PYTHONPATH), even
# when the virtual environment has another checkout's installed in editable mode.
SCRIPTS = str(Path(workflow.basedir) / "scripts")
sys.path.insert(0, SCRIPTS)
from nodebench import claimfile, configcheck, plan, recovery  # noqa: E402
from nodebench import runs, targets  # noqa: E402
from nodebench.harness import progress  # noqa: E402
from nodebench.catalogue.clients import CLIENTS, PROGRAMS  # noqa: E402
from nodebench.catalogue.workloads import WORKLOADS as CATALOGUE  # noqa: E402
from nodebench.render import closing  # noqa: E402
from nodebench.render.chart_list import CHART_LIST, caption  # noqa: E402
from nodebench.harness import nodejs, storage, workspace  # noqa: E402
from nodebench.harness.errors import StorageError  # noqa: E402
from nodebench.targets import code  # noqa: E402


def stop_on(problems, head=""):
    """Stop before any job runs, naming every problem found."""
    if problems:
        lines = "\n".join(problems)
        raise WorkflowError(f"{head}{lines}")


# A key under a name it no longer has, then the schema, then every other problem at once, one line each.
stop_on(configcheck.renamed_keys(config))
# What --config gave, read as config.yaml would read it (Snakemake leaves text inside a mapping or list).
configcheck.typed_from_command_line(config, workflow.config_settings.config)
CONFIG_SCHEMA = str(Path(workflow.basedir, "workflow/schemas/config.schema.yaml"))
stop_on(
    configcheck.schema_problems(
        # libyaml where it is there: 2 ms instead of 16 at every start.
        config,
        yaml.load(
            Path(CONFIG_SCHEMA).read_text(),
            Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
        ),
    )
)
# Valid by now: this only sets the schema's defaults (its own message would print the schema and the config).
validate(config, CONFIG_SCHEMA)
stop_on(configcheck.problems(config, Path(workflow.basedir) / "servers"))
# The A/B target (config's `compare`) is measured as an experiment of its own: reports/compare/all.
config["experiments"] = plan.with_ab(config)["experiments"]
for _line in [
    *configcheck.warnings(config),
    *configcheck.merged_workloads(config, workflow.config_settings.config),
]:
    print(f"nodebench: {_line}", file=sys.stderr)

# The claims ledger's file, read with libyaml (5 ms instead of 40 at every start), checked as config is.
CLAIMS_FILE = "claims.yaml"
CLAIMS_DOC = yaml.load(
    Path(workflow.basedir, CLAIMS_FILE).read_text(),
    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
)
validate(CLAIMS_DOC, str(Path(workflow.basedir, "workflow/schemas/claims.schema.yaml")))
stop_on(claimfile.check(CLAIMS_DOC["claims"]), f"{CLAIMS_FILE}: ")

# Measurements never overlap on one machine: each takes the one unit of 'bench'. This is the
# only place that sets it for a local run. Not profiles/default: Snakemake loads that under
# every --profile too, and its `resources` would win over a site profile's `bench: 16`. A
# value from a profile or --resources (already in global_resources, from which the job
# scheduler is built after the Snakefile has run) is kept.
if "bench" not in workflow.global_resources:
    workflow.register_resource("bench", 1)

T = targets.Targets(config)
EXPERIMENTS = T.experiments
WORKLOADS = T.workloads
SCOPES = T.scopes
PYTHON = sys.executable

# What every job inherits: this checkout's nodebench, the DSN (never on a command line) and the session id.
JOB_ENV = targets.job_environment(config, SCRIPTS, os.environ)
os.environ.update(JOB_ENV)

LEDGER_CLAIMS = claimfile.ledger_claims(
    CLAIMS_DOC["claims"], T.scope_cells, T.failure_cells
)
# The scopes whose runs the ledger's claims read; their records are asked for only when the DAG is built, after
# the workflow has set where adaptive blocks stopped (T.stopped_at).
LEDGER_RUN_SCOPES = claimfile.run_scopes(LEDGER_CLAIMS)
# A block whose looks read the claims (adaptive's stop_on: claims) stops on these.
T.claims = LEDGER_CLAIMS
LEDGER_FAILURES = T.failure_paths(claimfile.failure_scopes(LEDGER_CLAIMS))

if workflow.is_main_process:
    # Snakemake knows its targets only after this file has run: a report target that names no scope gets the
    # list of targets here, instead of a MissingRuleException; then how long the measuring will take, refused
    # above max_hours. Both read the command line's arguments; through the API, the default target's plan.
    stop_on(targets.target_problems(sys.argv[1:], SCOPES))
    stop_on(targets.report_problem(sys.argv[1:], SCOPES))
    _scopes = targets.requested_scopes(sys.argv[1:], SCOPES)
    _planned = T.planned_records(
        _scopes, T.claim_records(LEDGER_CLAIMS) if "claims" in _scopes else None
    )
    _to_measure = [r for r in _planned if not os.path.exists(r)]
    # Whether the plan is a cap: an adaptive block among the target's scopes (the ledger's are its claims' scopes).
    _CAPPED = any(
        T.looks(T.block_of(s))
        for s in [*_scopes, *(LEDGER_RUN_SCOPES if "claims" in _scopes else [])]
        if s != "claims"
    )
    _line, _too_long = targets.estimate(
        ", ".join(map(targets.target_of, _scopes)),
        _to_measure,
        len(_planned) - len(_to_measure),
        config["warmup_s"],
        config["max_hours"],
        capped=_CAPPED,
    )
    stop_on(_too_long)
    print(f"nodebench: {_line}", file=sys.stderr)


def say(line):
    print(f"nodebench: {line}", file=sys.stderr)


# A manifest that lists a file which is gone (a record removed by a re-measuring job that
# was killed) is removed, so that its job is due and Snakemake rebuilds what is missing
# and everything after it; otherwise the run would find nothing to do.
if workflow.is_main_process:
    # workflow.dryrun is False while the Snakefile is read (targets.dry_run_asked): the command line says. A
    # command that runs no job (--unlock, --summary) removes nothing either.
    _dry_run = workflow.dryrun or targets.changes_nothing(sys.argv[1:])
    # A dry run keeps a false manifest and plans its job as due instead (list_outputs' params): the plan is the
    # one a real run makes once it has removed it.
    FALSE_MANIFESTS = {
        str(p)
        for p in recovery.drop_false_manifests(T.manifests(), say, dry_run=_dry_run)
    }
    # A look made for other looks or another target, or before its records, decides nothing: made again.
    # A dry run removes nothing and plans as if what it would remove were gone (stopped_at).
    # Only a dry run keeps the list: a real run has removed them, and its looks made again must be read.
    _removed = recovery.drop_stale_looks(T.adaptive_blocks(), say, dry_run=_dry_run)
    WOULD_REMOVE = {str(p) for p in _removed} if _dry_run else set()
    if not _dry_run:
        FALSE_MANIFESTS = set()
else:
    WOULD_REMOVE = set()
    FALSE_MANIFESTS = set()


def manifest_due(manifest):
    """list_outputs' param: 'listed-missing' for a manifest a dry run found false (its job is then due for
    changed params, and Snakemake plans the missing files it lists), else empty. Computed from the wildcards,
    not the output: Snakemake compares only params that are not derived from a job's files.
    """
    return "listed-missing" if manifest in FALSE_MANIFESTS else ""


# --- Input functions: each delegates to nodebench.targets ----------------------------


def measure_inputs(wildcards):
    return T.measure_inputs(runs.Run.from_wildcards(wildcards))


def failure_inputs(wildcards):
    return T.failure_inputs(wildcards.workload, wildcards.server, wildcards.client)


def measure_priority(wildcards):
    """Earlier in the plan, higher priority: rounds run in order, each in its shuffled order."""
    return T.plan.priority(runs.Run.from_wildcards(wildcards))


def round_position(wildcards):
    return T.plan.place(runs.Run.from_wildcards(wildcards))[0] or 0


def round_size(wildcards):
    return T.plan.place(runs.Run.from_wildcards(wildcards))[1] or 0


def attempt_number(wildcards, attempt):
    """Which attempt of its job this is, from 1 (Snakemake passes it to resources only)."""
    return attempt


def job_inputs(wildcards, input):
    return targets.job_inputs(input)


def job_options(wildcards):
    """Params are kept in .snakemake/metadata, so the DSN is here without its password."""
    return T.job_options(wildcards.server, wildcards.client)


def workload_entry(wildcards):
    """A cell's workload as the catalogue defines it (every field): a parameter, so that editing it
    re-measures its cells (and only those); the job reads the catalogue itself."""
    return repr(CATALOGUE[wildcards.workload])


def summary_inputs(wildcards):
    return T.summary_inputs(wildcards.scope)


def stopped_at(block):
    """The rounds an adaptive block stopped at: its first look that says stop (the last one always does).
    Each look is the checkpoint `look` (adaptive.smk): asking for one not yet made makes Snakemake run it.
    """
    for n in T.looks(block):
        if T.look_path(block, n) in WOULD_REMOVE:
            # A dry run's stale look: to be made again, as if it had been removed.
            raise IncompleteCheckpointException(
                checkpoints.look.rule, checkpoint_target(T.look_path(block, n))
            )
        with open(checkpoints.look.get(block=block, n=n).output.look) as f:
            if json.load(f)["stop"]:
                return n
    return T.looks(block)[-1]


T.stopped_at = stopped_at


#: When this invocation started: the reports written since are the ones it announces as it ends.
_STARTED = time.time()


def _glance(scope):
    """A report's answer at a glance, from the tables its summary was written from."""
    return closing.glance(T.summary_inputs(scope), scope)


onsuccess:
    # The answer and where it is, last, where a person looks: each report this invocation wrote.
    for line in closing.closing_lines(Path("reports"), _STARTED, _glance):
        say(line)


onstart:
    # After a hard kill: a dead job's scratch space, and whatever of it still runs.
    workspace.sweep(workspace.bases(config["scratch_dir"]), say)
    # A read-only or full data/ or reports/ is an error that names it, before any job.
    try:
        for directory in ("data", "data/runs", "data/logs", "reports"):
            storage.probe(Path(directory))
    except StorageError as e:
        raise WorkflowError(f"{e}; nothing was run") from None
    # The measurements Snakemake will run now that the DAG is built: the plan's missing records, and recorded ones
    # whose code or inputs changed. Each job reads this plan to say which round of how many it measured and how
    # long the rest will take (nodebench.harness.progress).
    due = [
        str(j.output[0])
        for j in workflow.dag.needrun_jobs()
        if j.rule.name == "measure_run"
    ]
    again = [r for r in due if os.path.exists(r)]
    if again:
        say(
            f"{len(again)} recorded runs will be measured again (asked for, or their code or inputs changed): about "
            f"{targets.spoken_duration(targets.measuring_seconds(again, config['warmup_s']))} more"
        )
    # Adaptive blocks' later rounds join the DAG only at their looks: planned, at most.
    to_measure = list(dict.fromkeys([*due, *_to_measure]))
    if to_measure:
        plan_file = progress.plan_path(
            Path(".snakemake") / "nodebench", JOB_ENV["NODEBENCH_SESSION"]
        ).resolve()
        progress.write(
            plan_file,
            runs.planned_rounds(_planned),
            {
                r: targets.measuring_seconds([r], config["warmup_s"])
                for r in to_measure
            },
            capped=_CAPPED,
        )
        os.environ.update({"NODEBENCH_PLAN": str(plan_file)})


_runs = [*T.all_runs(), *T.all_failure_cells()]


wildcard_constraints:
    server="|".join(map(re.escape, sorted({c[1] for c in _runs}))),
    workload="|".join(map(re.escape, sorted({c[0] for c in _runs}))),
    connections=r"\d+",
    round=r"\d+",
    block="|".join(map(re.escape, [plan.MAIN_BLOCK, *T.block_names.values()])),
    client="|".join(CLIENTS),
    stop=r"(\d+(\.\d+)?s|\d+req)(-at\d+|-r\d+|-end)?",
    scope="|".join(map(re.escape, SCOPES)),
    chart="|".join(CHART_LIST),

import json
import os
import re
import sys
import time
from pathlib import Path

# This checkout's nodebench package, here and in every job (jobs inherit PYTHONPATH), even
# when the virtual environment has another checkout's installed in editable mode.
SCRIPTS = str(Path(workflow.basedir) / "scripts")
sys.path.insert(0, SCRIPTS)
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [SCRIPTS, os.environ.get("PYTHONPATH")])
)
from nodebench import codegraph, plan, recovery  # noqa: E402
from nodebench.catalogue.clients import CLIENTS, PROGRAMS, Stop, problems  # noqa: E402
from nodebench.catalogue.workloads import (
    FRAMEWORK_ONLY,
    WORKLOADS as CATALOGUE,
)  # noqa: E402
from nodebench.render.chart_list import CHART_LIST, EXTENSIONS  # noqa: E402
from nodebench.catalogue import thresholds  # noqa: E402
from nodebench.harness import DSN_VARIABLE, nodejs, storage, workspace  # noqa: E402
from nodebench.harness.errors import StorageError  # noqa: E402

SERVERS_DIR = Path(workflow.basedir) / "servers"
# Shared code in servers/ that is not a server configuration; names with other
# characters (eslint.config.js, _base.js) are never configurations either.
NOT_SERVERS = {"contract"}
SERVER_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
# Directories under data/ that are not scopes.
DATA_DIRS = {"runs", "logs", "database", "toolchain", "claims"}


def available_servers():
    """Names of the server configurations that exist as servers/<name>.js."""
    return sorted(
        p.stem
        for p in SERVERS_DIR.glob("*.js")
        if SERVER_NAME.fullmatch(p.stem) and p.stem not in NOT_SERVERS
    )


def check_servers(names):
    """Fail before any job runs when config names a server that has no file."""
    missing = [n for n in names if n not in available_servers()]
    if missing:
        raise WorkflowError(
            f"config key 'servers' names {', '.join(map(repr, missing))}, which has no file "
            f"servers/<name>.js; available: {', '.join(available_servers())}"
        )


def check_workloads(names, where):
    """Fail before any job runs when config names a workload the catalogue does not have."""
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown:
        raise WorkflowError(
            f"config key '{where}' names workload {', '.join(map(repr, unknown))}, which is not in the "
            f"catalogue (scripts/nodebench/catalogue/workloads.py); available: {', '.join(CATALOGUE)}"
        )


EXPERIMENTS = config.get("experiments") or {}
check_servers(config["servers"])


def check_control():
    """The A/A twin's name must not be a server of its own; a control the matrix does not measure is off."""
    named = config.get("control")
    if named and named not in available_servers():
        raise WorkflowError(
            f"config key 'control' is {named!r}, which has no file servers/<name>.js; "
            f"available: {', '.join(available_servers())}, or leave it empty for no A/A control"
        )
    if named and not plan.control(config):
        print(
            f"nodebench: the A/A control {named!r} is not among 'servers' ({', '.join(config['servers'])}): "
            "no A/A control and no noise floor in this run",
            file=sys.stderr,
        )
    control = plan.control(config)
    if control and plan.twin(control) in available_servers():
        raise WorkflowError(
            f"config key 'control': the A/A twin's name {plan.twin(control)!r} is also servers/{plan.twin(control)}.js; "
            "rename that file"
        )


def server_framework(name):
    """The framework a server configuration runs: the servers/frameworks/<x>.js it loads, else its own name."""
    for path in codegraph.js_files(f"servers/{name}.js"):
        if Path(path).parent.name == "frameworks":
            return Path(path).stem
    return name


def check_frameworks(servers, workloads, where):
    """A workload only some frameworks answer (seed 003's failure modes) is measured on those only."""
    for w in workloads:
        only = CATALOGUE[w].frameworks
        wrong = [s for s in servers if only and server_framework(s) not in only]
        if wrong:
            raise WorkflowError(
                f"config key '{where}': workload {w!r} is answered by {', '.join(only)} servers only, not "
                f"{', '.join(wrong)}"
            )


check_control()
check_workloads(config["workloads"], "workloads")
check_frameworks(config["servers"], config["workloads"], "workloads")
for _name, _experiment in EXPERIMENTS.items():
    for _key in ("matrices", "failures"):
        for _i, _matrix in enumerate(_experiment.get(_key) or []):
            check_servers(_matrix["servers"])
            check_workloads(
                _matrix["workloads"], f"experiments.{_name}.{_key}[{_i}].workloads"
            )
            check_frameworks(
                _matrix["servers"],
                _matrix["workloads"],
                f"experiments.{_name}.{_key}[{_i}]",
            )


def check_experiments():
    """Names that cannot clash with other targets, and stopping rules each client can do."""
    for name, experiment in EXPERIMENTS.items():
        if name in ("overall", *CATALOGUE, *DATA_DIRS):
            raise WorkflowError(
                f"config key 'experiments' has an experiment named {name!r}, which is also a workload, scope or "
                "data directory name; rename it"
            )
        listed = [
            (f"experiments.{name}.{key}[{i}]", matrix)
            for key in ("matrices", "failures")
            for i, matrix in enumerate(experiment.get(key) or [])
        ]
        for where, matrix in listed:
            named = matrix.get("control")
            if named and named not in matrix["servers"]:
                raise WorkflowError(
                    f"config {where}.control is {named!r}, which is not among its servers ({', '.join(matrix['servers'])})"
                )
            if named and plan.twin(named) in available_servers():
                raise WorkflowError(
                    f"config {where}.control: the A/A twin's name {plan.twin(named)!r} is also "
                    f"servers/{plan.twin(named)}.js; rename that file"
                )
            rules = {
                "duration": matrix.get("durations_s", []),
                "count": matrix.get("counts", []),
            }
            if not any(rules.values()):
                raise WorkflowError(
                    f"config {where} has no stopping rule: give durations_s, counts or both"
                )
            for client in matrix["load_generators"]:
                bad = problems(
                    client, rules, [CATALOGUE[w] for w in matrix["workloads"]]
                )
                if bad:
                    raise WorkflowError(f"config {where}: {'; '.join(bad)}")


check_experiments()


def check_pool_fits():
    """The embedded server must accept every pool connection plus the harness's own."""
    settings = config["database"].get("settings", {})
    limit = int(settings.get("max_connections", 100))
    if not config["database"].get("dsn") and config["pool_size"] + 2 > limit:
        raise WorkflowError(
            f"config key 'pool_size' is {config['pool_size']}, but database.settings.max_connections is "
            f"{limit}: raise max_connections to at least pool_size + 2"
        )


check_pool_fits()

# Measurements never overlap on one machine: each takes the one unit of 'bench'.
# The default profile sets the same limit; this keeps it when no profile is used.
if "bench" not in workflow.global_resources:
    workflow.register_resource("bench", 1)

EMBEDDED = not config["database"].get("dsn")
DATABASE_INFO = "data/database/database.json"
TEMPLATE = "data/database/template"
NODE_MODULES = "servers/node_modules/.nodebench-installed"


CAPTION_THRESHOLDS = {
    "confidence": thresholds.pct(thresholds.CONFIDENCE),
    "server_bound_elu": thresholds.pct(thresholds.SERVER_BOUND_ELU),
    "headline_connections": thresholds.HEADLINE_CONNECTIONS,
}


def code(script):
    """A rule's code inputs: the nodebench modules its entry script imports, transitively."""
    return list(codegraph.python_modules(f"scripts/{script}"))


# --- The cells: the main matrix and the experiments ---------------------------------

# The main matrix: one load generator for duration_s seconds, the A/A control's twin beside its server.
MAIN_STOP = plan.main_stop(config)
_bad = problems(
    plan.main_client(config),
    {"duration": [config["duration_s"]]},
    [CATALOGUE[w] for w in config["workloads"]],
)
if _bad:
    raise WorkflowError(f"config keys 'load_generator'/'duration_s': {'; '.join(_bad)}")
MAIN_SERVERS = plan.main_servers(config)
PLAN = plan.Plan(config)
# Measurement jobs read config's database.dsn from here, not from their command line, where
# `ps` would show its password (and an inherited value is never the one they use).
os.environ[DSN_VARIABLE] = config["database"]["dsn"] or ""
# One id per Snakemake invocation, inherited by its jobs: records of one round measured by
# different invocations are pairs that cross sessions, and the reports say so.
os.environ.setdefault(
    "NODEBENCH_SESSION", f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
)


def record_path(workload, server, connections, client, stop, rep):
    return f"data/runs/{workload}/{server}/c{connections}/{client}-{stop}/r{rep}.json"


def cells():
    """Every (workload, server, connections, client, stop, round) in the main matrix."""
    for cell in plan.main_cells(config):
        for r in range(1, config["rounds"] + 1):
            yield (*cell, r)


def experiment_cells(name):
    """Every run of an experiment, each once even where matrices overlap."""
    rounds = plan.experiment_rounds(config, name)
    return [
        (*cell, r)
        for cell in plan.experiment_cells(config, name)
        for r in range(1, rounds + 1)
    ]


def measure_priority(wildcards):
    """Earlier in the plan, higher priority: rounds run in order, each in its shuffled order."""
    w = wildcards
    return PLAN.priority(w.workload, w.server, w.connections, w.loadgen, w.stop, w.rep)


def failure_cells(name):
    """An experiment's cells expected to fail (its `failures`), each once: (workload, server, connections, client, stop)."""
    failures = EXPERIMENTS.get(name, {}).get("failures") or []
    if not failures:
        return []
    return plan.experiment_cells({"experiments": {name: {"matrices": failures}}}, name)


ALL_CELLS = [*cells(), *(c for e in EXPERIMENTS for c in experiment_cells(e))]
# Cells expected to fail have their own rule and paths, but the same wildcards.
FAILURE_CELLS = [c for e in EXPERIMENTS for c in failure_cells(e)]


wildcard_constraints:
    server="|".join(
        map(re.escape, sorted({c[1] for c in [*ALL_CELLS, *FAILURE_CELLS]}))
    ),
    workload="|".join(
        map(re.escape, sorted({c[0] for c in [*ALL_CELLS, *FAILURE_CELLS]}))
    ),
    connections=r"\d+",
    rep=r"\d+",
    loadgen="|".join(CLIENTS),
    stop=r"\d+(\.\d+)?s|\d+req",


CATALOGUE_MODULE = "scripts/nodebench/catalogue/workloads.py"


def failure_path(workload, server, connections, client, stop):
    return f"data/failures/{workload}/{server}/c{connections}/{client}-{stop}.json"


def failure_inputs(wildcards):
    """A cell expected to fail takes what its measurement would, and its own entry script's code."""
    return measure_inputs(wildcards) | {
        "entry": "scripts/expect_failure.py",
        "code": [m for m in code("expect_failure.py") if m != CATALOGUE_MODULE],
    }


# The job's command line (scripts/nodebench/harness/job.py reads it). A shell command, not a
# `script:`: a script job imports Snakemake to unpickle its job object, about 0.1 s of every
# measurement before anything starts. Its entry script is an input, and so is its code.
PYTHON = sys.executable


def job_command(entry, rest):
    return (
        "{PYTHON:q} scripts/%s --out {output:q} --log {log:q}"
        " --inputs {params.inputs:q} --options {params.options:q}"
        " --cell {wildcards.workload} {wildcards.server} {wildcards.connections}"
        " {wildcards.loadgen} {wildcards.stop} %s"
    ) % (entry, rest)


def job_inputs(wildcards, input):
    """The named inputs the harness opens (not the lists that are inputs only to rerun the job), as JSON."""
    return json.dumps(
        {k: input[k] for k in input.keys() if isinstance(input[k], str)},
        sort_keys=True,
    )


def job_options(wildcards):
    """The measurement's options: config's keys it depends on and the server's Node.js label. Params
    are kept in .snakemake/metadata, so the DSN is here without its password; jobs read it from the
    environment."""
    return json.dumps(
        {
            "warmup_s": config["warmup_s"],
            "pool_size": config["pool_size"],
            "server_port": config["server_port"],
            "node": config["node"],
            "scratch_dir": config["scratch_dir"],
            "allow_shared_cpu": config["allow_shared_cpu"],
            "database": database_params(),
            "runtime": plan.runtime(wildcards.server)[1],
        },
        sort_keys=True,
    )


def workload_entry(wildcards):
    """A cell's workload as the catalogue defines it (every field): a parameter, so that editing it
    re-measures its cells (and only those); the job reads the catalogue itself."""
    return repr(CATALOGUE[wildcards.workload])


def _place(wildcards):
    """(position in its round, round size), each 0 for a run outside the plan."""
    w = wildcards
    position, size = PLAN.place(
        w.workload, w.server, w.connections, w.loadgen, w.stop, w.rep
    )
    return position or 0, size or 0


def round_position(wildcards):
    return _place(wildcards)[0]


def round_size(wildcards):
    return _place(wildcards)[1]


def measure_inputs(wildcards):
    """This cell's files only: its server and what that server loads, its workload's and its client's files."""
    server = f"servers/{plan.server_file(wildcards.server, config)}.js"
    client = CLIENTS[wildcards.loadgen]
    inputs = {
        "server": server,
        "server_files": list(codegraph.js_files(server)),
        "lockfile": "servers/package-lock.json",
        "node_modules": NODE_MODULES,
        "database": DATABASE_INFO,
        "run_schema": "workflow/schemas/run-record.schema.yaml",
        # The catalogue module is not an input: the cell's own entry is a parameter
        # (workload_entry), so adding or editing another workload re-measures nothing here.
        "entry": "scripts/measure_run.py",
        "code": [m for m in code("measure_run.py") if m != CATALOGUE_MODULE],
    }
    fixture = CATALOGUE[wildcards.workload].answer_fixture
    if fixture:
        inputs["fixture"] = f"servers/fixtures/{fixture}"
    if client.files:
        inputs["client_file"] = client.files[0]
        inputs["client_files"] = [
            f
            for path in client.files
            if path.endswith(".js")
            for f in codegraph.js_files(path)
        ]
    if EMBEDDED:
        inputs["template"] = TEMPLATE
    if client.program:
        inputs["client_probe"] = f"data/toolchain/{wildcards.loadgen}.json"
    # The server's Node.js: the pipeline's own as described, or an installed major's binary
    # and description. The pipeline's own also where it runs the client (autocannon's driver),
    # so that a change of it re-measures only the cells it runs in.
    _, node = plan.runtime(wildcards.server)
    if node == plan.SYSTEM_NODE:
        inputs["server_node"] = "data/toolchain/node-system.json"
    else:
        inputs["server_node"] = f"data/toolchain/node{node}.json"
        inputs["server_binary"] = f"data/toolchain/node{node}/bin/node"
    if node == plan.SYSTEM_NODE or client.program is None:
        inputs["pipeline_node"] = "data/toolchain/node-system.json"
    return inputs


def attempt_number(wildcards, attempt):
    """Which attempt of its job this is, from 1 (Snakemake passes it to resources only)."""
    return attempt


def public_dsn():
    """database.dsn without its password: params are kept in .snakemake/metadata, so jobs read the DSN from config."""
    dsn = config["database"]["dsn"]
    if not dsn:
        return ""
    from nodebench.harness.database import redacted_dsn

    return redacted_dsn(dsn)


def database_params():
    """The database settings a measurement depends on (the DSN without its password)."""
    return {
        "dsn": public_dsn(),
        "run_as": config["database"]["run_as"],
        "settings": config["database"]["settings"],
    }


# --- Scopes: the whole matrix ("overall"), one workload, or one experiment -----------

WORKLOADS = list(config["workloads"])
SCOPES = ["overall", *WORKLOADS, *EXPERIMENTS]


def say(line):
    print(f"nodebench: {line}", file=sys.stderr)


# A manifest that lists a file which is gone (a record removed by a re-measuring job that
# was killed) is removed, so that its job is due and Snakemake rebuilds what is missing
# and everything after it; otherwise the run would find nothing to do.
if workflow.is_main_process:
    recovery.drop_false_manifests(
        ["reports/all", *(f"reports/{s}/all" for s in SCOPES)], say
    )


onstart:
    # After a hard kill: a dead job's scratch space, and whatever of it still runs.
    workspace.sweep(workspace.bases(config["scratch_dir"]), say)
    # A read-only or full data/ or reports/ is an error that names it, before any job.
    try:
        for directory in ("data", "data/runs", "data/logs", "reports"):
            storage.probe(Path(directory))
    except StorageError as e:
        raise WorkflowError(f"{e}; nothing was run") from None


wildcard_constraints:
    scope="|".join(map(re.escape, SCOPES)),
    chart="|".join(CHART_LIST),


def scope_records(scope):
    """The run records a scope reports."""
    if scope in EXPERIMENTS:
        found = experiment_cells(scope)
    else:
        found = [c for c in cells() if scope == "overall" or c[0] == scope]
    return [record_path(*c) for c in found]


def scope_workloads(scope):
    """The workloads a scope's metrics keep (None: every workload it measured)."""
    return [scope] if scope in WORKLOADS else None


def reference_runs(wildcards):
    """A single workload's share models need the framework-only workload's runs beside its own."""
    scope = wildcards.scope
    if scope in WORKLOADS and scope != FRAMEWORK_ONLY and FRAMEWORK_ONLY in WORKLOADS:
        return [f"data/{FRAMEWORK_ONLY}/runs.parquet"]
    return []


def versioned(scope):
    """An experiment compares Node.js versions, or framework majors (a server and its <name>4 beside it)."""
    if scope not in EXPERIMENTS:
        return False
    matrices = EXPERIMENTS[scope]["matrices"]
    nodes = {v for m in matrices for v in plan.node_versions(config, m)}
    servers = {s for m in matrices for s in m["servers"]}
    return len(nodes) > 1 or any(
        new in servers and old in servers for new, old in plan.MAJORS.items()
    )


def scored(scope):
    """An experiment scores its servers against node:http when it measures node:http on scenarios of a score set."""
    if scope not in EXPERIMENTS or versioned(scope):
        return False
    return any(
        "node-http" in m["servers"]
        and len(m["servers"]) > 1
        and any(CATALOGUE[w].score_set for w in m["workloads"])
        for m in EXPERIMENTS[scope]["matrices"]
    )


def experiment_charts(name):
    """Charts an experiment gets, from what its matrices measure."""
    matrices = EXPERIMENTS[name]["matrices"]
    charts = ["scenario-heatmap", "scenario-score"] if scored(name) else []
    if versioned(name):
        charts.append("versions")
    if any(m.get("counts") and m.get("durations_s") for m in matrices):
        charts.append("stopping-rule")
    if any(len(m.get("durations_s", [])) >= 3 for m in matrices):
        charts.append("duration-sweep")
    if len({c for m in matrices for c in m["load_generators"]}) > 1:
        charts.append("load-generators")
    return charts


def scope_chart_names(scope):
    """Charts drawn for a scope; the connection sweep only where a workload has several levels."""
    if scope in EXPERIMENTS:
        return experiment_charts(scope)
    workloads = WORKLOADS if scope == "overall" else [scope]
    swept = any(len(config["workloads"][w]["connections"]) > 1 for w in workloads)
    skip = {
        "connection-sweep": not swept,
        # Cost ratios need a baseline in the matrix: express or node-http.
        "cost-ratio": not {"express", "node-http"} & set(config["servers"]),
        # The drift view follows the A/A control, measured only when config names one.
        "control-drift": not plan.control(config),
    }
    return [
        name
        for name, spec in CHART_LIST.items()
        if spec.kind == "matrix" and not skip.get(name, False)
    ]


def scope_charts(scope, exts=EXTENSIONS):
    return [
        f"reports/{scope}/charts/{c}.{e}"
        for c in scope_chart_names(scope)
        for e in exts
    ]


def chart_tables(wildcards):
    """The scope's tables this chart is drawn from."""
    return {
        t: f"data/{wildcards.scope}/{t}.parquet"
        for t in CHART_LIST[wildcards.chart].tables
    }


def scope_tables(scope):
    """The tables a scope's summary is written from."""
    tables = ["runs", "metrics", "stopping" if scope in EXPERIMENTS else "scores"]
    return tables + ["scenarios"] * scored(scope) + ["versions"] * versioned(scope)


def summary_inputs(wildcards):
    return {
        t: f"data/{wildcards.scope}/{t}.parquet" for t in scope_tables(wildcards.scope)
    }


def scope_outputs(scope):
    """Everything a scope's manifest lists."""
    tables = scope_tables(scope)
    return [
        *scope_records(scope),
        *(failure_path(*c) for c in failure_cells(scope)),
        *(f"data/{scope}/{t}.parquet" for t in tables),
        f"reports/{scope}/summary.md",
        f"reports/{scope}/index.html",
        *scope_charts(scope),
    ]

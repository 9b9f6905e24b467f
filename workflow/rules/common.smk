import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))
import loadgen  # noqa: E402  (the clients and what each can do)
from records import WORKLOADS as KNOWN_WORKLOADS  # noqa: E402

SERVERS_DIR = Path(workflow.basedir) / "servers"
# Shared code in servers/ that is not a server configuration; names with other
# characters (eslint.config.js, _base.js) are never configurations either.
NOT_SERVERS = {"contract"}
SERVER_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


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


EXPERIMENTS = config.get("experiments") or {}
check_servers(config["servers"])
for _name, _experiment in EXPERIMENTS.items():
    for _matrix in _experiment["matrices"]:
        check_servers(_matrix["servers"])


def check_experiments():
    """Names that cannot clash with other targets, and stopping rules each client can do."""
    for name, experiment in EXPERIMENTS.items():
        if name in ("overall", *KNOWN_WORKLOADS):
            raise WorkflowError(
                f"config key 'experiments' has an experiment named {name!r}, which is also a workload or "
                "scope name; rename it"
            )
        for i, matrix in enumerate(experiment["matrices"]):
            where = f"experiments.{name}.matrices[{i}]"
            rules = {
                "duration": matrix.get("durations_s", []),
                "count": matrix.get("counts", []),
            }
            if not any(rules.values()):
                raise WorkflowError(
                    f"config {where} has no stopping rule: give durations_s, counts or both"
                )
            for client in matrix["load_generators"]:
                bad = loadgen.problems(client, rules)
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

# Measurement jobs never overlap on one machine: each takes the one unit of 'bench'.
# The default profile sets the same limit; this keeps it when no profile is used.
if "bench" not in workflow.global_resources:
    workflow.register_resource("bench", 1)

EMBEDDED = not config["database"].get("dsn")
DATABASE_INFO = "data/database/database.json"
TEMPLATE = "data/database/template"
NODE_MODULES = "servers/node_modules/.nodebench-installed"


ALL_SERVERS = sorted(
    {
        *config["servers"],
        *(s for e in EXPERIMENTS.values() for m in e["matrices"] for s in m["servers"]),
    }
)
ALL_WORKLOADS = sorted(
    {
        *config["workloads"],
        *(
            w
            for e in EXPERIMENTS.values()
            for m in e["matrices"]
            for w in m["workloads"]
        ),
    }
)


wildcard_constraints:
    server="|".join(map(re.escape, ALL_SERVERS)),
    workload="|".join(map(re.escape, ALL_WORKLOADS)),
    connections=r"\d+",
    rep=r"\d+",
    loadgen="|".join(loadgen.CLIENTS),
    stop=r"\d+(\.\d+)?s|\d+req",
    experiment="|".join(map(re.escape, EXPERIMENTS)) or "(?!)",


# The main matrix: autocannon for duration_s seconds.
MAIN_STOP = loadgen.Stop("duration", config["duration_s"]).label


def record_path(workload, server, connections, client, stop, rep):
    return f"data/runs/{workload}/{server}/c{connections}/{client}-{stop}/r{rep}.json"


def cells():
    """Every (workload, server, connections, client, stop, repetition) in the main matrix."""
    for workload, spec in config["workloads"].items():
        for server in config["servers"]:
            for connections in spec["connections"]:
                for rep in range(1, config["repetitions"] + 1):
                    yield workload, server, connections, "autocannon", MAIN_STOP, rep


def run_records():
    """Paths of all run records the configured matrix produces."""
    return [record_path(*cell) for cell in cells()]


def experiment_cells(name):
    """Every cell of an experiment, each once even where matrices overlap."""
    experiment = EXPERIMENTS[name]
    reps = experiment.get("repetitions", config["repetitions"])
    seen = {}
    for m in experiment["matrices"]:
        stops = [loadgen.Stop("duration", d).label for d in m.get("durations_s", [])]
        stops += [loadgen.Stop("count", n).label for n in m.get("counts", [])]
        for workload in m["workloads"]:
            for server in m["servers"]:
                for connections in m["connections"]:
                    for client in m["load_generators"]:
                        for stop in stops:
                            for rep in range(1, reps + 1):
                                seen[
                                    (workload, server, connections, client, stop, rep)
                                ] = None
    return list(seen)


def experiment_records(name):
    return [record_path(*cell) for cell in experiment_cells(name)]


def measure_inputs(wildcards):
    """Only this cell's server file plus what every server shares."""
    inputs = {
        "server": f"servers/{wildcards.server}.js",
        "contract": "servers/contract.js",
        "fixture": "servers/fixtures/static-user.json",
        "driver": "servers/loadgen/autocannon.js",
        "lua": "servers/loadgen/wrk-report.lua",
        "lockfile": "servers/package-lock.json",
        "node_modules": NODE_MODULES,
        "database": DATABASE_INFO,
    }
    if EMBEDDED:
        inputs["template"] = TEMPLATE
    if wildcards.loadgen in loadgen.PROGRAMS:
        inputs["client"] = f"data/toolchain/{wildcards.loadgen}.json"
    return inputs


def database_params():
    """The database settings a measurement depends on."""
    return {k: config["database"][k] for k in ("dsn", "run_as", "settings")}


# --- Scopes: "overall" is every workload; a workload name is that workload alone ---
WORKLOADS = list(config["workloads"])
SCOPES = ["overall", *WORKLOADS]
CHART_NAMES = [
    "cpu-per-request",
    "connection-sweep",
    "framework-share",
    "ratio-vs-express",
]
CHART_EXTS = ["png", "svg", "html", "vl.json"]


wildcard_constraints:
    scope="|".join(map(re.escape, SCOPES)),
    chart="|".join(CHART_NAMES),


def workload_records(workload):
    """Records a workload's own figures need: its cells, plus the empty cells its share model uses."""
    needed = {workload, "empty"} & set(WORKLOADS)
    return [record_path(*cell) for cell in cells() if cell[0] in needed]


def scope_runs(scope):
    return (
        "data/runs.parquet"
        if scope == "overall"
        else f"data/by-workload/{scope}/runs.parquet"
    )


def scope_metrics(scope):
    return (
        "data/metrics.parquet"
        if scope == "overall"
        else f"data/by-workload/{scope}/metrics.parquet"
    )


def scope_scores(scope):
    return (
        "data/scores.parquet"
        if scope == "overall"
        else f"data/by-workload/{scope}/scores.parquet"
    )


def scope_summary(scope):
    return "reports/summary.md" if scope == "overall" else f"reports/{scope}/summary.md"


def scope_workloads(scope):
    return WORKLOADS if scope == "overall" else [scope]


def scope_chart_names(scope):
    """Charts drawn for a scope; the connection sweep only where a workload has several levels."""
    swept = any(
        len(config["workloads"][w]["connections"]) > 1 for w in scope_workloads(scope)
    )
    return [c for c in CHART_NAMES if c != "connection-sweep" or swept]


def scope_charts(scope, exts=CHART_EXTS):
    return [
        f"reports/{scope}/charts/{c}.{e}"
        for c in scope_chart_names(scope)
        for e in exts
    ]


def scope_outputs(scope):
    """Everything a scope's `all` manifest lists."""
    records = run_records() if scope == "overall" else workload_records(scope)
    extra = ["reports/index.html"] if scope == "overall" else []
    return [
        *records,
        scope_runs(scope),
        scope_metrics(scope),
        scope_scores(scope),
        scope_summary(scope),
        *scope_charts(scope),
        *extra,
    ]

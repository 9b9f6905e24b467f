"""What is wrong with a configuration, before any job runs: every problem at once, each naming its key.

The schema (workflow/schemas/config.schema.yaml) has already checked types and spelling;
these are the checks a schema cannot make: names that must exist as files or catalogue
entries, stopping rules a client cannot do, names that would clash. The workflow raises
one error listing them all (workflow/rules/common.smk); the tests call `problems` directly.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from nodebench import plan
from nodebench.catalogue.clients import CLIENTS
from nodebench.catalogue.clients import problems as client_problems
from nodebench.catalogue.workloads import WORKLOADS

#: Shared code in servers/ that is not a server configuration; names with other characters
#: (eslint.config.js, _base.js) are never configurations either.
NOT_SERVERS = {"contract"}
SERVER_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
#: Directories under data/ that are not scopes, so no experiment may take their names.
DATA_DIRS = {"runs", "logs", "database", "toolchain", "claims", "failures"}


#: Config keys renamed so that one concept has one name everywhere (old -> new).
RENAMED_KEYS = {"load_generator": "client", "load_generators": "clients"}


def renamed_keys(config: dict) -> list[str]:
    """A key under its old name, with the name it has now: checked before the schema, which would only call it
    unexpected."""
    found = [(k, "") for k in config if k in RENAMED_KEYS]
    for name, experiment in (config.get("experiments") or {}).items():
        for key in ("matrices", "failures"):
            for i, matrix in enumerate((experiment or {}).get(key) or []):
                found += [(k, f"experiments.{name}.{key}[{i}].") for k in matrix or {} if k in RENAMED_KEYS]
    return [f"config key '{where}{k}' is now called '{RENAMED_KEYS[k]}': rename it" for k, where in found]


def typed_from_command_line(config: dict) -> None:
    """Numbers given on the command line inside a mapping (--config ab='{duration_s: 2}') arrive as text: read
    them as YAML scalars, in place, so that the schema sees numbers. Only in `ab` and `adaptive`."""

    def typed(value):
        if isinstance(value, list):
            return [typed(v) for v in value]
        if isinstance(value, str) and re.fullmatch(r"-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", value):
            return yaml.safe_load(value)
        return value

    for key in ("ab", "adaptive"):
        if isinstance(config.get(key), str) and config[key].strip() in ("null", "~", "none", "None", ""):
            config[key] = None  # --config adaptive=null: off, as config.yaml writes it
        if isinstance(config.get(key), dict):
            config[key] = {k: typed(v) for k, v in config[key].items()}


def section_problems(config: dict, schema: dict) -> list[str]:
    """`ab` and `adaptive` (top level and each experiment's) checked against their own definitions, so that a bad
    value is named by its key ('ab.half_width') rather than as a mapping 'not valid under any of the given
    schemas'."""
    import jsonschema

    found = []
    sections = [("ab", config.get("ab"), "ab"), ("adaptive", config.get("adaptive"), "adaptive")]
    for name, experiment in (config.get("experiments") or {}).items():
        if isinstance(experiment, dict) and experiment.get("adaptive") is not None:
            sections.append((f"experiments.{name}.adaptive", experiment["adaptive"], "adaptive"))
    for where, value, definition in sections:
        if value is None:
            continue
        validator = jsonschema.Draft202012Validator({**schema["$defs"][definition], "$defs": schema["$defs"]})
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            found.append(f"config key '{where}{path}': {error.message}")
    return found


def available_servers(servers_dir: Path) -> list[str]:
    """Names of the server configurations that exist as servers/<name>.js."""
    return sorted(
        p.stem for p in Path(servers_dir).glob("*.js") if SERVER_NAME.fullmatch(p.stem) and p.stem not in NOT_SERVERS
    )


def server_framework(name: str, servers_dir: Path) -> str:
    """The framework a server configuration runs: the servers/frameworks/<x>.js it loads, else its own name."""
    from nodebench import codegraph

    for path in codegraph.js_files(str(Path(servers_dir) / f"{name}.js")):
        if Path(path).parent.name == "frameworks":
            return Path(path).stem
    return name


def _servers(names: list[str], where: str, available: list[str]) -> Iterator[str]:
    missing = [n for n in names if n not in available]
    if missing:
        yield (
            f"config key '{where}' names {', '.join(map(repr, missing))}, which has no file servers/<name>.js; "
            f"available: {', '.join(available)}"
        )


def _workloads(names, where: str) -> Iterator[str]:
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        yield (
            f"config key '{where}' names workload {', '.join(map(repr, unknown))}, which is not in the catalogue "
            f"(scripts/nodebench/catalogue/workloads.py); available: {', '.join(WORKLOADS)}"
        )


def _frameworks(servers, workloads, where: str, servers_dir: Path, available: list[str]) -> Iterator[str]:
    """A workload only some frameworks answer (seed 003's failure modes) is measured on those only."""
    for w in workloads:
        only = WORKLOADS[w].frameworks if w in WORKLOADS else ()
        wrong = [s for s in servers if only and s in available and server_framework(s, servers_dir) not in only]
        if wrong:
            yield (
                f"config key '{where}': workload {w!r} is answered by {', '.join(only)} servers only, not "
                f"{', '.join(wrong)}"
            )


def _twin_clash(control: str | None, where: str, available: list[str]) -> Iterator[str]:
    if control and plan.twin(control) in available:
        yield (
            f"config {where}: the A/A twin's name {plan.twin(control)!r} is also servers/{plan.twin(control)}.js; "
            "rename that file"
        )


def _main(config: dict, servers_dir: Path, available: list[str]) -> Iterator[str]:
    yield from _servers(config["servers"], "servers", available)
    named = config.get("control")
    if named and named not in available:
        yield (
            f"config key 'control' is {named!r}, which has no file servers/<name>.js; "
            f"available: {', '.join(available)}, or leave it empty for no A/A control"
        )
    yield from _twin_clash(plan.control(config), "key 'control'", available)
    yield from _workloads(config["workloads"], "workloads")
    yield from _frameworks(config["servers"], config["workloads"], "workloads", servers_dir, available)
    known = [WORKLOADS[w] for w in config["workloads"] if w in WORKLOADS]
    bad = client_problems(plan.main_client(config), {"duration": [config["duration_s"]]}, known)
    if bad:
        yield f"config keys 'client'/'duration_s': {'; '.join(bad)}"


def _experiments(config: dict, servers_dir: Path, available: list[str]) -> Iterator[str]:
    for name, experiment in (config.get("experiments") or {}).items():
        if name in ("overall", *WORKLOADS, *DATA_DIRS):
            yield (
                f"config key 'experiments' has an experiment named {name!r}, which is also a workload, scope or "
                "data directory name; rename it"
            )
        for key in ("matrices", "failures"):
            for i, matrix in enumerate(experiment.get(key) or []):
                where = f"experiments.{name}.{key}[{i}]"
                yield from _servers(matrix["servers"], f"{where}.servers", available)
                yield from _workloads(matrix["workloads"], f"{where}.workloads")
                yield from _frameworks(matrix["servers"], matrix["workloads"], where, servers_dir, available)
                named = matrix.get("control")
                if named and named not in matrix["servers"]:
                    servers = ", ".join(matrix["servers"])
                    yield f"config {where}.control is {named!r}, which is not among its servers ({servers})"
                yield from _twin_clash(named, f"{where}.control", available)
                rules = {"duration": matrix.get("durations_s", []), "count": matrix.get("counts", [])}
                if not any(rules.values()):
                    yield f"config {where} has no stopping rule: give durations_s, counts or both"
                    continue
                known = [WORKLOADS[w] for w in matrix["workloads"] if w in WORKLOADS]
                for client in matrix["clients"]:
                    bad = client_problems(client, rules, known)
                    if bad:
                        yield f"config {where}: {'; '.join(bad)}"
                open_loop = [c for c in matrix["clients"] if c in CLIENTS and CLIENTS[c].open_loop]
                if open_loop and not matrix.get("loads_pct"):
                    yield f"config {where} uses {open_loop[0]}, which needs loads_pct (its rates, % of capacity)"
                if matrix.get("loads_pct") and not open_loop:
                    yield f"config {where} has loads_pct, which only an open-loop client (openloop) uses"
                if open_loop and key == "failures":
                    yield f"config {where}: an open-loop client cannot run a cell expected to fail"


def _ab(config: dict, servers_dir: Path, available: list[str]) -> Iterator[str]:
    """The A/B target's two builds: existing servers, on a Node.js major the pipeline installs, not the same."""
    ab = config.get("ab")
    if not ab:
        return
    if plan.AB in (config.get("experiments") or {}):
        yield f"config key 'experiments' has an experiment named {plan.AB!r}, the A/B target's name; rename it"
    for side in ("a", "b"):
        server, node = plan.runtime(ab[side])
        yield from _servers([server], f"ab.{side}", available)
        if node != plan.SYSTEM_NODE and not 20 <= int(node) <= 99:
            yield f"config key 'ab.{side}' is {ab[side]!r}: Node.js majors are 20 to 99"
    a, b = (plan.runtime(ab[side]) for side in ("a", "b"))
    if a[0] == b[0] and (a[1] == b[1] or (plan.SYSTEM_NODE not in (a[1], b[1]) and int(a[1]) == int(b[1]))):
        yield f"config keys 'ab.a' and 'ab.b' are both {ab['a']!r}: an A/B compares two different builds"
    yield from _workloads(ab["workloads"], "ab.workloads")
    servers = [plan.runtime(ab[side])[0] for side in ("a", "b")]
    yield from _frameworks(servers, ab["workloads"], "ab.workloads", servers_dir, available)
    known = [WORKLOADS[w] for w in ab["workloads"] if w in WORKLOADS]
    bad = client_problems(ab["client"], {"duration": [ab["duration_s"]]}, known)
    if bad:
        yield f"config keys 'ab.client'/'ab.duration_s': {'; '.join(bad)}"


def _pool(config: dict) -> Iterator[str]:
    """The embedded server must accept every pool connection plus the harness's own."""
    limit = int(config["database"].get("settings", {}).get("max_connections", 100))
    if not config["database"].get("dsn") and config["pool_size"] + 2 > limit:
        yield (
            f"config key 'pool_size' is {config['pool_size']}, but database.settings.max_connections is "
            f"{limit}: raise max_connections to at least pool_size + 2"
        )


def problems(config: dict, servers_dir: Path) -> list[str]:
    """Every problem of a schema-valid configuration, each naming the key it is about; empty when there is none."""
    available = available_servers(servers_dir)
    return [
        *_main(config, servers_dir, available),
        *_experiments(config, servers_dir, available),
        *_ab(config, servers_dir, available),
        *_pool(config),
    ]


def warnings(config: dict) -> list[str]:
    """What is allowed but probably not meant: an A/A control the matrix does not measure."""
    named = config.get("control")
    if named and not plan.control(config):
        return [
            f"the A/A control {named!r} is not among 'servers' ({', '.join(config['servers'])}): "
            "no A/A control and no noise floor in this run"
        ]
    return []

"""What is wrong with a configuration, before any job runs: every problem at once, each naming its key.

First the files' YAML (yaml_problems), then the schema (workflow/schemas/config.schema.yaml: types,
spelling, bounds; schema_problems, one line per problem), then the checks a schema cannot make:
names that must exist as files or catalogue entries, stopping rules a client cannot do, names
that would clash, looks out of order, a DSN libpq cannot read. The workflow raises one error
listing them all (workflow/rules/common.smk); the tests call `problems` directly.
"""

import difflib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml

from nodebench import plan, runs
from nodebench.catalogue.calibration import CALIBRATION_SERVER, CALIBRATION_WORKLOADS, DELAY_MS, is_calibration
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
#: Keys under an old name -> the name they have now. The A/B target's `ab` became `compare` on 2026-12-06 (its
#: report is reports/compare/all): 'ab' is also ApacheBench's name.
RENAMED_KEYS = {"load_generator": "client", "load_generators": "clients", "ab": "compare"}


def renamed_keys(config: dict) -> list[str]:
    """A key under its old name, with the name it has now: checked before the schema, which would only call it
    unexpected."""
    found = [(k, "") for k in config if k in RENAMED_KEYS]
    for name, experiment in (config.get("experiments") or {}).items():
        for key in ("matrices", "failures"):
            for i, matrix in enumerate((experiment or {}).get(key) or []):
                found += [(k, f"experiments.{name}.{key}[{i}].") for k in matrix or {} if k in RENAMED_KEYS]
    return [f"config key '{where}{k}' is now called '{RENAMED_KEYS[k]}': rename it" for k, where in found]


def typed_from_command_line(config: dict, given=None) -> None:
    """Values given with --config mean what they would mean in config.yaml, in place.

    Snakemake reads a --config value that is not a plain number with YAML's BaseLoader, so every scalar inside
    a mapping or list arrives as text (workloads='{empty: {connections: [50]}}' gives ['50']), and so does a
    top-level null or true. Each such text, where `given` (the command line's values; all of config when
    None) put it, is read again as a YAML scalar: a number, a boolean or null; any other text stays text."""

    def typed(value):
        if isinstance(value, dict):
            return {k: typed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [typed(v) for v in value]
        if isinstance(value, str) and value.strip():
            try:
                scalar = yaml.safe_load(value)
            except yaml.YAMLError:
                return value
            if scalar is None or isinstance(scalar, (bool, int, float)):
                return scalar
        return value

    def walk(target: dict, source) -> None:
        for key, value in source.items():
            if key not in target:
                continue
            if isinstance(value, Mapping) and isinstance(target[key], dict):
                walk(target[key], value)
            else:
                target[key] = typed(target[key])

    walk(config, config if given is None else given)


#: Where the schema lives, for messages.
SCHEMA_FILE = "workflow/schemas/config.schema.yaml"


def _where(path) -> str:
    """A key's place as config.yaml spells it: compare.looks[0]."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _branch(error):
    """Of a oneOf/anyOf error, the errors of the one branch whose type the value has; None when not just one."""
    branches: dict = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [
        errors
        for errors in branches.values()
        if not any(e.validator == "type" and len(e.absolute_path) == len(error.absolute_path) for e in errors)
    ]
    return fitting[0] if len(fitting) == 1 else None


RULES = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "above {}",
    "exclusiveMaximum": "below {}",
    "minItems": "a list of at least {} item(s)",
    "maxItems": "a list of at most {} item(s)",
    "minLength": "at least {} character(s)",
    "minProperties": "a mapping of at least {} entry(ies)",
    "pattern": "text matching {}",
}


def _described(error) -> list[str]:
    """One line per problem of one schema error: the key, its value, and the rule it breaks."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        branch = _branch(error)
        if branch:
            return [line for sub in branch for line in _described(sub)]
    path, value, rule = list(error.absolute_path), error.instance, error.validator_value
    key = f"config key '{_where(path)}'" if path else "config"
    if "propertyNames" in error.absolute_schema_path:
        key = f"{key} has a name that"
    if error.validator == "additionalProperties" and isinstance(value, dict):
        known = list(error.schema.get("properties", {}))
        lines = []
        for extra in [k for k in value if k not in known]:
            close = difflib.get_close_matches(str(extra), known, n=1, cutoff=0.6)
            hint = f"did you mean '{_where([*path, close[0]])}'?" if close else f"valid keys: {', '.join(known)}"
            lines.append(f"config key '{_where([*path, extra])}' (= {_short(value[extra])}) is unknown; {hint}")
        return lines
    if error.validator == "required":
        missing = [k for k in rule if isinstance(value, dict) and k not in value]
        return [f"{key} lacks {', '.join(map(repr, missing))}, which it needs"]
    if error.validator == "type":
        types = rule if isinstance(rule, list) else [rule]
        return [f"{key} is {_short(value)}: must be of type {' or '.join(types)}"]
    if error.validator == "enum":
        return [f"{key} is {_short(value)}: must be one of {', '.join(map(str, rule))}"]
    if error.validator == "uniqueItems":
        return [f"{key} is {_short(value)}: must not name an item twice"]
    if error.validator in RULES:
        return [f"{key} is {_short(value)}: must be {RULES[error.validator].format(rule)}"]
    if error.validator in ("oneOf", "anyOf"):
        return [f"{key} is {_short(value)}: fits none of the forms {SCHEMA_FILE} allows there"]
    message = error.message if len(error.message) <= 160 else error.message[:156] + " ..."
    return [f"{key} is {_short(value)}: {message}"]


def schema_problems(config: dict, schema: dict) -> list[str]:
    """Every way config breaks the schema, one line each naming the key, its value and the rule (for an unknown
    key, the nearest valid one), in the order of the keys: in place of Snakemake's validate() message, which
    prints the whole schema and the whole config for the first problem only."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    found = {line for error in validator.iter_errors(config) for line in _described(error)}
    # Checks the schema cannot make that need nothing else valid, so that they come with the schema's problems
    # instead of after they are fixed.
    return sorted(found | set(_looks(config))) if found else []


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
    if control and runs.twin(control) in available:
        yield (
            f"config {where}: the A/A twin's name {runs.twin(control)!r} is also servers/{runs.twin(control)}.js; "
            "rename that file"
        )


def _calibration(servers: list[str], where: str, matrix: dict | None = None) -> Iterator[str]:
    """The instrument's calibration (fixed-delay) is not a server to compare: only an open-loop experiment matrix
    at fixed rates measures it, on the workloads it answers."""
    if not any(is_calibration(s) for s in servers):
        return
    why = f"{CALIBRATION_SERVER} is the instrument's calibration (a server that answers after exactly {DELAY_MS:g} ms)"
    if matrix is None:
        yield f"config {where} names {CALIBRATION_SERVER}: {why}, measured only in an open-loop experiment matrix"
        return
    closed = [c for c in matrix["clients"] if not (c in CLIENTS and CLIENTS[c].open_loop)]
    if closed:
        yield f"config {where} names {CALIBRATION_SERVER} with {', '.join(closed)}: {why}, measured by openloop only"
    if not matrix.get("rates_per_s") or matrix.get("loads_pct"):
        how = "with loads_pct" if matrix.get("loads_pct") else "without rates_per_s"
        yield (
            f"config {where} names {CALIBRATION_SERVER} {how}: "
            f"{why}, measured at fixed rates (rates_per_s) only: it has no capacity of its own to take loads_pct of "
            "(give it a matrix of its own)"
        )
    other = [w for w in matrix["workloads"] if w not in CALIBRATION_WORKLOADS]
    if other:
        yield (
            f"config {where} names {CALIBRATION_SERVER} with {', '.join(other)}: {why}, which answers "
            f"{' and '.join(CALIBRATION_WORKLOADS)} only"
        )
    if matrix.get("control") and is_calibration(matrix["control"]):
        yield f"config {where}.control is {CALIBRATION_SERVER}: {why}, not an A/A control"


def _main(config: dict, servers_dir: Path, available: list[str]) -> Iterator[str]:
    yield from _servers(config["servers"], "servers", available)
    yield from _calibration(config["servers"], "key 'servers'")
    yield from _calibration([config.get("control") or ""], "key 'control'")
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
                yield from _calibration(matrix["servers"], where, matrix if key == "matrices" else None)
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
                if open_loop and not (matrix.get("loads_pct") or matrix.get("rates_per_s")):
                    yield (
                        f"config {where} uses {open_loop[0]}, which needs loads_pct (its rates, % of capacity) or "
                        "rates_per_s (its rates, req/s)"
                    )
                for rates in ("loads_pct", "rates_per_s"):
                    if matrix.get(rates) and not open_loop:
                        yield f"config {where} has {rates}, which only an open-loop client (openloop) uses"
                if open_loop and key == "failures":
                    yield f"config {where}: an open-loop client cannot run a cell expected to fail"


def _ab(config: dict, servers_dir: Path, available: list[str]) -> Iterator[str]:
    """The A/B target's two builds: existing servers, on a Node.js major the pipeline installs, not the same."""
    ab = config.get(plan.AB)
    if not ab:
        return
    if plan.AB in (config.get("experiments") or {}):
        yield f"config key 'experiments' has an experiment named {plan.AB!r}, the A/B target's name; rename it"
    for side in ("a", "b"):
        server, node = runs.runtime(ab[side])
        yield from _servers([server], f"{plan.AB}.{side}", available)
        yield from _calibration([server], f"key '{plan.AB}.{side}'")
        if node != runs.SYSTEM_NODE and not 20 <= int(node) <= 99:
            yield f"config key '{plan.AB}.{side}' is {ab[side]!r}: Node.js majors are 20 to 99"
    a, b = (runs.runtime(ab[side]) for side in ("a", "b"))
    if a[0] == b[0] and (a[1] == b[1] or (runs.SYSTEM_NODE not in (a[1], b[1]) and int(a[1]) == int(b[1]))):
        yield f"config keys '{plan.AB}.a' and '{plan.AB}.b' are both {ab['a']!r}: an A/B compares two different builds"
    yield from _workloads(ab["workloads"], f"{plan.AB}.workloads")
    servers = [runs.runtime(ab[side])[0] for side in ("a", "b")]
    yield from _frameworks(servers, ab["workloads"], f"{plan.AB}.workloads", servers_dir, available)
    known = [WORKLOADS[w] for w in ab["workloads"] if w in WORKLOADS]
    bad = client_problems(ab["client"], {"duration": [ab["duration_s"]]}, known)
    if bad:
        yield f"config keys '{plan.AB}.client'/'{plan.AB}.duration_s': {'; '.join(bad)}"


def _looks(config: dict) -> Iterator[str]:
    """Looks are declared in the order they are made, the last being the cap: [10, 5] is a mistake, not [5, 10]."""

    def of(mapping, key):  # also read beside schema problems: any value may be of any type
        return mapping.get(key) if isinstance(mapping, dict) else None

    found = [
        ("adaptive.looks", of(of(config, "adaptive"), "looks")),
        (f"{plan.AB}.looks", of(of(config, plan.AB), "looks")),
    ]
    experiments = of(config, "experiments")
    for name, experiment in experiments.items() if isinstance(experiments, dict) else []:
        found.append((f"experiments.{name}.adaptive.looks", of(of(experiment, "adaptive"), "looks")))
    for where, looks in found:
        numbers = isinstance(looks, list) and all(isinstance(n, int | float) for n in looks)
        if numbers and looks != sorted(looks):
            yield (
                f"config key '{where}' is {looks}: looks go in ascending order, the last being the cap "
                f"({sorted(looks)})"
            )


def _dsn(config: dict) -> Iterator[str]:
    """A DSN that libpq cannot read, named by its key rather than by psycopg's traceback at the first job."""
    dsn = config["database"].get("dsn")
    if not dsn:
        return
    from psycopg import conninfo

    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception as e:  # psycopg.ProgrammingError, by any name it may raise
        yield (
            f"config key 'database.dsn' is not a libpq connection string ({str(e).strip()}); write it as "
            "'host=localhost dbname=bench user=me' or 'postgresql://me@localhost/bench', or empty for the embedded "
            "PostgreSQL"
        )


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
        *_looks(config),
        *_dsn(config),
    ]


def yaml_problems(*paths) -> list[str]:
    """Each configuration file that is not YAML, named with its line and column (Snakemake's own message names
    neither the file nor the line); empty when all read."""
    found = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
            found.append(f"{where}: {' '.join(filter(None, [e.context, e.problem]))}")
        except (OSError, yaml.YAMLError) as e:
            found.append(f"{path}: {e}")
    return found


def warnings(config: dict) -> list[str]:
    """What is allowed but probably not meant: an A/A control the matrix does not measure."""
    named = config.get("control")
    if named and not plan.control(config):
        return [
            f"the A/A control {named!r} is not among 'servers' ({', '.join(config['servers'])}): "
            "no A/A control and no noise floor in this run"
        ]
    return []


def merged_workloads(config: dict, given: dict | None) -> list[str]:
    """Snakemake merges a --config mapping into config.yaml's: `--config workloads='{empty: ...}'` changes empty
    and keeps every other workload, which a person who meant "only empty" would not see. Said once, with the
    way to measure one workload alone."""
    mine = (given or {}).get("workloads")
    if not isinstance(mine, dict):
        return []
    kept = [w for w in config.get("workloads", {}) if w not in mine]
    if not kept:
        return []
    target = f"reports/{next(iter(mine))}/all" if mine else "reports/<workload>/all"
    return [
        f"--config workloads sets {', '.join(map(str, mine))} and is merged into config.yaml's, so "
        f"{', '.join(kept)} {'is' if len(kept) == 1 else 'are'} still measured; for one workload alone ask for its "
        f"target ({target})"
    ]

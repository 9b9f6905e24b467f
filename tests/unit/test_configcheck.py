"""The configuration checks the schema cannot make, without Snakemake: every problem at once, each naming its key."""

import copy
import functools

import pytest
import yaml

from conftest import REPO
from nodebench import configcheck

SERVERS = REPO / "servers"


@functools.cache
def _parsed(name: str) -> dict:
    """A shipped YAML file, parsed once per test session (the pure-Python parser takes a tenth of a second each)."""
    return yaml.safe_load((REPO / name).read_text())


@functools.cache
def _shipped() -> dict:
    from snakemake.utils import validate

    config = _parsed("config.yaml") | _parsed("experiments.yaml")
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


def shipped() -> dict:
    """config.yaml and experiments.yaml as Snakemake reads them, with the schema's defaults: a fresh copy each call."""
    return copy.deepcopy(_shipped())


def matrix(**overrides) -> dict:
    return {
        "servers": ["fastify"],
        "workloads": ["empty"],
        "connections": [10],
        "clients": ["wrk"],
        "durations_s": [1],
    } | overrides


def with_experiment(config: dict, m: dict, name: str = "bad", key: str = "matrices") -> dict:
    config = copy.deepcopy(config)
    config["experiments"] = {name: {key: [m]}}
    return config


def test_the_shipped_configuration_has_no_problem():
    assert configcheck.problems(shipped(), SERVERS) == []
    assert configcheck.warnings(shipped()) == []


def test_the_servers_that_exist_are_the_server_files():
    found = configcheck.available_servers(SERVERS)
    assert {"node-http", "express", "fastify", "express-lean"} <= set(found)
    assert "contract" not in found and "eslint.config" not in found


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda c: c.update(servers=["expresss"]), "config key 'servers' names 'expresss', which has no file"),
        (lambda c: c.update(workloads={"lists": {"connections": [10]}}), "names workload 'lists', which is not in"),
        (lambda c: c.update(control="nginx"), "config key 'control' is 'nginx', which has no file"),
        (lambda c: c.update(pool_size=200), "raise max_connections to at least pool_size + 2"),
        (lambda c: c.update(duration_s=1.5), "wrk takes whole seconds only"),
        (
            lambda c: c.update(workloads={"hang": {"connections": [10]}}),
            "'hang' is answered by express servers only, not node-http, fastify",
        ),
    ],
)
def test_a_wrong_main_matrix_is_named(change, phrase):
    config = shipped()
    change(config)
    found = configcheck.problems(config, SERVERS)
    assert any(phrase in p for p in found), found


@pytest.mark.parametrize(
    ("m", "phrase"),
    [
        (matrix(clients=["wrk"], durations_s=[], counts=[1000]), "wrk cannot stop after a fixed count"),
        (matrix(clients=["ab"]), "ab cannot stop after a fixed duration ([1])"),
        (matrix(durations_s=[]), "has no stopping rule"),
        (matrix(servers=["fastify", "nope"]), "experiments.bad.matrices[0].servers' names 'nope'"),
        (matrix(workloads=["lists"]), "experiments.bad.matrices[0].workloads' names workload 'lists'"),
        (matrix(control="express"), "control is 'express', which is not among its servers (fastify)"),
        (matrix(clients=["ab"], durations_s=[], counts=[10], workloads=["create-user-db"]), "answers a new id"),
        (matrix(clients=["openloop"]), "uses openloop, which needs loads_pct"),
        (matrix(loads_pct=[50]), "has loads_pct, which only an open-loop client (openloop) uses"),
        (matrix(rates_per_s=[2000]), "has rates_per_s, which only an open-loop client (openloop) uses"),
        (
            matrix(clients=["openloop"], loads_pct=[50], workloads=["create-user-db"]),
            "openloop sends GET requests only",
        ),
        (
            matrix(clients=["openloop"], loads_pct=[50], durations_s=[], counts=[100]),
            "openloop cannot stop after a fixed count",
        ),
    ],
)
def test_a_wrong_experiment_is_named_with_its_place(m, phrase):
    found = configcheck.problems(with_experiment(shipped(), m), SERVERS)
    assert any(phrase in p for p in found), found


def test_cells_expected_to_fail_are_checked_as_matrices_are():
    found = configcheck.problems(with_experiment(shipped(), matrix(servers=["nope"]), key="failures"), SERVERS)
    assert any("experiments.bad.failures[0].servers' names 'nope'" in p for p in found), found
    # An open loop cannot run one: said for the second matrix too (the check once read a variable the loop over
    # loads_pct and rates_per_s had overwritten, and never fired).
    config = with_experiment(shipped(), matrix(), key="failures")
    config["experiments"]["bad"]["failures"].append(matrix(clients=["openloop"], rates_per_s=[1000]))
    found = configcheck.problems(config, SERVERS)
    assert any("failures[1]: an open-loop client cannot run a cell expected to fail" in p for p in found), found


def test_an_experiments_twin_name_taken_by_a_server_file_is_refused(tmp_path):
    servers = tmp_path / "servers"
    servers.mkdir()
    for name in ("node-http", "express", "fastify", "fastify-aa"):
        (servers / f"{name}.js").write_text("// a server\n")
    config = with_experiment(shipped(), matrix(servers=["fastify"], control="fastify"))
    config |= {"servers": ["node-http", "express"]}
    found = configcheck.problems(config, servers)
    assert any("experiments.bad.matrices[0].control: the A/A twin's name 'fastify-aa'" in p for p in found), found


def test_an_experiment_cannot_take_a_workload_or_data_directory_name():
    for name in ("empty", "overall", "runs", "claims", "failures"):
        found = configcheck.problems(with_experiment(shipped(), matrix(), name=name), SERVERS)
        assert any(f"experiment named {name!r}" in p for p in found), (name, found)


def test_every_problem_is_reported_at_once():
    config = with_experiment(shipped(), matrix(servers=["nope"], durations_s=[]))
    config["servers"] = ["expresss"]
    found = configcheck.problems(config, SERVERS)
    assert len(found) == 3, found


def test_an_unmeasured_control_is_a_warning_not_an_error():
    config = shipped() | {"servers": ["express", "fastify"], "control": "node-http"}
    assert configcheck.problems(config, SERVERS) == []
    (warning,) = configcheck.warnings(config)
    assert "'node-http' is not among 'servers'" in warning and "no noise floor" in warning


def test_a_twin_name_taken_by_a_server_file_is_refused(tmp_path):
    servers = tmp_path / "servers"
    servers.mkdir()
    for name in ("node-http", "node-http-aa", "express"):
        (servers / f"{name}.js").write_text("// a server\n")
    config = shipped() | {"servers": ["node-http", "express"], "control": "node-http", "experiments": {}}
    found = configcheck.problems(config, servers)
    assert any("the A/A twin's name 'node-http-aa' is also servers/node-http-aa.js" in p for p in found), found


def test_the_schemas_defaults_are_config_yamls_values():
    """A key left out of a config means what config.yaml says, not something else."""
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config = yaml.safe_load((REPO / "config.yaml").read_text())

    def differ(spec: dict, values: dict, where: str = ""):
        for key, sub in spec.get("properties", {}).items():
            if key not in values:
                continue
            if "properties" in sub and isinstance(values[key], dict):
                yield from differ(sub, values[key], f"{where}{key}.")
            elif "default" in sub and sub["default"] != values[key]:
                yield f"{where}{key}: schema {sub['default']!r}, config.yaml {values[key]!r}"

    assert list(differ(schema, config)) == []


def test_a_key_under_its_old_name_is_named_with_its_new_one():
    config = {"load_generator": "wrk", "experiments": {"x": {"matrices": [{"load_generators": ["ab"]}]}}}
    assert configcheck.renamed_keys(config) == [
        "config key 'load_generator' is now called 'client': rename it",
        "config key 'experiments.x.matrices[0].load_generators' is now called 'clients': rename it",
    ]
    assert configcheck.renamed_keys(shipped()) == []


# --- Errors in a few lines (issue 38): each names the key, its value and the rule, every problem at once --------


def schema() -> dict:
    return copy.deepcopy(_parsed("workflow/schemas/config.schema.yaml"))


def from_command_line(*entries: str) -> dict:
    """config.yaml and experiments.yaml with --config entries merged as Snakemake merges them, then typed."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    config = copy.deepcopy(_parsed("config.yaml") | _parsed("experiments.yaml"))
    given = parse_config(list(entries))
    update_config(config, given)
    configcheck.typed_from_command_line(config, given)
    return config


def test_an_unknown_key_is_one_line_with_its_value_and_the_nearest_key():
    found = configcheck.schema_problems(from_command_line("duraton_s=2"), schema())
    assert found == ["config key 'duraton_s' (= 2) is unknown; did you mean 'duration_s'?"]


def test_every_schema_problem_comes_at_once_one_short_line_each():
    config = from_command_line("duraton_s=2", "compare={a: express4, bb: express}", "rounds=0")
    found = configcheck.schema_problems(config, schema())
    assert found == [
        "config key 'compare.bb' (= 'express') is unknown; did you mean 'compare.b'?",
        "config key 'duraton_s' (= 2) is unknown; did you mean 'duration_s'?",
        "config key 'rounds' is 0: must be at least 1",
    ]
    assert all(len(line) < 200 for line in found)


def test_an_unknown_nested_key_names_its_place():
    config = from_command_line(
        "experiments={x: {matrices: [{servers: [fastify], workloads: [empty], clients: [wrk], contrl: fastify}]}}"
    )
    assert configcheck.schema_problems(config, schema()) == [
        "config key 'experiments.x.matrices[0].contrl' (= 'fastify') is unknown; "
        "did you mean 'experiments.x.matrices[0].control'?"
    ]


def test_a_value_that_fits_one_form_of_several_is_named_by_that_form():
    found = configcheck.schema_problems(from_command_line("adaptive={looks: [1]}", "node_versions=[19]"), schema())
    assert found == [
        "config key 'adaptive' lacks 'half_width', which it needs",
        "config key 'adaptive.looks[0]' is 1: must be at least 2",
        "config key 'node_versions[0]' is 19: must be at least 20",
    ]


@pytest.mark.parametrize(
    ("entry", "key", "value"),
    [
        ("workloads={empty: {connections: [50]}}", ("workloads", "empty", "connections"), [50]),
        ("database={rows: 200000}", ("database", "rows"), 200000),
        ("database={settings: {max_connections: 40}}", ("database", "settings", "max_connections"), 40),
        ("remeasure={attempts: 0}", ("remeasure", "attempts"), 0),
        (
            "experiments={x: {rounds: 3, matrices: [{servers: [fastify], workloads: [empty], clients: [wrk], "
            "durations_s: [1.5], connections: [10]}]}}",
            ("experiments", "x", "matrices", 0, "durations_s"),
            [1.5],
        ),
        ("control=null", ("control",), None),
        ("allow_shared_cpu=true", ("allow_shared_cpu",), True),
    ],
)
def test_numbers_and_nulls_anywhere_can_be_set_from_the_command_line(entry, key, value):
    config = from_command_line(entry)
    found = config
    for k in key:
        found = found[k]
    assert found == value
    assert configcheck.schema_problems(config, schema()) == []


def test_text_from_the_command_line_stays_text():
    config = from_command_line("round_seed=abc", "database={dsn: 'host=localhost port=5433'}", "node_versions=[system]")
    assert config["round_seed"] == "abc" and config["node_versions"] == ["system"]
    assert config["database"]["dsn"] == "host=localhost port=5433"


def test_control_null_means_no_control():
    config = shipped() | {"control": "null"}
    configcheck.typed_from_command_line(config, {"control": "null"})
    assert config["control"] is None
    assert configcheck.problems(config, SERVERS) == []


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ("rounds=100000", "config key 'rounds' is 100000: must be at most 1000"),
        ("duration_s=1000000", "config key 'duration_s' is 1000000: must be at most 3600"),
        ("warmup_s=10000", "config key 'warmup_s' is 10000: must be at most 600"),
        (
            "workloads={empty: {connections: [20000]}}",
            "config key 'workloads.empty.connections[0]' is 20000: must be at most 10000",
        ),
        ("database={rows: 1000000000}", "config key 'database.rows' is 1000000000: must be at most 10000000"),
        ("compare={duration_s: 7200}", "config key 'compare.duration_s' is 7200: must be at most 3600"),
    ],
)
def test_sizes_have_upper_bounds_named_with_their_key(entry, line):
    assert configcheck.schema_problems(from_command_line(entry), schema()) == [line]


def test_the_plan_is_estimated_and_refused_above_max_hours():
    from nodebench import targets

    config = shipped()
    t = targets.Targets(config)
    records = t.planned_records([targets.OVERALL])
    assert len(records) == 150
    line, problems = targets.estimate("reports/all", records, 0, config["warmup_s"], config["max_hours"])
    assert line == (
        "reports/all: 150 runs to measure (0 already recorded), about 21 min (3 s warm-up + the window + ~0.6 s, each)"
    )
    assert problems == []

    long = copy.deepcopy(config) | {"duration_s": 3600}
    t = targets.Targets(long)
    records = t.planned_records([targets.OVERALL])
    _, problems = targets.estimate("reports/all", records, 0, long["warmup_s"], long["max_hours"])
    (problem,) = problems
    assert "150 runs to measure (0 already recorded), about 6 days" in problem
    assert "above config key 'max_hours' (12); raise it with --config max_hours=151" in problem


def test_a_workload_target_plans_its_empty_cells_too_and_the_claims_their_records():
    from nodebench import targets

    t = targets.Targets(shipped())
    point = t.planned_records(["point-lookup"])
    assert {r.split("/")[3] for r in point} == {"point-lookup", "empty"}
    claims = {"overall": ["data/runs/main/empty/express/c50/wrk-5s/r1.json"]}
    assert t.planned_records(["claims"], claims) == claims["overall"]


def test_the_estimate_counts_each_runs_window():
    from nodebench import targets

    records = ["data/runs/x/empty/express/c50/wrk-10s/r1.json", "data/runs/x/empty/express/c50/ab-1000req/r1.json",
               "data/runs/x/empty/express/c50/openloop-5s-at50/r1.json"]  # fmt: skip
    assert targets.measuring_seconds(records, 2) == pytest.approx((2 + 10) + (2 + 0) + (2 + 5) + 3 * 0.6)


def test_the_estimate_reads_every_clients_record_path():
    # ab_close broke the estimate (the record's client was read as letters only): every client's, each rule.
    from nodebench import runs
    from nodebench.catalogue.clients import CLIENTS

    for name, client in CLIENTS.items():
        stop = {"count": "100req", "duration": "5s"}[client.rules[0]] + ("-at50" if client.open_loop else "")
        record = runs.record_path("b", "empty", "express", 1, name, stop, 1)
        assert runs.record_stop(record) == stop, name


def test_an_unknown_target_gets_the_nearest_one_and_the_list():
    from nodebench import targets

    scopes = ["overall", "empty", "point-lookup", "list", "stopping-rule"]
    found = targets.target_problems(["-n", "--cores", "1", "reports/point-lookups/all"], scopes)
    assert found[0] == "target 'reports/point-lookups/all' names no report; did you mean 'reports/point-lookup/all'?"
    assert found[1].startswith("targets: reports/all, reports/overall/all, reports/empty/all")
    assert len(found) == 2
    assert targets.target_problems(["reports/all", "reports/list/all", "reports/claims/all"], scopes) == []
    assert targets.target_problems(["--report", "reports/report.html", "reports/empty/summary.md"], scopes) == []
    assert targets.target_problems(["reports/empty"], scopes)[0] == (
        "target 'reports/empty' is a folder; did you mean 'reports/empty/all'?"
    )


def test_the_a_b_targets_old_names_are_refused_with_the_new_ones():
    """Until 2026-12-06 the A/B target was reports/ab/all with config key `ab` (also ApacheBench's name)."""
    from nodebench import targets

    found = configcheck.renamed_keys(from_command_line("ab={a: express4, b: express}"))
    assert found == ["config key 'ab' is now called 'compare': rename it"]
    scopes = ["overall", "empty", "compare", "ab-hello"]
    assert targets.target_problems(["reports/ab/all"], scopes) == [
        "target 'reports/ab/all' is an old name: the report is 'reports/compare/all' now",
        "targets: " + ", ".join(targets.valid_targets(scopes)),
    ]
    assert targets.target_problems(["reports/compare/all", "reports/ab-hello/all"], scopes) == []


def test_a_dsn_libpq_cannot_read_is_named_by_its_key():
    config = copy.deepcopy(shipped())
    config["database"]["dsn"] = "garbage"
    (found,) = [p for p in configcheck.problems(config, SERVERS) if "dsn" in p]
    assert found.startswith("config key 'database.dsn' is not a libpq connection string (missing \"=\" after")
    config["database"]["dsn"] = "host=localhost dbname=bench"
    assert configcheck.problems(config, SERVERS) == []


def test_looks_out_of_order_come_with_the_schema_problems_not_after_them():
    # Every problem at once: the missing half_width and the order of the looks in one message.
    found = configcheck.schema_problems(
        from_command_line("adaptive={looks: [10, 5]}", "compare={looks: oops}"), schema()
    )
    assert "config key 'adaptive' lacks 'half_width', which it needs" in found
    assert (
        "config key 'adaptive.looks' is [10, 5]: looks go in ascending order, the last being the cap ([5, 10])"
    ) in found
    assert any(line.startswith("config key 'compare.looks' is 'oops'") for line in found)


def test_looks_out_of_order_are_an_error_not_sorted():
    config = copy.deepcopy(shipped()) | {"adaptive": {"half_width": 0.03, "looks": [10, 5]}}
    found = configcheck.problems(config, SERVERS)
    assert found == [
        "config key 'adaptive.looks' is [10, 5]: looks go in ascending order, the last being the cap ([5, 10])"
    ]


def test_a_yaml_mistake_names_the_file_and_line(tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("servers: [express]\nworkloads:\n  empty:\n connections: [50]\n")
    (found,) = configcheck.yaml_problems(REPO / "config.yaml", bad)
    assert found.startswith(f"{bad}, line 4, column 2: ")
    assert configcheck.yaml_problems(REPO / "config.yaml", REPO / "experiments.yaml") == []


def test_a_dry_run_is_read_from_the_command_line_in_every_spelling():
    from nodebench import targets

    # workflow.dryrun is False while the Snakefile runs (Snakemake 9.27), so its own tidying asks the command line.
    for args in (["-n"], ["-np", "reports/all"], ["-pn"], ["--dry-run"], ["--dryrun"], ["--cores", "1", "-n"]):
        assert targets.dry_run_asked(args), args
    for args in ([], ["--cores", "1", "reports/all"], ["-p"], ["--config", "n=1"], ["-j", "4"], ["-s", "Snakefile"]):
        assert not targets.dry_run_asked(args), args
    # --unlock (what the README says after a kill) and the summaries run no job: the workflow removes nothing.
    for args in (["--unlock"], ["--summary"], ["-D"], ["--dag"], ["--list-changes", "code"], ["--report", "r.html"]):
        assert targets.changes_nothing(args), args
    for args in ([], ["--cores", "1", "reports/all"], ["--forcerun", "measure_run"], ["--config", "unlock=1"]):
        assert not targets.changes_nothing(args), args


def test_a_workloads_mapping_on_the_command_line_says_it_is_merged_and_how_to_measure_one_workload():
    given = {"workloads": {"empty": {"connections": [50]}}}
    config = from_command_line("workloads={empty: {connections: [50]}}")
    (line,) = configcheck.merged_workloads(config, given)
    assert line == (
        "--config workloads sets empty and is merged into config.yaml's, so point-lookup, list are still measured; "
        "for one workload alone ask for its target (reports/empty/all)"
    )
    assert configcheck.merged_workloads(config, {"rounds": 3}) == []
    assert configcheck.merged_workloads(config, None) == []


def test_the_headline_is_one_of_the_three_figures_and_a_wrong_one_is_named_with_them():
    from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINES

    assert schema()["properties"]["headline"]["enum"] == list(HEADLINES)
    assert shipped()["headline"] == DEFAULT_HEADLINE
    assert configcheck.schema_problems(from_command_line("headline=us_per_req_oncpu"), schema()) == []
    assert configcheck.schema_problems(from_command_line("headline=us_per_req_cpu"), schema()) == [
        "config key 'headline' is 'us_per_req_cpu': must be one of us_per_req_elu, us_per_req_oncpu, us_per_req_threads"
    ]

"""The configuration checks the schema cannot make, without Snakemake: every problem at once, each naming its key."""

import copy

import pytest
import yaml

from conftest import REPO
from nodebench import configcheck

SERVERS = REPO / "servers"


def shipped() -> dict:
    """config.yaml and experiments.yaml as Snakemake reads them, with the schema's defaults."""
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config.yaml").read_text()) | yaml.safe_load(
        (REPO / "experiments.yaml").read_text()
    )
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


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

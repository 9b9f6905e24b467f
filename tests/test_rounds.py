"""Rounds, for real: two rounds of three cells, their order in time, and a one-server edit afterwards."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import leftovers, make_project, snakemake
from nodebench import plan

# node-http, its A/A twin node-http-aa and fastify on empty, in 2 rounds of 1-second windows.
TWO_ROUNDS = """\
servers: [node-http, fastify]
workloads:
  empty: {connections: [10]}
warmup_s: 1
duration_s: 1
rounds: 2
round_seed: 7
database:
  rows: 20000
"""


def records(project: Path) -> pd.DataFrame:
    rows = [json.loads(p.read_text()) | {"file": str(p)} for p in (project / "data/runs").rglob("r*.json")]
    return pd.DataFrame(rows).assign(started=lambda d: pd.to_datetime(d["started_at"])).sort_values("started")


@pytest.fixture(scope="module")
def rounds_project(tmp_path_factory) -> Path:
    dest = make_project(tmp_path_factory.mktemp("rounds") / "project", TWO_ROUNDS)
    res = snakemake(dest, "reports/empty/all")
    assert res.returncode == 0, res.stdout[-4000:]
    yield dest
    assert not leftovers(dest)


def test_each_round_measures_every_cell_before_the_next_begins(rounds_project: Path):
    runs = records(rounds_project)
    assert len(runs) == 6 and set(runs["server"]) == {"node-http", "node-http-aa", "fastify"}
    # In the order they started: all of round 1, then all of round 2.
    assert list(runs["round"]) == [1, 1, 1, 2, 2, 2]
    for _, one in runs.groupby("round"):
        assert list(one["round_position"]) == [1, 2, 3] and (one["round_size"] == 3).all()
    assert runs["session"].nunique() == 1
    # The order within each round is the plan's shuffle of the seed in config.
    config = yaml.safe_load(TWO_ROUNDS) | {"control": "node-http", "client": "wrk"}
    cells = plan.main_cells(config)
    for r, one in runs.groupby("round"):
        assert list(one["server"]) == [c[1] for group in plan.back_to_back(cells, 7, r) for c in group]
    # The twin ran its control's file: it answers as node-http.
    assert set(runs.loc[runs["server"] == "node-http-aa", "framework"]) == {"node:http"}


def test_editing_one_server_remeasures_only_its_runs_and_the_report_says_they_cross_sessions(rounds_project: Path):
    before = records(rounds_project).set_index("file")
    mtimes = {f: os.stat(f).st_mtime_ns for f in before.index}
    server = rounds_project / "servers" / "fastify.js"
    server.write_text(server.read_text() + "// an edit\n")
    res = snakemake(rounds_project, "reports/empty/all")
    assert res.returncode == 0, res.stdout[-4000:]
    changed = {f for f in mtimes if os.stat(f).st_mtime_ns != mtimes[f]}
    assert {before.loc[f, "server"] for f in changed} == {"fastify"} and len(changed) == 2
    after = records(rounds_project)
    fastify = after[after["server"] == "fastify"]
    assert list(fastify["round"]) == [1, 2] and fastify["session"].nunique() == 1
    assert fastify["session"].iloc[0] != before["session"].iloc[0]
    metrics = pd.read_parquet(rounds_project / "data/empty/metrics.parquet").set_index("server")
    assert metrics.loc["fastify", "cross_session_vs_node_http"] == 2
    assert metrics.loc["node-http-aa", "cross_session_vs_node_http"] == 0
    assert "Nothing to be done" in snakemake(rounds_project, "--dry-run", "reports/empty/all").stdout

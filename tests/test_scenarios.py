"""The scenario catalogue: every server answers every scenario as the contract says, the gate counts the expected
status, the score is the seed's geometric mean on data with a known answer, and a tiny real scenarios run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, snakemake
from nodebench.analysis import scenarios as sc
from nodebench.catalogue.clients import problems
from nodebench.catalogue.workloads import DATABASE_SET, SEED_SET, WORKLOADS, score_set
from nodebench.harness import procs, server, verify
from nodebench.harness.errors import RunError

SERVERS = ["node-http", "express", "express-lean", "fastify", "fastify-schema", "hono", "koa"]
#: Scenarios a server answers without a database.
#: Seed 003's failure modes (workloads only some frameworks answer, and wrongly on purpose) are test_claims.py's.
NO_DATABASE = [
    w for w in WORKLOADS.values() if w.queries_per_request == 0 and w.name != "empty" and w.frameworks is None
]


# --- Every server answers every scenario, checked by the harness's own code -------------------------------


@pytest.fixture(scope="module", params=SERVERS)
def running(request, tmp_path_factory, project):
    """One server, started as the harness starts it, without a database, from the tiny run's copy (where the
    pipeline installed the servers' packages)."""
    name = request.param
    port = procs.free_port()
    log = tmp_path_factory.mktemp(name) / "server.log"
    env = {"PATH": os.environ["PATH"], "PORT": str(port), "NODE_ENV": "production", "PGHOST": "/nonexistent"}
    proc = server.start("node", project / "servers" / f"{name}.js", env, procs.job_cpus(), log)
    try:
        server.wait_ready(proc, name, log)
        yield name, port
    finally:
        procs.stop(proc)


@pytest.mark.parametrize("workload", NO_DATABASE, ids=lambda w: w.name)
def test_every_server_answers_every_scenario_as_the_catalogue_says(running, workload):
    name, port = running
    fixture = REPO / "servers" / "fixtures" / workload.answer_fixture if workload.answer_fixture else None
    expected = verify.expected_answer(workload, None, fixture)
    status, headers, body = server.request(port, workload.method, workload.path, workload.body_bytes())
    assert verify.answer_problem(workload, status, headers, body, expected) is None, (name, status, body[:300])
    for path, want in workload.rejects:
        assert server.request(port, "GET", path)[0] == want, (name, path)


# Bad bodies (malformed, wrong types, too large, too many items) are tests/test_hostile.py's.


# --- The harness's checks learn expected statuses ---------------------------------------------------------


def test_answer_check_by_value_by_error_shape_and_by_created_fields():
    hello, bad, created = WORKLOADS["hello"], WORKLOADS["bad-request"], WORKLOADS["create-user-db"]
    js = {"content-type": "application/json; charset=utf-8"}
    assert verify.answer_problem(hello, 200, js, b'{"hello":"world"}', {"hello": "world"}) is None
    assert "HTTP 201" in verify.answer_problem(hello, 201, js, b'{"hello":"world"}', {"hello": "world"})
    assert "differs" in verify.answer_problem(hello, 200, js, b'{"hello":"word"}', {"hello": "world"})
    assert "content type" in verify.answer_problem(hello, 200, {"content-type": "text/html"}, b"{}", None)
    assert verify.answer_problem(bad, 400, js, b'{"error":"Bad Request","statusCode":400}', None) is None
    assert "error" in verify.answer_problem(bad, 400, js, b'{"message":"no"}', None)
    assert verify.answer_problem(created, 201, js, b'{"id":7,"name":"Mio","age":3}', None) is None
    assert "integer id" in verify.answer_problem(created, 201, js, b'{"id":"7","name":"Mio","age":3}', None)
    assert "integer id" in verify.answer_problem(created, 201, js, b'{"id":7,"name":"Mia","age":3}', None)
    mw = WORKLOADS["middleware-3"]
    assert "x-mw-2" in verify.answer_problem(mw, 200, {**js, "x-mw-1": "1", "x-mw-3": "1"}, b'{"n":3}', {"n": 3})


def load(requests, non2xx=0, counts=None):
    return {"requests": requests, "errors": 0, "timeouts": 0, "non2xx": non2xx, "status_counts": counts}


def test_the_gate_counts_the_expected_status_as_correct_and_anything_else_with_counts_per_status():
    verify.check_load(load(100, non2xx=100), status=404)  # wrk: every answer a 404
    verify.check_load(load(100, counts={"201": 100}), status=201)  # autocannon counts statuses
    with pytest.raises(RunError, match="3 of 100 answers were not HTTP 404"):
        verify.check_load(load(100, non2xx=97), status=404)
    with pytest.raises(RunError, match=r"2 answers of another status than 404 \(2 x HTTP 500\)"):
        verify.check_load(load(100, counts={"404": 98, "500": 2}), status=404)
    with pytest.raises(RunError, match=r"5 answers of another status than 201 \(5 x HTTP 200\)"):
        verify.check_load(load(100, counts={"201": 95, "200": 5}), status=201)
    with pytest.raises(RunError, match="non-2xx"):
        verify.check_load(load(100, non2xx=1), status=200)
    verify.check_statuses({"400": 50}, 400)
    with pytest.raises(RunError, match="the server answered 3 x HTTP 200, 47 x HTTP 400"):
        verify.check_statuses({"400": 47, "200": 3}, 400)


def test_growing_ids_may_lengthen_answers_but_not_shorten_them():
    verify.check_bytes(100 * 50 + 30, 100, 50, varies=True)
    with pytest.raises(RunError):
        verify.check_bytes(100 * 50 - 1, 100, 50, varies=True)
    with pytest.raises(RunError):
        verify.check_bytes(100 * 50 + 30, 100, 50)


def test_ab_cannot_run_a_scenario_whose_answers_vary_in_length():
    assert problems("ab", {"count": [1000]}, [WORKLOADS["small-body"]]) == []
    found = problems("ab", {"count": [1000]}, [WORKLOADS["create-user-db"]])
    assert found and "create-user-db" in found[0] and "wrk or autocannon" in found[0]
    assert problems("wrk", {"duration": [5]}, [WORKLOADS["create-user-db"]]) == []


def test_the_catalogue_holds_the_seeds_twelve_and_the_database_set():
    seed = score_set(SEED_SET)
    assert sum(len(WORKLOADS[w].connections) for w in seed) == 12
    assert WORKLOADS["hello"].connections == (10, 100, 512)
    assert set(score_set(DATABASE_SET)) == {"point-lookup", "list", "create-user-db"}
    assert len(WORKLOADS["body-50"].body_bytes()) in range(2700, 3000)
    assert len((REPO / "servers/fixtures/teas.json").read_bytes()) in range(16_000, 19_000)


# --- The score, on data with a known answer ---------------------------------------------------------------


def runs_frame(costs: dict, rounds=3, drift=(1.0, 2.0, 0.5)) -> pd.DataFrame:
    """Runs where server s costs costs[s][cell] us/req, times a machine drift that changes by round."""
    rows = []
    for r in range(1, rounds + 1):
        for s, cells in costs.items():
            for (w, c), cost in cells.items():
                us = cost * drift[r - 1]
                rows.append(dict(client="wrk", stop="5s", workload=w, connections=c, server=s, round=r,
                                 us_per_req_elu=us, req_per_s=1e6 / us))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_score_is_the_geometric_mean_against_node_http_and_drift_cancels_in_pairs():
    cells = [("hello", 10), ("hello", 100), ("not-found", 100), ("point-lookup", 50)]
    base = dict.fromkeys(cells, 10.0)
    # 2x node-http's cost on hello (50 %), half on not-found (200 %): the seed set scores (50*50*200)^(1/3).
    fast = {("hello", 10): 20.0, ("hello", 100): 20.0, ("not-found", 100): 5.0, ("point-lookup", 50): 40.0}
    t = sc.table(runs_frame({"node-http": base, "fast": fast}))
    score = t[(t.kind == "score") & (t.server == "fast") & (t.basis == "cpu")].set_index("score_set")
    assert score.loc[SEED_SET, "median"] == pytest.approx((50 * 50 * 200) ** (1 / 3))
    assert score.loc[DATABASE_SET, "median"] == pytest.approx(25.0)
    # The machine ran twice as slow in round 2 and twice as fast in round 3: paired ratios do not move.
    assert score.loc[SEED_SET, "lo"] == pytest.approx(score.loc[SEED_SET, "hi"])
    assert score.loc[SEED_SET, "cells"] == 3 and score.loc[SEED_SET, "rounds"] == 3
    labels = set(t[(t.kind == "cell") & (t.score_set == SEED_SET)]["cell"])
    assert labels == {"hello c10", "hello c100", "not-found"}
    # node-http itself reads 100 everywhere, as in the seed's table.
    assert set(t[t.server == "node-http"]["median"]) == {100.0}
    # req/s from the same runs (rate = 1 / cost) gives the same score here.
    rps = t[(t.kind == "score") & (t.server == "fast") & (t.basis == "rps")].set_index("score_set")
    assert rps.loc[SEED_SET, "median"] == pytest.approx(score.loc[SEED_SET, "median"])


def test_the_range_is_min_to_max_over_rounds_and_an_incomplete_round_does_not_count():
    base = {("hello", 10): 10.0, ("async", 100): 10.0}
    runs = runs_frame({"node-http": base, "s": {("hello", 10): 10.0, ("async", 100): 10.0}}, drift=(1, 1, 1))
    # Server s costs 25 % more in round 2 on both cells: that round scores 80.
    sel = (runs.server == "s") & (runs["round"] == 2)
    runs.loc[sel, "us_per_req_elu"] *= 1.25
    # Round 3 lost its async run: a score over fewer scenarios is not the same score, so it is left out.
    runs = runs[~((runs.server == "s") & (runs["round"] == 3) & (runs.workload == "async"))]
    t = sc.table(runs)
    s = t[(t.kind == "score") & (t.server == "s") & (t.basis == "cpu")].iloc[0]
    assert (s["lo"], s["hi"], s["rounds"]) == (pytest.approx(80.0), pytest.approx(100.0), 2)
    assert sc.furthest(t, "s", SEED_SET) is not None


def test_workloads_outside_any_score_set_and_a_missing_baseline_give_no_score():
    runs = runs_frame({"express": {("empty", 50): 10.0}, "fastify": {("hello", 10): 5.0}})
    t = sc.table(runs)
    assert t.empty or (t["kind"] == "score").sum() == 0


# --- A tiny real scenarios run: the target, the table, the charts, the link ------------------------------


def test_a_scenarios_experiment_reports_the_score_table_the_heat_map_and_the_paragraphs(project: Path):
    res = snakemake(project, "reports/tiny-scenarios/all")
    assert res.returncode == 0, res.stdout[-4000:]
    runs = pd.read_parquet(project / "data/tiny-scenarios/runs.parquet")
    assert set(runs["workload"]) == {"hello", "not-found", "small-body", "create-user-db"}
    statuses = runs.groupby("workload")["expected_status"].first().to_dict()
    assert statuses == {"hello": 200, "not-found": 404, "small-body": 201, "create-user-db": 201}
    # The window touches no request: every answer's status is the client's to count (check_load).
    for r in runs.itertuples():
        assert pd.isna(r.server_requests) and json.loads(r.server_statuses) is None
        counts = json.loads(r.status_counts)
        if counts:  # autocannon and the open loop count each status
            assert counts == {str(r.expected_status): r.requests}
        else:  # wrk and ab count the answers outside 2xx
            assert r.non2xx == (r.requests if r.expected_status >= 400 else 0)
    created = runs[runs.workload == "create-user-db"]
    assert (created["db_queries"] >= created["requests"]).all()
    assert (created["db_queries"] <= created["requests"] + created["connections"]).all()
    summary = (project / "reports/tiny-scenarios/summary.md").read_text()
    assert "## Score: The seed's twelve scenarios" in summary and "## Score: The database set" in summary
    assert "| hono |" in summary and "**hono** scores" in summary
    for chart in ("scenario-heatmap", "scenario-score"):
        assert (project / f"reports/tiny-scenarios/charts/{chart}.png").stat().st_size > 1000
    snakemake(project, "reports/all")
    assert "../tiny-scenarios/index.html" in (project / "reports/overall/index.html").read_text()


def test_a_client_that_cannot_run_a_scenario_is_refused_before_anything_runs(project: Path, tmp_path: Path):
    extra = tmp_path / "ab.yaml"
    extra.write_text(
        "experiments:\n  ab-writes:\n    matrices:\n      - servers: [fastify]\n        workloads: [create-user-db]\n"
        "        connections: [10]\n        clients: [ab]\n        counts: [1000]\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-n", "reports/ab-writes/all",
         "--configfile", "config.yaml", str(extra)],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode != 0
    assert "ab counts answers of different lengths as failures" in res.stdout + res.stderr

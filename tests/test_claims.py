"""The claims ledger: verdicts on data with a known answer, the statistic language, the queueing model against a
simulation, every claim resolving with the default configuration, the failure-mode routes, and a tiny real run of
reports/claims/all."""

import heapq
import json
import os
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml

from claim_data import claim as ratio_claim
from claim_data import runs
from conftest import REPO, leftovers, snakemake
from nodebench import claimfile, plan
from nodebench.analysis import claims as C
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.harness import procs, server
from nodebench.render import ledger as L

# --- Verdicts on data with a known answer: tests/unit/test_claim_verdicts.py --------------------------------------


def test_outcomes_of_cells_expected_to_fail():
    claim = {
        "id": "t-fail",
        "seed": "003",
        "quote": "hangs",
        "scope": "queueing",
        "cells": {
            "e4": {"workload": "throws", "server": "express4"},
            "e5": {"workload": "throws", "server": "express"},
        },
        "compare": "outcome",
        "expect": {"e4": "failed", "e5": "answered"},
    }
    outcomes = [
        {"workload": "throws", "server": "express4", "outcome": "failed", "check": "GET /throws failed: closed"},
        {"workload": "throws", "server": "express", "outcome": "answered", "status_counts": {"500": 200}},
    ]
    row = C.evaluate_claim(claim, None, outcomes)
    assert row["verdict"] == C.REPRODUCED and "GET /throws failed: closed" in row["reason"]
    outcomes[1] = {**outcomes[1], "outcome": "failed", "check": "timed out"}
    row = C.evaluate_claim(claim, None, outcomes)
    assert row["verdict"] == C.NOT_REPRODUCED and "express was expected to have answered" in row["reason"]
    assert C.evaluate_claim(claim, None, outcomes[:1])["verdict"] == C.PENDING
    # Failing is not enough where the claim says how: a check that does not match its pattern.
    outcomes[1] = {**outcomes[1], "outcome": "answered"}
    strict = claim | {"expect_check": {"e4": "timed out"}}
    row = C.evaluate_claim(strict, None, outcomes)
    assert row["verdict"] == C.NOT_REPRODUCED and "failed, but not as expected (/timed out/)" in row["reason"]
    # Answering is not enough where the claim says with what: only a 500 will do.
    five = claim | {"expect_status": {"e5": 500}}
    outcomes[0] = {**outcomes[0], "check": "GET /throws failed: closed"}
    assert C.evaluate_claim(five, None, outcomes)["verdict"] == C.REPRODUCED
    outcomes[1] = {**outcomes[1], "status_counts": {"200": 150, "500": 50}}
    row = C.evaluate_claim(five, None, outcomes)
    assert row["verdict"] == C.NOT_REPRODUCED and "not only HTTP 500" in row["reason"]
    # ab counts non-2xx answers but not which status: the claim cannot be decided from it.
    outcomes[1] = {**outcomes[1], "status_counts": None, "non2xx": 200}
    row = C.evaluate_claim(five, None, outcomes)
    assert row["verdict"] == C.INCONCLUSIVE and "does not say with which status" in row["reason"]


# --- The statistic language ---------------------------------------------------------------------------------


def test_the_statistic_is_arithmetic_over_its_cells_and_nothing_else():
    a, b = pd.Series([1.0, 4.0]), pd.Series([2.0, 2.0])
    assert list(C.evaluate("100 * (a / b - 1)", {"a": a, "b": b})) == [-50.0, 100.0]
    assert list(C.evaluate("max(a, b) / min(a, b)", {"a": a, "b": b})) == [2.0, 2.0]
    assert C.evaluate("-abs(a - 3)", {"a": 1.0}) == -2.0
    for bad in ("__import__('os')", "a.real", "a if b else 1", "'x'", "a ** 2", "a[0]"):
        with pytest.raises(C.ClaimError):
            C.evaluate(bad, {"a": 1.0, "b": 1.0})
        assert claimfile.statistic_problem(bad, ["a", "b"]), bad
    assert "not among its cells" in claimfile.statistic_problem("a / c", ["a", "b"])
    assert claimfile.statistic_problem("max(a, b) / closed_loop_latency(200, 50, b, 0.5)", ["a", "b"]) is None


def simulate_closed_loop(n: int, c: int, s: float) -> np.ndarray:
    """Latencies of n requests from c clients, one at a time each, to one FIFO server taking s per request."""
    latencies, sent, clock = [], 0, 0.0
    arrivals = []  # (arrival time, order)
    for _ in range(min(n, c)):
        heapq.heappush(arrivals, (0.0, sent))
        sent += 1
    while arrivals:
        arrived, _ = heapq.heappop(arrivals)
        clock = max(clock, arrived) + s
        latencies.append(clock - arrived)
        if sent < n:
            heapq.heappush(arrivals, (clock, sent))
            sent += 1
    return np.array(latencies)


@pytest.mark.parametrize(("n", "c"), [(200, 50), (200, 200), (500, 50), (37, 50), (1000, 7)])
def test_the_closed_loop_formula_matches_a_discrete_event_simulation_of_the_same_queue(n, c):
    # The formula's arithmetic against the queue it models, event by event (the model itself is checked against
    # measurements in the ledger, not here).
    simulated = simulate_closed_loop(n, c, 0.02)
    for q in (0.5, 0.9, 0.99):
        want = float(np.quantile(simulated, q, method="inverted_cdf"))
        assert C.closed_loop_latency(n, c, 0.02, q) == pytest.approx(want)
    # The seed's figures: 200 requests of 20 ms at 50 clients wait 1,000 ms at the median, at 200 clients 2,000 ms.
    assert C.closed_loop_latency(200, 50, 20, 0.5) == 1000 and C.closed_loop_latency(200, 200, 20, 0.5) == 2000


# --- claims.yaml against the pipeline ---------------------------------------------------------------------------


def default_config() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text()) | yaml.safe_load((REPO / "experiments.yaml").read_text())


def test_every_claim_resolves_to_cells_the_default_configuration_plans():
    doc = yaml.safe_load((REPO / "claims.yaml").read_text())
    jsonschema.validate(doc, yaml.safe_load((REPO / "workflow/schemas/claims.schema.yaml").read_text()))
    assert claimfile.check(doc["claims"]) == []
    config = default_config()
    problems = []
    for claim in doc["claims"]:
        if claim.get("pending") or claim.get("untestable"):
            continue
        scope = claim["scope"]
        if scope == "overall":
            cells = plan.main_cells(config)
        elif claim["compare"] == "outcome":
            failures = config["experiments"][scope].get("failures") or []
            cells = plan.experiment_cells({"experiments": {scope: {"matrices": failures}}}, scope)
        else:
            cells = plan.experiment_cells(config, scope) if scope in config["experiments"] else None
        problem = claimfile.resolve(claim, cells)
        if problem:
            problems.append(f"{claim['id']}: {problem}")
        for selector in claim["cells"].values():
            if "workload" in selector:
                assert selector["workload"] in WORKLOADS, claim["id"]
    assert not problems, "\n".join(problems)
    seeds = {c["seed"] for c in doc["claims"]}
    assert seeds == {"000", "001", "002", "003", "004"}


def test_a_claim_the_configuration_does_not_measure_says_so_and_why():
    claim = ratio_claim()
    cells = [("empty", "fastify", 10, "wrk", "5s"), ("empty", "express", 10, "wrk", "5s")]
    assert claimfile.resolve(claim, cells) is None
    assert claimfile.resolve(claim, cells[:1]) == "overall does not measure cell e (workload empty, server express)"
    assert "neither the main matrix" in claimfile.resolve(claim, None)
    two = [*cells, ("empty", "express", 50, "wrk", "5s")]
    assert "name its connections" in claimfile.resolve(claim, two)
    row = C.evaluate_claim(claimfile.unresolved(claim, "overall does not measure cell e"), None)
    assert row["verdict"] == C.UNTESTABLE and "not measured with this configuration" in row["reason"]


def test_the_ledger_page_says_each_verdict_and_escapes_the_quotes():
    data = runs({("empty", "fastify"): [3000.0] * 5, ("empty", "express"): [1000.0] * 5})
    claim = ratio_claim(quote="Fastify <b>is</b> 4.37x faster")
    table = C.ledger([claim, {"id": "t-p", "seed": "001", "quote": "q", "pending": "not built"}], {"overall": data})
    page = L.page(table, {"000": "seed zero"})
    assert "&lt;b&gt;is&lt;/b&gt;" in page and C.NOT_REPRODUCED in page and "not built" in page
    assert "started 10 s apart (median; largest 10 s)" in page
    md = L.markdown(table)
    assert "| *Fastify <b>is</b> 4.37x faster* (t-ratio)" in md and "2 published claims from 2 seeds" in md
    dictionary = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())["ledger"]
    assert set(table.columns) == set(dictionary)


# --- Seed 003's failure-mode routes -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["express", "express4"])
def test_the_failure_mode_routes_hang_or_throw_as_the_seed_describes(name, project, tmp_path):
    # From the tiny run's copy, where the pipeline installed the servers' packages (a fresh clone has none).
    port = procs.free_port()
    env = {"PATH": os.environ["PATH"], "PORT": str(port), "PGHOST": "127.0.0.1", "PGPORT": "1", "PGUSER": "x"}
    proc = server.start("node", project / "servers" / f"{name}.js", env, procs.job_cpus(), tmp_path / "server.log")
    try:
        server.wait_ready(proc, name, tmp_path / "server.log")
        if name == "express":
            status, _, body = server.request(port, "GET", "/throws")
            assert status == 500 and json.loads(body)["error"] == "thrown in an async handler"
            assert server.request(port, "GET", "/hello")[0] == 200
        with pytest.raises(TimeoutError):
            server.request(port, "GET", "/hang", timeout=1.0)
        if name == "express4":
            with pytest.raises(OSError):
                server.request(port, "GET", "/throws")
            assert proc.wait(timeout=5) != 0, "Express 4 leaves the rejection unhandled: the process must end"
    finally:
        # Killed, not stopped: a graceful stop would wait for the request that hangs.
        proc.kill()
        proc.wait(timeout=10)


# --- A tiny real run of the ledger, as a user runs it -----------------------------------------------------------

# The real claims.yaml against tiny versions of two of its experiments: the claims these cannot answer are shown
# as not testable with this configuration.
TINY_EXPERIMENTS = """\
experiments:
  naive-settimeout:
    # Rounds per claim at their smallest: looks after 2 and 3 rounds, reading the claims of this block.
    adaptive: {stop_on: claims, looks: [2, 3]}
    matrices:
      - servers: [express, fastify]
        workloads: [empty, delay-20ms]
        connections: [50]
        clients: [wrk]
        durations_s: [1]
  queueing:
    rounds: 1
    matrices:
      - servers: [express]
        workloads: [block]
        connections: [50]
        clients: [ab]
        counts: [60]
    failures:
      - servers: [express, express4]
        workloads: [hang, throws]
        connections: [10]
        clients: [ab]
        counts: [50]
      - servers: [express]
        workloads: [throws]
        connections: [10]
        clients: [autocannon]
        counts: [50]
"""


def test_reports_claims_all_on_a_tiny_real_run(project, tmp_path):
    # A copy of the tiny run (its packages, template and records kept), with tiny versions of the experiments.
    project = Path(shutil.copytree(project, tmp_path / "p", symlinks=True))
    (project / "experiments.yaml").write_text(TINY_EXPERIMENTS)
    res = snakemake(project, "reports/claims/all", timeout=900)
    assert res.returncode == 0, res.stdout[-4000:]
    table = pd.read_parquet(project / "data/claims/ledger.parquet")
    claims = yaml.safe_load((project / "claims.yaml").read_text())["claims"]
    assert list(table["id"]) == [c["id"] for c in claims]
    assert set(table["verdict"]) <= set(C.VERDICTS)
    by = table.set_index("id")
    # Measured here: the paired rounds of the naive setTimeout cells (2 or 3), all kept (a disturbed run is measured
    # again by its job, and one still disturbed is kept, never left out).
    naive = by.loc["000-naive-dilutes"]
    # The block's looks read its claims, and only theirs: one row each (those this matrix can measure); the ledger
    # reads the rounds they stopped at, and states the floor of its looks' coverage.
    first = json.loads((project / "data/looks/naive-settimeout/n2.json").read_text())
    look = first if first["stop"] else json.loads((project / "data/looks/naive-settimeout/n3.json").read_text())
    measured = table[(table["scope"] == "naive-settimeout") & (table["verdict"] != C.UNTESTABLE)]
    assert look["stop_on"] == "claims" and look["stop"], look
    assert look["comparisons"] + len(look["invalid"]) == len(measured) > 0, look
    assert "look after 2 rounds of naive-settimeout: " in res.stdout
    assert naive["n"] == look["rounds"] and naive["rounds_left_out"] == 0, naive["reason"]
    assert "at least" in naive["interval"] and "(rounds chosen by looks)" in naive["interval"]
    assert np.isfinite(naive["median"]) and naive["verdict"] in (C.REPRODUCED, C.NOT_REPRODUCED, C.INCONCLUSIVE)
    assert "still disturbed (kept)" in naive["ours_conditions"]
    # Not in this matrix: not testable, and why.
    assert by.loc["000-empty-ratio", "verdict"] == C.UNTESTABLE
    assert "not measured with this configuration" in by.loc["000-empty-ratio", "reason"]
    # Seed 003's failure modes: the harness reported each, and the target did not fail because of them.
    outcome = json.loads((project / "data/failures/throws/express4/c10/ab-50req.json").read_text())
    assert outcome["outcome"] == "failed" and "/throws" in outcome["check"]
    assert json.loads((project / "data/failures/throws/express/c10/ab-50req.json").read_text())["outcome"] == "answered"
    assert json.loads((project / "data/failures/hang/express/c10/ab-50req.json").read_text())["outcome"] == "failed"
    for cid in ("003-hang", "003-throws-express4", "003-throws-express5"):
        assert by.loc[cid, "verdict"] == C.REPRODUCED, (cid, by.loc[cid, "reason"])
    # Its runs of a round were measured side by side, and the ledger says how far apart.
    if naive["verdict"] != C.INVALID:
        assert 0 <= naive["gap_median_s"] <= naive["gap_max_s"] < 120
    page = (project / "reports/claims/index.html").read_text()
    assert "000-naive-dilutes" in page and 'href="../naive-settimeout/index.html"' in page
    # The ledger measures the cells its claims read, not whole scopes: the empty cells no claim reads were not run.
    manifest = (project / "reports/claims/all").read_text()
    assert "reports/claims/index.md" in manifest and "delay-20ms/fastify" in manifest
    assert not list((project / "data/runs").glob("naive-settimeout/empty/**/*.json"))
    assert leftovers(project) == []

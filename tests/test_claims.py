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

from conftest import REPO, leftovers, snakemake
from nodebench import claimfile, plan
from nodebench.analysis import claims as C
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.harness import procs, server
from nodebench.render import ledger as L

# The machine's speed in each round: every server in a round sees the same factor.
DRIFT = [1.0, 1.6, 0.8, 1.2, 0.9]


def runs(cells: dict[tuple, list[float]], figure: str = "req_per_s", scope_cols: dict | None = None) -> pd.DataFrame:
    """A runs table: (workload, server) -> one value per round, multiplied by that round's drift."""
    rows = []
    for (workload, server_), values in cells.items():
        for r, (v, d) in enumerate(zip(values, DRIFT, strict=False), start=1):
            rows.append(
                {
                    "workload": workload,
                    "server": server_,
                    "connections": 50,
                    "client": "wrk",
                    "stopping_rule": "duration",
                    "stop": "5s",
                    "round": r,
                    figure: v * d,
                    "framework": server_,
                    "framework_version": "1.0.0",
                    "node_version": "v20.0.0",
                    "cpu_model": "Test CPU",
                    "cpu_count": 2,
                    "started_at": f"2026-12-01T05:{r:02d}:00+00:00",
                    "preempted": False,
                    **(scope_cols or {}),
                }
            )
    return pd.DataFrame(rows)


def ratio_claim(**kw) -> dict:
    return {
        "id": "t-ratio",
        "seed": "000",
        "quote": "Fastify is 4.37x faster",
        "figure": 4.37,
        "unit": "x",
        "scope": "overall",
        "cells": {"f": {"workload": "empty", "server": "fastify"}, "e": {"workload": "empty", "server": "express"}},
        "statistic": "f / e",
        "compare": "equal",
        "tolerance": 0.44,
        "null": 1,
    } | kw


# --- Verdicts on data with a known answer ------------------------------------------------------------------


def test_a_ratio_is_paired_by_round_so_drift_cancels_and_the_verdict_follows_the_size():
    # Fastify does 3x Express's rate in every round; the machine's drift moves both alike.
    data = runs({("empty", "fastify"): [3000.0] * 5, ("empty", "express"): [1000.0] * 5})
    row = C.evaluate_claim(ratio_claim(), data)
    assert row["median"] == pytest.approx(3.0) and row["lo"] == pytest.approx(3.0) and row["n"] == 5
    assert row["interval"] == "n=5: min-max, 93.75 %"
    # 3.0x against the published 4.37x: the same side of 1, 31 % below, beyond the tolerance.
    assert row["verdict"] == C.DIRECTION and "31 % below" in row["reason"]
    assert C.evaluate_claim(ratio_claim(figure=3.1, tolerance=0.2), data)["verdict"] == C.REPRODUCED


def ratio_runs(per_round: list[float], base: float = 1000.0) -> pd.DataFrame:
    """fastify at per_round[r] x express's rate in round r (both drifting alike)."""
    return runs({("empty", "fastify"): [base * x for x in per_round], ("empty", "express"): [base] * len(per_round)})


def test_no_difference_within_the_noise_is_not_a_reproduced_difference():
    data = ratio_runs([1.02, 0.97, 1.01, 0.99, 1.03])
    row = C.evaluate_claim(ratio_claim(), data)
    assert (row["lo"], row["hi"]) == pytest.approx((0.97, 1.03))
    assert row["verdict"] == C.NOT_REPRODUCED and "includes 1.00x" in row["reason"]
    # A claim of no difference needs the whole interval inside its tolerance: equivalence shown, not merely
    # an interval wide enough to include no effect.
    same = ratio_claim(compare="same", figure=1.0, tolerance=0.05)
    assert C.evaluate_claim(same, data)["verdict"] == C.REPRODUCED
    narrow = C.evaluate_claim(same | {"tolerance": 0.02}, data)
    assert narrow["verdict"] == C.NOT_REPRODUCED and "inconclusive" in narrow["reason"]
    shifted = C.evaluate_claim(same, ratio_runs([1.10, 1.12, 1.08, 1.11, 1.09]))
    assert shifted["verdict"] == C.NOT_REPRODUCED and "a difference is shown" in shifted["reason"]


def test_a_change_within_tolerance_but_not_shown_beyond_noise_is_not_reproduced():
    claim = ratio_claim(figure=6.9, unit="%", tolerance=3, null=0, statistic="100 * (f / e - 1)")
    row = C.evaluate_claim(claim, ratio_runs([1.06, 0.99, 1.07, 1.065, 1.12]))
    assert row["median"] == pytest.approx(6.5) and row["lo"] == pytest.approx(-1.0)
    assert row["verdict"] == C.NOT_REPRODUCED and "no difference is shown" in row["reason"]
    assert C.evaluate_claim(claim, ratio_runs([1.06, 1.05, 1.07, 1.065, 1.08]))["verdict"] == C.REPRODUCED


def test_a_percentage_is_compared_in_points_and_its_sign_decides_the_direction():
    claim = ratio_claim(figure=-18.1, unit="%", tolerance=3, null=0, statistic="100 * (f / e - 1)")
    row = C.evaluate_claim(claim, ratio_runs([0.95] * 5))
    assert row["verdict"] == C.DIRECTION and "13.1 points above the published -18.1 %" in row["reason"]
    assert C.evaluate_claim(claim, ratio_runs([1.05] * 5))["verdict"] == C.NOT_REPRODUCED


def test_a_round_whose_statistic_is_not_a_number_is_left_out_and_said():
    data = runs({("list", "e"): [400.0] * 5, ("list", "lean"): [390.0] * 5, ("list", "f"): [370.0] * 4 + [400.0]})
    claim = ratio_claim(
        cells={s: {"workload": "list", "server": s} for s in ("e", "lean", "f")},
        statistic="100 * (e - lean) / (e - f)",
        figure=32,
        unit="%",
        tolerance=10,
        null=0,
    )
    row = C.evaluate_claim(claim, data)
    assert row["n"] == 4 and row["median"] == pytest.approx(100 / 3)
    assert "1 round left out, where the statistic is not a number" in row["reason"]


def test_a_claim_that_one_is_faster_needs_the_whole_interval_below_the_limit():
    claim = ratio_claim(compare="below", limit=1, figure=None)
    assert C.evaluate_claim(claim, ratio_runs([0.90, 0.93, 0.95, 0.91, 0.97]))["verdict"] == C.REPRODUCED
    row = C.evaluate_claim(claim, ratio_runs([0.90, 1.05, 0.95, 0.92, 0.97]))
    assert row["verdict"] == C.NOT_REPRODUCED and "no difference is shown" in row["reason"]


def test_an_opposite_direction_and_a_claim_above_its_limit_are_not_reproduced():
    data = runs({("empty", "fastify"): [800.0] * 5, ("empty", "express"): [1000.0] * 5})
    row = C.evaluate_claim(ratio_claim(), data)
    assert row["verdict"] == C.NOT_REPRODUCED and "opposite direction" in row["reason"]
    spread = {
        "id": "t-flat",
        "seed": "000",
        "quote": "flat",
        "unit": "x",
        "scope": "overall",
        "cells": {"a": {"server": "a"}, "b": {"server": "b"}, "c": {"server": "c"}},
        "statistic": "max(a, b, c) / min(a, b, c)",
        "compare": "at_most",
        "limit": 1.10,
    }
    flat = runs({("empty", "a"): [100.0] * 5, ("empty", "b"): [104.0] * 5, ("empty", "c"): [98.0] * 5})
    assert C.evaluate_claim(spread, flat)["median"] == pytest.approx(104 / 98)
    assert C.evaluate_claim(spread, flat)["verdict"] == C.REPRODUCED
    steep = runs({("empty", "a"): [100.0] * 5, ("empty", "b"): [130.0] * 5, ("empty", "c"): [98.0] * 5})
    assert C.evaluate_claim(spread, steep)["verdict"] == C.NOT_REPRODUCED


def test_a_round_missing_for_one_cell_drops_that_round_and_the_interval_says_so():
    data = runs({("empty", "fastify"): [3000.0] * 5, ("empty", "express"): [1000.0] * 5})
    data = data[~((data["server"] == "express") & (data["round"] == 5))]
    row = C.evaluate_claim(ratio_claim(), data)
    assert row["n"] == 4 and row["interval"] == "n=4: min-max, 87.5 %"


def test_a_selector_that_matches_several_cells_names_what_tells_them_apart():
    data = pd.concat([runs({("empty", "fastify"): [1.0] * 5}), runs({("list", "fastify"): [1.0] * 5})])
    claim = ratio_claim(cells={"f": {"server": "fastify"}}, statistic="f")
    with pytest.raises(C.ClaimError, match="matches 2 cells of overall; name its workload"):
        C.evaluate_claim(claim, data)
    # In the ledger, a claim the runs cannot answer is not yet measured, with the reason, and the others go on.
    table = C.ledger(
        [claim, ratio_claim(cells={"f": {"workload": "list", "server": "fastify"}}, statistic="f")], {"overall": data}
    )
    assert list(table["verdict"]) == [C.PENDING, C.NOT_REPRODUCED]
    assert "the runs cannot answer it" in table["reason"].iloc[0]


def test_the_scenario_score_order_against_a_known_ranking():
    # node-http 100; fastify costs 1.1x its req/s, hono 1.25x, express 2x in every scenario: scores 90.9, 80, 50.
    rates = {"node-http": 10000.0, "fastify": 10000 / 1.1, "hono": 10000 / 1.25, "express": 5000.0}
    data = runs({(w, s): [r] * 3 for w in ("hello", "not-found") for s, r in rates.items()})
    data["us_per_req_elu"] = 1e6 / data["req_per_s"]
    claim = {
        "id": "t-order",
        "seed": "004",
        "quote": "node:http > Fastify > Hono > Express",
        "scope": "scenarios",
        "scores": {"score_set": "seed", "basis": "rps"},
        "cells": {s: {"server": s} for s in rates},
        "compare": "order",
        "order": ["node-http", "fastify", "hono", "express"],
    }
    row = C.evaluate_claim(claim, data)
    assert row["verdict"] == C.REPRODUCED and "fastify 90.9 > hono 80.0 > express 50.0" in row["reason"]
    assert "every neighbour is separated" in row["reason"]
    swapped = C.evaluate_claim(claim | {"order": ["node-http", "hono", "fastify", "express"]}, data)
    assert swapped["verdict"] == C.NOT_REPRODUCED and "fastify above hono (separate intervals)" in swapped["reason"]
    score = {**claim, "cells": {"f": {"server": "fastify"}}, "statistic": "f", "compare": "equal"}
    row = C.evaluate_claim(score | {"figure": 89.9, "tolerance": 9, "unit": "score", "null": 100}, data)
    assert row["median"] == pytest.approx(100 / 1.1) and row["verdict"] == C.REPRODUCED


def test_an_order_says_which_neighbours_overlap():
    values = pd.DataFrame({"a": [100.0, 100, 100], "b": [90.0, 80, 95], "c": [85.0, 88, 70]})
    labels = {"a": "A", "b": "B", "c": "C"}
    verdict, reason, _ = C.decide_order(["a", "b", "c"], values, labels)
    assert verdict == C.REPRODUCED and "B and C are not separated" in reason and "A and B" not in reason
    verdict, reason, _ = C.decide_order(["a", "c", "b"], values, labels)
    assert verdict == C.NOT_REPRODUCED and "B above C (overlapping intervals)" in reason
    one = C.decide_order(["a", "c", "b"], values.iloc[:1], labels)[1]
    assert "B above C (no intervals)" in one


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
    assert "&lt;b&gt;is&lt;/b&gt;" in page and C.DIRECTION in page and "not built" in page
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
    rounds: 2
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
    # Measured here: two paired rounds of the naive setTimeout cells.
    assert by.loc["000-naive-dilutes", "n"] == 2 and np.isfinite(by.loc["000-naive-dilutes", "median"])
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
    page = (project / "reports/claims/index.html").read_text()
    assert "000-naive-dilutes" in page and 'href="../naive-settimeout/index.html"' in page
    assert (project / "reports/naive-settimeout/index.html").exists()
    assert "reports/claims/index.md" in (project / "reports/claims/all").read_text()
    assert leftovers(project) == []

"""Cost per request against load: fixed rates common to every server, the ceiling beside them, and the paired
ratios at each (nodebench.analysis.costcurve and its report section)."""

import numpy as np
import pandas as pd
import pytest

from nodebench.analysis.costcurve import SATURATION, cost_curve, not_like_with_like
from nodebench.analysis.metrics import compute_metrics
from nodebench.catalogue.clients import Stop
from nodebench.plan import back_to_back, experiment_cells
from nodebench.render.costcurve_report import costcurve_blocks
from nodebench.render.document import to_markdown

#: Each server's true cost per request (us) at 1,000 and 3,000 req/s and at its ceiling, and its ELU there.
COSTS = {
    "express": (100.0, 100.0, 100.0, 0.99),
    "fastify": (30.0, 20.0, 13.0, 0.93),
    "node-http": (25.0, 15.0, 10.0, 0.99),
}


def runs(costs=COSTS, rounds=6, delivered=None, seed=3) -> pd.DataFrame:
    """Runs of one workload at 50 connections: wrk's capacity cell and the open loop at 1,000 and 3,000 req/s, every
    server in every round, with 2 % noise. delivered: {(server, rate): req/s} where a rate was not sustained."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, rounds + 1):
        for server, (at1k, at3k, ceiling, elu_max) in costs.items():
            for client, stop, us, rate in (("openloop", "5s-r1000", at1k, 1000), ("openloop", "5s-r3000", at3k, 3000),
                                           ("wrk", "5s", ceiling, None)):  # fmt: skip
                us = us * rng.lognormal(0, 0.02)
                if rate is None:
                    elu, rps = elu_max, elu_max * 1e6 / us
                else:
                    rps = (delivered or {}).get((server, rate), rate)
                    elu = min(elu_max, rps * us / 1e6)
                rows.append({
                    "workload": "empty", "server": server, "connections": 50, "client": client,
                    "stopping_rule": "duration", "stop": stop, "round": r, "session": "s", "req_per_s": rps,
                    "us_per_req_elu": us, "us_per_req_oncpu": 0.9 * us, "us_per_req_threads": 1.1 * us,
                    "us_per_req_cpu": 1.1 * us, "elu_utilization": elu, "client_cpu_util": 0.3,
                    "client_cpu_capacity": 1.0, "latency_p50_ms": 0.3, "latency_p99_ms": 1.0, "cpu_model": "Test CPU",
                    "preempted": False, "disturbed": False, "measurement_count": 1,
                    "started_at": f"2026-12-05T10:{r:02d}:00+00:00",
                })  # fmt: skip
    return pd.DataFrame(rows)


def test_stop_labels_a_fixed_rate_and_parses_it_back():
    stop = Stop.parse("5s-r2000")
    assert (stop.rule, stop.value, stop.rate, stop.load_pct) == ("duration", 5.0, 2000, None)
    assert stop.label == "5s-r2000" and stop.open and stop.closed.label == "5s"
    assert Stop.parse("5s-at50").open and not Stop.parse("5s").open
    with pytest.raises(ValueError, match="5s-r2000"):
        Stop.parse("5s-rate2000")


def test_an_experiment_with_rates_plans_the_capacity_cell_and_one_cell_per_rate():
    config = {
        "experiments": {
            "curve": {
                "matrices": [
                    {
                        "servers": ["express", "fastify"],
                        "workloads": ["empty"],
                        "connections": [50],
                        "clients": ["openloop"],
                        "durations_s": [5],
                        "rates_per_s": [1000, 3000],
                    }
                ]  # fmt: skip
            }
        },
    }
    cells = experiment_cells(config, "curve")
    assert sorted(c[3:] for c in cells if c[1] == "express") == [
        ("openloop", "5s-r1000"), ("openloop", "5s-r3000"), ("wrk", "5s"), ("wrk", "5s-end")
    ]  # fmt: skip
    assert len(cells) == 8
    # In every round: the capacities, then the rates, then the capacities again, each phase's groups shuffled.
    for r in (1, 2, 3):
        order = [c[4] for group in back_to_back(cells, 1, r) for c in group]
        assert order[:2] == ["5s", "5s"] and order[-2:] == ["5s-end", "5s-end"], order
        assert sorted(order[2:6]) == ["5s-r1000", "5s-r1000", "5s-r3000", "5s-r3000"]
    assert Stop.parse("5s-end") == Stop("duration", 5.0, after=True) and Stop.parse("5s-end").label == "5s-end"
    assert not Stop.parse("5s-end").open and Stop.parse("5s-r1000").closed.end.label == "5s-end"


def test_cost_curve_reads_each_server_at_each_rate_and_at_its_ceiling():
    curve = cost_curve(compute_metrics(runs()))
    fastify = curve[curve["server"] == "fastify"]
    assert list(fastify["load"]) == ["1,000 req/s", "3,000 req/s", SATURATION]
    # The ratio moves with the load: Fastify's cost falls towards its ceiling, Express's does not.
    ratios = fastify["cost_vs_express"].to_numpy()
    assert ratios == pytest.approx([0.30, 0.20, 0.13], rel=0.05)
    assert list(fastify["outcome_vs_express"]) == ["cheaper"] * 3
    assert (fastify["cost_vs_express_lo"] <= ratios).all() and (ratios <= fastify["cost_vs_express_hi"]).all()
    assert fastify["sustained"].all()
    assert fastify["delivered_share"].iloc[:2].to_numpy() == pytest.approx([1.0, 1.0])
    # At saturation Fastify's loop was 0.06 less busy than Express's: not the same load, and it is said.
    flagged = not_like_with_like(curve)
    assert list(flagged["server"]) == ["fastify"] and flagged["elu_gap_vs_express"].iloc[0] == pytest.approx(-0.06)


def test_a_server_costlier_at_one_load_is_called_costlier_there():
    # The wrong side of no effect: Fastify costs more than Express at 3,000 req/s and less elsewhere.
    costs = dict(COSTS, fastify=(30.0, 120.0, 13.0, 0.99))
    curve = cost_curve(compute_metrics(runs(costs)))
    fastify = curve[curve["server"] == "fastify"].set_index("load")
    assert fastify.loc["3,000 req/s", "outcome_vs_express"] == "costlier"
    assert fastify.loc["1,000 req/s", "outcome_vs_express"] == "cheaper"
    text = to_markdown(costcurve_blocks(compute_metrics(runs(costs))))
    assert "(costlier) at 3,000 req/s" in text and "(cheaper) at 1,000 req/s" in text


def test_the_report_says_how_each_ratio_moves_and_which_points_are_not_the_same_load():
    delivered = {("express", 3000): 2500.0}
    text = to_markdown(costcurve_blocks(compute_metrics(runs(delivered=delivered))))
    assert "## Cost per request against load" in text
    line = next(x for x in text.splitlines() if x.startswith("- **empty**, fastify / express:"))
    assert line.index("at 1,000 req/s") < line.index("at 3,000 req/s") < line.index("at saturation")
    assert "its ELU 0.06 below express's: not at the same load" in line
    assert line.endswith("(intervals over paired rounds, n=6: min-max, 96.88 %).")
    # Express delivered 2,500 of 3,000 req/s: that point is not at the offered load, and the report names it.
    assert "Not sustained" in text and "empty/express at 3,000 req/s" in text
    # Every ratio with Express at that rate is not at the same load either, on either side of the pair.
    for start in ("- **empty**, express / node-http:", "- **empty**, fastify / express:"):
        line = next(x for x in text.splitlines() if x.startswith(start))
        assert "at 3,000 req/s (not sustained: not the same load)" in line, line
        assert "at 1,000 req/s (not sustained" not in line


def test_no_fixed_rate_no_section():
    closed = runs()
    closed = closed[closed["client"] == "wrk"]
    assert cost_curve(compute_metrics(closed)).empty
    assert costcurve_blocks(compute_metrics(closed)) == []


def test_a_sweep_whose_capacity_moved_more_than_5_percent_is_flagged_with_its_round():
    from nodebench.analysis.costcurve import capacity_drift
    from nodebench.render.costcurve_report import sweep_blocks

    rows = []
    for server, (before, after) in {"fastify": (40000, 40800), "express": (6000, 5580)}.items():
        for round_, scale in ((1, 1.0), (2, 1.01)):
            rows += [
                {"workload": "empty", "server": server, "connections": 50, "client": "wrk", "stop": "5s",
                 "round": round_, "req_per_s": before * scale},
                {"workload": "empty", "server": server, "connections": 50, "client": "openloop", "stop": "5s-r1000",
                 "round": round_, "req_per_s": 1000.0},
                # Express's ceiling fell 7 % during round 2's sweep, not during round 1's.
                {"workload": "empty", "server": server, "connections": 50, "client": "wrk", "stop": "5s-end",
                 "round": round_, "req_per_s": (after if round_ == 2 else before) * scale},
            ]  # fmt: skip
    drift = capacity_drift(pd.DataFrame(rows))
    assert len(drift) == 4
    fastify = drift[drift["server"] == "fastify"].set_index("round")
    assert fastify.loc[2, "drift"] == pytest.approx(0.02) and not fastify["flagged"].any()
    express = drift[drift["server"] == "express"].set_index("round")
    assert express.loc[2, "drift"] == pytest.approx(-0.07) and list(express["flagged"]) == [False, True]
    text = to_markdown(sweep_blocks(pd.DataFrame(rows)))
    assert "1 of 4 sweeps flagged (25%)" in text
    assert "**express** on `empty` at 50 connections: 2 sweeps" in text and "**1 flagged**: round 2 (-7.0%)" in text
    assert "**fastify** on `empty` at 50 connections" in text and "none flagged" in text
    # Without capacities measured again (a closed-loop matrix), nothing is said.
    assert sweep_blocks(pd.DataFrame([r for r in rows if r["stop"] != "5s-end"])) == []


def test_a_scope_without_any_capacity_cell_has_no_sweeps_and_does_not_fail():
    """The stopping-rule experiment measures with another client only: no wrk row at all. An empty boolean mask
    once selected columns instead of rows and the summary failed (CI, 2026-12-05)."""
    from nodebench.analysis.costcurve import capacity_drift
    from nodebench.render.costcurve_report import sweep_blocks

    rows = pd.DataFrame([
        {"workload": "empty", "server": s, "connections": 50, "client": "autocannon", "stop": "1s", "round": k,
         "req_per_s": 1000.0} for s in ("express", "fastify") for k in (1, 2)
    ])  # fmt: skip
    assert capacity_drift(rows).empty
    assert sweep_blocks(rows) == []

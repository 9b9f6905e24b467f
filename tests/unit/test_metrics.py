"""Metrics on small hand-made tables where the right answer is known."""

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from nodebench.analysis import metrics
from nodebench.render import markdown
from synthetic import runs_from

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())


DICTIONARY = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())


EXPRESS_FASTIFY = runs_from(
    [
        ("empty", "express", 50, 1, 100.0, 300.0, 1.0, 0.3),
        ("empty", "express", 50, 2, 110.0, 290.0, 1.0, 0.3),
        ("empty", "express", 50, 3, 90.0, 310.0, 1.0, 0.3),
        ("empty", "fastify", 50, 1, 400.0, 60.0, 1.0, 0.8),
        ("empty", "fastify", 50, 2, 440.0, 62.0, 1.0, 0.8),
        ("empty", "fastify", 50, 3, 420.0, 58.0, 1.0, 0.8),
        ("empty", "node-http", 50, 1, 500.0, 50.0, 0.97, 0.95),
        ("empty", "node-http", 50, 2, 500.0, 50.0, 0.97, 0.95),
        ("empty", "node-http", 50, 3, 500.0, 50.0, 0.97, 0.95),
        ("list", "express", 50, 1, 10.0, 1000.0, 1.0, 0.2),
        ("list", "express", 50, 2, 10.0, 1000.0, 1.0, 0.2),
        ("list", "express", 50, 3, 10.0, 1000.0, 1.0, 0.2),
        ("list", "fastify", 50, 1, 12.0, 760.0, 0.9, 0.95),
        ("list", "fastify", 50, 2, 12.0, 760.0, 0.9, 0.95),
        ("list", "fastify", 50, 3, 12.0, 760.0, 0.9, 0.95),
        ("list", "node-http", 50, 1, 13.0, 750.0, 0.5, 0.3),
        ("list", "node-http", 50, 2, 13.0, 750.0, 0.5, 0.3),
        ("list", "node-http", 50, 3, 13.0, 750.0, 0.5, 0.3),
    ]
)


@pytest.fixture(scope="module")
def m() -> pd.DataFrame:
    return metrics.compute_metrics(EXPRESS_FASTIFY).set_index(["workload", "server"])


def test_medians_over_repetitions(m):
    assert m.loc[("empty", "express"), "req_per_s"] == 100.0
    assert m.loc[("empty", "fastify"), "us_per_req_elu"] == 60.0
    assert m.loc[("empty", "fastify"), "rounds"] == 3


def test_interval_contains_the_point_estimate(m):
    for fig in metrics.FIGURES:
        # A figure these hand-made runs lack (the on-CPU ones) is missing everywhere, never made up.
        known = m[fig].notna()
        assert known.all() or not known.any(), fig
        assert (m[f"{fig}_lo"] <= m[fig])[known].all() and (m[fig] <= m[f"{fig}_hi"])[known].all()
    assert m["us_per_req_elu"].notna().all() and m["us_per_req_oncpu"].isna().all()
    assert m.loc[("empty", "express"), "req_per_s_lo"] >= 90.0
    assert m.loc[("empty", "express"), "req_per_s_hi"] <= 110.0
    # Identical rounds: the interval is the value itself.
    assert m.loc[("list", "express"), "req_per_s_lo"] == m.loc[("list", "express"), "req_per_s_hi"] == 10.0


def test_cv_and_noisy_flag(m):
    assert m.loc[("empty", "express"), "req_per_s_cv"] == pytest.approx(np.std([100, 110, 90], ddof=1) / 100)
    assert bool(m.loc[("empty", "express"), "noisy"])  # 10 % CV
    assert not bool(m.loc[("list", "express"), "noisy"])


def test_both_share_models(m):
    # Reference: fastify's empty cost (60) held constant over its list cost (760).
    assert m.loc[("list", "fastify"), "share_reference"] == pytest.approx(60 / 760)
    assert m.loc[("list", "express"), "share_reference"] == pytest.approx(300 / 1000)
    # Baseline: only what the framework adds over node-http's empty cost (50).
    assert m.loc[("list", "express"), "share_baseline"] == pytest.approx((300 - 50) / 1000)
    assert m.loc[("empty", "express"), "share_reference"] == pytest.approx(1.0)
    assert m.loc[("empty", "node-http"), "share_baseline"] == pytest.approx(0.0)


def test_saturation_thresholds(m):
    assert m.loc[("empty", "express"), "saturation"] == "server-bound"
    assert m.loc[("empty", "node-http"), "saturation"] == "server-bound"  # 0.97 >= 0.95
    assert m.loc[("list", "fastify"), "saturation"] == "client-bound"  # ELU 0.9, client 0.95 cores
    # Tables without the client-set and database figures (records before they were measured): not saturated.
    assert m.loc[("list", "node-http"), "saturation"] == "not saturated"
    assert m.loc[("empty", "express"), "preempted_runs"] == 0


def test_the_verdict_reads_the_median_database_and_client_set_figures():
    # list/node-http: ELU 0.5 and client 0.3 of 1 core; PostgreSQL used 0.62, 0.65 and 0.66 of the 0.7 left.
    runs = EXPRESS_FASTIFY.assign(
        client_cpu_count=1,
        client_cpus_busy=0.97,
        db_cpu_util=np.where(
            EXPRESS_FASTIFY["server"] == "node-http",
            EXPRESS_FASTIFY["round"].map({1: 0.62, 2: 0.65, 3: 0.66}),
            0.1,
        ),
        preempted=(EXPRESS_FASTIFY["server"] == "express") & (EXPRESS_FASTIFY["round"] == 2),
    )
    got = metrics.compute_metrics(runs).set_index(["workload", "server"])
    assert got.loc[("list", "node-http"), "saturation"] == "database-bound"
    assert got.loc[("list", "node-http"), "db_cpu_util"] == pytest.approx(0.65)
    assert "0.65" in got.loc[("list", "node-http"), "saturation_reason"]
    # list/express is server-bound whatever else was busy; each express cell had one preempted run.
    assert got.loc[("list", "express"), "saturation"] == "server-bound"
    assert (got.xs("express", level="server")["preempted_runs"] == 1).all()


def test_geometric_mean_score():
    scores = metrics.geomean_scores(metrics.compute_metrics(EXPRESS_FASTIFY)).set_index("server")["score"]
    assert scores["node-http"] == pytest.approx(100.0)
    # express: node-http us/req over express's is 50/300 on empty and 750/1000 on list.
    assert scores["express"] == pytest.approx(100 * np.sqrt(50 / 300 * 750 / 1000))
    assert scores["fastify"] == pytest.approx(100 * np.sqrt(50 / 60 * 750 / 760))


def test_the_score_is_taken_per_round_with_its_interval_and_says_which_cells_are_server_bound():
    got = metrics.compute_metrics(EXPRESS_FASTIFY)
    scores = metrics.geomean_scores(got, EXPRESS_FASTIFY).set_index("server")
    # express's per-round scores: node-http 50 over express 300, 290, 310 on empty; 750/1000 on list.
    per_round = [100 * np.sqrt(50 / us * 0.75) for us in (300.0, 290.0, 310.0)]
    assert scores.loc["express", "score"] == pytest.approx(np.median(per_round))
    assert scores.loc["express", "score_lo"] == pytest.approx(min(per_round))
    assert scores.loc["express", "score_hi"] == pytest.approx(max(per_round))
    assert scores.loc["express", "rounds"] == 3 and scores.loc["express", "interval"] == "n=3: min-max, 75 %"
    # list/fastify's ELU is 0.9: not server-bound, so fastify's score is not all server-bound.
    assert scores.loc["fastify", "cells"] == 2 and scores.loc["fastify", "server_bound_cells"] == 1
    assert not scores.loc["fastify", "server_bound"] and scores.loc["express", "server_bound"]
    # Without runs (the old call) the score is the geometric mean of the medians, with no interval.
    old = metrics.geomean_scores(got).set_index("server")
    assert old.loc["express", "rounds"] == 0 and np.isnan(old.loc["express", "score_lo"])


def test_a_ratio_that_preempted_rounds_move_is_flagged_and_one_they_do_not_is_not():
    rows = []
    for r in range(1, 8):
        slow = 1.5 if r in (1, 2, 3, 4) else 1.0  # express slowed by half in four of seven rounds, flagged
        rows += [
            ("empty", "express", 50, r, 100.0, 300.0 * slow, 1.0, 0.3),
            ("empty", "node-http", 50, r, 500.0, 50.0, 1.0, 0.3),
        ]
    runs = runs_from(rows)
    runs["preempted"] = (runs["server"] == "express") & runs["round"].isin([1, 2, 3, 4])
    got = metrics.compute_metrics(runs).set_index(["workload", "server"])
    row = got.loc[("empty", "express")]
    assert row["cost_vs_node_http_unpreempted"] == pytest.approx(6.0)
    assert bool(row["preemption_matters_vs_node_http"]), row[
        ["cost_vs_node_http", "cost_vs_node_http_lo", "cost_vs_node_http_hi"]
    ]
    text = markdown.comparisons(got.reset_index())
    assert "moves 2 of the 2 ratios by more than half their interval" in text  # express/node-http and its inverse
    assert "empty/express c50 against node-http (9.00x, 6.00x without)" in text
    quiet = metrics.compute_metrics(runs.assign(preempted=False)).reset_index()
    assert "moves none of these ratios" in markdown.comparisons(quiet)


def test_every_metrics_column_is_in_the_data_dictionary():
    got = metrics.compute_metrics(EXPRESS_FASTIFY)
    assert set(got.columns) == set(DICTIONARY["metrics"])
    assert set(metrics.geomean_scores(got).columns) == set(DICTIONARY["scores"])


def test_ratios_across_cpu_models_are_flagged_and_warned():
    mixed = EXPRESS_FASTIFY.assign(cpu_model=np.where(EXPRESS_FASTIFY["server"] == "fastify", "Other CPU", "Test CPU"))
    got = metrics.compute_metrics(mixed).set_index(["workload", "server"])
    assert bool(got.loc[("empty", "fastify"), "mixed_cpu_models_vs_express"])
    assert not bool(got.loc[("empty", "node-http"), "mixed_cpu_models_vs_express"])
    warning = markdown.cpu_model_warning(got.reset_index())
    assert "different CPU models" in warning and "empty/fastify c50" in warning and "Other CPU" in warning
    assert markdown.cpu_model_warning(metrics.compute_metrics(EXPRESS_FASTIFY)) == ""


def test_ratios_are_paired_by_round_with_order_statistic_intervals(m):
    # fastify over express on empty, round by round: 60/300, 62/290, 58/310.
    rounds = sorted([60 / 300, 62 / 290, 58 / 310])
    fastify = m.loc[("empty", "fastify")]
    assert fastify["cost_vs_express"] == pytest.approx(rounds[1])
    # Three pairs: the interval is their min-max, which covers the median 75 % of the time.
    assert (fastify["cost_vs_express_lo"], fastify["cost_vs_express_hi"]) == pytest.approx((rounds[0], rounds[2]))
    assert fastify["pairs_vs_express"] == 3 and fastify["pair_coverage_vs_express"] == pytest.approx(0.75)
    assert fastify["throughput_vs_express"] == pytest.approx(sorted([400 / 100, 440 / 110, 420 / 90])[1])
    assert m.loc[("list", "fastify"), "throughput_vs_node_http"] == pytest.approx(12 / 13)
    assert m.loc[("empty", "express"), "interval"] == "n=3: min-max, 75 %"


def test_pairing_cancels_drift_that_unpaired_medians_keep():
    # The machine slows by up to 2x between rounds; fastify always costs 0.2x express within a round.
    drift = [1.0, 2.0, 1.3, 0.7, 1.6]
    rows = []
    for r, d in enumerate(drift, start=1):
        rows += [
            ("empty", "express", 50, r, 100 / d, 300 * d, 1.0, 0.3),
            ("empty", "fastify", 50, r, 500 / d, 60 * d, 1.0, 0.3),
        ]
    got = metrics.compute_metrics(runs_from(rows)).set_index("server")
    assert got.loc["fastify", "cost_vs_express"] == pytest.approx(0.2)
    assert got.loc["fastify", ["cost_vs_express_lo", "cost_vs_express_hi"]].tolist() == pytest.approx([0.2, 0.2])
    # Each server's own median spans the drift: min-max 0.7x to 2x of its cost.
    assert got.loc["fastify", "us_per_req_elu_hi"] / got.loc["fastify", "us_per_req_elu_lo"] == pytest.approx(2 / 0.7)


def test_only_rounds_both_cells_have_are_paired():
    # fastify's round 3 on empty is lost: two pairs remain, 60/300 and 62/290.
    two = EXPRESS_FASTIFY.drop(EXPRESS_FASTIFY.index[5])
    got = metrics.compute_metrics(two).set_index(["workload", "server"])
    fastify = got.loc[("empty", "fastify")]
    assert fastify["rounds"] == 2 and fastify["pairs_vs_express"] == 2
    assert fastify["cost_vs_express"] == pytest.approx((60 / 300 + 62 / 290) / 2)
    assert fastify["pair_coverage_vs_express"] == pytest.approx(0.5)
    assert fastify["interval"] == "n=2: min-max, 50 %"


def test_one_round_prints_no_interval():
    one = EXPRESS_FASTIFY[EXPRESS_FASTIFY["round"] == 1]
    got = metrics.compute_metrics(one).set_index(["workload", "server"])
    assert np.isnan(got.loc[("empty", "fastify"), "req_per_s_lo"]) and got.loc[("empty", "fastify"), "req_per_s"] == 400
    assert np.isnan(got.loc[("empty", "fastify"), "cost_vs_express_lo"])
    assert got.loc[("empty", "fastify"), "cost_vs_express"] == pytest.approx(0.2)
    assert got.loc[("empty", "fastify"), "interval"] == "n=1: no interval"


def test_without_express_the_ratios_against_it_are_empty():
    no_express = EXPRESS_FASTIFY[EXPRESS_FASTIFY["server"] != "express"]
    got = metrics.compute_metrics(no_express)
    assert got["cost_vs_express"].isna().all() and (got["pairs_vs_express"] == 0).all()


def test_pairs_measured_by_different_sessions_are_counted():
    sessions = np.where((EXPRESS_FASTIFY["server"] == "express") & (EXPRESS_FASTIFY["round"] == 2), "later", "first")
    got = metrics.compute_metrics(EXPRESS_FASTIFY.assign(session=sessions)).set_index(["workload", "server"])
    assert got.loc[("empty", "fastify"), "cross_session_vs_express"] == 1
    assert got.loc[("empty", "express"), "cross_session_vs_express"] == 0
    assert got.loc[("empty", "fastify"), "cross_session_vs_node_http"] == 0


def test_the_a_a_twin_is_reported_beside_its_peers_and_moves_no_outcome():
    # node-http-aa is node-http measured again in each round: 2 %, -1 % and 4 % apart.
    twin = EXPRESS_FASTIFY[EXPRESS_FASTIFY["server"] == "node-http"].copy()
    twin["server"] = "node-http-aa"
    twin["us_per_req_elu"] = twin["us_per_req_elu"] * np.tile([1.02, 0.99, 1.04], 2)
    got = metrics.compute_metrics(pd.concat([EXPRESS_FASTIFY, twin], ignore_index=True))
    got = got.set_index(["workload", "server"])
    empty = got.loc["empty"]
    assert np.allclose(empty["aa_cost"], 1.02) and (empty["aa_pairs"] == 3).all()
    # Its offset is still reported (2 % on a log scale); its interval (0.99-1.04) holds 1, so the twin is not off.
    assert empty.loc["fastify", "noise_floor"] == pytest.approx(0.02)
    assert not empty["twin_off"].any()
    # fastify at 0.19-0.21x express is cheaper; express against itself is inside the 5 % margin.
    assert empty.loc["fastify", "outcome_vs_express"] == "cheaper"
    assert empty.loc["express", "outcome_vs_express"] == "equivalent"
    # The twin is not ranked.
    assert "node-http-aa" not in set(metrics.geomean_scores(got.reset_index())["server"])


def test_a_twin_whose_interval_excludes_one_flags_its_peer_group():
    twin = EXPRESS_FASTIFY[EXPRESS_FASTIFY["server"] == "node-http"].copy()
    twin["server"] = "node-http-aa"
    twin["us_per_req_elu"] = twin["us_per_req_elu"] * np.tile([1.06, 1.08, 1.07], 2)
    got = metrics.compute_metrics(pd.concat([EXPRESS_FASTIFY, twin], ignore_index=True)).set_index("server")
    assert got["twin_off"].all()


def test_a_comparison_inside_the_twins_own_reach_is_decided_by_its_own_interval():
    """The A/A twin's median is 0.80, so far off that the twin is flagged; a comparison at 0.82 whose own interval
    lies below 1 is cheaper all the same (the floor it once had to clear was a random draw, not a margin)."""
    rounds = [1, 2, 3]
    base = pd.DataFrame({"round": rounds, "us_per_req_elu": 100.0})
    twin = base.assign(us_per_req_elu=[80.0, 80.0, 79.0])

    def cost(server_ratio: float) -> str:
        runs = pd.concat(
            [
                base.assign(server="node-http"),
                twin.assign(server="node-http-aa"),
                base.assign(server="fastify", us_per_req_elu=[100 * server_ratio * f for f in (0.99, 1.0, 1.01)]),
            ],
            ignore_index=True,
        )
        runs = runs.assign(
            workload="empty", connections=50, client="wrk", stopping_rule="duration", stop="5s",
            req_per_s=1e4, us_per_req_cpu=runs["us_per_req_elu"], latency_p50_ms=1.0, latency_p99_ms=2.0,
            elu_utilization=0.99, client_cpu_util=0.5, client_cpu_capacity=1.0, preempted=False, cpu_model="x",
        )  # fmt: skip
        got = metrics.compute_metrics(runs).set_index("server")
        assert got.loc["fastify", "noise_floor"] == pytest.approx(0.25) and got.loc["fastify", "twin_off"]
        return got.loc["fastify", "outcome_vs_node_http"]

    assert cost(0.82 / 0.99) == "cheaper"
    assert cost(1.0) == "equivalent"
    # Data on the wrong side of no effect: costlier, never cheaper.
    assert cost(1.12) == "costlier"


def test_the_headline_figure_decides_the_cost_ratios_and_can_point_the_other_way():
    """config's headline: Express waits behind its own GC (ELU 300 µs, main-thread on-CPU 200, all threads 360);
    Fastify does not (ELU 240, on-CPU 230, all threads 250). On ELU Fastify is cheaper than Express, on the main
    thread's on-CPU time it is costlier: each headline must give its own answer, with its own interval, outcome, score
    and sentences, and name itself."""
    from nodebench.catalogue.figures import HEADLINES

    rounds = [1, 2, 3, 4, 5]
    noise = np.array([1.00, 1.01, 0.99, 1.02, 0.98])
    per = {"express": (300.0, 200.0, 360.0), "fastify": (240.0, 230.0, 250.0), "node-http": (100.0, 95.0, 110.0)}
    runs = pd.concat(
        [
            pd.DataFrame({"round": rounds, "server": server, "us_per_req_elu": elu * noise,
                          "us_per_req_oncpu": oncpu * noise[::-1], "us_per_req_threads": threads * noise})
            for server, (elu, oncpu, threads) in per.items()
        ],
        ignore_index=True,
    )  # fmt: skip
    runs = runs.assign(
        workload="empty", connections=50, client="wrk", stopping_rule="duration", stop="5s",
        req_per_s=1e6 / runs["us_per_req_elu"], us_per_req_cpu=runs["us_per_req_threads"], latency_p50_ms=1.0,
        latency_p99_ms=2.0, elu_utilization=0.99, client_cpu_util=0.5, client_cpu_capacity=1.0, preempted=False,
        cpu_model="x",
    )  # fmt: skip
    got = {h: metrics.compute_metrics(runs, headline=h).set_index("server") for h in HEADLINES}
    for h, m in got.items():
        assert (m["headline_figure"] == h).all()
        assert m.loc["fastify", "cost_vs_express"] == pytest.approx(
            per["fastify"][list(HEADLINES).index(h)] / per["express"][list(HEADLINES).index(h)], rel=0.03
        )
    assert got["us_per_req_elu"].loc["fastify", "outcome_vs_express"] == "cheaper"
    assert got["us_per_req_oncpu"].loc["fastify", "outcome_vs_express"] == "costlier"
    assert got["us_per_req_threads"].loc["fastify", "outcome_vs_express"] == "cheaper"
    # The other figures' ratios stay beside it whatever the headline.
    assert got["us_per_req_elu"].loc["fastify", "cost_oncpu_vs_express"] == pytest.approx(230 / 200, rel=0.03)
    # The score reads the headline too: Fastify above Express on ELU, below on the main thread's on-CPU time.
    for h, above in (("us_per_req_elu", True), ("us_per_req_oncpu", False)):
        scores = metrics.geomean_scores(got[h].reset_index(), runs).set_index("server")["score"]
        assert bool(scores["fastify"] > scores["express"]) is above, (h, scores)
    # The report names the figure it heads with and ranks by it.
    on_cpu = markdown.glance_line("**empty**", got["us_per_req_oncpu"].reset_index())
    assert "cheapest by median **node-http**" in on_cpu and "µs of main-thread on-CPU time a request" in on_cpu
    assert "costliest **fastify**" in on_cpu
    assert "costliest **express**" in markdown.glance_line("**empty**", got["us_per_req_elu"].reset_index())
    table = markdown.cell_table(markdown.by_cost(got["us_per_req_oncpu"].reset_index()), None)
    assert table.columns[3] == "µs/req on-CPU [interval]"
    assert [row[0] for row in table.rows] == ["node-http", "express", "fastify"]
    # The results file labels the cost ratio with the figure it read, once, with its outcome.
    from nodebench.analysis import results

    rows = results.table("overall", runs, got["us_per_req_oncpu"].reset_index())
    mine = rows[(rows["kind"] == "ratio") & (rows["server"] == "fastify") & (rows["against"] == "express")]
    assert mine.loc[mine["figure"] == "us_per_req_oncpu", "outcome"].tolist() == ["costlier"]
    assert "us_per_req_elu" not in set(mine["figure"])

"""The open loop's analysis (latency per load, where p99 crosses 10 ms, start-up and memory per server), its
record fields and the harness's refusal of a client-bound window: each statistic fed data where the answer is
known, both ways."""

import json

import numpy as np
import pandas as pd
import pytest
from test_configcheck import shipped

from nodebench.analysis import latency
from nodebench.catalogue.clients import Stop
from nodebench.harness import measure
from nodebench.harness.parsers import parse_openloop


def runs(p99_by_load: dict, rounds: int = 3, refused: set = frozenset(), server: str = "express") -> pd.DataFrame:
    """Open-loop runs of one server on `empty`: p99 per load (ms) times a round's factor; (load, round) in refused
    has no latencies and a reason."""
    rows = []
    for load, p99 in p99_by_load.items():
        for r in range(1, rounds + 1):
            f = 1 + 0.05 * (r - 2)
            gone = (load, r) in refused
            rows.append({
                "workload": "empty", "server": server, "connections": 50, "load_pct": load, "round": r,
                "openloop_refused": "the client's own lateness moved p99" if gone else None,
                "openloop_target_rate": 100.0 * load, "client_reported_req_per_s": 100.0 * load * 0.999,
                "capacity_req_per_s": 10_000.0, "openloop_lag_p99_ms": 0.5, "capacity_gap_s": 10.0 * r,
                "latency_p50_ms": None if gone else p99 / 10 * f, "latency_p90_ms": None if gone else p99 / 3 * f,
                "latency_p99_ms": None if gone else p99 * f, "latency_p99_9_ms": None if gone else p99 * 2 * f,
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_each_load_has_its_percentiles_from_the_rounds_not_refused():
    table = latency.latency_table(runs({25: 2.0, 90: 40.0}, refused={(90, 1)}))
    assert list(table.columns) == latency.LATENCY_COLUMNS
    low, high = (table[table["load_pct"] == x].iloc[0] for x in (25, 90))
    assert low["rounds"] == 3 and low["refused"] == 0 and pd.isna(low["refused_reason"])
    assert low["p99_ms"] == pytest.approx(2.0) and low["p99_ms_lo"] == pytest.approx(1.9)
    assert low["p99_ms_hi"] == pytest.approx(2.1) and low["interval"].startswith("n=3")
    # Round 1 refused: the median of rounds 2 and 3, counted and said why.
    assert high["refused"] == 1 and "lateness" in high["refused_reason"]
    assert high["p99_ms"] == pytest.approx(40 * 1.025) and high["interval"].startswith("n=2")
    assert high["delivered_share"] == pytest.approx(0.999) and high["capacity_gap_s_max"] == 30


def test_every_round_refused_reports_no_figure():
    table = latency.latency_table(runs({50: 5.0}, refused={(50, 1), (50, 2), (50, 3)}))
    assert table["refused"].iloc[0] == 3 and np.isnan(table["p99_ms"].iloc[0])


def crossing(p99: dict, refused: set = frozenset(), **kw):
    (row,) = latency.crossing_table(runs(p99, refused=refused, **kw)).itertuples()
    return row


def test_each_rounds_crossing_is_read_on_log_p99_and_given_with_its_interval():
    # p99 4 ms at 50 % and 15 ms at 75 % (times 0.95, 1, 1.05 in rounds 1-3): in the middle round 10 ms falls at
    # 50 + 25 x ln(10/4) / ln(15/4) = 67.3 %; a slower round (x1.05) crosses earlier, a faster one later.
    row = crossing({25: 2.0, 50: 4.0, 75: 15.0, 90: 60.0})
    share = lambda f: np.log(10 / (4 * f)) / np.log(15 / 4)  # noqa: E731
    assert row.rounds == 3 and row.interval.startswith("n=3")
    assert row.pct == pytest.approx(50 + 25 * share(1.0))
    assert (row.pct_lo, row.pct_hi) == (pytest.approx(50 + 25 * share(1.05)), pytest.approx(50 + 25 * share(0.95)))
    assert row.rate == pytest.approx(100 * (50 + 25 * share(1.0)))  # the rate asked at each load, read the same way
    assert latency.crossing_text(row, "pct") == "67 % [66 %, 68 %]"
    assert latency.crossing_text(row, "rate") == "6,733 req/s [6,641 req/s, 6,830 req/s]"


@pytest.mark.parametrize(
    ("p99", "refused", "words"),
    [
        ({25: 2.0, 50: 4.0, 75: 6.0, 90: 9.0}, set(), "above 90 %"),
        ({25: 12.0, 50: 14.0}, set(), "below 25 %"),
        ({25: 2.0, 50: 4.0}, {(r, k) for r in (25, 50) for k in (1, 2, 3)}, "no load measured (all refused)"),
    ],
)
def test_where_p99_crosses_ten_milliseconds_can_come_out_every_way(p99, refused, words):
    assert latency.crossing_text(crossing(p99, refused), "pct") == words


def test_a_slower_server_crosses_at_a_lower_load():
    slow, fast = crossing({25: 3.0, 50: 9.0, 75: 30.0}), crossing({25: 1.0, 50: 2.0, 75: 11.0})
    assert slow.pct_hi < fast.pct_lo


def test_a_refused_load_between_is_listed_and_only_widens_the_bracket():
    refused = {(50, k) for k in (1, 2, 3)}
    row = crossing({25: 2.0, 50: 4.0, 75: 30.0}, refused)
    assert row.unknown_loads == "50 %"
    assert row.pct == pytest.approx(25 + 50 * np.log(10 / 2) / np.log(30 / 2))  # between 25 and 75 %, not at 50


def test_start_up_and_memory_per_server_are_medians_over_rounds_of_each_rounds_median():
    rows = []
    for server, base in (("express", 150.0), ("fastify", 300.0)):
        for r in (1, 2, 3):
            for cell in range(4):  # a round's runs of the server: one per cell
                rows.append({"server": server, "round": r, "server_startup_ms": base * r + cell,
                             "rss_peak_mb": 100.0 + r, "heap_used_peak_mb": 30.0 + cell})  # fmt: skip
    table = latency.server_table(pd.DataFrame(rows))
    assert list(table.columns) == latency.SERVER_COLUMNS
    express = table[table["server"] == "express"].iloc[0]
    assert express["startup_ms"] == pytest.approx(301.5)  # rounds' medians 151.5, 301.5, 451.5
    assert (express["startup_ms_lo"], express["startup_ms_hi"]) == pytest.approx((151.5, 451.5))
    assert express["rss_peak_mb"] == pytest.approx(102.0) and express["heap_used_peak_mb"] == pytest.approx(31.5)
    # Records from before these were measured: no table, not zeros.
    assert latency.server_table(pd.DataFrame({"server": ["x"], "round": [1]})).empty


def result(**overrides) -> dict:
    base = {
        "completed": 1000, "non2xx": 0, "errors": 0, "timeouts": 0, "bytes": 500_000, "duration_s": 2,
        "delivered_rate": 500.0, "status_counts": {"200": 1000}, "target_rate": 500.0, "sent": 1000,
        "latency_ms": {"p50": 0.2, "p90": 0.5, "p99": 3.0, "p99_9": 6.0, "max": 7.0, "mean": 0.4},
        "lag_ms": {"p50": 0.0, "p99": 1.2, "max": 4.0},
        "client_effect_ms": {"p50": 0, "p90": 0, "p99": 0.1, "p99_9": 0},
        "refused": None, "queued_max": 0, "backlog_at_end": 1, "unsent": 0, "connections_opened": 3,
    }  # fmt: skip
    return base | overrides


def test_the_arrivals_their_seed_and_the_count_timed_are_recorded():
    kept = parse_openloop(result(arrivals="poisson", seed=7, timed=800))
    assert (kept["openloop_arrivals"], kept["openloop_seed"], kept["openloop_timed"]) == ("poisson", 7, 800)
    constant = parse_openloop(result(arrivals="constant", seed=None))
    assert constant["openloop_seed"] is None and constant["openloop_timed"] is None  # an older client's result


def test_every_server_of_a_round_gets_that_rounds_arrivals_and_only_open_loop_cells_depend_on_them():
    from nodebench import targets
    from nodebench.harness.job import arrival_seed

    assert arrival_seed(1, 1) == arrival_seed(1, 1) != arrival_seed(1, 2) != arrival_seed(2, 1)
    assert 0 <= arrival_seed(2**40, 7) < 2**32
    t = targets.Targets(shipped())
    ol, wrk = json.loads(t.job_options("express", "openloop")), json.loads(t.job_options("express", "wrk"))
    assert ol["openloop_arrivals"] == "poisson" and ol["round_seed"] == 1
    assert "openloop_arrivals" not in wrk and "round_seed" not in wrk  # a closed loop is not re-measured for them
    t.config["openloop"] = {"arrivals": "constant"}
    assert json.loads(t.job_options("express", "openloop"))["openloop_arrivals"] == "constant"
    assert t.job_options("express", "wrk") == json.dumps(wrk, sort_keys=True)


def test_an_open_loop_result_becomes_record_fields_and_a_refusal_has_no_latency():
    kept = parse_openloop(result())
    assert kept["requests"] == 1000 and kept["latency_p99_ms"] == 3.0 and kept["latency_p99_9_ms"] == 6.0
    assert kept["openloop_client_effect_p99_ms"] == 0.1 and kept["openloop_refused"] is None
    none = {k: None for k in ("p50", "p90", "p99", "p99_9", "max", "mean")}
    refused = parse_openloop(result(latency_ms=none, client_effect_ms=None, refused="schedule lag"))
    assert refused["latency_p99_ms"] is None and refused["openloop_refused"] == "schedule lag"
    assert refused["openloop_client_effect_p99_ms"] is None


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({}, None),
        # One instant's pile at the end no longer decides: a window that delivered its rate, with few in flight on
        # average, was sustained whatever was unanswered as the last request went out.
        ({"backlog_at_end": 5000}, None),
        ({"delivered_rate": 400.0, "completed": 800}, "delivered 400 req/s of the 500 its schedule had due (80%"),
        # Poisson arrivals: the schedule had 900 due in the 2 s window, 10 % under the rate asked, and all were
        # answered: sustained (judged against the rate asked, it read 90 %, near the 95 % line by chance alone).
        ({"delivered_rate": 450.0, "completed": 900, "sent": 900}, None),
        # 500 req/s x 150 ms mean: 75 in flight on average, more than 50 connections.
        (
            {"latency_ms": {"p50": 120.0, "p90": 200.0, "p99": 300.0, "p99_9": 320.0, "max": 330.0, "mean": 150.0}},
            "75.0 requests in flight on average, more than the 50 connections",
        ),
        ({"unsent": 12}, "12 requests of the schedule never sent"),
    ],
)
def test_a_window_whose_rate_was_not_sustained_is_a_censored_result_not_a_refusal(overrides, why):
    cell = measure.Cell("fastify", "empty", 50, 1, "openloop", Stop("duration", 5, 90))
    out = {"load": parse_openloop(result(**overrides)), "elu": {"utilization": 0.5}}
    measure.judge_sustained(cell, out)
    load = out["load"]
    assert load["openloop_refused"] is None and load["latency_p99_ms"] is not None
    assert (load["openloop_not_sustained"] is None) == (why is None)
    if why:
        assert why in load["openloop_not_sustained"]
    assert load["openloop_mean_in_flight"] == pytest.approx(
        (overrides.get("delivered_rate") or 500.0) * (overrides.get("latency_ms") or {"mean": 0.4})["mean"] / 1000
    )


def test_a_window_the_client_refused_is_not_judged():
    cell = measure.Cell("fastify", "empty", 50, 1, "openloop", Stop("duration", 5, 90))
    none = {k: None for k in ("p50", "p90", "p99", "p99_9", "max", "mean")}
    out = {"load": parse_openloop(result(latency_ms=none, refused="lag", delivered_rate=10.0)), "elu": {}}
    measure.judge_sustained(cell, out)
    assert out["load"]["openloop_not_sustained"] is None and out["load"]["openloop_mean_in_flight"] is None


def test_rounds_not_sustained_count_as_above_any_latency_and_cross_the_limit():
    # p99 of 4 ms at 50 % and 6 ms at 75 %, but 75 % was not sustained in 2 of 3 rounds: the median there is
    # infinite, so the p99 crosses 10 ms between 50 and 75 %, where dropping those rounds would say "not crossed".
    r = runs({50: 4.0, 75: 6.0})
    short = (r["load_pct"] == 75) & r["round"].isin([1, 3])
    r["openloop_not_sustained"] = np.where(short, "delivered 80% of the rate", None)
    table = latency.latency_table(r)
    at75 = table[table["load_pct"] == 75].iloc[0]
    assert at75["not_sustained"] == 2 and "80%" in at75["not_sustained_reason"] and at75["refused"] == 0
    assert np.isinf(at75["p99_ms"]) and np.isinf(at75["p99_ms_hi"])
    # Each round not sustained at 75 % crosses there, the latest it can; the round sustained does not cross.
    (row,) = latency.crossing_table(r).itertuples()
    assert (row.pct, row.pct_lo, row.pct_hi) == (75, 75, np.inf) and latency.crossing_text(row, "pct") == (
        "75 % [75 %, above 75 %]"
    )
    # One round of three not sustained: the median is the sustained rounds' upper one, finite.
    one = r.assign(openloop_not_sustained=np.where((r["load_pct"] == 75) & (r["round"] == 1), "x", None))
    at75 = latency.latency_table(one).query("load_pct == 75").iloc[0]
    assert at75["not_sustained"] == 1 and at75["p99_ms"] == pytest.approx(6.0 * 1.05)
    from nodebench.render.document import to_markdown
    from nodebench.render.latency_report import latency_blocks

    text = to_markdown(latency_blocks(table, r))
    assert "not sustained" in text and "Of the servers' 6 rounds: 2 not sustained (33%), 0 refused (0%)" in text
    assert "| empty | express | 50 | 75 % [75 %, above 75 %] |" in text


def test_a_stop_label_carries_the_load():
    stop = Stop.parse("5s-at75")
    assert (stop.rule, stop.value, stop.load_pct) == ("duration", 5.0, 75) and stop.label == "5s-at75"
    assert stop.closed.label == "5s" and Stop.parse("100000req").load_pct is None
    with pytest.raises(ValueError):
        Stop.parse("5s-75")


def test_the_report_says_how_requests_arrived_and_how_many_latencies_a_percentile_rests_on():
    from nodebench.render.latency_report import arrivals_line

    r = runs({50: 4.0, 75: 6.0}).assign(openloop_arrivals="poisson", openloop_timed=4000)
    r.loc[0, ["openloop_arrivals", "openloop_timed"]] = [None, 900]  # a record from before arrivals were recorded
    line = arrivals_line(r)
    assert "poisson in 5 of 6 runs" in line and "constant (recorded before arrivals were) in 1 of 6" in line
    assert "rest on 4,000 latencies (median; fewest 900): a p99 on its slowest 9" in line
    assert "p99.9 on its slowest 0, too few to read on its own" in line
    assert arrivals_line(r.assign(openloop_timed=20_000)).endswith("a p99.9 on its slowest 20.")


def test_below_and_above_name_a_load_that_was_measured_not_one_refused():
    # 25 % refused in every round and already above 10 ms at 50 %: "below 50 %", not "below 25 %".
    refused = {(25, k) for k in (1, 2, 3)}
    assert latency.crossing_text(crossing({25: 2.0, 50: 12.0, 75: 30.0}, refused), "pct") == "below 50 %"
    # 90 % refused in every round and never above at 75 %: "above 75 %".
    refused = {(90, k) for k in (1, 2, 3)}
    row = crossing({25: 1.0, 50: 2.0, 75: 4.0, 90: 9.0}, refused)
    assert latency.crossing_text(row, "pct") == "above 75 %"
    assert latency.crossing_text(row, "rate") == "above 7,500 req/s"


def test_the_count_a_percentile_rests_on_is_read_from_windows_reported_only():
    from nodebench.render.latency_report import arrivals_line

    r = runs({50: 4.0}).assign(openloop_arrivals="poisson", openloop_timed=4000)
    r.loc[0, ["openloop_refused", "openloop_timed"]] = ["the client's own lateness", 10]
    assert "fewest 4,000" in arrivals_line(r)


def test_a_string_round_seed_gives_a_seed_too():
    from nodebench.harness.job import arrival_seed

    assert arrival_seed("night3", 1) == arrival_seed("night3", 1) != arrival_seed("night4", 1)
    assert 0 <= arrival_seed("night3", 2) < 2**32

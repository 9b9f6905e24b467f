"""The open loop's analysis (latency per load, where p99 crosses 10 ms, start-up and memory per server), its
record fields and the harness's refusal of a client-bound window: each statistic fed data where the answer is
known, both ways."""

import numpy as np
import pandas as pd
import pytest

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


@pytest.mark.parametrize(
    ("p99", "refused", "words"),
    [
        ({25: 2.0, 50: 4.0, 75: 15.0, 90: 60.0}, set(), "between 50 and 75 % of capacity"),
        ({25: 2.0, 50: 4.0, 75: 6.0, 90: 9.0}, set(), "not crossed at any load measured"),
        ({25: 12.0, 50: 14.0}, set(), "already above at 25 %, the lowest load measured"),
        ({25: 2.0, 50: 4.0}, {(r, k) for r in (25, 50) for k in (1, 2, 3)}, "no load measured (all refused)"),
    ],
)
def test_where_p99_crosses_ten_milliseconds_can_come_out_every_way(p99, refused, words):
    cross = latency.crossings(latency.latency_table(runs(p99, refused=refused)))
    assert latency.crossing_words(cross.iloc[0]) == words


def test_a_refused_load_between_is_listed_not_read_as_below():
    table = latency.latency_table(runs({25: 2.0, 50: 4.0, 75: 30.0}, refused={(50, k) for k in (1, 2, 3)}))
    row = latency.crossings(table).iloc[0]
    assert latency.crossing_words(row) == "between 25 and 75 % of capacity" and row.unknown_loads == "50 %"


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


def test_an_open_loop_result_becomes_record_fields_and_a_refusal_has_no_latency():
    kept = parse_openloop(result())
    assert kept["requests"] == 1000 and kept["latency_p99_ms"] == 3.0 and kept["latency_p99_9_ms"] == 6.0
    assert kept["openloop_client_effect_p99_ms"] == 0.1 and kept["openloop_refused"] is None
    none = {k: None for k in ("p50", "p90", "p99", "p99_9", "max", "mean")}
    refused = parse_openloop(result(latency_ms=none, client_effect_ms=None, refused="schedule lag"))
    assert refused["latency_p99_ms"] is None and refused["openloop_refused"] == "schedule lag"
    assert refused["openloop_client_effect_p99_ms"] is None


@pytest.mark.parametrize(
    ("backlog", "elu", "refused"),
    [(5000, 0.5, True), (5000, 0.97, False), (10, 0.5, False)],
)
def test_a_window_whose_requests_waited_for_the_client_is_refused(backlog, elu, refused):
    """Requests piled up past the connections while the server idled: the client's doing. The same pile with the
    server at its ceiling is the server's latency; a short queue that drained is a pause of the server's."""
    cell = measure.Cell("fastify", "empty", 50, 1, "openloop", Stop("duration", 5, 90))
    out = {"load": parse_openloop(result(backlog_at_end=backlog)), "elu": {"utilization": elu}}
    measure.refuse_client_bound(cell, out)
    assert (out["load"]["openloop_refused"] is not None) == refused
    assert (out["load"]["latency_p99_ms"] is None) == refused


def test_a_stop_label_carries_the_load():
    stop = Stop.parse("5s-at75")
    assert (stop.rule, stop.value, stop.load_pct) == ("duration", 5.0, 75) and stop.label == "5s-at75"
    assert stop.closed.label == "5s" and Stop.parse("100000req").load_pct is None
    with pytest.raises(ValueError):
        Stop.parse("5s-75")

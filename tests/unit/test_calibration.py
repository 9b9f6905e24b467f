"""The instrument in every round (catalogue/calibration.py): a fixed-delay server measured at the servers' fixed
rates, planned without a capacity, held to open-loop matrices by the configuration check, read against its known
delay round by round, shown beside the servers' latencies and kept out of the cost tables."""

import re

import numpy as np
import pandas as pd
import pytest
from test_configcheck import SERVERS, matrix, shipped, with_experiment
from test_costcurve import runs as cost_runs
from test_latency import runs as latency_runs

from conftest import REPO
from nodebench import configcheck
from nodebench.analysis.costcurve import cost_curve
from nodebench.analysis.latency import INSTRUMENT_COLUMNS, instrument_table, latency_table, server_table
from nodebench.analysis.metrics import compute_metrics
from nodebench.catalogue.calibration import CALIBRATION_SERVER, DELAY_MS, P50_WITHIN_MS, P99_WITHIN_MS
from nodebench.plan import experiment_cells
from nodebench.render.costcurve_report import costcurve_blocks
from nodebench.render.document import to_markdown
from nodebench.render.latency_report import instrument_blocks


def test_the_server_file_holds_the_delay_the_analysis_reads():
    text = (REPO / "servers" / f"{CALIBRATION_SERVER}.js").read_text()
    (found,) = re.findall(r"const FIXED_DELAY_MS = ([0-9.]+);", text)
    assert float(found) == DELAY_MS


def curve_config(servers, **extra) -> dict:
    m = {"servers": servers, "workloads": ["empty"], "connections": [50], "clients": ["openloop"],
         "durations_s": [5], "rates_per_s": [1000, 3000]} | extra  # fmt: skip
    return {"experiments": {"curve": {"matrices": [m]}}}


def test_the_calibration_is_planned_at_the_fixed_rates_without_a_capacity_of_its_own():
    cells = experiment_cells(curve_config(["express", CALIBRATION_SERVER]), "curve")
    mine = sorted(c[3:] for c in cells if c[1] == CALIBRATION_SERVER)
    assert mine == [("openloop", "5s-r1000"), ("openloop", "5s-r3000")]
    # The server beside it keeps its capacity before and after its sweep.
    theirs = sorted(c[3:] for c in cells if c[1] == "express")
    assert theirs == [("openloop", "5s-r1000"), ("openloop", "5s-r3000"), ("wrk", "5s"), ("wrk", "5s-end")]


def test_the_calibrations_job_waits_for_no_capacity_and_a_servers_does(tmp_path):
    from nodebench.runs import Run
    from nodebench.targets import Targets

    config = shipped()
    targets = Targets(config)
    block = "cost-curve"
    inputs = targets.measure_inputs(Run(block, "empty", CALIBRATION_SERVER, 50, "openloop", "5s-r1000", 1))
    assert "capacity" not in inputs and inputs["server"] == f"servers/{CALIBRATION_SERVER}.js"
    inputs = targets.measure_inputs(Run(block, "empty", "express", 50, "openloop", "5s-r1000", 1))
    assert "capacity" in inputs


@pytest.mark.parametrize(
    ("m", "phrase"),
    [
        (matrix(servers=[CALIBRATION_SERVER]), "names fixed-delay with wrk"),
        (matrix(servers=[CALIBRATION_SERVER], clients=["openloop"], loads_pct=[50]), "fixed-delay with loads_pct"),
        (
            matrix(servers=["express", CALIBRATION_SERVER], clients=["openloop"], loads_pct=[50], rates_per_s=[1000]),
            "fixed-delay with loads_pct",
        ),
        (
            matrix(servers=[CALIBRATION_SERVER], clients=["openloop"], rates_per_s=[1000], workloads=["list"]),
            "fixed-delay with list",
        ),
    ],
)
def test_the_calibration_outside_a_fixed_rate_open_loop_is_named(m, phrase):
    found = configcheck.problems(with_experiment(shipped(), m), SERVERS)
    assert any(phrase in p for p in found), found


def test_the_calibration_is_not_a_server_of_the_main_matrix_or_the_a_b_target():
    config = shipped()
    config["servers"] = [*config["servers"], CALIBRATION_SERVER]
    found = configcheck.problems(config, SERVERS)
    assert any("key 'servers' names fixed-delay: fixed-delay is the instrument's calibration" in p for p in found)
    config = shipped()
    config["compare"] = config["compare"] | {"b": CALIBRATION_SERVER}
    assert any("key 'compare.b' names fixed-delay" in p for p in configcheck.problems(config, SERVERS))


def test_the_shipped_blocks_calibrate_at_their_rates():
    config = shipped()
    for name in ("cost-curve", "latency"):
        cells = experiment_cells(config, name)
        mine = {c for c in cells if c[1] == CALIBRATION_SERVER}
        assert mine, name
        assert {c[0] for c in mine} == {"empty", "point-lookup"}
    # The cost curve's calibration meets every rate its servers are sent at, in the same peer groups.
    cells = experiment_cells(config, "cost-curve")
    rated = {c[4] for c in cells if c[3] == "openloop" and c[1] != CALIBRATION_SERVER}
    assert {c[4] for c in cells if c[1] == CALIBRATION_SERVER} == rated


def calibration_runs(p50s, p99s, rate=1000, refused=(), not_sustained=()) -> pd.DataFrame:
    """The calibration's runs at one rate, one per round: its p50 and p99 per round (ms)."""
    rows = []
    for i, (p50, p99) in enumerate(zip(p50s, p99s, strict=True), start=1):
        gone, short = i in refused, i in not_sustained
        rows.append({
            "workload": "empty", "server": CALIBRATION_SERVER, "connections": 50, "client": "openloop",
            "stop": f"5s-r{rate}", "round": i, "load_rate": float(rate), "load_pct": None,
            "openloop_refused": "the client's own lateness moved p99" if gone else None,
            "openloop_not_sustained": "delivered 800 req/s of the 1,000 its schedule had due" if short else None,
            "openloop_target_rate": float(rate), "client_reported_req_per_s": rate * (0.8 if short else 1.0),
            "openloop_lag_p99_ms": 0.1, "latency_p50_ms": None if gone else p50,
            "latency_p90_ms": None if gone else (p50 + p99) / 2, "latency_p99_ms": None if gone else p99,
            "latency_p99_9_ms": None if gone else p99 + 1,
        })  # fmt: skip
    return pd.DataFrame(rows)


def test_each_round_is_read_against_the_delay_both_ways():
    d = DELAY_MS
    p50s = [d + 0.05, d + 0.1, d + P50_WITHIN_MS + 0.05, d + 0.1, d + 0.1, d - P50_WITHIN_MS - 0.05]
    p99s = [d + 0.5, d + P99_WITHIN_MS + 0.2, d + 0.5, d + 0.9, d + 0.4, d + 0.6]
    (row,) = instrument_table(calibration_runs(p50s, p99s)).itertuples()
    assert row.rounds == 6 and row.refused == 0 and row.off_rounds == 3
    # Outside above (p99 too slow, p50 too slow) and below (a p50 faster than the delay cannot be the server's).
    assert row.off_detail == "round 2: p99 2.20 ms; round 3: p50 1.25 ms; round 6: p50 0.75 ms"
    assert row.p99_ms == pytest.approx(np.median(p99s))
    assert row.spread_p99_ms == pytest.approx(max(p99s) - min(p99s))  # n=6: min-max, its interval's width


def test_every_round_within_the_bounds_has_none_outside():
    (row,) = instrument_table(calibration_runs([1.1] * 6, [1.6] * 6)).itertuples()
    assert row.off_rounds == 0 and row.off_detail is None
    text = to_markdown(instrument_blocks(instrument_table(calibration_runs([1.1] * 6, [1.6] * 6))))
    assert "Every one of the 6 rounds measured was within the bounds." in text


def test_a_refused_round_is_counted_as_refused_and_one_not_sustained_is_outside():
    table = instrument_table(calibration_runs([1.1] * 4, [1.6] * 4, refused={1}, not_sustained={2}))
    assert list(table.columns) == INSTRUMENT_COLUMNS
    (row,) = table.itertuples()
    assert row.refused == 1 and row.not_sustained == 1 and row.off_rounds == 1
    assert row.off_detail == "round 2: not sustained"
    # A round not sustained has no upper bound: the spread is unknown, not infinite.
    assert np.isinf(row.p99_ms_hi) and pd.isna(row.spread_p99_ms)
    text = to_markdown(instrument_blocks(table))
    assert "| empty | 1,000 | 1.10" in text and "| 1 of 3 | 1 of 4 |" in text
    assert "Outside the bounds, 1 of 3 rounds: empty at 1,000 req/s: round 2: not sustained." in text


def test_no_calibration_measured_no_table_and_the_servers_tables_leave_it_out():
    servers = cost_runs()
    assert instrument_table(servers).empty and instrument_blocks(instrument_table(servers)) == []
    # The latency table of shares of capacity is the same with the calibration's runs beside the servers'.
    shares = latency_runs({25: 2.0, 90: 40.0}).assign(load_rate=np.nan)
    both = pd.concat([shares, calibration_runs([1.1] * 3, [1.6] * 3)], ignore_index=True)
    pd.testing.assert_frame_equal(latency_table(both), latency_table(shares))
    # Start-up and memory are the servers' only.
    memory = {"server_startup_ms": 300.0, "rss_peak_mb": 80.0, "heap_used_peak_mb": 20.0}
    table = server_table(both.assign(**memory))
    assert list(table["server"]) == ["express"]


def test_the_calibration_is_paired_with_no_baseline():
    both, _ = with_calibration({}, [1.6] * 6)
    metrics = compute_metrics(both)
    mine = metrics[metrics["server"].astype(str) == CALIBRATION_SERVER]
    assert len(mine) == 1 and mine["cost_vs_express"].isna().all() and mine["cost_vs_node_http"].isna().all()
    fastify = metrics[(metrics["server"].astype(str) == "fastify") & (metrics["stop"].astype(str) == "5s-r1000")]
    assert fastify["cost_vs_express"].notna().all()


def with_calibration(p99_by_server: dict, instrument_p99s) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cost-curve runs whose open-loop p99 at 1,000 req/s is given per server, and the calibration beside them."""
    r = cost_runs()
    for server, p99 in p99_by_server.items():
        r.loc[(r["server"] == server) & (r["stop"] == "5s-r1000"), "latency_p99_ms"] = p99
    cal = calibration_runs([1.1] * 6, instrument_p99s)
    cal = cal.assign(us_per_req_elu=900.0, elu_utilization=1.0, req_per_s=1000.0, session="s", cpu_model="Test CPU",
                     stopping_rule="duration", us_per_req_oncpu=900.0, us_per_req_threads=900.0, us_per_req_cpu=900.0,
                     client_cpu_util=0.3, client_cpu_capacity=1.0, preempted=False, disturbed=False,
                     measurement_count=1, started_at="2026-12-05T10:00:30+00:00")  # fmt: skip
    return pd.concat([r, cal], ignore_index=True), instrument_table(cal)


def test_the_cost_curve_leaves_the_calibration_out():
    both, _ = with_calibration({}, [1.6] * 6)
    curve = cost_curve(compute_metrics(both))
    assert CALIBRATION_SERVER not in set(curve["server"]) and {"express", "fastify"} <= set(curve["server"])


@pytest.mark.parametrize(
    ("fastify_p99", "instrument_p99s", "said"),
    [
        # Fastify 0.3 ms faster than Express; the instrument alone moves a p99 by 0.4 ms between rounds at that
        # rate: not a difference it can tell.
        (1.2, [1.4, 1.5, 1.6, 1.7, 1.7, 1.8], "| -0.30 (within the instrument's 0.40) |"),
        # The same 0.3 ms, with an instrument that adds 2 ms to every p99 but moves it by 0.1 ms: its constant part
        # cancels from a difference, so this one is said as one.
        (1.2, [3.0, 3.0, 3.05, 3.05, 3.1, 3.1], "| -0.30 |"),
        # Slower by more than the instrument's spread: the other way, said as it is.
        (2.5, [1.4, 1.5, 1.6, 1.7, 1.7, 1.8], "| +1.00 |"),
        # A calibration round not sustained: no spread known, so no difference is excused by it.
        (1.2, [1.4, 1.5, 1.6, 1.7, 1.7, np.inf], "| -0.30 |"),
    ],
)
def test_a_p99_difference_is_called_one_only_beyond_the_instruments_error(fastify_p99, instrument_p99s, said):
    both, instrument = with_calibration({"express": 1.5, "fastify": fastify_p99}, instrument_p99s)
    text = to_markdown(costcurve_blocks(compute_metrics(both), instrument))
    fastify_row = next(line for line in text.splitlines() if line.startswith("| empty | fastify | 1,000 req/s |"))
    assert said in fastify_row, fastify_row
    assert "| empty | fixed-delay |" not in text
    # The instrument's own p99 at that rate sits in the row; none at 3,000 req/s, where it was not measured.
    assert f"| {np.median(instrument_p99s):.2f} [" in fastify_row
    row_3k = next(line for line in text.splitlines() if line.startswith("| empty | fastify | 3,000 req/s |"))
    assert row_3k.split("|")[-4].strip() == "-"

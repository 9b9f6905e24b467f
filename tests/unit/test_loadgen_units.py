"""The load generators' pure parts: their output parsers, stopping rules, the experiments' arithmetic and
wording, the saturation verdict and the listen-queue counters (moved from tests/test_loadgen.py: no server, no
PostgreSQL, no network)."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import FIXTURES, REPO
from nodebench.analysis import experiments
from nodebench.analysis.verdict import verdict
from nodebench.catalogue import clients
from nodebench.harness import loadgen, verify
from nodebench.harness.errors import RunError
from nodebench.harness.parsers import parse_ab, parse_wrk
from nodebench.harness.verify import check_load
from nodebench.render import experiment_charts, experiment_report

# The reference benchmark's figures (another machine, point lookup, 50 connections).
REFERENCE = {
    # server: (fixed 10 s req/s, fixed 100,000 requests req/s, seconds the count run took)
    "fastify": (30_541, 25_001, 4.00),
    "express": (15_355, 14_285, 7.00),
}


@pytest.mark.parametrize("server, share", [("fastify", 0.18), ("express", 0.07)])
def test_tail_arithmetic_reproduces_the_reference(server, share):
    duration_rps, count_rps, took = REFERENCE[server]
    got = experiments.tail_arithmetic(100_000, took, duration_rps)
    assert round(got["unaccounted_share"], 2) == share
    # ... and the share equals the throughput penalty, as the reference found.
    assert abs(got["unaccounted_share"] - experiments.penalty(count_rps, duration_rps)) < 0.001
    if server == "fastify":
        assert round(got["expected_s"], 2) == 3.27 and round(got["unaccounted_s"], 2) == 0.73
    else:
        assert round(got["expected_s"], 2) == 6.51


def test_parse_wrk_clean_output():
    got = parse_wrk((FIXTURES / "wrk" / "clean.txt").read_text())
    assert got["requests"] == 27193 and got["bytes"] == 12073692 and got["bytes"] % got["requests"] == 0
    assert got["errors"] == got["timeouts"] == got["non2xx"] == 0
    assert got["latency_p50_ms"] == 3.735 and got["latency_p99_ms"] == 5.566 and got["latency_max_ms"] == 25.267
    assert abs(got["client_reported_duration_s"] - 2.005217) < 1e-9
    # What wrk cannot tell is missing, not zero.
    assert got["status_counts"] is None and got["resets"] is None
    check_load(got)


def test_parse_wrk_bad_statuses_fail_the_run():
    got = parse_wrk((FIXTURES / "wrk" / "non2xx.txt").read_text())
    assert got["non2xx"] == got["requests"] == 17919 and got["responses_2xx"] == 0
    with pytest.raises(RunError, match="17919 non-2xx responses"):
        check_load(got)


def test_parse_wrk_without_its_report_line_is_an_error():
    with pytest.raises(RunError, match="no report line"):
        parse_wrk((FIXTURES / "wrk" / "refused.txt").read_text())


def test_parse_ab_clean_output():
    got = parse_ab((FIXTURES / "ab" / "clean.txt").read_text())
    assert got["requests"] == 20000 and got["bytes"] == 8880000
    assert got["errors"] == got["non2xx"] == got["mismatches"] == 0
    assert got["client_reported_duration_s"] == 1.366 and got["client_reported_req_per_s"] == 14641.65
    assert (got["latency_p50_ms"], got["latency_p90_ms"], got["latency_p99_ms"], got["latency_max_ms"]) == (
        3.0,
        4.0,
        7.0,
        69.0,
    )
    assert got["latency_mean_ms"] == 3.415 and got["status_counts"] is None
    check_load(got)


def test_parse_ab_non_2xx_fails_the_run():
    got = parse_ab((FIXTURES / "ab" / "non2xx.txt").read_text())
    assert got["non2xx"] == 2000 and got["responses_2xx"] == 0
    with pytest.raises(RunError, match="2000 non-2xx responses"):
        check_load(got)


def test_parse_ab_refused_is_an_error():
    with pytest.raises(RunError, match="ab printed no report"):
        parse_ab((FIXTURES / "ab" / "refused.txt").read_text())


@pytest.mark.parametrize(
    "client, rules, phrase",
    [
        ("wrk", {"count": [100000]}, "wrk cannot stop after a fixed count"),
        ("ab", {"duration": [10]}, "ab cannot stop after a fixed duration"),
        ("wrk", {"duration": [2.5]}, "wrk takes whole seconds only"),
        ("siege", {"duration": [10]}, "load generator 'siege' is unknown"),
    ],
)
def test_rules_a_client_cannot_do_are_named(client, rules, phrase):
    assert any(phrase in p for p in clients.problems(client, rules))


def test_rules_a_client_can_do_pass():
    assert clients.problems("autocannon", {"duration": [10], "count": [100000]}) == []
    assert clients.problems("wrk", {"duration": [10], "count": []}) == []
    assert clients.problems("ab", {"count": [30000]}) == []


@pytest.mark.parametrize("label", ["10s", "2.5s", "100000req"])
def test_stop_labels_round_trip(label):
    assert clients.Stop.parse(label).label == label


def test_program_versions_are_parsed():
    assert clients.parse_version("wrk", "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer") == (
        "debian/4.1.0-3+b2"
    )
    assert clients.parse_version("ab", "This is ApacheBench, Version 2.3 <$Revision: 1903618 $>\n") == "2.3"


def test_a_missing_program_names_its_package(monkeypatch):
    monkeypatch.setattr(loadgen.shutil, "which", lambda name: None)
    with pytest.raises(RunError, match=r"apt-get install wrk"):
        loadgen.program_version("wrk")
    with pytest.raises(RunError, match=r"apt-get install apache2-utils"):
        loadgen.program_version("ab")


def test_saturation_counts_the_cores_a_client_can_use():
    elu = pd.Series([0.8, 0.8, 0.8, 0.99])
    cpu = pd.Series([0.95, 0.95, 1.85, 1.85])
    capacity = pd.Series([1.0, 2.0, 2.0, 2.0])
    cells = pd.DataFrame({"elu_utilization": elu, "client_cpu_util": cpu, "client_cpu_capacity": capacity})
    assert list(verdict(cells)["saturation"]) == ["client-bound", "not saturated", "client-bound", "server-bound"]


def study_runs(
    count_window: float, last_response: float, first_done: float | None, spread: float = 0.0, full_load: float = 1.0
) -> pd.DataFrame:
    """Two servers, three 10 s runs and three 10,000-request runs each, with known rates and times.

    Count-run times are multiples of the time 10,000 requests take at the sustained
    (median) rate; the full-load phase runs at full_load x that rate; the duration
    runs' rates are median x (1 - spread/2, 1, 1 + spread/2). first_done None: a
    client that cannot tell when its connections finished.
    """
    rows = []
    for server, median_rate in (("express", 1000.0), ("fastify", 2000.0)):
        base = 10_000 / median_rate
        for rep, factor in ((1, 1 - spread / 2), (2, 1.0), (3, 1 + spread / 2)):
            rate = median_rate * factor
            timed = {
                "workload": "point-lookup",
                "server": server,
                "connections": 50,
                "client": "autocannon",
                "stopping_rule": "duration",
                "stop": "10s",
                "round": rep,
                "duration_s": 10.0,
                "requests_target": None,
                "requests": int(rate * 10),
                "window_s": 10.0,
                "client_req_per_s": rate,
                "client_reported_req_per_s": rate,
                "us_per_req_elu": 1e6 / rate,
                "elu_utilization": 1.0,
                "last_response_s": None,
                "first_connection_done_s": None,
                "responses_at_first_done": None,
                "client_samples": 10,
            }
            took = base * count_window
            t1 = None if first_done is None else base * first_done
            counted = timed | {
                "stopping_rule": "count",
                "stop": "10000req",
                "duration_s": None,
                "requests_target": 10_000,
                "requests": 10_000,
                "window_s": took,
                "client_req_per_s": 10_000 / took,
                "client_reported_req_per_s": 10_000 / took,
                "last_response_s": base * last_response,
                "first_connection_done_s": t1,
                "responses_at_first_done": None if t1 is None else round(median_rate * full_load * t1),
                "client_samples": None,
            }
            rows += [timed, counted]
    return pd.DataFrame(rows)


def test_a_penalty_that_is_the_tail_is_explained():
    # Full load at the sustained rate until 0.9, the last response at 1.05, the run ends at 1.25.
    table = experiments.stopping_table(study_runs(count_window=1.25, last_response=1.05, first_done=0.9))
    assert list(table["server"]) == ["express", "fastify"]
    row = table.set_index("server").loc["fastify"]
    assert row["expected_s"] == pytest.approx(5.0) and row["actual_s"] == pytest.approx(6.25)
    assert row["unaccounted_share"] == pytest.approx(0.2) and row["penalty_reported"] == pytest.approx(0.2)
    # The parts add up to the unaccounted time: no full-load loss, the connection tail, the idle wait.
    assert row["full_load_s"] == pytest.approx(0.0, abs=1e-3)
    assert row["connection_tail_s"] == pytest.approx(0.25, abs=1e-3) and row["idle_s"] == pytest.approx(1.0)
    assert set(table["verdict"]) == {"tail"}
    text = experiment_report.stopping_paragraph(table, "Test CPU")
    assert "the arithmetic explains the penalty" in text
    assert "1.25 s (20.0%) is unaccounted" in text and "1.00 s came after the last response" in text


def test_a_reported_rate_of_count_over_whole_seconds_is_named():
    runs = study_runs(count_window=1.25, last_response=1.05, first_done=0.9)
    counted = runs["stopping_rule"] == "count"
    # Like autocannon: 10,000 requests in 6.25 s sampled 7 times reports 10,000 / 7.
    runs.loc[counted, "client_samples"] = np.ceil(runs.loc[counted, "window_s"])
    runs.loc[counted, "client_reported_req_per_s"] = 10_000 / runs.loc[counted, "client_samples"]
    table = experiments.stopping_table(runs)
    assert table["reported_is_count_per_sample"].all()
    assert "10,000 / 7 = 1,429" in experiment_report.stopping_paragraph(table, "Test CPU")
    assert experiments.stopping_table(study_runs(1.25, 1.05, 0.9))["reported_is_count_per_sample"].isna().all()


def test_a_slower_full_load_phase_is_only_partly_the_tail():
    table = experiments.stopping_table(study_runs(1.25, 1.05, 0.9, full_load=0.8))
    row = table.set_index("server").loc["fastify"]
    assert row["full_load_s"] == pytest.approx(0.9, abs=1e-3) and row["full_load_req_per_s"] == pytest.approx(1600)
    assert row["full_load_s"] + row["connection_tail_s"] + row["idle_s"] == pytest.approx(row["unaccounted_s"])
    assert set(table["verdict"]) == {"partly"}
    assert "the tail explains only part of the penalty" in experiment_report.stopping_paragraph(table, "Test CPU")


def test_experiment_charts_say_which_way_is_better():
    runs = study_runs(count_window=1.25, last_response=1.05, first_done=0.9)
    stopping = experiments.stopping_table(runs)
    cells = client_cells(12000.0, 0.9, 0.85).assign(
        stopping_rule="duration", client_cpu_util=0.5, latency_p99_ms=3.0, rounds=3
    )
    for chart in (
        experiment_charts.stopping_rule(stopping),
        experiment_charts.duration_sweep(runs, stopping),
        experiment_charts.clients(cells),
    ):
        title = chart.to_dict()["title"]
        assert "better" in title["text"], title


def test_the_experiment_report_says_what_its_intervals_are():
    cells = client_cells(12000.0, 0.9, 0.85).assign(
        rounds=3, us_per_req_elu=80.0, us_per_req_elu_lo=79.0, us_per_req_elu_hi=81.0, latency_p99_ms=3.0
    )
    assert "n=3: min-max, 75 %" in experiment_report.interval_note(cells)
    header = " | ".join(experiment_report.clients_table(cells).columns)
    assert "req/s [interval]" in header and "CI" not in header


def test_a_penalty_within_the_duration_runs_spread_is_noise():
    # Count runs 2 % slower, while the fixed-duration runs themselves spread by 10 %.
    table = experiments.stopping_table(study_runs(1.02, 1.01, 1.0, spread=0.10))
    assert set(table["verdict"]) == {"noise"}
    assert "no fixed-count penalty to explain" in experiment_report.stopping_paragraph(table, "Test CPU")


def test_a_client_that_cannot_tell_when_connections_finished_is_unsplit():
    table = experiments.stopping_table(study_runs(1.25, 1.25, None))
    assert set(table["verdict"]) == {"unsplit"} and table["full_load_s"].isna().all()


def test_share_and_penalty_that_disagree_are_flagged():
    runs = study_runs(count_window=1.25, last_response=1.05, first_done=0.9)
    # The client reports a req/s that its own counts and times do not support.
    counted = runs["stopping_rule"] == "count"
    runs.loc[counted, "client_reported_req_per_s"] = runs.loc[counted, "client_reported_req_per_s"] * 1.2
    table = experiments.stopping_table(runs)
    assert set(table["verdict"]) == {"mismatch"}
    assert "share and penalty disagree" in experiment_report.stopping_paragraph(table, "Test CPU")


def client_cells(autocannon_rps: float, autocannon_elu: float, autocannon_cpu: float) -> pd.DataFrame:
    """node-http on empty under autocannon (as given) and wrk (14,000 req/s, ELU 98 %)."""
    cells = pd.DataFrame(
        {
            "workload": ["empty", "empty"],
            "server": ["node-http", "node-http"],
            "connections": [50, 50],
            "client": ["autocannon", "wrk"],
            "stop": ["10s", "10s"],
            "req_per_s": [autocannon_rps, 14000.0],
            "elu_utilization": [autocannon_elu, 0.98],
            "client_cpu_util": [autocannon_cpu, 0.4],
            "client_cpu_capacity": [1.0, 1.0],
        }
    )
    return cells.assign(
        req_per_s_lo=cells["req_per_s"] * 0.98,
        req_per_s_hi=cells["req_per_s"] * 1.02,
        saturation=verdict(cells)["saturation"].astype(str),
    )


def test_a_client_at_full_cpu_is_the_bottleneck():
    text = experiment_report.bottleneck_paragraph(client_cells(9000.0, 0.7, 0.99))
    assert "The bottleneck for node-http on `empty` was the client with autocannon" in text
    assert "autocannon used 0.99 of its cores" in text


def test_a_client_another_client_outran_is_the_bottleneck():
    # autocannon used 0.85 of a core (under the 0.9 rule) but wrk drove the same server further.
    text = experiment_report.bottleneck_paragraph(client_cells(12000.0, 0.9, 0.85))
    assert "was the client with autocannon" in text and "wrk drove it to 98% and 17% more req/s" in text


def test_no_client_is_the_bottleneck_when_all_saturate_the_server():
    text = experiment_report.bottleneck_paragraph(client_cells(13900.0, 0.97, 0.6))
    assert "No client was the bottleneck for node-http on `empty`" in text


def test_every_stopping_column_is_in_the_data_dictionary():
    dictionary = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())["stopping"]
    table = experiments.stopping_table(study_runs(1.25, 1.05, 0.9))
    assert set(table.columns) == set(dictionary)


# --- The listen queue ---

NETSTAT = """\
TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops TCPTimeouts
TcpExt: 0 0 302 302 53
IpExt: InNoRoutes InTruncatedPkts
IpExt: 0 0
"""


def test_listen_overflows_are_read_from_the_kernels_counters():
    assert verify.listen_overflows(NETSTAT) == 302
    assert verify.listen_overflows("IpExt: InNoRoutes\nIpExt: 0\n") is None
    verify.check_listen_queue(302, 302)
    verify.check_listen_queue(None, 310)
    with pytest.raises(RunError, match="overflowed 8 times during the measured window"):
        verify.check_listen_queue(302, 310)


def test_the_load_generator_chart_gives_each_connection_count_its_row_and_each_stop_its_bar():
    # ab-hello: 100 requests at 10 connections and 10,000 at 100, each with ab and ab_close: four bars a server,
    # two rows; before, the two connection counts' bars were drawn over each other.
    rows = [
        {"workload": "hello", "server": s, "client": c, "stop": stop, "connections": conn, "req_per_s": 1000.0,
         "req_per_s_lo": 900.0, "req_per_s_hi": 1100.0, "saturation": "server-bound", "elu_utilization": 0.9,
         "client_cpu_util": 0.3}
        for s in ("express", "fastify")
        for c in ("ab", "ab_close")
        for conn, stop in ((10, "100req"), (100, "10000req"))
    ]  # fmt: skip
    spec = experiment_charts.clients(pd.DataFrame(rows)).to_dict()
    assert len(spec["vconcat"]) == 2
    assert "hello c10" in json.dumps(spec["vconcat"][0]) and "hello c100" in json.dumps(spec["vconcat"][1])
    assert '"xOffset": {"field": "variant"' in json.dumps(spec)

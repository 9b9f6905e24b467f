"""Load generators and the stopping-rule study: parsers on real outputs, rules, arithmetic, report text."""

import os
from pathlib import Path

import pandas as pd
import pytest

import experiments
import loadgen
import metrics
from conftest import FIXTURES, make_project, snakemake
from records import RunError, check_load, parse_ab, parse_wrk

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
    assert any(phrase in p for p in loadgen.problems(client, rules))


def test_rules_a_client_can_do_pass():
    assert loadgen.problems("autocannon", {"duration": [10], "count": [100000]}) == []
    assert loadgen.problems("wrk", {"duration": [10], "count": []}) == []
    assert loadgen.problems("ab", {"count": [30000]}) == []


@pytest.mark.parametrize("label", ["10s", "2.5s", "100000req"])
def test_stop_labels_round_trip(label):
    assert loadgen.Stop.parse(label).label == label


def test_program_versions_are_parsed():
    assert loadgen.parse_version("wrk", "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer") == (
        "debian/4.1.0-3+b2"
    )
    assert loadgen.parse_version("ab", "This is ApacheBench, Version 2.3 <$Revision: 1903618 $>\n") == "2.3"


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
    assert list(metrics.saturation(elu, cpu, capacity)) == ["client-bound", "io-bound", "client-bound", "server-bound"]


def study_runs(count_window: float, last_response: float) -> pd.DataFrame:
    """Two servers, three 10 s runs and three 10,000-request runs each, with known rates and times."""
    rows = []
    for server, rate in (("express", 1000.0), ("fastify", 2000.0)):
        for rep in (1, 2, 3):
            rows.append(
                {
                    "workload": "point-lookup",
                    "server": server,
                    "connections": 50,
                    "load_generator": "autocannon",
                    "stopping_rule": "duration",
                    "stop": "10s",
                    "repetition": rep,
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
                }
            )
            took = 10_000 / rate * count_window
            rows.append(
                rows[-1]
                | {
                    "stopping_rule": "count",
                    "stop": "10000req",
                    "duration_s": None,
                    "requests_target": 10_000,
                    "requests": 10_000,
                    "window_s": took,
                    "client_req_per_s": 10_000 / took,
                    "client_reported_req_per_s": 10_000 / took,
                    "last_response_s": 10_000 / rate * last_response,
                    "first_connection_done_s": 10_000 / rate * 0.95,
                }
            )
    return pd.DataFrame(rows)


def test_stopping_table_and_its_paragraph():
    table = experiments.stopping_table(study_runs(count_window=1.25, last_response=1.05))
    assert list(table["server"]) == ["express", "fastify"]
    row = table.set_index("server").loc["fastify"]
    assert row["expected_s"] == pytest.approx(5.0) and row["actual_s"] == pytest.approx(6.25)
    assert row["unaccounted_share"] == pytest.approx(0.2) and row["penalty_reported"] == pytest.approx(0.2)
    assert row["idle_after_last_s"] == pytest.approx(6.25 - 5.25)
    assert row["penalty_to_last_response"] == pytest.approx(1 - 1 / 1.05)
    text = experiments.stopping_paragraph(table, "Test CPU")
    assert "the arithmetic explains the penalty" in text
    assert "unaccounted" in text and "waited 1.00 s with nothing in flight" in text


def test_the_paragraph_says_when_the_arithmetic_does_not_explain():
    runs = study_runs(count_window=1.25, last_response=1.05)
    # The client reports a req/s that its own counts and times do not support.
    counted = runs["stopping_rule"] == "count"
    runs.loc[counted, "client_reported_req_per_s"] = runs.loc[counted, "client_reported_req_per_s"] * 1.2
    table = experiments.stopping_table(runs)
    assert not table["explains"].any()
    assert "does not explain the penalty" in experiments.stopping_paragraph(table, "Test CPU")


def test_bottleneck_paragraph_names_the_client_for_node_http_on_empty():
    cells = pd.DataFrame(
        {
            "workload": ["empty", "empty"],
            "server": ["node-http", "node-http"],
            "load_generator": ["autocannon", "wrk"],
            "stop": ["10s", "10s"],
            "req_per_s": [9000.0, 14000.0],
            "elu_utilization": [0.7, 0.98],
            "client_cpu_util": [0.99, 0.4],
            "client_cpu_capacity": [1.0, 1.0],
            "saturation": ["client-bound", "server-bound"],
        }
    )
    text = experiments.bottleneck_paragraph(cells)
    assert "the bottleneck was the client: autocannon used 0.99 of its 1 core(s)" in text
    assert "14,000 req/s, with wrk" in text


def experiment_config(matrix: str) -> str:
    return f"""servers: [fastify]
workloads:
  empty: {{connections: [10]}}
warmup_s: 1
duration_s: 1
repetitions: 1
experiments:
  bad:
    matrices:
      - {matrix}
"""


@pytest.mark.parametrize(
    "matrix, phrase",
    [
        (
            "{servers: [fastify], workloads: [empty], connections: [10], load_generators: [wrk], counts: [1000]}",
            "experiments.bad.matrices[0]: wrk cannot stop after a fixed count ([1000])",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], load_generators: [ab], durations_s: [5]}",
            "experiments.bad.matrices[0]: ab cannot stop after a fixed duration ([5])",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], load_generators: [autocannon]}",
            "has no stopping rule",
        ),
        (
            "{servers: [fastify], workloads: [empty], connections: [10], load_generators: [siege], counts: [9]}",
            "'siege' is not one of",
        ),
    ],
)
def test_experiment_config_is_checked_before_any_job(tmp_path: Path, matrix, phrase):
    proj = make_project(tmp_path / "p", experiment_config(matrix))
    res = snakemake(proj, "--dry-run", "reports/bad/all")
    assert res.returncode != 0 and phrase in res.stdout, res.stdout[-3000:]


def test_a_missing_wrk_fails_at_once_with_the_install_line(tmp_path: Path):
    matrix = "{servers: [fastify], workloads: [empty], connections: [10], load_generators: [wrk], durations_s: [1]}"
    proj = make_project(tmp_path / "p", experiment_config(matrix))
    # A PATH with every program of this machine except wrk.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for entry in Path(d).glob("*") if Path(d).is_dir() else []:
            link = bin_dir / entry.name
            if entry.name != "wrk" and not link.exists():
                link.symlink_to(entry)
    res = snakemake(proj, "reports/bad/all", env={**os.environ, "PATH": str(bin_dir)})
    assert res.returncode != 0
    assert "load generator 'wrk' is not installed" in res.stdout and "apt-get install wrk" in res.stdout
    # It failed first: no measurement started, and the npm install had not run either.
    assert "[measure] start" not in res.stdout
    assert "rule install_node_packages:" not in res.stdout.split("[probe] FAILED")[0]

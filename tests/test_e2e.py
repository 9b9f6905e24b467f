"""The real pipeline on a tiny config: real PostgreSQL, real servers, real wrk and autocannon."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, planned_cells, render_in_chromium, snakemake
from nodebench.analysis.verdict import VERDICTS
from nodebench.catalogue.thresholds import OPENLOOP_NAP_MAX_RATE
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.harness import procs, server
from nodebench.runs import TWIN_SUFFIX

# The tiny matrix (conftest.TINY_CONFIG), with node-http measured twice: node-http-aa is its A/A twin.
TINY_SERVERS = ("node-http", "node-http-aa", "express", "fastify")


def test_every_cell_of_the_matrix_was_measured(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
    # Three servers and node-http's A/A twin, on two workloads.
    assert len(runs) == 8
    assert set(zip(runs["workload"], runs["server"], strict=True)) == {
        (w, s) for w in ("empty", "point-lookup") for s in TINY_SERVERS
    }
    assert set(runs["client"]) == {"wrk"}
    assert (runs["requests"] > 100).all()


def test_windows_and_counts_line_up(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
    # The client's window is the configured second, give or take autocannon's start and its 1-s sample tick.
    assert ((runs["window_s"] > 0.9) & (runs["window_s"] < 1.6)).all()
    # The server's window holds the client's whole run plus the two window requests.
    assert (runs["elu_window_ms"] >= runs["window_s"] * 1000).all()
    assert (runs["elu_window_ms"] <= runs["window_s"] * 1000 + 500).all()
    # The window touches no request: the server keeps no count, the client's is the window's.
    server_count = ["server_requests", "server_aborted", "server_in_flight_at_stop", "server_drain_ms"]
    assert runs[server_count].isna().all().all()
    assert (runs["server_statuses"].isna() | (runs["server_statuses"] == "null")).all()  # JSON text in Parquet
    # CPU per request and req/s from the raw ELU fields and the client's count, independently of each other.
    assert np.allclose(runs["us_per_req_elu"], runs["elu_active_ms"] * 1000 / runs["requests"], rtol=1e-9)
    elu_s = (runs["elu_idle_ms"] + runs["elu_active_ms"]) / 1000
    assert np.allclose(runs["req_per_s"], runs["requests"] / elu_s, rtol=1e-9)
    assert np.allclose(runs["us_per_req_elu"], runs["elu_utilization"] * 1e6 / runs["req_per_s"], rtol=1e-6)
    # Every response was as long as the verified answer.
    assert (runs["bytes"] == runs["requests"] * runs["answer_bytes"]).all()


def test_database_did_the_work(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet").set_index(["workload", "server"])
    assert (runs.loc["empty", "db_queries"] == 0).all()
    lookups = runs.loc["point-lookup"]
    # One query per counted request, and at most one more per connection (its request outstanding at the end).
    assert (lookups["db_queries"] >= lookups["requests"]).all()
    assert (lookups["db_queries"] <= lookups["requests"] + lookups["connections"]).all()
    assert np.allclose(lookups["db_queries_per_request"], lookups["db_queries"] / lookups["requests"])


def test_the_window_carries_the_client_side_and_preemption_figures(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet").set_index(["workload", "server"])
    assert runs["client_cpus_busy"].between(0, 1).all() and (runs["client_cpu_count"] >= 1).all()
    # The host snapshots sit at the window's ends, within a few milliseconds, on the server's own clock.
    assert (runs["sample_start_offset_ms"].abs() < 50).all() and (runs["sample_stop_offset_ms"].abs() < 50).all()
    assert np.allclose(runs["sample_window_s"] * 1000, runs["elu_window_ms"], atol=100)
    # The embedded PostgreSQL worked for point-lookup only.
    assert (runs.loc["point-lookup", "db_cpu_util"] > 0.01).all()
    assert (runs.loc["empty", "db_cpu_util"] < runs.loc["point-lookup", "db_cpu_util"].min()).all()
    assert (runs["server_invol_csw"] >= 0).all() and (runs["elu_active_over_cpu"] > 0).all()
    assert str(runs["preempted"].dtype) == "boolean" and runs["preempted"].notna().all()
    assert (runs["preempted_reason"].isna() == ~runs["preempted"]).all()


def test_server_and_client_ran_on_different_cpus(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
    for server_cpus, client_cpus in zip(runs["server_cpus"], runs["client_cpus"], strict=True):
        assert set(str(server_cpus).split(",")).isdisjoint(str(client_cpus).split(","))
    assert not runs["cpu_shared"].any()


def test_records_carry_identity_and_provenance(project: Path):
    runs = pd.read_parquet(project / "data" / "overall" / "runs.parquet")
    named = runs["server"].astype(str).str.removesuffix(TWIN_SUFFIX)
    assert (runs["framework"].astype(str).replace({"node:http": "node-http"}) == named).all()
    assert runs["postgres_version"].astype(str).str.startswith("18").all()
    assert (runs["database_mode"] == "embedded").all()
    assert runs["node_version"].astype(str).str.startswith("v").all()
    assert runs["express_version"].astype(str).str.startswith("5.").all()
    assert str(runs["connections"].dtype) == "int64" and str(runs["server"].dtype) == "category"


def test_summary_and_manifest(project: Path):
    summary = (project / "reports" / "overall" / "summary.md").read_text()
    assert "## empty" in summary and "## point-lookup" in summary
    assert "Measured on" in summary and "1.00x" in summary
    # The answer at a glance first: per workload, the cheapest and the costliest against its baseline.
    # (After the "too noisy" warning where a run stayed disturbed: this machine's noise decides that.)
    glance = next(p for p in summary.split("\n\n") if p.startswith("- **"))
    assert glance.startswith("- **empty** at 10 connections: cheapest by median ") and "(n=1: no interval)" in glance
    # The run ended by printing the page and the same lines, computed from the tables, without the emphasis.
    printed = (project / "data" / "logs" / "reports-all.out").read_text()
    # Each measurement said where it stood, its round of how many read from the plan the workflow wrote.
    where = r"measured \S+ .*: run \d+ of \d+ in round 1 of 1; \d+ of \d+ runs of this invocation done"
    assert re.search(where, printed), printed[-3000:]
    closing = printed[printed.index("report: reports/overall/index.html") :].splitlines()
    assert closing[1].endswith(glance.splitlines()[0].removeprefix("- ").replace("**", "")), closing[:3]
    # Then in full: per workload, each framework's paired cost against express and node-http, one round each.
    paragraphs = summary.split("\n\n")
    first = paragraphs[paragraphs.index("In full:") + 1]
    assert first.startswith("- **empty** at 10 connections: ") and "express's event-loop CPU per request" in first
    assert "(n=1: no interval)" in first and "the A/A twin against its control" in first
    assert "**Machine state**: the A/A control, node-http, at the headline connections: " in summary
    manifest = (project / "reports" / "all").read_text().split()
    assert "data/overall/runs.parquet" in manifest and "reports/overall/summary.md" in manifest
    assert len([m for m in manifest if m.startswith("data/runs/")]) == 8
    assert all((project / m).exists() for m in manifest)


def test_rerun_with_nothing_changed_does_nothing(project: Path):
    res = snakemake(project, "--dry-run", "reports/all")
    assert res.returncode == 0, res.stdout[-3000:]
    assert "Nothing to be done" in res.stdout


def test_editing_one_server_replans_only_its_jobs(project: Path):
    server = project / "servers" / "express.js"
    original, stat = server.read_text(), server.stat()
    try:
        server.write_text(original + "// an edit\n")
        res = snakemake(project, "--dry-run", "reports/all")
        assert res.returncode == 0, res.stdout[-3000:]
        assert planned_cells(res.stdout) == {("empty", "express"), ("point-lookup", "express")}
        for rule in ("aggregate_runs", "write_summary", "list_all_outputs"):
            assert rule in res.stdout
        assert "build_database_template" not in res.stdout
    finally:
        server.write_text(original)
        os.utime(server, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "Nothing to be done" in snakemake(project, "--dry-run", "reports/all").stdout


def test_another_headline_figure_reruns_the_analysis_and_the_reports_and_measures_nothing(project: Path):
    res = snakemake(project, "--dry-run", "reports/all", "--config", "headline=us_per_req_oncpu")
    assert res.returncode == 0, res.stdout[-3000:]
    rules = planned_rules(res.stdout)
    assert {"compute_metrics", "compute_scores", "write_summary", "plot_chart"} <= rules, rules
    assert "measure_run" not in rules and planned_cells(res.stdout) == set()
    assert "Nothing to be done" in snakemake(project, "--dry-run", "reports/all").stdout


def planned_rules(output: str) -> set[str]:
    """Names of the rules a dry-run planned."""
    return set(re.findall(r"^(?:local)?rule (\w+):", output, re.MULTILINE))


def replan_after_touching(project: Path, module: str) -> str:
    """Dry-run reports/all after editing one file of the package (then put it back as it was)."""
    path = project / module
    original, stat = path.read_text(), path.stat()
    try:
        path.write_text(original + "# an edit\n")
        res = snakemake(project, "--dry-run", "reports/all", "reports/tiny-study/all")
        assert res.returncode == 0, res.stdout[-3000:]
        return res.stdout
    finally:
        path.write_text(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_editing_a_render_module_replans_its_charts_and_nothing_measured(study: Path):
    out = replan_after_touching(study, "scripts/nodebench/render/charts.py")
    assert planned_cells(out) == set()
    assert planned_rules(out) == {"plot_chart", "build_index_page", "list_outputs", "list_all_outputs"}


def test_editing_the_metrics_replans_metrics_charts_and_summary_not_measurements(study: Path):
    # headline() lives here: the summary and the charts both use it, so both must be redrawn.
    out = replan_after_touching(study, "scripts/nodebench/analysis/metrics.py")
    assert planned_cells(out) == set()
    assert {"compute_metrics", "plot_chart", "write_summary", "build_index_page"} <= planned_rules(out)
    assert "aggregate_runs" not in planned_rules(out)


def test_editing_a_harness_module_replans_every_measurement(study: Path):
    out = replan_after_touching(study, "scripts/nodebench/harness/verify.py")
    assert planned_cells(out) == {(w, s) for w in ("empty", "point-lookup") for s in TINY_SERVERS}
    assert "build_database_template" not in planned_rules(out)


def test_editing_the_measurement_entry_script_replans_every_measurement(study: Path):
    # A shell command's script is no `script:`, which Snakemake would watch itself: it is an input.
    out = replan_after_touching(study, "scripts/measure_run.py")
    assert planned_cells(out) == {(w, s) for w in ("empty", "point-lookup") for s in TINY_SERVERS}


def test_the_printed_measurement_command_is_the_job(project: Path):
    """Each measurement job's command, as Snakemake prints it, carries its cell, files, round and attempt."""
    from nodebench.harness import job

    res = snakemake(project, "--dry-run", "--printshellcmds", "--forcerun", "measure_run", "--", "reports/all")
    assert res.returncode == 0, res.stdout[-3000:]
    blocks = [b for b in res.stdout.split("\n\n") if re.search(r"^(local)?rule measure_run:", b.strip(), re.M)]
    assert len(blocks) == 8
    for block in blocks:
        wc = dict(p.split("=", 1) for p in re.search(r"wildcards: (.*)", block).group(1).split(", "))
        command = shlex.split(re.search(r"^Shell command: (.*)$", block, re.M).group(1))
        assert command[1] == "scripts/measure_run.py"
        j = job.parse(command[2:])
        assert (j.workload, j.server, j.connections, j.client, j.stop, j.round) == (
            wc["workload"], wc["server"], int(wc["connections"]), wc["client"], wc["stop"], int(wc["round"]),
        )  # fmt: skip
        cell = f"{wc['workload']}/{wc['server']}/c{wc['connections']}/{wc['client']}-{wc['stop']}"
        assert j.out == Path(f"data/runs/{wc['block']}/{cell}/r{wc['round']}.json")
        assert j.attempt == 1 and j.round_size == 8 and 1 <= j.round_position <= 8
        assert all((project / path).exists() for path in j.inputs.values()), j.inputs
        assert j.options["warmup_s"] == 1 and j.options["database"]["dsn"] == ""


def test_editing_the_wrk_script_replans_only_wrk_cells(study: Path):
    out = replan_after_touching(study, "servers/loadgen/wrk-report.lua")
    assert planned_rules(out) >= {"measure_run"}
    # The main matrix's 8 cells (wrk), the study's own wrk cell and its capacity measured again after the sweep
    # (1s-end), and the open-loop cell whose rate is a share of that wrk cell's req/s (its record is an input); no
    # autocannon or ab cell.
    assert sorted(re.findall(r"client=(\w+)", out)) == ["openloop"] + ["wrk"] * 10


def test_a_moved_checkout_plans_nothing(study: Path, tmp_path: Path):
    moved = tmp_path / "elsewhere" / "checkout"
    # cp -a keeps every file's mtime, as moving or re-cloning-and-restoring does.
    moved.parent.mkdir(parents=True)
    subprocess.run(["cp", "-a", str(study), str(moved)], check=True)
    res = snakemake(moved, "--dry-run", "reports/all", "reports/tiny-study/all")
    assert res.returncode == 0, res.stdout[-3000:]
    assert "Nothing to be done" in res.stdout, res.stdout[-3000:]


def test_metrics_charts_and_report_come_from_the_parquet(project: Path):
    cells = pd.read_parquet(project / "data" / "overall" / "metrics.parquet")
    assert len(cells) == 8 and set(cells["saturation"]) <= set(VERDICTS)
    assert cells["saturation_reason"].notna().all() and cells["client_cpus_busy"].between(0, 1).all()
    assert (cells.loc[cells["server"] == "express", "cost_vs_express"] == 1.0).all()
    # One round: no interval, and the A/A twin's ratio is measured all the same.
    assert cells["cost_vs_express_lo"].isna().all() and (cells["interval"] == "n=1: no interval").all()
    # One pair of 1 s runs: a wrong ratio (units, the wrong server) lands far outside 1/4-4; noise does not.
    # Same-cell runs here varied 1.9x within 15 minutes (2026-12-01, 18.5-35.2 us/req), and one CI read 0.48.
    assert cells["aa_cost"].between(0.25, 4).all() and (cells["aa_pairs"] == 1).all()
    scores = pd.read_parquet(project / "data" / "overall" / "scores.parquet").set_index("server")
    assert scores.loc["node-http", "score"] == 100.0
    manifest = (project / "reports" / "all").read_text().split()
    for chart in ("cpu-per-request", "framework-share", "cost-ratio", "control-drift"):
        for ext in ("png", "svg", "html"):
            assert f"reports/overall/charts/{chart}.{ext}" in manifest
    assert "reports/overall/index.html" in manifest and "data/overall/metrics.parquet" in manifest
    summary = (project / "reports" / "overall" / "summary.md").read_text()
    assert "## Framework share" in summary and "## Score" in summary


def test_index_page_renders_every_chart_offline(project: Path, tmp_path: Path):
    page = project / "reports" / "overall" / "index.html"
    html = page.read_text()
    assert "<script src=" not in html and "https://" not in html.split("<script>")[0]
    dom, screenshot = render_in_chromium(page, tmp_path)
    starts = [m.start() for m in re.finditer(r'id="chart-\d+"', dom)]
    assert len(starts) == html.count('class="chart"') >= 3
    for start, end in zip(starts, [*starts[1:], dom.index("All cells", starts[-1])], strict=True):
        tag, body = dom[start : dom.index(">", start)], dom[start:end]
        assert 'data-rendered="yes"' in tag, f"{tag} did not render: {body[:300]}"
        assert "<svg" in body and body.count('role="graphics-symbol"') >= 3, f"{tag} has no marks"
    assert screenshot.stat().st_size > 10_000


def test_each_workload_has_its_own_target(project: Path):
    res = snakemake(project, "--dry-run", "--forceall", "reports/empty/all")
    assert res.returncode == 0, res.stdout[-3000:]
    assert {w for w, _ in planned_cells(res.stdout)} == {"empty"}
    assert "reports/empty/charts/cpu-per-request.png" in res.stdout
    assert "reports/point-lookup" not in res.stdout


def test_redraw_without_measuring(project: Path):
    res = snakemake(project, "--dry-run", "reports/all", "--forcerun", "compute_metrics")
    assert res.returncode == 0, res.stdout[-3000:]
    assert planned_cells(res.stdout) == set()
    assert "plot_chart" in res.stdout and "build_index_page" in res.stdout


def test_snakemake_report_is_offline(project: Path):
    res = snakemake(project, "--report", "reports/report.html")
    assert res.returncode == 0, res.stdout[-3000:]
    report = (project / "reports" / "report.html").read_text()
    assert "cpu-per-request" in report and '<script src="http' not in report


@pytest.fixture(scope="module")
def study(project: Path) -> Path:
    """The tiny experiment: a fixed-count autocannon cell, a wrk cell and an ab cell, run for real."""
    res = snakemake(project, "reports/tiny-study/all")
    assert res.returncode == 0, res.stdout[-4000:]
    return project


def test_study_measures_counts_and_other_clients(study: Path):
    runs = pd.read_parquet(study / "data/tiny-study/runs.parquet").astype({"client": str})
    by = {(r.client, str(r.stop)): r for r in runs.itertuples()}
    assert set(by) == {("autocannon", "1s"), ("autocannon", "2000req"), ("wrk", "1s"), ("ab", "2000req"),
                       ("ab_close", "2000req"), ("openloop", "1s-at50"), ("wrk", "1s-end")}  # fmt: skip
    count = by[("autocannon", "2000req")]
    # What happened is recorded, not assumed: the count asked for, the count done, and when work ended.
    assert count.stopping_rule == "count" and count.requests_target == 2000 and count.requests >= 2000
    assert 0 < count.first_connection_done_s <= count.last_response_s <= count.window_s
    ab = by[("ab", "2000req")]
    assert ab.requests == 2000 and pd.isna(ab.server_requests) and ab.latency_p99_ms >= 0
    # Without keep-alive: the same count, each answer verified at its own size (no Keep-Alive header in it).
    closing = by[("ab_close", "2000req")]
    assert closing.requests == 2000 and closing.answer_bytes < ab.answer_bytes
    wrk = by[("wrk", "1s")]
    assert wrk.client_threads == 1 and 0.9 < wrk.window_s < 2.5 and pd.isna(wrk.resets)
    # The open loop sent at half the req/s its wrk cell measured in the same round, and either kept its schedule
    # (its latencies, from the scheduled times) or says why it refused them.
    ol = by[("openloop", "1s-at50")]
    assert ol.load_pct == 50 and ol.capacity_req_per_s == pytest.approx(wrk.req_per_s)
    assert ol.openloop_target_rate == pytest.approx(wrk.req_per_s / 2, rel=1e-3)
    # Poisson arrivals: the window's count is random (sd sqrt(rate x window)); what was due was answered.
    due = ol.openloop_sent + ol.openloop_unsent
    expected = ol.openloop_target_rate * ol.client_reported_duration_s
    assert abs(due - expected) < 5 * expected**0.5
    assert ol.client_reported_req_per_s == pytest.approx(due / ol.client_reported_duration_s, rel=0.01)
    assert 0 <= ol.capacity_gap_s < 120
    # Poisson arrivals by default, from the round's seed (config's round_seed 1, round 1), recorded.
    assert ol.openloop_arrivals == "poisson" and ol.openloop_seed == 1_000_004
    # point-lookup queries the embedded PostgreSQL, which runs on the client's CPUs: the client naps between sends,
    # up to the rate where napping stops paying (catalogue.thresholds.OPENLOOP_NAP_MAX_RATE).
    assert ol.openloop_wait == ("nap" if ol.openloop_target_rate <= OPENLOOP_NAP_MAX_RATE else "spin")
    assert 0 < ol.openloop_timed <= ol.requests
    if pd.isna(ol.openloop_refused):  # a missing string reads as <NA> from Parquet, not None
        assert 0 < ol.latency_p50_ms <= ol.latency_p99_ms <= ol.latency_p99_9_ms
    else:
        assert pd.isna(ol.latency_p99_ms), ol.openloop_refused
    for r in by.values():
        # Start-up and memory are recorded for every run.
        assert (
            20 < r.server_startup_ms < 20_000 and 10 < r.rss_peak_mb < 2_000 and 1 < r.heap_used_peak_mb < r.rss_peak_mb
        )
        # Every client's own CPU is recorded, and every answer had the verified size for that client.
        assert r.client_cpu_user_us + r.client_cpu_system_us > 0
        assert r.bytes == r.requests * r.answer_bytes
        q = WORKLOADS[r.workload].queries_per_request
        assert r.requests * q <= r.db_queries <= (r.requests + r.connections) * q


def test_study_measures_its_own_round_beside_its_other_clients(study: Path):
    # The main matrix measures the study's wrk cell too, but not its autocannon and ab cells: borrowing the one
    # would compare clients across two blocks' rounds, so the study measures its whole round itself.
    main = "data/runs/main/point-lookup/fastify/c10/wrk-1s/r1.json"
    own = "data/runs/tiny-study/point-lookup/fastify/c10/wrk-1s/r1.json"
    assert main in (study / "reports" / "all").read_text().split()
    listed = (study / "reports" / "tiny-study" / "all").read_text().split()
    assert own in listed and main not in listed
    assert "Nothing to be done" in snakemake(study, "--dry-run", "reports/tiny-study/all").stdout


def test_study_report_has_the_arithmetic_and_the_client_comparison(study: Path):
    stopping = pd.read_parquet(study / "data/tiny-study/stopping.parquet")
    assert len(stopping) == 1 and stopping["duration_stop"].iloc[0] == "1s"
    row = stopping.iloc[0]
    assert row["unaccounted_s"] == pytest.approx(row["actual_s"] - row["expected_s"])
    # The three parts of the unaccounted time add up to it (one run, so no medians in between).
    assert row["full_load_s"] + row["connection_tail_s"] + row["idle_s"] == pytest.approx(row["unaccounted_s"])
    assert bool(row["reported_is_count_per_sample"])
    text = (study / "reports" / "tiny-study" / "summary.md").read_text()
    assert "## Fixed duration against fixed count" in text and "## Load generators" in text
    assert "## Latency at a fixed arrival rate" in text and "## Start-up and memory" in text
    verdicts = ("the arithmetic explains", "the tail explains only part", "no fixed-count penalty to explain")
    assert any(v in text for v in verdicts) and "unaccounted" in text
    assert "For node-http on `empty`" not in text  # node-http is not in this study
    manifest = (study / "reports" / "tiny-study" / "all").read_text().split()
    for chart in ("stopping-rule", "load-generators", "latency-load"):
        assert f"reports/tiny-study/charts/{chart}.svg" in manifest
    assert not any("duration-sweep" in m for m in manifest)
    assert all((study / m).exists() for m in manifest)


def test_cost_curve_measures_every_server_at_one_rate_beside_its_capacity(project: Path):
    res = snakemake(project, "reports/tiny-curve/all")
    assert res.returncode == 0, res.stdout[-4000:]
    runs = pd.read_parquet(project / "data/tiny-curve/runs.parquet").astype({"client": str, "stop": str, "server": str})
    assert sorted(zip(runs["server"], runs["client"], runs["stop"], strict=True)) == [
        ("express", "openloop", "1s-r300"), ("express", "wrk", "1s"), ("express", "wrk", "1s-end"),
        ("fastify", "openloop", "1s-r300"), ("fastify", "wrk", "1s"), ("fastify", "wrk", "1s-end"),
        ("fixed-delay", "openloop", "1s-r300"), ("fixed-delay", "openloop", "1s-r300"),
    ]  # fmt: skip
    # The instrument's calibration: the same rate, no capacity of its own (none measured, none recorded); on
    # point-lookup it made the query of every request it answered (the harness checks the count).
    for calibration in runs[runs["server"] == "fixed-delay"].itertuples():
        assert calibration.load_rate == 300 and calibration.openloop_target_rate == 300
        assert pd.isna(calibration.capacity_req_per_s)
    (lookup,) = runs[(runs["server"] == "fixed-delay") & (runs["workload"] == "point-lookup")].itertuples()
    assert lookup.db_queries >= lookup.requests > 0
    # Each server's capacity before its sweep, the sweep, then its capacity again, in that order.
    for name in ("express", "fastify"):
        order = runs[runs["server"] == name].sort_values("started_at")["stop"].tolist()
        assert order == ["1s", "1s-r300", "1s-end"], order
    for name in ("express", "fastify"):
        mine = runs[(runs["server"] == name) & (runs["stop"] != "1s-end")].set_index("client")
        rated, capacity = mine.loc["openloop"], mine.loc["wrk"]
        # The same rate for both servers, whatever their capacity; the capacity beside it is recorded.
        assert rated.load_rate == 300 and pd.isna(rated.load_pct) and rated.openloop_target_rate == 300
        # `empty` queries nothing: the client has its CPU to itself and spins between sends, as it always did.
        assert rated.openloop_wait == "spin"
        assert rated.capacity_req_per_s == pytest.approx(capacity.req_per_s)
        # Poisson arrivals: 300 due a second on average (sd 17 in a 1 s window); what was due was answered.
        due = rated.openloop_sent + rated.openloop_unsent
        assert abs(due - 300 * rated.client_reported_duration_s) < 5 * (300 * rated.client_reported_duration_s) ** 0.5
        assert rated.client_reported_req_per_s == pytest.approx(due / rated.client_reported_duration_s, rel=0.01)
        # Far below the ceiling the loop idles: its ELU is a fraction of the capacity run's.
        assert rated.elu_utilization < capacity.elu_utilization
    text = (project / "reports/tiny-curve/summary.md").read_text()
    assert "## Cost per request against load" in text
    assert "- **empty**, fastify / express:" in text and "at 300 req/s" in text and "at saturation" in text
    assert "## Capacity before and after each sweep" in text and "of 2 sweeps flagged" in text
    # Its latency beside the servers', in its own section; never in the cost table (its cost is its spin's).
    assert "## The instrument in every round" in text and "| empty | 300 |" in text and "| point-lookup | 300 |" in text
    cost = text.split("## Cost per request against load")[1].split("## The instrument in every round")[0]
    assert "| empty | fixed-delay |" not in cost and "| empty | fastify | 300 req/s |" in cost
    manifest = (project / "reports/tiny-curve/all").read_text().split()
    assert "reports/tiny-curve/charts/cost-load.svg" in manifest
    assert all((project / m).exists() for m in manifest)


def test_every_server_has_a_handler_for_every_catalogue_workload(project: Path, tmp_path: Path):
    # No database behind the servers: a workload's route that exists answers (its status, or 500 for the
    # missing database); a 404 means the server has no handler for it, unless 404 is the workload's answer.
    # fixed-delay is the instrument's calibration: it answers empty and point-lookup only (configcheck holds it there).
    not_servers = ("contract", "eslint.config", "fixed-delay")
    servers = sorted(p.stem for p in (REPO / "servers").glob("*.js") if p.stem not in not_servers)
    missing = []
    for name in servers:
        port = procs.free_port()
        env = {"PATH": os.environ["PATH"], "PORT": str(port), "PGHOST": "127.0.0.1", "PGPORT": "1", "PGUSER": "x"}
        log = tmp_path / f"{name}.log"
        proc = server.start("node", project / "servers" / f"{name}.js", env, procs.job_cpus(), log)
        try:
            server.wait_ready(proc, name, log)
            # Seed 003's failure modes hang or end the server on purpose: test_claims.py checks their routes.
            for workload in (w for w in WORKLOADS.values() if w.frameworks is None):
                status, _, body = server.request(port, workload.method, workload.path, workload.body_bytes())
                if status == 404 and workload.status != 404:
                    missing.append(
                        f"{name} has no handler for {workload.name!r} ({workload.method} {workload.path}: {body!r})"
                    )
        finally:
            procs.stop(proc)
    assert not missing, (
        "every server in servers/ must answer every workload in nodebench/catalogue/workloads.py "
        "(see docs/extending.md, 'Adding a workload'):\n" + "\n".join(missing)
    )

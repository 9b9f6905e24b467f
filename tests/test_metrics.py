"""Metrics on small hand-made tables where the right answer is known."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from nodebench.analysis import aggregate, metrics
from nodebench.render import charts, markdown, page, theme
from nodebench.render.chart_list import CHART_LIST
from synthetic import synthetic_records

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())
DICTIONARY = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())


def runs_from(rows) -> pd.DataFrame:
    """A runs table from (workload, server, connections, rep, req_per_s, us_per_req_elu, elu, client_cpu) tuples."""
    cols = [
        "workload",
        "server",
        "connections",
        "repetition",
        "req_per_s",
        "us_per_req_elu",
        "elu_utilization",
        "client_cpu_util",
    ]
    df = pd.DataFrame(rows, columns=cols)
    return df.assign(
        load_generator="autocannon",
        stopping_rule="duration",
        stop="10s",
        client_cpu_capacity=1.0,
        us_per_req_cpu=df["us_per_req_elu"] * 1.1,
        latency_p50_ms=1.0,
        latency_p99_ms=5.0,
        cpu_model="Test CPU",
    )


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
    assert m.loc[("empty", "fastify"), "repetitions"] == 3


def test_interval_contains_the_point_estimate(m):
    for fig in metrics.FIGURES:
        assert (m[f"{fig}_lo"] <= m[fig]).all() and (m[fig] <= m[f"{fig}_hi"]).all()
    assert m.loc[("empty", "express"), "req_per_s_lo"] >= 90.0
    assert m.loc[("empty", "express"), "req_per_s_hi"] <= 110.0
    # Identical repetitions: the interval is the value itself.
    assert m.loc[("list", "express"), "req_per_s_lo"] == m.loc[("list", "express"), "req_per_s_hi"] == 10.0


def test_cv_and_noisy_flag(m):
    assert m.loc[("empty", "express"), "req_per_s_cv"] == pytest.approx(np.std([100, 110, 90], ddof=1) / 100)
    assert bool(m.loc[("empty", "express"), "noisy"])  # 10 % CV
    assert not bool(m.loc[("list", "express"), "noisy"])


def test_ratios_with_intervals(m):
    assert m.loc[("empty", "fastify"), "speedup_vs_express"] == pytest.approx(4.2)
    assert m.loc[("empty", "fastify"), "cpu_ratio_vs_express"] == pytest.approx(5.0)
    assert m.loc[("empty", "express"), "speedup_vs_express"] == 1.0
    lo, hi = m.loc[("empty", "fastify"), ["speedup_vs_express_lo", "speedup_vs_express_hi"]]
    assert lo <= 4.2 <= hi and lo >= 400 / 110 - 1e-9 and hi <= 440 / 90 + 1e-9
    assert m.loc[("list", "fastify"), "speedup_vs_node_http"] == pytest.approx(12 / 13)


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
    assert m.loc[("list", "node-http"), "saturation"] == "io-bound"
    verdicts = metrics.saturation(pd.Series([0.95, 0.9499, 0.9499]), pd.Series([0.0, 0.90, 0.8999]))
    assert list(verdicts) == ["server-bound", "client-bound", "io-bound"]


def test_geometric_mean_score():
    scores = metrics.geomean_scores(metrics.compute_metrics(EXPRESS_FASTIFY)).set_index("server")["score"]
    assert scores["node-http"] == pytest.approx(100.0)
    # express: node-http us/req over express's is 50/300 on empty and 750/1000 on list.
    assert scores["express"] == pytest.approx(100 * np.sqrt(50 / 300 * 750 / 1000))
    assert scores["fastify"] == pytest.approx(100 * np.sqrt(50 / 60 * 750 / 760))


def test_one_repetition_has_a_degenerate_interval():
    one = EXPRESS_FASTIFY[EXPRESS_FASTIFY["repetition"] == 1]
    got = metrics.compute_metrics(one).set_index(["workload", "server"])
    assert got.loc[("empty", "fastify"), "req_per_s_lo"] == got.loc[("empty", "fastify"), "req_per_s_hi"] == 400.0
    assert got.loc[("empty", "fastify"), "speedup_vs_express"] == pytest.approx(4.0)


def test_without_express_the_ratios_are_empty():
    no_express = EXPRESS_FASTIFY[EXPRESS_FASTIFY["server"] != "express"]
    got = metrics.compute_metrics(no_express)
    assert got["speedup_vs_express"].isna().all()


def test_every_metrics_column_is_in_the_data_dictionary():
    got = metrics.compute_metrics(EXPRESS_FASTIFY)
    assert set(got.columns) == set(DICTIONARY["metrics"])
    assert set(metrics.geomean_scores(got).columns) == set(DICTIONARY["scores"])


@pytest.fixture(scope="module")
def synthetic_runs() -> pd.DataFrame:
    records = synthetic_records(list(theme.SERVER_COLORS), ["empty", "point-lookup", "list"], [10, 50, 200], 3)
    return aggregate.to_frame(records, RUN_SCHEMA)


@pytest.fixture(scope="module")
def synthetic_metrics(synthetic_runs) -> pd.DataFrame:
    return metrics.compute_metrics(synthetic_runs)


MATRIX_CHARTS = [name for name, spec in CHART_LIST.items() if spec.kind == "matrix"]


def test_every_chart_in_the_list_has_a_drawing_function():
    assert set(charts.CHARTS) == set(CHART_LIST)


@pytest.mark.parametrize("name", MATRIX_CHARTS)
def test_every_chart_renders_to_png_svg_and_offline_html(name, synthetic_metrics, tmp_path):
    chart = charts.CHARTS[name]({"metrics": synthetic_metrics})
    png, svg, html, spec = (tmp_path / f"c.{e}" for e in ("png", "svg", "html", "vl.json"))
    charts.save(chart, str(png), str(svg), str(html), str(spec))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()
    text = html.read_text()
    assert "vegaEmbed" in text and "cdn.jsdelivr" not in text and "<script src=" not in text
    assert json.loads(spec.read_text())["$schema"].startswith("https://vega.github.io/schema/vega-lite/")


def test_charts_use_fixed_server_colours(synthetic_metrics):
    spec = charts.ratio_vs_express(synthetic_metrics).to_dict()
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"], strict=True))["express"] == theme.SERVER_COLORS["express"]


def test_index_page_inlines_everything(synthetic_runs, synthetic_metrics):
    specs = {name: charts.CHARTS[name]({"metrics": synthetic_metrics}).to_dict() for name in MATRIX_CHARTS}
    html = page.render(specs, synthetic_runs, synthetic_metrics, "# Summary\n", "/* bundle */")
    assert html.count('class="chart"') == len(specs)
    assert "not-bound" in html and "<script src=" not in html
    # The page names the machine from the runs themselves, not from a line of summary.md.
    assert markdown.machine_line(synthetic_runs) in html


def test_ratios_across_cpu_models_are_flagged_and_warned():
    mixed = EXPRESS_FASTIFY.assign(cpu_model=np.where(EXPRESS_FASTIFY["server"] == "fastify", "Other CPU", "Test CPU"))
    got = metrics.compute_metrics(mixed).set_index(["workload", "server"])
    assert bool(got.loc[("empty", "fastify"), "mixed_cpu_models_vs_express"])
    assert not bool(got.loc[("empty", "node-http"), "mixed_cpu_models_vs_express"])
    warning = markdown.cpu_model_warning(got.reset_index())
    assert "different CPU models" in warning and "empty/fastify c50" in warning and "Other CPU" in warning
    assert markdown.cpu_model_warning(metrics.compute_metrics(EXPRESS_FASTIFY)) == ""


def test_bootstrap_intervals_of_many_cells_have_their_known_bounds():
    # With 3 (or 4) repetitions a resample's median is the smallest value in about 26 % (5 %)
    # of 2,000 resamples, more than the 2.5 % tail: the interval is exactly [min, max].
    # 30,000 cells span many slices of the bootstrap; a row given another's result fails.
    rng = np.random.default_rng(3)
    for reps in (3, 4):
        samples = rng.lognormal(5, 0.3, (30_000, reps))
        assert len(samples) * metrics.RESAMPLES * reps > 4 * metrics.SLICE_VALUES
        lo, hi = metrics.median_ci(samples)
        np.testing.assert_allclose(lo, samples.min(axis=1), rtol=1e-12)
        np.testing.assert_allclose(hi, samples.max(axis=1), rtol=1e-12)
    # The ratio of medians: lowest over highest to highest over lowest, for the same reason.
    num, den = rng.lognormal(5, 0.3, (20_000, 3)), rng.lognormal(3, 0.3, (20_000, 3))
    lo, hi = metrics.ratio_ci(num, den)
    np.testing.assert_allclose(lo, num.min(axis=1) / den.max(axis=1), rtol=1e-12)
    np.testing.assert_allclose(hi, num.max(axis=1) / den.min(axis=1), rtol=1e-12)


def test_a_cells_interval_does_not_depend_on_the_cells_bootstrapped_with_it():
    # Seven repetitions: the interval lies inside the range and depends on the resamples drawn.
    samples = np.random.default_rng(4).lognormal(5, 0.3, (3_000, 7))
    lo, hi = metrics.median_ci(samples)
    num, den = samples[:, :6], samples[::-1, 1:]
    r_lo, r_hi = metrics.ratio_ci(num, den)
    for row in (0, 1, len(samples) // 2, len(samples) - 1):
        assert (lo[row], hi[row]) == tuple(a[0] for a in metrics.median_ci(samples[row]))
        assert (r_lo[row], r_hi[row]) == tuple(a[0] for a in metrics.ratio_ci(num[row], den[row]))
    assert (lo > samples.min(axis=1)).any() and (hi < samples.max(axis=1)).any()


def test_ratios_pair_cells_with_different_repetition_counts():
    # fastify's empty cell loses a repetition: 400 and 440 against express's 100, 110 and 90.
    two = EXPRESS_FASTIFY.drop(EXPRESS_FASTIFY.index[5])
    got = metrics.compute_metrics(two).set_index(["workload", "server"])
    assert got.loc[("empty", "fastify"), "repetitions"] == 2
    assert got.loc[("empty", "fastify"), "speedup_vs_express"] == pytest.approx(420 / 100)
    # Two repetitions: both resampled from the lower one in a quarter of the resamples.
    assert got.loc[("empty", "fastify"), "speedup_vs_express_lo"] == pytest.approx(400 / 110)
    assert got.loc[("empty", "fastify"), "speedup_vs_express_hi"] == pytest.approx(440 / 90)
    assert got.loc[("empty", "fastify"), "cpu_ratio_vs_express"] == pytest.approx(300 / 61)
    # The three-repetition cells keep the figures and ratios they have with every repetition.
    full = metrics.compute_metrics(EXPRESS_FASTIFY).set_index(["workload", "server"])
    cols = [c for c in full.columns if c.startswith((*metrics.FIGURES, "speedup", "cpu_ratio"))]
    pd.testing.assert_frame_equal(
        got.loc[got["repetitions"] == 3, cols], full.loc[got.index[got["repetitions"] == 3], cols]
    )


def test_sweep_bins_a_long_sweep_into_medians_with_spanning_intervals():
    conns = np.arange(1, 101)
    long = pd.DataFrame(
        {
            "workload": "point-lookup",
            "server": "fastify",
            "connections": conns,
            "saturation": np.where(conns == 50, "io-bound", "server-bound"),
            "req_per_s": 10.0 * conns,
            "req_per_s_lo": 10.0 * conns - 1,
            "req_per_s_hi": 10.0 * conns + 1,
            "latency_p50_ms": 1.0,
            "latency_p99_ms": 2.0,
            "elu_utilization": 1.0,
        }
    )
    short = long[long["connections"].isin([10, 50, 200])].assign(workload="list")
    points = charts.sweep_points(pd.concat([long, short], ignore_index=True))
    binned = points[points["workload"] == "point-lookup"]
    assert len(binned) <= charts.SWEEP_POINTS and binned["cells"].sum() == 100
    assert binned["connections"].is_monotonic_increasing
    # A point is its bin's medians: req/s is 10 x connections, so the median too.
    assert (binned["req_per_s"] == 10 * binned["connections"]).all()
    assert binned["req_per_s_lo"].min() == 9.0 and binned["req_per_s_hi"].max() == 1001.0
    assert (binned["req_per_s_lo"] < binned["req_per_s"] - 1).sum() >= len(binned) // 2
    # Equal widths on the log scale: the last bins hold more connection counts than the first.
    assert binned["cells"].iloc[0] == 1 and binned["cells"].iloc[-1] > 10
    assert list(binned.loc[binned["bound"] != "server-bound", "connections"].map(lambda c: 40 <= c <= 60)) == [True]
    # A workload measured at few connection counts is drawn cell by cell.
    kept = points[points["workload"] == "list"]
    assert list(kept["connections"]) == [10, 50] and (kept["cells"] == 1).all()


def campaign_metrics(synthetic_metrics: pd.DataFrame, levels: int = 1_250) -> pd.DataFrame:
    """A metrics table of levels connection counts per workload and server (18,750 cells), from the small one."""
    at_50 = synthetic_metrics[synthetic_metrics["connections"] == 50]
    return pd.concat([at_50.assign(connections=10 + 5 * i) for i in range(levels)], ignore_index=True)


@pytest.mark.parametrize("name", MATRIX_CHARTS)
def test_charts_of_a_large_campaign_embed_what_a_person_can_read(name, synthetic_metrics):
    big = campaign_metrics(synthetic_metrics)
    spec = charts.CHARTS[name]({"metrics": big}).to_dict()  # Altair's MaxRowsError (5,000 rows) stays on
    rows = max(len(v) for v in spec["datasets"].values())
    workloads, servers = big["workload"].nunique(), big["server"].nunique()
    assert rows <= 2 * workloads * servers * charts.SWEEP_POINTS, f"{name} embeds {rows} rows"


def test_index_page_of_a_large_campaign_lists_headline_cells_and_links_the_rest(synthetic_runs, synthetic_metrics):
    big = campaign_metrics(synthetic_metrics)
    summary = "x" * (page.SUMMARY_CHARS + 1)
    html = page.render({}, synthetic_runs, big, summary, "/* bundle */", metrics_href="../../data/s/metrics.parquet")
    table = html[html.index("<h2>All cells</h2>") :]
    # Headline: the connection count closest to 50 on each of 3 workloads, 5 servers each.
    assert table.count("<tr") == 1 + 15 and "<td>50</td>" in table and "<td>55</td>" not in table
    assert '<a href="../../data/s/metrics.parquet">' in table and f"{len(big):,} cells" in table
    assert summary not in html and '<a href="summary.md">' in html


def test_the_runs_provenance_columns_are_all_the_summary_needs(synthetic_runs, synthetic_metrics):
    assert markdown.machine_line(synthetic_runs[markdown.PROVENANCE]) == markdown.machine_line(synthetic_runs)
    scores = metrics.geomean_scores(synthetic_metrics)
    now = pd.Timestamp("2026-01-02", tz="UTC").to_pydatetime()
    full = markdown.render(synthetic_runs, synthetic_metrics, scores, now)
    assert markdown.render(synthetic_runs[markdown.PROVENANCE], synthetic_metrics, scores, now) == full
    cols = metrics.RUN_COLUMNS
    pd.testing.assert_frame_equal(metrics.compute_metrics(synthetic_runs[cols]), synthetic_metrics)


def test_bootstrap_median_is_exactly_the_sorted_median():
    # Up to four repetitions the median is picked with minimum/maximum, not sorted: the same numbers.
    rng = np.random.default_rng(5)
    for n in range(1, 7):
        x = rng.integers(0, 4, (2_000, 50, n)).astype(float) + rng.choice([0.0, 0.1, 0.3], (2_000, 50, n))
        assert np.array_equal(metrics._median(x), np.median(x, axis=-1)), n
    x = rng.random((100, 4))
    x[0, 0] = np.nan  # sorting puts NaN last, so the median of four with one NaN is not NaN: the same here
    sorted_x = np.sort(x, axis=-1)
    assert np.array_equal(metrics._median(x), (sorted_x[:, 1] + sorted_x[:, 2]) / 2)
    assert not np.isnan(metrics._median(x)[0])

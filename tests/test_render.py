"""Charts, the summary and the index page, drawn from synthetic metrics."""

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

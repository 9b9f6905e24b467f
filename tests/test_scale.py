"""A campaign of 100,000 run records (25,000 cells): its charts stay small and its index page renders in Chromium."""

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import yaml

from conftest import REPO, render_in_chromium
from nodebench.analysis import aggregate, metrics
from nodebench.render import charts, markdown, page
from nodebench.render.chart_list import EXTENSIONS, ScopeFacts, charts_for
from synthetic import campaign

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())
#: The charts the registry gives the campaign's scope: swept, with baselines, without an A/A control.
MATRIX_CHARTS = charts_for(ScopeFacts(experiment=False, swept=True, baseline=True, control=False))
#: The sizes docs/performance.md states for 100,000 records: a chart's offline HTML (the inlined
#: Vega bundle, 897,700 bytes with vl-convert 1.9, and the chart's spec) and the index
#: page (the bundle once, every spec, the headline cells and a link to summary.md).
CHART_HTML_BYTES = 1_100_000
PAGE_BYTES = 1_200_000


def test_index_page_of_a_100000_record_campaign_renders_every_chart(tmp_path: Path):
    runs = aggregate.to_frame(campaign(100_000), RUN_SCHEMA)
    cells = metrics.compute_metrics(runs)
    assert len(cells) == 25_000
    specs = {}
    for name in MATRIX_CHARTS:
        chart = charts.CHARTS[name]({"metrics": cells, "runs": runs})
        # Altair's MaxRowsError (5,000 rows in a dataset) stays on: to_dict() in save() would raise it.
        charts.save(chart, *(str(tmp_path / f"{name}.{ext}") for ext in EXTENSIONS))
        html = tmp_path / f"{name}.html"
        assert html.stat().st_size < CHART_HTML_BYTES, f"{name}: {html.stat().st_size:,} bytes"
        specs[name] = json.loads((tmp_path / f"{name}.vl.json").read_text())
    scores = metrics.geomean_scores(cells)
    summary = markdown.render(runs, cells, scores, datetime.now(UTC))
    assert summary.count("\n| ") > len(cells)  # summary.md lists every cell
    index = tmp_path / "index.html"
    index.write_text(page.render(specs, runs, cells, page.vega_bundle(), scores=scores, metrics_href="metrics.parquet"))
    assert index.stat().st_size < PAGE_BYTES, f"index page: {index.stat().st_size:,} bytes"

    html = index.read_text()
    dom, screenshot = render_in_chromium(index, tmp_path)
    starts = [m.start() for m in re.finditer(r'id="chart-\d+"', dom)]
    assert len(starts) == html.count('class="chart"') == len(MATRIX_CHARTS)
    for start, end in zip(starts, [*starts[1:], dom.index("All cells", starts[-1])], strict=True):
        tag, body = dom[start : dom.index(">", start)], dom[start:end]
        assert 'data-rendered="yes"' in tag, f"{tag} did not render: {body[:300]}"
        assert "<svg" in body and body.count('role="graphics-symbol"') >= 3, f"{tag} has no marks"
    # The sweep draws its binned points: at most SWEEP_POINTS per server and workload, not 25,000 cells.
    sweep = dom[starts[MATRIX_CHARTS.index("connection-sweep")] : dom.index("All cells", starts[-1])]
    assert 0 < sweep.count('role="graphics-symbol"') < 4 * 5 * charts.SWEEP_POINTS * 10
    # The tables list the 20 headline cells (4 workloads x 5 servers at 50 connections) and link the rest.
    all_cells = dom.index("All cells", starts[-1])
    tables = dom[all_cells : dom.index("Framework share", all_cells)]
    assert tables.count("<tr") == 4 * (1 + 5) and 'href="metrics.parquet"' in tables
    assert screenshot.stat().st_size > 10_000

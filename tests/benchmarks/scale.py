"""Scale benchmark (not a test): a synthetic campaign through the analysis, stage by stage.

    .venv/bin/python tests/benchmarks/scale.py [records]    # 10,000 by default

The records (tests/synthetic.py campaign(): 5 servers x 4 workloads x 4 rounds at
as many connection counts as it takes; 100,000 records are 25,000 cells) are written
as JSON files, then each stage runs as its rule does, from the previous stage's files
and in a fresh Python process of its own: aggregation (records to runs.parquet),
metrics (runs.parquet to metrics.parquet and the scores), the four matrix charts (PNG,
SVG, offline HTML and spec each), and the summary and index page. Printed per stage:
wall time of its work; peak resident memory, the high-water mark (VmHWM) of its
process, which holds the interpreter and the libraries too; and the resident memory
after those imports, before the work. Then the metrics' time per 1,000 cells, the
largest chart HTML, the most rows a chart embeds, and the summary and index page sizes.
"""

import json
import multiprocessing
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(HERE.parent)]

import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from nodebench.analysis import aggregate, metrics  # noqa: E402
from nodebench.render import charts, markdown, page  # noqa: E402
from nodebench.render.chart_list import CHART_LIST, EXTENSIONS, ScopeFacts, charts_for  # noqa: E402
from synthetic import campaign  # noqa: E402

#: The charts the registry gives the campaign's scope: swept, with baselines, without an A/A control.
MATRIX_CHARTS = charts_for(ScopeFacts(experiment=False, swept=True, baseline=True, control=False))
#: The issue's targets (issue 15): seconds for all stages together.
TARGETS = {10_000: 10, 100_000: 60}


def _status_kib(field: str) -> int:
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1))


def rows_embedded(spec: dict) -> int:
    """The most rows any one dataset of a Vega-Lite spec holds (what Altair's MaxRowsError counts)."""
    return max((len(rows) for rows in spec.get("datasets", {}).values()), default=0)


def aggregate_stage(tmp: Path) -> dict:
    schema = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())
    paths = sorted(tmp.glob("records/*.json"))
    runs = aggregate.to_frame(aggregate.iter_records(paths, schema), schema)
    runs.to_parquet(tmp / "runs.parquet", index=False)
    return {}


def metrics_stage(tmp: Path) -> dict:
    runs = pd.read_parquet(tmp / "runs.parquet", columns=metrics.RUN_COLUMNS)
    cells = metrics.compute_metrics(runs)
    del runs
    metrics.geomean_scores(cells).to_parquet(tmp / "scores.parquet", index=False)
    cells.to_parquet(tmp / "metrics.parquet", index=False)
    return {"cells": len(cells)}


def charts_stage(tmp: Path) -> dict:
    cells = pd.read_parquet(tmp / "metrics.parquet")
    sizes, rows = {}, {}
    for name in MATRIX_CHARTS:
        assert CHART_LIST[name].tables == ("metrics",), f"{name} reads {CHART_LIST[name].tables}: read them here"
        chart = charts.CHARTS[name]({"metrics": cells})
        charts.save(chart, *(str(tmp / f"{name}.{ext}") for ext in EXTENSIONS))
        sizes[name] = (tmp / f"{name}.html").stat().st_size
        rows[name] = rows_embedded(json.loads((tmp / f"{name}.vl.json").read_text()))
    return {"html": sizes, "rows": rows}


def page_stage(tmp: Path) -> dict:
    runs = pd.read_parquet(tmp / "runs.parquet", columns=markdown.RUN_COLUMNS)
    cells, scores = pd.read_parquet(tmp / "metrics.parquet"), pd.read_parquet(tmp / "scores.parquet")
    text = markdown.render(runs, cells, scores, datetime.now(UTC))
    (tmp / "summary.md").write_text(text)
    specs = {name: json.loads((tmp / f"{name}.vl.json").read_text()) for name in MATRIX_CHARTS}
    html = page.render(specs, runs, cells, page.vega_bundle(), scores=scores, metrics_href="metrics.parquet")
    (tmp / "index.html").write_text(html)
    return {"summary": len(text), "page": len(html)}


STAGES = {
    "aggregate (read, validate, Parquet)": aggregate_stage,
    "metrics (intervals, paired ratios, share, score)": metrics_stage,
    f"charts ({len(MATRIX_CHARTS)} x PNG, SVG, HTML)": charts_stage,
    "summary and index page": page_stage,
}


def _measured(stage, tmp: str) -> tuple[float, int, int, dict]:
    """In the stage's own process: wall time, peak resident KiB (VmHWM: since this process started), resident KiB
    before the stage's work (the interpreter and the libraries), and what the stage reports."""
    at_start = _status_kib("VmRSS")
    t = time.perf_counter()
    info = stage(Path(tmp))
    return time.perf_counter() - t, _status_kib("VmHWM"), at_start, info


def main(total: int) -> None:
    rows, info = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "records").mkdir()
        for i, record in enumerate(campaign(total)):
            (Path(tmp) / "records" / f"{i:07d}.json").write_text(json.dumps(record))
        # Each stage in a fresh Python process, as each rule runs in its own: its peak memory is its own.
        for name, stage in STAGES.items():
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                seconds, peak, at_start, got = pool.submit(_measured, stage, tmp).result()
            rows.append((name, seconds, peak, at_start))
            info |= got

    total_s = sum(row[1] for row in rows)
    target = TARGETS.get(total)
    print(f"{total:,} run records, {info['cells']:,} cells")
    print(f"  {'stage (each in its own process)':<48} {'wall s':>7}  {'peak RSS MiB':>12}  {'after imports MiB':>17}")
    for name, seconds, peak, at_start in rows:
        print(f"  {name:<48} {seconds:7.2f}  {peak / 1024:12,.0f}  {at_start / 1024:17,.0f}")
    print(f"  {'total':<48} {total_s:7.2f}" + (f"  (target: {target} s or less)" if target else ""))
    print(f"  metrics per 1,000 cells: {rows[1][1] / info['cells'] * 1000:.3f} s")
    largest = max(info["html"], key=info["html"].get)
    print(
        f"  largest chart HTML: {info['html'][largest]:,} bytes ({largest}); "
        f"most rows embedded in a chart: {max(info['rows'].values()):,}"
    )
    print(f"  summary.md {info['summary']:,} characters; index page {info['page']:,} bytes")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)

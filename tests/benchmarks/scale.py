"""Scale check (a benchmark, not a test): 10,000 synthetic run records through aggregation,
metrics, charts, summary and the index page. Prints the wall time of each stage.

    .venv/bin/python tests/benchmarks/scale.py [records]
"""

import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(HERE.parent)]

import yaml  # noqa: E402

from nodebench.analysis import aggregate, metrics  # noqa: E402
from nodebench.render import charts, markdown, page  # noqa: E402
from nodebench.render.chart_list import CHART_LIST  # noqa: E402
from synthetic import synthetic_records  # noqa: E402

SERVERS = ["node-http", "express", "express-lean", "fastify", "fastify-schema"]
WORKLOADS = ["empty", "point-lookup", "list", "write"]
REPETITIONS = 4
MATRIX_CHARTS = [name for name, spec in CHART_LIST.items() if spec.kind == "matrix"]


def main(total: int) -> None:
    levels = max(1, total // (len(SERVERS) * len(WORKLOADS) * REPETITIONS))
    connections = [10 + 5 * i for i in range(levels)]
    records = synthetic_records(SERVERS, WORKLOADS, connections, REPETITIONS, seed=1)[:total]
    schema = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())
    timings = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = []
        for i, record in enumerate(records):
            path = tmp / f"{i}.json"
            path.write_text(json.dumps(record))
            paths.append(path)

        t = time.perf_counter()
        runs = aggregate.to_frame(aggregate.load_records(paths, schema), schema)
        runs.to_parquet(tmp / "runs.parquet", index=False)
        timings["aggregate (read, validate, Parquet)"] = time.perf_counter() - t

        t = time.perf_counter()
        cells = metrics.compute_metrics(runs)
        scores = metrics.geomean_scores(cells)
        cells.to_parquet(tmp / "metrics.parquet", index=False)
        timings["metrics (bootstrap CIs, ratios, share, score)"] = time.perf_counter() - t

        t = time.perf_counter()
        specs = {}
        for name in MATRIX_CHARTS:
            chart = charts.CHARTS[name]({"metrics": cells})
            files = [str(tmp / f"{name}.{ext}") for ext in ("png", "svg", "html", "vl.json")]
            charts.save(chart, *files)
            specs[name] = chart.to_dict()
        timings["charts (4 x PNG, SVG, HTML)"] = time.perf_counter() - t

        t = time.perf_counter()
        text = markdown.render(runs, cells, scores, datetime.now(UTC))
        html = page.render(specs, runs, cells, text, page.vega_bundle())
        timings["summary and index page"] = time.perf_counter() - t

    print(f"{len(records):,} run records, {len(cells):,} cells, {len(html):,}-byte index page")
    for stage, seconds in timings.items():
        print(f"  {stage:<48} {seconds:7.2f} s")
    print(f"  {'total':<48} {sum(timings.values()):7.2f} s  (target: 30 s or less)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)

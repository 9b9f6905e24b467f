"""reports/index.html: every chart and table on one page that works without a network."""

import html
import json
from pathlib import Path

import pandas as pd

from charts import vega_bundle

TABLE_COLUMNS = {
    "workload": "workload",
    "server": "server",
    "connections": "conn",
    "req_per_s": "req/s",
    "elu_utilization": "ELU",
    "us_per_req_elu": "us/req ELU",
    "us_per_req_cpu": "us/req CPU",
    "latency_p50_ms": "p50 ms",
    "latency_p99_ms": "p99 ms",
    "speedup_vs_express": "vs express",
    "share_reference": "share (ref.)",
    "share_baseline": "share (base.)",
    "saturation": "verdict",
}
FORMATS = {
    "req/s": "{:,.0f}".format,
    "ELU": "{:.1%}".format,
    "us/req ELU": "{:.1f}".format,
    "us/req CPU": "{:.1f}".format,
    "vs express": "{:.2f}x".format,
    "share (ref.)": "{:.0%}".format,
    "share (base.)": "{:.0%}".format,
}
STYLE = """
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
tr.not-bound td { color: #888; }
.chart { margin: 1.5em 0; }
.warning { color: #a00; font-weight: bold; }
"""


def metrics_table(metrics: pd.DataFrame) -> str:
    """The metrics as an HTML table; rows that are not server-bound are greyed."""
    t = metrics[list(TABLE_COLUMNS)].rename(columns=TABLE_COLUMNS)
    rows = []
    for _, r in t.iterrows():
        cls = "" if r["verdict"] == "server-bound" else ' class="not-bound"'
        cells = "".join(
            f"<td>{html.escape('n/a' if pd.isna(v) else FORMATS.get(c, str)(v))}</td>" for c, v in r.items()
        )
        rows.append(f"<tr{cls}>{cells}</tr>")
    header = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render(specs: dict[str, dict], metrics: pd.DataFrame, summary_md: str, bundle: str) -> str:
    """One page: the Vega bundle inlined once, one div and one vegaEmbed call per chart."""
    divs = "\n".join(
        f'<h2>{html.escape(name)}</h2><div class="chart" id="chart-{i}"></div>' for i, name in enumerate(specs)
    )
    embeds = "\n".join(
        f'vegaEmbed("#chart-{i}", {json.dumps(spec)}, {{renderer: "svg", actions: false}})'
        f'.then(() => document.getElementById("chart-{i}").dataset.rendered = "yes")'
        f'.catch((e) => {{ document.getElementById("chart-{i}").textContent = "chart failed: " + e; }});'
        for i, spec in enumerate(specs.values())
    )
    warnings = "".join(
        f'<p class="warning">{html.escape(line.replace("**", ""))}</p>'
        for line in summary_md.splitlines()
        if line.startswith("**Warning")
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Node.js frameworks against PostgreSQL</title>
<style>{STYLE}</style>
<script>{bundle}</script>
</head><body>
<h1>Node.js frameworks against PostgreSQL</h1>
<p>{html.escape(summary_md.splitlines()[2] if len(summary_md.splitlines()) > 2 else "")}</p>
{warnings}
{divs}
<h2>All cells</h2>
{metrics_table(metrics)}
<h2>summary.md</h2>
<pre>{html.escape(summary_md)}</pre>
<script>
{embeds}
</script>
</body></html>
"""


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    charts = {Path(p).name.removesuffix(".vl.json"): json.loads(Path(p).read_text()) for p in sm.input.specs}
    page = render(charts, pd.read_parquet(sm.input.metrics), Path(sm.input.summary).read_text(), vega_bundle())
    Path(sm.output.page).write_text(page)
    Path(sm.log[0]).write_text(f"{len(charts)} charts -> {sm.output.page} ({len(page):,} bytes)\n")

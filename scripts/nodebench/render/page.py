"""reports/index.html: every chart and table on one page that works without a network."""

import functools
import html
import json

import pandas as pd
import vl_convert

from nodebench.render.markdown import cpu_model_warning, machine_line

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


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (vl-convert builds it; slow, so once per process)."""
    return vl_convert.javascript_bundle()


def render(specs: dict[str, dict], runs: pd.DataFrame, metrics: pd.DataFrame, summary_md: str, bundle: str) -> str:
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
    warning = cpu_model_warning(metrics)
    warnings = f'<p class="warning">{html.escape(warning.replace("**", ""))}</p>' if warning else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Node.js frameworks against PostgreSQL</title>
<style>{STYLE}</style>
<script>{bundle}</script>
</head><body>
<h1>Node.js frameworks against PostgreSQL</h1>
<p>{html.escape(machine_line(runs))}</p>
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

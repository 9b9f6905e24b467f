"""reports/index.html: every chart and table on one page that works without a network."""

import functools
import html
import json

import pandas as pd
import vl_convert

from nodebench.analysis.metrics import headline
from nodebench.catalogue.thresholds import HEADLINE_CONNECTIONS
from nodebench.render.markdown import cpu_model_warning, machine_line

#: The page lists every cell up to this many rows; a larger campaign's page lists its
#: headline cells (at most this many) and links the whole table.
TABLE_ROWS = 300
#: summary.md is shown on the page up to this many characters, and linked beyond.
SUMMARY_CHARS = 200_000

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


def cells_section(metrics: pd.DataFrame, metrics_href: str | None) -> str:
    """The "All cells" table: every cell up to TABLE_ROWS, else the headline cells and a link to the whole table."""
    if len(metrics) <= TABLE_ROWS:
        return f"<h2>All cells</h2>\n{metrics_table(metrics)}"
    shown = headline(metrics)
    where = (
        f'<a href="{html.escape(metrics_href)}">{html.escape(metrics_href)}</a>' if metrics_href else "metrics.parquet"
    )
    note = (
        f"{len(metrics):,} cells are too many for one page: listed are the {len(shown):,} headline cells (the "
        f"connection count closest to {HEADLINE_CONNECTIONS} on each workload)"
    )
    if len(shown) > TABLE_ROWS:
        note += f", the first {TABLE_ROWS:,} of them"
        shown = shown.head(TABLE_ROWS)
    return f"<h2>All cells</h2>\n<p>{note}. Every cell is in {where}.</p>\n{metrics_table(shown)}"


def summary_section(summary_md: str, summary_href: str) -> str:
    """summary.md inline up to SUMMARY_CHARS, else a link to it."""
    if len(summary_md) <= SUMMARY_CHARS:
        return f"<pre>{html.escape(summary_md)}</pre>"
    link = f'<a href="{html.escape(summary_href)}">{html.escape(summary_href)}</a>'
    return f"<p>summary.md has {len(summary_md):,} characters, too many to show here: read {link}.</p>"


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (vl-convert builds it; slow, so once per process)."""
    return vl_convert.javascript_bundle()


def render(
    specs: dict[str, dict],
    runs: pd.DataFrame,
    metrics: pd.DataFrame,
    summary_md: str,
    bundle: str,
    metrics_href: str | None = None,
    summary_href: str = "summary.md",
) -> str:
    """One page: the Vega bundle inlined once, one div and one vegaEmbed call per chart.

    metrics_href and summary_href: where the whole metrics table and summary.md are,
    relative to the page, for a campaign too large to show them whole.
    """
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
{cells_section(metrics, metrics_href)}
<h2>summary.md</h2>
{summary_section(summary_md, summary_href)}
<script>
{embeds}
</script>
</body></html>
"""

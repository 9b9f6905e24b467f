"""reports/<scope>/index.html: the answer, the machine, every chart and every table on one page that works offline.

The page says what summary.md says, in the same order, with the charts between the
opening and the tables: both are written from the same blocks, the main matrix's from
render/markdown.py, an experiment's from render/experiment_report.py. Nothing is read back
from the Markdown.
"""

import contextlib
import functools
import html
import json
import os
from pathlib import Path

import pandas as pd
import vl_convert

from nodebench.render import markdown
from nodebench.render.chart_list import CHART_LIST
from nodebench.render.document import Block, Heading, Items, Para, Raw, to_html

#: The page lists every cell up to this many rows; a larger campaign's page lists its
#: headline cells and links the whole table.
TABLE_ROWS = 300
TITLE = "Node.js frameworks against PostgreSQL"
STYLE = """
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; }
th { vertical-align: bottom; }
td { white-space: nowrap; }
th.num, td.num { text-align: right; }
th.text, td.text { text-align: left; }
div.table { overflow-x: auto; }
tr.not-bound td { color: #888; }
ul { line-height: 1.45; }
.chart { margin: 0.5em 0 2em; }
.warning { color: #a00; font-weight: bold; }
"""


def chart_blocks(specs: dict[str, dict]) -> tuple[list[Block], str]:
    """One heading in words and one div per chart, and the script that embeds them."""
    blocks: list[Block] = []
    embeds = []
    for i, (name, spec) in enumerate(specs.items()):
        heading = CHART_LIST[name].heading if name in CHART_LIST else name
        blocks += [Heading(2, heading), Raw(f'<div class="chart" id="chart-{i}"></div>')]
        embeds.append(
            f'vegaEmbed("#chart-{i}", {json.dumps(spec)}, {{renderer: "svg", actions: false}})'
            f'.then(() => document.getElementById("chart-{i}").dataset.rendered = "yes")'
            f'.catch((e) => {{ document.getElementById("chart-{i}").textContent = "chart failed: " + e; }});'
        )
    return blocks, "\n".join(embeds)


def split_report(blocks: list[Block]) -> tuple[str, list[Block], list[Block]]:
    """An experiment's report as (its title, the blocks before its first section, the rest)."""
    title = ""
    if blocks and isinstance(blocks[0], Heading) and blocks[0].level == 1:
        title, blocks = blocks[0].text, blocks[1:]
    first = next((i for i, b in enumerate(blocks) if isinstance(b, Heading) and b.level == 2), len(blocks))
    return title, blocks[:first], blocks[first:]


#: Where vega_bundle keeps the script it built, relative to the project (jobs run there): one file per vl-convert
#: version, whose bundle of Vega, Vega-Lite and Vega-Embed is fixed.
BUNDLE_CACHE = "data/cache/vega-bundle-{version}.js"


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script, built by vl-convert once per version and kept in data/cache.

    Building it took 2.5 s of the 5.8 s a chart job ran, in every chart job; read back it takes milliseconds. Written
    whole or not at all (a temporary file renamed), so a job never reads half of one; where data/ cannot be written,
    each process builds its own.
    """
    path = Path(BUNDLE_CACHE.format(version=vl_convert.__version__))
    with contextlib.suppress(OSError, ValueError):  # none yet, or not text: built again
        return path.read_text()
    bundle = vl_convert.javascript_bundle()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(bundle)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return bundle


def render(
    specs: dict[str, dict],
    runs: pd.DataFrame,
    metrics: pd.DataFrame,
    bundle: str,
    scores: pd.DataFrame | None = None,
    report: list[Block] = (),
    metrics_href: str | None = None,
    summary_href: str = "summary.md",
    elsewhere: list[tuple[str, str, str]] = (),
    ledger_href: str | None = None,
    look: dict | None = None,
    calibration: dict | None = None,
) -> str:
    """One page: the Vega bundle inlined once, one div and one vegaEmbed call per chart.

    With scores (the main matrix, a workload) the page is written from the data, as the
    summary is; without (an experiment) from report, the blocks its summary.md was written from
    (experiment_report.blocks). metrics_href and
    summary_href: where the whole metrics table and summary.md are, relative to the page.
    elsewhere: the other reports, (name, href relative to the page, what it asks), linked at the end.
    ledger_href: the claims ledger's page, relative to this one, linked at the end when given.
    look: where adaptive rounds stopped (the block's last look), said after the opening; None for fixed rounds.
    calibration: the instrument's measured cost on this machine (precision.py --calibrate), where it exists.
    """
    if scores is not None and "cost-ratio" in specs:
        # The ratio chart comes first, right under the answer at a glance (issue 38: the glance, then the chart).
        specs = {"cost-ratio": specs["cost-ratio"], **{k: v for k, v in specs.items() if k != "cost-ratio"}}
    charts, embeds = chart_blocks(specs)
    if scores is not None:
        title = TITLE
        opening = markdown.opening(runs, metrics, look, calibration)
        if "cost-ratio" in specs:
            # One short line per workload, then the ratio chart, then the full sentences and the machine.
            glance = next(i for i, b in enumerate(opening) if isinstance(b, Items))
            opening = [*opening[: glance + 1], *charts[:2], *opening[glance + 1 :]]
            charts = charts[2:]
        rest = markdown.body(runs, metrics, scores, limit=TABLE_ROWS, metrics_href=metrics_href)
    else:
        name, opening, rest = split_report(list(report))
        title = name or TITLE
    where = [f"The same report as Markdown: [{summary_href}]({summary_href})"]
    if metrics_href:
        where.append(f"every cell's figures: [{metrics_href}]({metrics_href})")
    rest = [*rest, Para("; ".join(where) + ".")]
    if elsewhere:
        links = "; ".join(f"[{name}]({href}) ({what})" for name, href, what in elsewhere)
        rest.append(
            Para(f"The experiments, each built by its own target (`snakemake --cores 1 reports/<name>/all`): {links}.")
        )
    if ledger_href:
        rest.append(
            Para(
                "The claims ledger, each published claim of the seeds beside our measurement of it "
                f"(`snakemake --cores 1 reports/claims/all`): [the ledger]({ledger_href})."
            )
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style>
<script>{bundle}</script>
</head><body>
<h1>{html.escape(title)}</h1>
{to_html(opening)}
{to_html(charts)}
{to_html(rest)}
<script>
{embeds}
</script>
</body></html>
"""

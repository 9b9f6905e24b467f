"""plot_chart: one chart of one scope as PNG, SVG, offline HTML and its Vega-Lite spec."""

from pathlib import Path

import pandas as pd

from nodebench.render.charts import CHARTS, save


def main(sm) -> None:
    tables = {name: pd.read_parquet(path) for name, path in sm.input.items() if name != "code"}
    chart = CHARTS[sm.wildcards.chart](tables)
    out = sm.output
    save(chart, out.png, out.svg, out.html, out.spec)
    sizes = ", ".join(f"{name} {len(t)} rows" for name, t in tables.items())
    Path(sm.log[0]).write_text(f"{sm.wildcards.chart} from {sizes} -> {out.png}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

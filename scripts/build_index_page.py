"""build_index_page: a scope's charts and tables on one page that works without a network."""

import json
import os
from pathlib import Path

import pandas as pd

from nodebench.render.markdown import PROVENANCE
from nodebench.render.page import render, vega_bundle


def main(sm) -> None:
    specs = {Path(p).name.removesuffix(".vl.json"): json.loads(Path(p).read_text()) for p in sm.input.specs}
    # Of the runs, the page names only where and with what they were measured.
    runs, metrics = pd.read_parquet(sm.input.runs, columns=PROVENANCE), pd.read_parquet(sm.input.metrics)
    here = Path(sm.output.page).parent
    page = render(
        specs,
        runs,
        metrics,
        Path(sm.input.summary).read_text(),
        vega_bundle(),
        metrics_href=os.path.relpath(sm.input.metrics, here),
        summary_href=os.path.relpath(sm.input.summary, here),
    )
    Path(sm.output.page).write_text(page)
    Path(sm.log[0]).write_text(f"{len(specs)} charts -> {sm.output.page} ({len(page):,} bytes)\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

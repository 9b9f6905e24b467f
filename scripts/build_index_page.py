"""build_index_page: a scope's charts and tables on one page that works without a network."""

import json
from pathlib import Path

import pandas as pd

from nodebench.render.page import render, vega_bundle


def main(sm) -> None:
    specs = {Path(p).name.removesuffix(".vl.json"): json.loads(Path(p).read_text()) for p in sm.input.specs}
    runs, metrics = pd.read_parquet(sm.input.runs), pd.read_parquet(sm.input.metrics)
    page = render(specs, runs, metrics, Path(sm.input.summary).read_text(), vega_bundle())
    Path(sm.output.page).write_text(page)
    Path(sm.log[0]).write_text(f"{len(specs)} charts -> {sm.output.page} ({len(page):,} bytes)\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

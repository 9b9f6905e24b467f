"""write_results: a scope's results to take away, reports/<scope>/results.csv and results.json
(nodebench.analysis.results), from the tables its summary is written from."""

import json
from pathlib import Path

import pandas as pd

from nodebench.analysis import results


def main(sm) -> None:
    tables = {name: pd.read_parquet(sm.input[name]) for name in ("scores", "ab", "versions") if name in sm.input.keys()}
    runs = pd.read_parquet(sm.input.runs)
    t = results.table(sm.wildcards.scope, runs, pd.read_parquet(sm.input.metrics), **tables)
    t.to_csv(sm.output.csv, index=False)
    Path(sm.output.json).write_text(json.dumps(results.document(sm.wildcards.scope, t, runs), indent=1) + "\n")
    Path(sm.log[0]).write_text(f"{len(runs)} runs -> {len(t)} results in {sm.output.csv} and {sm.output.json}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""compute_latency: an experiment's open-loop cells: latency at a fixed arrival rate, per load."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.latency import latency_table


def main(sm) -> None:
    latency = latency_table(pd.read_parquet(sm.input.runs))
    latency.to_parquet(sm.output.latency, index=False)
    Path(sm.log[0]).write_text(f"{len(latency)} open-loop cells -> {sm.output.latency}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

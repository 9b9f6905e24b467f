"""compute_stopping: an experiment's fixed-count runs set against its fixed-duration runs."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.experiments import stopping_table


def main(sm) -> None:
    stopping = stopping_table(pd.read_parquet(sm.input.runs))
    stopping.to_parquet(sm.output.stopping, index=False)
    Path(sm.log[0]).write_text(f"{len(stopping)} fixed-count cells -> {sm.output.stopping}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""compute_ab: the A/B target's table, B over A per peer group (nodebench.analysis.ab)."""

from pathlib import Path

import pandas as pd

from nodebench.analysis import ab
from nodebench.analysis.metrics import RUN_COLUMNS


def main(sm) -> None:
    runs = pd.read_parquet(sm.input.runs, columns=RUN_COLUMNS)
    a, b = sm.params.ab
    t = ab.table(runs, a, b, margin=sm.params.margin, headline=sm.params.headline)
    t.to_parquet(sm.output.ab, index=False)
    Path(sm.log[0]).write_text(f"{len(runs)} runs -> {len(t)} A/B comparisons ({b} over {a})\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

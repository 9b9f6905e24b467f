"""compute_scores: per server, the geometric mean over workloads of node-http's CPU per request over its own."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.metrics import RUN_COLUMNS, geomean_scores


def main(sm) -> None:
    # The runs give each round's score, for its interval.
    runs = pd.read_parquet(sm.input.runs, columns=RUN_COLUMNS)
    scores = geomean_scores(pd.read_parquet(sm.input.metrics), runs)
    scores.to_parquet(sm.output.scores, index=False)
    Path(sm.log[0]).write_text(f"{len(scores)} servers scored -> {sm.output.scores}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

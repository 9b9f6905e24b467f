"""compute_versions: an experiment's Node.js-version and framework-major comparisons, paired per round."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.versions import table


def main(sm) -> None:
    versions = table(pd.read_parquet(sm.input.runs), pd.read_parquet(sm.input.metrics), margin=sm.params.margin)
    versions.to_parquet(sm.output.versions, index=False)
    counts = versions["kind"].value_counts().to_dict() if len(versions) else {}
    Path(sm.log[0]).write_text(f"{len(versions)} comparisons {counts} -> {sm.output.versions}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

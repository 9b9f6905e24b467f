"""compute_metrics: a scope's per-cell metrics."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.metrics import RUN_COLUMNS, compute_metrics


def main(sm) -> None:
    # The reference runs (the framework-only workload) feed the share models; the scope reports only its own.
    # Only the columns the metrics read, and one table when there is no reference to add.
    paths = [sm.input.runs, *sm.input.reference]
    parts = [pd.read_parquet(p, columns=RUN_COLUMNS) for p in paths]
    runs = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    del parts
    metrics = compute_metrics(runs, margin=sm.params.margin, headline=sm.params.headline)
    if sm.params.workloads is not None:
        metrics = metrics[metrics["workload"].isin(sm.params.workloads)].reset_index(drop=True)
    metrics.to_parquet(sm.output.metrics, index=False)
    Path(sm.log[0]).write_text(f"{len(runs)} runs -> {len(metrics)} cells\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

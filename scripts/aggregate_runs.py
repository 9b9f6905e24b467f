"""aggregate_runs: a scope's run records to one typed Parquet table, one row per run."""

from pathlib import Path

import yaml

from nodebench.analysis.aggregate import iter_records, to_frame


def main(sm) -> None:
    schema = yaml.safe_load(Path(sm.input.schema).read_text())
    # Records stream into the frame a batch at a time: they are never all held as Python objects.
    frame = to_frame(iter_records(sm.input.records, schema), schema)
    frame.to_parquet(sm.output.runs, index=False)
    Path(sm.log[0]).write_text(f"{len(frame)} runs, {len(frame.columns)} columns -> {sm.output.runs}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

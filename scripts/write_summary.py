"""write_summary: a scope's summary.md, the main matrix's tables or an experiment's report."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from nodebench.render import experiment_report, markdown
from nodebench.render.document import to_markdown


def main(sm) -> None:
    now = datetime.now(UTC)
    if "stopping" in sm.input.keys():
        tables = experiment_report.read_inputs(dict(sm.input.items()))
        runs = tables["runs"]
        text = to_markdown(
            experiment_report.blocks(sm.wildcards.scope, sm.params.description, generated_at=now, **tables)
        )
    else:
        # The main matrix's summary reads only the runs' provenance and sessions (and counts them).
        runs = pd.read_parquet(sm.input.runs, columns=markdown.RUN_COLUMNS)
        # The instrument's measured cost on this machine, where tests/benchmarks/precision.py --calibrate wrote it.
        calibration = json.loads(Path(sm.input.calibration).read_text()) if "calibration" in sm.input.keys() else None
        # Where adaptive rounds stopped (an adaptive block's last look).
        look = json.loads(Path(sm.input.look).read_text()) if "look" in sm.input.keys() else None
        metrics = pd.read_parquet(sm.input.metrics)
        text = markdown.render(runs, metrics, pd.read_parquet(sm.input.scores), now, look=look, calibration=calibration)
    Path(sm.output.summary).write_text(text)
    Path(sm.log[0]).write_text(f"summary of {len(runs)} runs -> {sm.output.summary}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

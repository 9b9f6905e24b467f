"""build_index_page: a scope's answer, charts and tables on one page that works without a network."""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from nodebench.render import experiment_report
from nodebench.render.markdown import RUN_COLUMNS
from nodebench.render.page import render, vega_bundle


def main(sm) -> None:
    specs = {Path(p).name.removesuffix(".vl.json"): json.loads(Path(p).read_text()) for p in sm.input.specs}
    # Of the runs, the page reads where, with what and when they were measured, and which session measured each.
    runs, metrics = pd.read_parquet(sm.input.runs, columns=RUN_COLUMNS), pd.read_parquet(sm.input.metrics)
    # The main matrix and each workload have scores, and their page is written from the data like their summary.
    scores = pd.read_parquet(sm.input.scores) if "scores" in sm.input.keys() else None
    # An experiment's page is written from the same blocks as its summary.md, from the same tables.
    report = (
        experiment_report.blocks(
            sm.wildcards.scope,
            sm.params.description,
            # The summary's own time, so that the page says what summary.md says.
            generated_at=datetime.fromtimestamp(Path(sm.input.summary).stat().st_mtime, UTC),
            **experiment_report.read_inputs(dict(sm.input.items())),
        )
        if "stopping" in sm.input.keys()
        else []
    )
    here = Path(sm.output.page).parent
    page = render(
        specs,
        runs,
        metrics,
        vega_bundle(),
        scores=scores,
        report=report,
        metrics_href=os.path.relpath(sm.input.metrics, here),
        summary_href=os.path.relpath(sm.input.summary, here),
        elsewhere=[(name, f"../{name}/index.html", what) for name, what in sm.params.elsewhere],
        ledger_href="../claims/index.html" if sm.params.ledger else None,
        look=json.loads(Path(sm.input.look).read_text()) if "look" in sm.input.keys() else None,
        calibration=json.loads(Path(sm.input.calibration).read_text()) if "calibration" in sm.input.keys() else None,
    )
    Path(sm.output.page).write_text(page)
    Path(sm.log[0]).write_text(f"{len(specs)} charts -> {sm.output.page} ({len(page):,} bytes)\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

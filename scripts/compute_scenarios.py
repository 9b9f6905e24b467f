"""compute_scenarios: an experiment's scenario scores against node:http, per round and per scenario."""

from pathlib import Path

import pandas as pd

from nodebench.analysis.scenarios import table


def main(sm) -> None:
    scenarios = table(pd.read_parquet(sm.input.runs))
    scenarios.to_parquet(sm.output.scenarios, index=False)
    scores = scenarios[scenarios["kind"] == "score"] if len(scenarios) else scenarios
    Path(sm.log[0]).write_text(f"{len(scores)} scores, {len(scenarios) - len(scores)} cells -> {sm.output.scenarios}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

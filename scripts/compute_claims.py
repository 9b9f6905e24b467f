"""compute_claims: the claims ledger's data, one row per claim of claims.yaml, verdicts computed from the runs."""

import json
from pathlib import Path

import pandas as pd
import yaml

from nodebench.analysis import claims, looks
from nodebench.analysis.aggregate import current_names


def main(sm) -> None:
    doc = yaml.safe_load(Path(sm.input.claims).read_text())
    runs = {scope: pd.read_parquet(path) for scope, path in zip(sm.params.scopes, sm.input.runs, strict=True)}
    # Claims this configuration does not plan the cells of are shown as not testable, with the reason.
    unresolved = dict(sm.params.unresolved)
    todo = [{**c, "untestable": unresolved[c["id"]]} if c["id"] in unresolved else c for c in doc["claims"]]
    outcomes = [current_names(json.loads(Path(f).read_text())) for f in sm.input.failures]
    floors = {scope: looks.stated_coverage(declared) for scope, declared in dict(sm.params.looks).items()}
    ledger = claims.with_stated_coverage(claims.ledger(todo, runs, outcomes), floors)
    ledger.to_parquet(sm.output.ledger, index=False)
    tally = ledger["verdict"].value_counts().to_dict()
    Path(sm.log[0]).write_text(f"{len(ledger)} claims from {len(runs)} scopes: {tally}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

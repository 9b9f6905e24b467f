"""write_ledger: reports/claims/index.md and index.html from the ledger's data."""

from pathlib import Path

import pandas as pd
import yaml

from nodebench.render import ledger


def main(sm) -> None:
    table = pd.read_parquet(sm.input.ledger)
    seeds = {str(k): v for k, v in (yaml.safe_load(Path(sm.input.claims).read_text()).get("seeds") or {}).items()}
    Path(sm.output.markdown).write_text(ledger.markdown(table, seeds))
    Path(sm.output.page).write_text(ledger.page(table, seeds))
    Path(sm.log[0]).write_text(f"{len(table)} claims -> {sm.output.markdown}, {sm.output.page}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

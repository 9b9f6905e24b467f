"""look: an adaptive block's look after n rounds, whether to stop there (nodebench.analysis.looks)."""

import json
from pathlib import Path

import yaml

from nodebench.analysis import looks
from nodebench.analysis.aggregate import iter_records, to_frame
from nodebench.analysis.metrics import RUN_COLUMNS


def main(sm) -> None:
    schema = yaml.safe_load(Path(sm.input.schema).read_text())
    runs = to_frame(iter_records(sm.input.records, schema), schema)
    runs = runs[[c for c in RUN_COLUMNS if c in runs]]
    found = looks.comparisons(runs, sm.params.ab or None, sm.params.headline)
    look = looks.decide(found, int(sm.wildcards.n), sm.params.looks, sm.params.half_width, sm.params.headline)
    look["block"] = sm.wildcards.block
    Path(sm.output.look).write_text(json.dumps(look, indent=1) + "\n")
    verdict = "stop" if look["stop"] else "go on"
    widest = "n/a" if look["widest"] is None else f"{look['widest'] * 100:.1f} %"
    line = (
        f"look after {look['rounds']} rounds of {sm.wildcards.block}: {look['comparisons']} comparisons, "
        f"widest half-width {widest} (target {look['half_width_target'] * 100:.1f} %): {verdict}"
        + (" (cap reached)" if look["capped"] else "")
    )
    print(f"nodebench: {line}", flush=True)
    Path(sm.log[0]).write_text(line + "\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""look: an adaptive block's look after n rounds, whether to stop there (nodebench.analysis.looks)."""

import json
from pathlib import Path

import yaml

from nodebench.analysis import claims, looks
from nodebench.analysis.aggregate import iter_records, to_frame
from nodebench.analysis.metrics import RUN_COLUMNS


def main(sm) -> None:
    schema = yaml.safe_load(Path(sm.input.schema).read_text())
    runs = to_frame(iter_records(sm.input.records, schema), schema)
    n = int(sm.wildcards.n)
    if sm.params.stop_on == "claims":
        # Each claim that reads this block: its half-width against half its tolerance (claims.stopping_widths).
        found = claims.stopping_widths(sm.params.claims, runs)
        # Not waited for: invalid claims, and claims the rounds left cannot narrow enough (looks.decide_claims).
        look = looks.decide_claims(found, n, sm.params.looks, sm.params.headline)
        look["claims_digest"] = sm.params.claims_digest
        aside = [f"{len(look[k])} {what}" for k, what in (("invalid", "invalid"), ("beyond_reach", "beyond reach at "
                 "the cap")) if look[k]]  # fmt: skip
        what = (
            f"{look['comparisons']} claims waited for, {len(look['wider_than_target'])} with a half-width above half "
            f"their tolerance" + (f" ({', '.join(aside)}: not waited for)" if aside else "")
        )
    else:
        runs = runs[[c for c in RUN_COLUMNS if c in runs]]
        found = looks.comparisons(runs, sm.params.ab or None, sm.params.headline)
        look = looks.decide(found, n, sm.params.looks, sm.params.half_width, sm.params.headline)
        widest = "n/a" if look["widest"] is None else f"{look['widest'] * 100:.1f} %"
        what = (
            f"{look['comparisons']} comparisons, widest half-width {widest} "
            f"(target {look['half_width_target'] * 100:.1f} %)"
        )
    look["stop_on"] = sm.params.stop_on
    look["block"] = sm.wildcards.block
    Path(sm.output.look).write_text(json.dumps(look, indent=1) + "\n")
    verdict = "stop" if look["stop"] else "go on"
    line = f"look after {look['rounds']} rounds of {sm.wildcards.block}: {what}: {verdict}" + (
        " (cap reached)" if look["capped"] else ""
    )
    print(f"nodebench: {line}", flush=True)
    Path(sm.log[0]).write_text(line + "\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

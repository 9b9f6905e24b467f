"""check_ab_threshold: CI's gate on the A/B target (config's compare.fail_above). Runs after the A/B's report and
results are written; fails the job, and so the invocation, where B's whole interval lies above the threshold
(nodebench.analysis.ab.threshold_check), with one line per comparison on stderr."""

import sys
from pathlib import Path

import pandas as pd

from nodebench.analysis import ab


def main(sm) -> None:
    failed, lines = ab.threshold_check(pd.read_parquet(sm.input.ab), sm.params.fail_above)
    text = "".join(f"nodebench: {line}\n" for line in lines)
    if failed:
        text += f"nodebench: the A/B report is written: {sm.input.page} ({sm.input.results})\n"
    sys.stderr.write(text)
    Path(sm.log[0]).write_text(text)
    if failed:
        # A target that failed its check lists nothing: the next run checks again without a stale manifest to drop.
        Path(sm.params.manifest).unlink(missing_ok=True)
        sys.exit(1)
    Path(sm.output.check).write_text(text)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

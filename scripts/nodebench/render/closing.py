"""What a run prints as it ends: each report it wrote, where it is, and its first lines (the answer at a glance)."""

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path


def glance(inputs: Mapping[str, str], scope: str) -> list[str]:
    """A report's answer at a glance, from the tables its summary was written from (targets.summary_inputs), without
    emphasis marks: the main matrix's and a workload's glance lines; an experiment's first list (its answers)."""
    # Imported here: the Snakefile imports this module, and a dry run should not pay for pandas and the renderers.
    import pandas as pd

    from nodebench.render import experiment_report, markdown
    from nodebench.render.document import Items

    if "stopping" in inputs:
        tables = experiment_report.read_inputs(inputs)
        report = experiment_report.blocks(scope, "", generated_at=datetime.now(UTC), **tables)
        lines = next((b.items for b in report if isinstance(b, Items) and b.items), [])
    else:
        lines = markdown.glance(pd.read_parquet(inputs["metrics"]))
    return [line.replace("**", "") for line in lines]


def closing_lines(reports: Path, since: float, glance_of: Callable[[str], list[str]]) -> list[str]:
    """For every reports/<scope>/summary.md written at or after `since` (a time.time()), the page's path and the
    scope's answer at a glance, glance_of(scope); nothing when no report was written (a run that only measured, or
    had nothing to do). A glance that cannot be computed, whatever the error, says why in one line and the report's
    path is still printed: these lines run after every job succeeded and must not turn that into a failure."""
    out = []
    for summary in sorted(reports.glob("*/summary.md")):
        if summary.stat().st_mtime < since:
            continue
        page = summary.with_name("index.html")
        out.append(f"report: {page if page.exists() else summary}")
        try:
            lines = glance_of(summary.parent.name)
        except Exception as e:  # these lines only echo the report: a failure here must not fail the run
            lines = [f"(its answer at a glance could not be computed: {type(e).__name__}: {e})"]
        out += [f"  {line}" for line in lines]
    return out

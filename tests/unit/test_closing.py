"""The lines a run prints as it ends: each report it wrote, and its answer at a glance from the tables."""

import os
from pathlib import Path

from nodebench.render import closing


def test_only_the_reports_written_since_the_start_are_announced_each_with_its_glance(tmp_path: Path):
    for scope in ("old", "new", "broken"):
        (tmp_path / scope).mkdir()
        (tmp_path / scope / "summary.md").write_text("# anything: this file is not read\n")
    os.utime(tmp_path / "old" / "summary.md", (1000, 1000))
    (tmp_path / "new" / "index.html").write_text("<html></html>")

    def glance_of(scope: str) -> list[str]:
        if scope == "broken":
            raise KeyError("data/broken/metrics.parquet")
        return [f"{scope}: cheapest by median fastify"]

    lines = closing.closing_lines(tmp_path, since=2000, glance_of=glance_of)
    assert lines == [
        f"report: {tmp_path / 'broken' / 'summary.md'}",
        "  (its answer at a glance could not be computed: KeyError: 'data/broken/metrics.parquet')",
        f"report: {tmp_path / 'new' / 'index.html'}",
        "  new: cheapest by median fastify",
    ]


def test_any_error_in_a_glance_is_one_line_and_never_fails_the_run(tmp_path: Path):
    (tmp_path / "overall").mkdir()
    (tmp_path / "overall" / "summary.md").write_text("")

    def broken(scope: str) -> list[str]:
        raise ZeroDivisionError("division by zero")

    assert closing.closing_lines(tmp_path, since=0, glance_of=broken)[1] == (
        "  (its answer at a glance could not be computed: ZeroDivisionError: division by zero)"
    )


def test_the_glance_is_the_summarys_first_list_computed_from_its_tables(tmp_path: Path):
    from datetime import UTC, datetime

    from test_render import known_ratio_runs

    from nodebench.analysis import metrics
    from nodebench.render import markdown

    runs = known_ratio_runs()
    cells = metrics.compute_metrics(runs)
    scores = metrics.geomean_scores(cells)
    inputs = {}
    for name, table in (("runs", runs), ("metrics", cells), ("scores", scores)):
        inputs[name] = str(tmp_path / f"{name}.parquet")
        table.to_parquet(inputs[name])
    summary = markdown.render(runs, cells, scores, datetime.now(UTC))
    first = next(part for part in summary.split("\n\n") if part.startswith("- **"))
    expected = [line.removeprefix("- ").replace("**", "") for line in first.splitlines()]
    assert closing.glance(inputs, "overall") == expected and len(expected) >= 1

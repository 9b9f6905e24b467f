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
        "  (its answer at a glance could not be read: 'data/broken/metrics.parquet')",
        f"report: {tmp_path / 'new' / 'index.html'}",
        "  new: cheapest by median fastify",
    ]

"""What a run prints as it ends: each report it wrote, where it is, and its first lines (the answer at a glance)."""

import re
from pathlib import Path

#: A summary's answer at a glance: the first bullet list after its title (render/markdown.py, glance()).
BULLET = re.compile(r"^[-*] (.*)$")


def glance_lines(summary: Path) -> list[str]:
    """The first bullet list of a summary.md, without its markdown emphasis; [] where it has none."""
    lines, started = [], False
    for line in summary.read_text(encoding="utf-8").splitlines():
        m = BULLET.match(line)
        if m:
            started = True
            lines.append(m.group(1).replace("**", ""))
        elif started:
            break
    return lines


def closing_lines(reports: Path, since: float) -> list[str]:
    """For every reports/<scope>/summary.md written at or after `since` (a time.time()), the page's path and the
    summary's first lines; nothing when no report was written (a run that only measured, or had nothing to do)."""
    out = []
    for summary in sorted(reports.glob("*/summary.md")):
        if summary.stat().st_mtime < since:
            continue
        page = summary.with_name("index.html")
        out.append(f"report: {page if page.exists() else summary}")
        out += [f"  {line}" for line in glance_lines(summary)]
    return out

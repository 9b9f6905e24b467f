"""A run after a hard kill: manifests that name files which no longer exist are false, and are removed.

Snakemake rebuilds a missing file only for a job that has to run anyway: when a job that
re-measures a cell is killed (kill -9, a reboot) after Snakemake removed the cell's old
record, the manifests and tables after it are still newer than everything that exists,
so the next run finds "Nothing to be done" and the manifest lists a record that is gone.
Removing such a manifest makes its own job due; Snakemake then rebuilds every missing
file it lists (the record: the cell is measured again) and everything after it.
"""

import os
from pathlib import Path


def missing_files(manifest: Path, exists=os.path.exists) -> list[str]:
    """The files a manifest lists that do not exist (relative to the working directory, as listed)."""
    try:
        lines = Path(manifest).read_text().splitlines()
    except OSError:
        return []
    return [line for line in (raw.strip() for raw in lines) if line and not exists(line)]


def drop_false_manifests(manifests, say=lambda line: None) -> list[Path]:
    """Remove each existing manifest that lists a missing file; returns those removed."""
    seen: dict[str, bool] = {}

    def exists(path: str) -> bool:
        if path not in seen:
            seen[path] = os.path.exists(path)
        return seen[path]

    removed = []
    for manifest in map(Path, manifests):
        if not manifest.is_file():
            continue
        missing = missing_files(manifest, exists)
        if not missing:
            continue
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        try:
            manifest.unlink()
        except OSError as e:
            say(f"{manifest} lists {missing[0]}{more}, which does not exist, and cannot be removed: {e}")
            continue
        say(
            f"{manifest} listed {missing[0]}{more}, which does not exist (a job killed while it re-measured, "
            "or a file removed by hand): removed it, so that this run rebuilds what it lists"
        )
        removed.append(manifest)
    return removed

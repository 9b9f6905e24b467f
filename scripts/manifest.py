"""reports/all: one line per file the run produced."""

from pathlib import Path


def manifest_lines(paths) -> list[str]:
    """Sorted, de-duplicated paths, one per line."""
    return sorted({str(Path(p)) for p in paths})


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    lines = manifest_lines(list(sm.input))
    Path(sm.output.manifest).write_text("\n".join(lines) + "\n")
    Path(sm.log[0]).write_text(f"{len(lines)} files listed in {sm.output.manifest}\n")

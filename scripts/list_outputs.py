"""list_outputs: a scope's manifest, one line per file the run produced."""

from pathlib import Path


def manifest_lines(paths) -> list[str]:
    """Sorted, de-duplicated paths, one per line."""
    return sorted({str(Path(p)) for p in paths})


def main(sm) -> None:
    lines = manifest_lines(list(sm.input.outputs))
    Path(sm.output.manifest).write_text("\n".join(lines) + "\n")
    Path(sm.log[0]).write_text(f"{len(lines)} files listed in {sm.output.manifest}\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""probe_node: describe the pipeline's own Node.js (config's `node`): path, exact version, checksum."""

import json
import sys
from pathlib import Path

from nodebench.harness.errors import ToolchainError
from nodebench.harness.nodejs import probe


def main(sm) -> None:
    try:
        info = probe(sm.config["node"])
    except ToolchainError as e:
        print(f"[probe] FAILED: {e}", file=sys.stderr, flush=True)
        Path(sm.log[0]).write_text(f"{e}\n")
        raise SystemExit(1) from None
    Path(sm.log[0]).write_text(json.dumps(info) + "\n")
    Path(sm.output[0]).write_text(json.dumps(info, indent=1) + "\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

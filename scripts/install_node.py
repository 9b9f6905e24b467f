"""install_node: one Node.js major from npm into data/toolchain/node<major>/ and its description beside it."""

import json
import sys
from pathlib import Path

from nodebench.harness.errors import ToolchainError
from nodebench.harness.node_install import install


def main(sm) -> None:
    major = sm.wildcards.major
    with open(sm.log[0], "w") as log:

        def say(line):
            print(line, file=log, flush=True)
            print(f"[node {major}] {line}", file=sys.stderr, flush=True)

        try:
            info = install(major, Path(sm.output.binary).parent.parent, log=say)
        except ToolchainError as e:
            say(f"FAILED: {e}")
            raise SystemExit(1) from None
    Path(sm.output.info).write_text(json.dumps(info, indent=1) + "\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

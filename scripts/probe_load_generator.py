"""probe_load_generator: fail at once, with the install instruction, when a load generator a run needs is missing."""

import json
import sys

from nodebench.harness.errors import RunError
from nodebench.harness.loadgen import program_path, program_version


def main(sm) -> None:
    name = sm.wildcards.client
    try:
        info = {"client": name, "program": program_path(name), "version": program_version(name)}
    except RunError as e:
        print(f"[probe] FAILED: {e}", file=sys.stderr, flush=True)
        with open(sm.log[0], "w") as log:
            print(e, file=log)
        raise SystemExit(1) from None
    with open(sm.log[0], "w") as log:
        print(json.dumps(info), file=log)
    with open(sm.output[0], "w") as out:
        json.dump(info, out, indent=1)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

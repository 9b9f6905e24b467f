"""Fail at once, with the install instruction, when a load generator a run needs is missing."""

import json
import shutil
import sys

import loadgen
from records import RunError

if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    name = sm.wildcards.loadgen
    try:
        version = loadgen.program_version(name)
    except RunError as e:
        print(f"[probe] FAILED: {e}", file=sys.stderr, flush=True)
        with open(sm.log[0], "w") as log:
            print(e, file=log)
        raise SystemExit(1) from None
    info = {"load_generator": name, "program": shutil.which(loadgen.PROGRAMS[name]), "version": version}
    with open(sm.log[0], "w") as log:
        print(json.dumps(info), file=log)
    with open(sm.output[0], "w") as out:
        json.dump(info, out, indent=1)

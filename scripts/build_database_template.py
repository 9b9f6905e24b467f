"""build_database_template: the stopped PostgreSQL cluster every measurement copies."""

import json
from pathlib import Path

from nodebench.harness import procs
from nodebench.harness.database import build_template
from nodebench.harness.errors import DatabaseError


def main(sm) -> None:
    procs.unwind_on_signals()
    with open(sm.log[0], "w") as logf:

        def log(msg):
            print(msg, file=logf, flush=True)

        try:
            info = build_template(
                Path(sm.output.template), int(sm.params.rows), Path(sm.input.schema).read_text(), sm.params.run_as, log
            )
        except DatabaseError as e:
            log(f"error: {e}")
            raise SystemExit(f"build_database_template: {e}") from None
        Path(sm.output.info).write_text(json.dumps(info, indent=2) + "\n")
        log(json.dumps(info))


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

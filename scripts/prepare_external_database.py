"""prepare_external_database: apply the schema and seed on database.dsn and check its query counter."""

import json
from pathlib import Path

from nodebench.harness.database import prepare_external
from nodebench.harness.errors import DatabaseError


def main(sm) -> None:
    # The DSN from config, not params: params are stored in .snakemake/metadata, so they hold it without its password.
    try:
        info = prepare_external(sm.config["database"]["dsn"], Path(sm.input.schema).read_text(), int(sm.params.rows))
    except DatabaseError as e:
        Path(sm.log[0]).write_text(f"error: {e}\n")
        raise SystemExit(f"prepare_external_database: {e}") from None
    Path(sm.output.info).write_text(json.dumps(info, indent=2) + "\n")
    Path(sm.log[0]).write_text(json.dumps(info) + "\n")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""Use an existing PostgreSQL (database.dsn): apply the schema and seed, check the counter exists."""

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from build_template import load_users
from pgcluster import DatabaseError


def redacted(dsn: str) -> str:
    """The DSN without its password, for logs and records."""
    params = conninfo_to_dict(dsn)
    params.pop("password", None)
    return make_conninfo(**params)


def prepare(dsn: str, schema_sql: str, rows: int) -> dict:
    """Load the users table if needed and prove pg_stat_statements is readable."""
    try:
        load_users(dsn, schema_sql, rows)
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            try:
                conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
            except psycopg.Error as e:
                raise SystemExit(
                    f"the database at {redacted(dsn)} has no readable pg_stat_statements ({e.diag.message_primary}); "
                    "measurement jobs need it to prove the queries ran: set "
                    "shared_preload_libraries = 'pg_stat_statements' and run CREATE EXTENSION pg_stat_statements"
                ) from None
    except psycopg.OperationalError as e:
        raise SystemExit(f"cannot connect to database.dsn {redacted(dsn)}: {e}") from None
    except psycopg.Error as e:
        raise SystemExit(f"database.dsn {redacted(dsn)}: {e}") from None
    except DatabaseError as e:
        raise SystemExit(f"database.dsn {redacted(dsn)}: {e}") from None
    return {
        "mode": "dsn",
        "dsn": redacted(dsn),
        "server_version": version,
        "rows": rows,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    info = prepare(sm.params.dsn, Path(sm.input.schema).read_text(), int(sm.params.rows))
    Path(sm.output.info).write_text(json.dumps(info, indent=2) + "\n")
    Path(sm.log[0]).write_text(json.dumps(info) + "\n")

"""Build the database template once: a stopped PostgreSQL cluster with the schema and the seed."""

import hashlib
import json
import shutil
import signal
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

import pgcluster
import procs
import seed

SPOT_CHECK_IDS = (1, 2, 4242)
# Minimal WAL while loading: COPY into a table truncated in the same transaction
# writes no WAL, so the template carries no bulk of WAL segments.
TEMPLATE_SETTINGS = {"wal_level": "minimal", "max_wal_senders": 0, "min_wal_size": "2MB", "max_wal_size": "64MB"}


def load_users(conninfo: str, schema_sql: str, rows: int) -> None:
    """Apply the schema and (re)load rows 1..rows with COPY if the table does not already hold them."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(schema_sql)
        if users_match(conn, rows):
            return
        held = conn.execute("SELECT count(*) FROM users").fetchone()[0]
        if held:
            raise pgcluster.DatabaseError(
                f"the users table already holds {held} rows that are not the benchmark's seed of {rows}; "
                "refusing to overwrite them: point database.dsn at a database of its own"
            )
        with conn.transaction():
            conn.execute("TRUNCATE users")
            with conn.cursor().copy(f"COPY users ({', '.join(seed.COLUMNS)}) FROM STDIN") as copy:
                for row in seed.user_rows(rows):
                    copy.write_row(row)
        conn.execute("ANALYZE users")
        if not users_match(conn, rows):
            raise pgcluster.DatabaseError("the users table does not hold the seeded rows after loading them")


def users_match(conn: psycopg.Connection, rows: int) -> bool:
    """True when the table holds exactly rows 1..rows and the spot-checked rows equal the seed."""
    count, max_id = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM users").fetchone()
    if count != rows or max_id != rows:
        return False
    for i in (i for i in (*SPOT_CHECK_IDS, rows) if i <= rows):
        got = conn.execute("SELECT row_to_json(u) FROM users u WHERE id = %s", (i,)).fetchone()
        if got is None or got[0] != seed.user_row(i):
            return False
    return True


def build_template(template_dir: Path, rows: int, schema_sql: str, run_as: str, log) -> dict:
    """Initialise a cluster in scratch space, load it, stop it cleanly and copy it to template_dir."""
    user = pgcluster.run_as_account(run_as)
    scratch = Path(tempfile.mkdtemp(prefix="nodebench-template-"))
    proc = None
    try:
        pgcluster.hand_over(scratch, user)
        install = pgcluster.usable_install(user, scratch)
        datadir = scratch / "pgdata"
        log(f"initdb {datadir} (binaries {install.root}, account {user or 'self'})")
        pgcluster.initdb(install, datadir)
        port = procs.free_port()
        pglog = scratch / "postgres.log"
        pgcluster.hand_over(scratch, user)
        proc = pgcluster.start(install, datadir, port, TEMPLATE_SETTINGS, pglog)
        pgcluster.wait_ready(proc, port, pglog)
        with psycopg.connect(pgcluster.conninfo(port), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {pgcluster.APP_ROLE} LOGIN")
            conn.execute(f"CREATE DATABASE {pgcluster.APP_DB} OWNER {pgcluster.APP_ROLE} STRATEGY FILE_COPY")
        with psycopg.connect(pgcluster.conninfo(port, dbname=pgcluster.APP_DB), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        t0 = time.monotonic()
        load_users(pgcluster.conninfo(port, pgcluster.APP_ROLE, pgcluster.APP_DB), schema_sql, rows)
        log(f"loaded {rows} rows in {time.monotonic() - t0:.1f} s")
        with psycopg.connect(pgcluster.conninfo(port), autocommit=True) as conn:
            server_version = conn.execute("SHOW server_version").fetchone()[0]
            # Two checkpoints around a segment switch let PostgreSQL drop the loading WAL.
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
        pgcluster.stop(proc)
        if proc.returncode != 0:
            raise pgcluster.DatabaseError(f"PostgreSQL did not stop cleanly:\n{pgcluster.log_tail(pglog)}")
        if template_dir.exists():
            shutil.rmtree(template_dir)
        shutil.copytree(datadir, template_dir, symlinks=True, ignore=shutil.ignore_patterns("postmaster.opts"))
        return {
            "mode": "embedded",
            "server_version": server_version,
            "rows": rows,
            "schema_sha256": hashlib.sha256(schema_sql.encode()).hexdigest(),
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    finally:
        pgcluster.stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__" and "snakemake" in globals():
    # SIGTERM (Snakemake, scancel) unwinds like Ctrl-C, so the scratch cluster is stopped and removed.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    sm = snakemake  # noqa: F821
    with open(sm.log[0], "w") as logf:

        def log(msg):
            print(msg, file=logf, flush=True)

        try:
            info = build_template(
                Path(sm.output.template), int(sm.params.rows), Path(sm.input.schema).read_text(), sm.params.run_as, log
            )
        except pgcluster.DatabaseError as e:
            log(f"error: {e}")
            raise SystemExit(f"build_database_template: {e}") from None
        Path(sm.output.info).write_text(json.dumps(info, indent=2) + "\n")
        log(json.dumps(info))

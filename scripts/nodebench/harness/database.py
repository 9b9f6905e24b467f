"""The database a run uses: the template built once, a private copy per job, or an existing server (DSN)."""

import hashlib
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from nodebench.harness import pgcluster, procs, seed
from nodebench.harness.errors import DatabaseError, RunError

SPOT_CHECK_IDS = (1, 2, 4242)
# Minimal WAL while loading: COPY into a table truncated in the same transaction
# writes no WAL, so the template carries no bulk of WAL segments.
TEMPLATE_SETTINGS = {
    "wal_level": "minimal",
    "max_wal_senders": 0,
    "min_wal_size": "2MB",
    "max_wal_size": "64MB",
    # Remove WAL segments a checkpoint no longer needs instead of keeping them for reuse: every job
    # copies the template, and recycled segments would be most of it.
    "wal_recycle": "off",
}


def load_users(conninfo: str, schema_sql: str, rows: int) -> None:
    """Apply the schema and (re)load rows 1..rows with COPY if the table does not already hold them."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(schema_sql)
        if users_match(conn, rows):
            return
        held = conn.execute("SELECT count(*) FROM users").fetchone()[0]
        if held:
            raise DatabaseError(
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
            raise DatabaseError("the users table does not hold the seeded rows after loading them")


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
        log(f"initdb {datadir} (binaries {install.root}, account {user or 'self'}, {pgcluster.AUTH_METHOD})")
        # Passwords for the build only: each job sets its own on its copy (pgcluster.JobCluster).
        admin_pw, app_pw = pgcluster.new_password(), pgcluster.new_password()
        pgcluster.initdb(install, datadir, admin_pw)
        port = procs.free_port()
        pglog = scratch / "postgres.log"
        pgcluster.hand_over(scratch, user)
        proc = pgcluster.start(install, datadir, port, TEMPLATE_SETTINGS, pglog)
        pgcluster.wait_ready(proc, port, pglog, admin_pw)
        superuser = pgcluster.conninfo(port, password=admin_pw)
        with psycopg.connect(superuser, autocommit=True) as conn:
            role = sql.Identifier(pgcluster.APP_ROLE)
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, pgcluster.scram_verifier(app_pw)))
            conn.execute(f"CREATE DATABASE {pgcluster.APP_DB} OWNER {pgcluster.APP_ROLE} STRATEGY FILE_COPY")
        bench_db = pgcluster.conninfo(port, dbname=pgcluster.APP_DB, password=admin_pw)
        with psycopg.connect(bench_db, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        t0 = time.monotonic()
        load_users(pgcluster.conninfo(port, pgcluster.APP_ROLE, pgcluster.APP_DB, password=app_pw), schema_sql, rows)
        log(f"loaded {rows} rows in {time.monotonic() - t0:.1f} s")
        with psycopg.connect(superuser, autocommit=True) as conn:
            server_version = conn.execute("SHOW server_version").fetchone()[0]
        with psycopg.connect(bench_db, autocommit=True) as conn:
            # Every job copies the whole cluster, so it keeps only what a job connects to: the app's
            # database (40 % less to copy and remove: 32 MB instead of 54; pgcluster connects to it).
            for name in ("template0", "template1", "postgres"):
                conn.execute(f"ALTER DATABASE {name} IS_TEMPLATE false")
                conn.execute(f"DROP DATABASE {name}")
            # Two checkpoints around a segment switch let PostgreSQL drop the loading WAL.
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
        pgcluster.stop(proc)
        if proc.returncode != 0:
            raise DatabaseError(f"PostgreSQL did not stop cleanly:\n{pgcluster.log_tail(pglog)}")
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


def redacted_dsn(dsn: str) -> str:
    """The DSN without its password, for records and logs."""
    params = conninfo_to_dict(dsn)
    params.pop("password", None)
    return make_conninfo(**params)


def prepare_external(dsn: str, schema_sql: str, rows: int) -> dict:
    """database.dsn: load the users table if needed and prove pg_stat_statements is readable."""
    where = redacted_dsn(dsn)
    try:
        load_users(dsn, schema_sql, rows)
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            try:
                conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
            except psycopg.Error as e:
                raise DatabaseError(
                    f"the database at {where} has no readable pg_stat_statements ({e.diag.message_primary}); "
                    "measurement jobs need it to prove the queries ran: set "
                    "shared_preload_libraries = 'pg_stat_statements' and run CREATE EXTENSION pg_stat_statements"
                ) from None
    except psycopg.OperationalError as e:
        raise DatabaseError(f"cannot connect to database.dsn {where}: {e}") from None
    except psycopg.Error as e:
        raise DatabaseError(f"database.dsn {where}: {e}") from None
    except DatabaseError as e:
        raise DatabaseError(f"database.dsn {where}: {e}") from None
    return {
        "mode": "dsn",
        "dsn": where,
        "server_version": version,
        "rows": rows,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# libpq connection keywords and the environment variables node-postgres (and libpq) read.
DSN_ENV = {
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
    "dbname": "PGDATABASE",
    "user": "PGUSER",
    "password": "PGPASSWORD",
    "passfile": "PGPASSFILE",
    "sslmode": "PGSSLMODE",
    "options": "PGOPTIONS",
    "application_name": "PGAPPNAME",
    "connect_timeout": "PGCONNECT_TIMEOUT",
}


def dsn_environment(dsn: str, environ) -> dict:
    """The servers' database environment for a DSN: the user's PG* variables and HOME, then the DSN's keys."""
    env = {k: v for k, v in environ.items() if k.startswith("PG") or k == "HOME"}
    for key, value in conninfo_to_dict(dsn).items():
        if key not in DSN_ENV:
            raise RunError(f"database.dsn uses {key!r}, which the servers' driver cannot be given; remove it")
        env[DSN_ENV[key]] = str(value)
    return env

"""Why a job is not a result: each error's message is what the user reads.

`transient` says whether a second attempt of the job may succeed (workflow/rules/measure.smk
retries a measurement once): a process that did not start, a port or a database that was not
there, yes; a failed check of what the server answered or of the measured window, no: that is
a result about the server, and another try must not turn it into a pass.
"""


class RunError(RuntimeError):
    """A measurement that is not a result: the job fails with this message."""

    transient = False


class StartError(RunError):
    """The server or the load generator did not come up."""

    transient = True


class DatabaseError(RuntimeError):
    """PostgreSQL could not be prepared, started or reached."""

    transient = True


class DatabaseShutDown(DatabaseError):
    """The job's PostgreSQL was shut down while the job used it (SQLSTATE 57P01, admin_shutdown): only a stop
    does that, a Ctrl-C or a signal sent to the job's process group, and another attempt would measure on in spite of
    it. The user reruns."""

    transient = False


#: PostgreSQL's SQLSTATE for "terminating connection due to administrator command".
ADMIN_SHUTDOWN = "57P01"


def database_error(exc: BaseException, own_cluster: bool = True) -> DatabaseError:
    """A psycopg error as the job's error: a shutdown of the job's own cluster is not retried (only a stop shuts it
    down), anything else may be, a shutdown of a user's server (database.dsn: a restart, a failover) among them."""
    if own_cluster and getattr(exc, "sqlstate", None) == ADMIN_SHUTDOWN:
        return DatabaseShutDown(f"the database was shut down while the job used it (a Ctrl-C or a stop): {exc}")
    return DatabaseError(f"database error: {exc}")


class PortInUseError(RuntimeError):
    """Something is already listening on the port a job wanted."""

    transient = True


class StorageError(RuntimeError):
    """A job cannot write where its output goes (read-only, full, no permission): fix that, then rerun."""

    transient = False


class ToolchainError(RuntimeError):
    """A Node.js version cannot be installed or described: the message says which and why."""

    transient = False

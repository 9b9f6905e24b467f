"""Why a job is not a result: each error's message is what the user reads."""


class RunError(RuntimeError):
    """A measurement that is not a result: the job fails with this message."""


class DatabaseError(RuntimeError):
    """PostgreSQL could not be prepared, started or reached."""


class PortInUseError(RuntimeError):
    """Something is already listening on the port a job wanted."""

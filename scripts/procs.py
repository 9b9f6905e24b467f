"""Child processes that cannot outlive the job: pinned, tied to their parent, stopped on every path."""

import ctypes
import os
import pwd
import signal
import socket
import subprocess
import time

import psutil

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


class PortInUseError(RuntimeError):
    """Something is already listening on the port a job wanted."""


def split_cpus(cpus: list[int]) -> tuple[list[int], list[int]]:
    """Server gets the first CPU of the job's mask, the load generator and database the rest."""
    cpus = sorted(cpus)
    if not cpus:
        raise ValueError("the job's CPU affinity mask is empty")
    if len(cpus) == 1:
        return cpus, cpus
    return cpus[:1], cpus[1:]


def job_cpus() -> list[int]:
    """The CPUs this process may run on (SLURM, taskset and cgroups narrow it)."""
    return sorted(os.sched_getaffinity(0))


def spawn(args, *, cpus=None, deathsig=signal.SIGTERM, user=None, **kwargs) -> subprocess.Popen:
    """Start a process pinned to cpus that gets deathsig if this process dies."""

    def setup():
        _libc.prctl(_PR_SET_PDEATHSIG, int(deathsig))
        if cpus:
            os.sched_setaffinity(0, cpus)

    if user is not None:
        entry = pwd.getpwnam(user)
        kwargs.update(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    return subprocess.Popen(args, preexec_fn=setup, **kwargs)


def stop(proc: subprocess.Popen | None, sig=signal.SIGTERM, timeout: float = 5.0) -> int | None:
    """Send sig, wait up to timeout, then SIGKILL; returns the exit status."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            pass
    return proc.wait()


def free_ports(count: int) -> list[int]:
    """Distinct loopback TCP ports that nothing listened on a moment ago.

    The sockets are held open together, so the kernel cannot hand out one port twice
    (asking one at a time can return the same port to the server and the database).
    """
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One free loopback TCP port."""
    return free_ports(1)[0]


def listener_on(port: int) -> str | None:
    """Describe the process listening on 127.0.0.1:port, or None if the port is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        if s.connect_ex(("127.0.0.1", port)) != 0:
            return None
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                p = psutil.Process(conn.pid)
                return f"pid {conn.pid} ({' '.join(p.cmdline())[:120]})"
            except psutil.Error:
                return f"pid {conn.pid}"
    return "an unknown process"


def require_free_port(port: int) -> int:
    """Raise PortInUseError naming the owner if something listens on port."""
    owner = listener_on(port)
    if owner is not None:
        raise PortInUseError(
            f"port {port} on 127.0.0.1 is already in use by {owner}; "
            "stop it or set server_port: 0 to let the job pick a free port"
        )
    return port


def wait_for(predicate, timeout: float, interval: float = 0.02, what: str = "condition"):
    """Poll predicate until it returns a truthy value or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)

"""Child processes that cannot outlive the job: pinned, tied to their parent, stopped on every path."""

import ctypes
import fcntl
import os
import pwd
import resource
import select
import signal
import socket
import subprocess
import time
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

from nodebench.harness.errors import PortInUseError, RunError

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def split_cpus(cpus: list[int]) -> tuple[list[int], list[int]]:
    """Server gets the first CPU of the job's mask, the load generator and database the rest."""
    cpus = sorted(cpus)
    if not cpus:
        raise ValueError("the job's CPU affinity mask is empty")
    if len(cpus) == 1:
        return cpus, cpus
    return cpus[:1], cpus[1:]


def pin(pid: int, cpus: list[int]) -> None:
    """Move every thread of a running process onto cpus (threads it starts later inherit that).

    The thread list is read again until a pass finds every thread already there, so a
    thread started while the first pass ran is not left behind; RunError if it never settles.
    """
    want = set(cpus)
    for _ in range(10):
        moved = 0
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            raise RunError(f"process {pid} exited before it could be pinned to CPUs {cpus}") from None
        for tid in tids:
            try:
                if os.sched_getaffinity(int(tid)) != want:
                    os.sched_setaffinity(int(tid), cpus)
                    moved += 1
            except ProcessLookupError:  # a thread that ended meanwhile
                pass
        if not moved:
            return
    raise RunError(f"process {pid} kept starting threads while it was pinned to CPUs {cpus}")


def threads_off(pid: int, cpus: list[int]) -> dict[int, list[int]]:
    """The threads of a process that may run elsewhere than cpus: {thread id: its CPUs}."""
    off = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with suppress(ProcessLookupError):
            allowed = os.sched_getaffinity(int(tid))
            if not allowed <= set(cpus):
                off[int(tid)] = sorted(allowed)
    return off


def _ppid_map() -> dict[int, int]:
    """Every process's parent, from /proc (a process that ends meanwhile is left out)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                found[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    return found


def _is_snakemake(pid: int) -> bool:
    with suppress(OSError):
        return b"snakemake" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def _may_undo_idle(tid: int) -> bool:
    """Whether this process may give a thread its ordinary scheduling back after SCHED_IDLE: Linux lets an
    unprivileged thread leave SCHED_IDLE only where RLIMIT_NICE covers its nice value (sched_setscheduler(2))."""
    if os.geteuid() == 0:
        return True
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    with suppress(OSError):
        return soft == resource.RLIM_INFINITY or 20 - os.getpriority(os.PRIO_PROCESS, tid) <= soft
    return False


@contextmanager
def workflow_off(cpus: list[int], log=lambda line: None):
    """Keep the workflow that started this job from taking CPU time the server or the client wants while it measures.

    Snakemake (its scheduler thread and the threads it starts for jobs), the shell between it and this job and any
    job it runs beside this one are ordinary tasks on any CPU. Measured on this machine (2026-12-05, the first round
    of the cost curve, 240 jobs planned, 20 open-loop runs each way; docs/measurement.md): Snakemake's own process
    took 5.6 % of a CPU, and the server's CPU spent a median 8.5 % of each open-loop window on other tasks (stolen
    share 0.040, 16 of 20 runs disturbed). Moved off the server's CPUs, that time landed on the open-loop client's
    CPU, where the client spins between sends: its lateness (lag p99) rose to a median 2.1 ms and it refused the
    latencies of 18 of 20 runs. Made SCHED_IDLE on any CPU, it ran in the server's idle time: client lag p99 0.13 ms,
    but the server's CPU 8.9 % others' time, stolen share 0.010. Both at once: the server's CPU 1.9 % others' time,
    stolen share 0.004, client lag p99 0.17 ms.

    So every thread of those processes is made SCHED_IDLE (it runs only where nothing else wants the CPU, and a
    waking client takes the CPU from it at once) and moved off `cpus` for the measurement, and gets both back
    after. Where Linux would not give the policy back (an unprivileged user whose RLIMIT_NICE does not cover it),
    the thread is only moved. Threads and jobs started meanwhile inherit either; this job's own processes (server,
    client, database) are not touched. Without a Snakemake among this job's first ancestors (a job run by hand),
    nothing is done. Yields (threads made idle, threads moved)."""
    parents = _ppid_map()
    chain, pid = [], os.getppid()
    while pid > 1 and len(chain) < 6:
        chain.append(pid)
        if _is_snakemake(pid):
            break
        pid = parents.get(pid, 0)
    if not chain or not _is_snakemake(chain[-1]):
        yield (0, 0)
        return
    root, me = chain[-1], os.getpid()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    workflow, todo = [], [root]
    while todo:
        p = todo.pop()
        if p == me:  # this job's own subtree: the server, the client and the database stay where the job put them
            continue
        workflow.append(p)
        todo += children.get(p, [])
    off = set(cpus)
    policies: dict[int, int] = {}
    masks: dict[int, set[int]] = {}
    for p in workflow:
        with suppress(OSError):
            for tid in map(int, os.listdir(f"/proc/{p}/task")):
                with suppress(OSError):
                    policy = os.sched_getscheduler(tid)
                    if policy in (os.SCHED_OTHER, os.SCHED_BATCH) and _may_undo_idle(tid):
                        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                        policies[tid] = policy
                    mask = os.sched_getaffinity(tid)
                    if mask - off and mask & off:
                        os.sched_setaffinity(tid, mask - off)
                        masks[tid] = mask
    log(
        f"kept the workflow from the measurement's CPU time: {len(policies)} threads of {len(workflow)} processes"
        f" made SCHED_IDLE, {len(masks)} moved off the server's CPUs {sorted(off)}"
    )
    try:
        yield (len(policies), len(masks))
    finally:
        _give_back(workflow, policies, masks, off)


def _give_back(workflow: list[int], policies: dict[int, int], masks: dict[int, set[int]], off: set[int]) -> None:
    """Each changed thread's policy and CPUs back; a thread a changed process started meanwhile inherited the change
    (Snakemake starts threads for jobs, and one of them may start the next measurement): it gets what its process's
    first changed thread had."""
    for p in workflow:
        with suppress(OSError):
            tids = set(map(int, os.listdir(f"/proc/{p}/task")))
            policy = next((policies[t] for t in sorted(tids) if t in policies), None)
            mask = next((masks[t] for t in sorted(tids) if t in masks), None)
            for tid in tids:
                with suppress(OSError):
                    if tid in policies or (policy is not None and os.sched_getscheduler(tid) == os.SCHED_IDLE):
                        os.sched_setscheduler(tid, policies.get(tid, policy), os.sched_param(0))
                    if tid in masks or (mask is not None and os.sched_getaffinity(tid) == mask - off):
                        os.sched_setaffinity(tid, masks.get(tid, mask))


def ordinary_scheduling() -> None:
    """This job's own processes must not run SCHED_IDLE (inherited from a workflow thread made idle by another
    job's measurement that could not be given its policy back): the server and the client would then run only
    when nothing else wants the CPU. Set back where Linux allows it, a RunError naming it where it does not."""
    if os.sched_getscheduler(0) != os.SCHED_IDLE:
        return
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except PermissionError:
        raise RunError(
            "this job runs under SCHED_IDLE (inherited from the workflow that started it) and Linux will not let it"
            " leave it (RLIMIT_NICE): the server and the client would run only when nothing else wants the CPU."
            " Start the workflow again (ulimit -e 20 lets it undo this itself)"
        ) from None


def wait_exit(proc: subprocess.Popen, deadline: float) -> bool:
    """Block until the child exits (True) or the monotonic deadline passes (False), without reaping it.

    The caller reaps it with os.wait4 to read its CPU time.
    """
    fd = os.pidfd_open(proc.pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if poller.poll(remaining * 1000):
                return True
    finally:
        os.close(fd)


def job_cpus() -> list[int]:
    """The CPUs this process may run on (SLURM, taskset and cgroups narrow it)."""
    return sorted(os.sched_getaffinity(0))


def spawn(args, *, cpus=None, deathsig=signal.SIGTERM, user=None, **kwargs) -> subprocess.Popen:
    """Start a process pinned to cpus that gets deathsig if this process dies."""

    def setup():
        _libc.prctl(_PR_SET_PDEATHSIG, int(deathsig))
        if cpus:
            os.sched_setaffinity(0, cpus)

    return subprocess.Popen(args, preexec_fn=setup, **as_user(user), **kwargs)


def as_user(user: str | None) -> dict:
    """subprocess keyword arguments that run a child as user (none when user is None)."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


#: The signals this process was sent to stop it, first first (unwind_on_signals records them).
_stopping: list[int] = []


def _raise_interrupt(signum, frame):
    _stopping.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def unwind_on_signals() -> None:
    """SIGTERM (Snakemake, scancel) and SIGHUP unwind like Ctrl-C, so every child is stopped and scratch removed;
    each of them and Ctrl-C (SIGINT, where it is not ignored) is recorded for stopping()."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_interrupt)


def stopping() -> int | None:
    """The signal that is stopping this process, if one came."""
    return _stopping[0] if _stopping else None


def stopped_by_user() -> bool:
    """Whether a user stopped this process: Ctrl-C (SIGINT) or a closed terminal (SIGHUP). A failure after it (a
    child or the job's own PostgreSQL, sent the same Ctrl-C, dying first) is the stop, not a fault another attempt
    could get past. SIGTERM is not counted: a scheduler's time limit or preemption sends it too, and a retry may
    then measure."""
    return stopping() in (signal.SIGINT, signal.SIGHUP)


def tail(path: Path, lines: int = 8, sep: str = " | ") -> str:
    """The last lines of a child's log, for an error message."""
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no output)"
    return sep.join(text[-lines:]) or "(no output)"


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
    import psutil  # only here: a measurement job does not pay for importing it

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


def process_started_at(pid: str = "self") -> datetime:
    """When a process started, to 10 ms: /proc/<pid>/stat's start time, counted like CLOCK_BOOTTIME.

    Taken back from the boot clock's reading now, not added to /proc/stat's btime: btime is whole
    seconds, so that sum is early by the fraction of a second the machine booted at (up to 1 s).
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    wall, since_boot = time.time(), time.clock_gettime(time.CLOCK_BOOTTIME)
    return datetime.fromtimestamp(wall - (since_boot - started), UTC)


def measurement_lock_path() -> Path:
    """The machine-wide measurement lock: one file every checkout and user of this machine shares (not $TMPDIR)."""
    return Path(os.environ.get("NODEBENCH_MEASURE_LOCK", "/tmp/nodebench.lock"))


def _lock_holder(path: Path, patience_s: float = 1.0) -> str:
    """Who holds the lock, as it wrote itself into the file.

    A holder writes itself just after it takes the lock, so a waiter that arrives in
    between reads an empty file: read again for up to patience_s before saying unknown.
    """
    deadline = time.monotonic() + patience_s
    while True:
        holder = path.read_text(errors="replace").strip()
        if holder or time.monotonic() >= deadline:
            return holder or "an unknown process"
        time.sleep(0.05)


@contextmanager
def one_measurement_per_machine(label: str, progress, wait: bool | None = None):
    """Hold the machine's measurement lock while the body runs: no two measurements overlap.

    flock(2) on a shared file: the kernel releases it when its holder exits, however it
    exits, so a lock a killed job left behind is simply free. The holder writes who it is
    (pid, cell, checkout) into the file for whoever waits. wait=False (or the environment
    variable NODEBENCH_MEASURE_LOCK_WAIT=0) fails at once instead of waiting.
    """
    if wait is None:
        wait = os.environ.get("NODEBENCH_MEASURE_LOCK_WAIT", "1") != "0"
    path = measurement_lock_path()
    try:
        fd, writable = os.open(path, os.O_RDWR | os.O_CREAT, 0o666), True
    except PermissionError:  # another user's lock file that we may only read: flock works on it all the same
        fd, writable = os.open(path, os.O_RDONLY), False
    try:
        if writable:
            with suppress(PermissionError):
                os.fchmod(fd, 0o666)  # so that another user's job can take it after ours, whatever the umask
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(Path(path))
            if not wait:
                raise RunError(
                    f"another measurement is running on this machine ({holder}); it holds {path}. "
                    "Wait for it, or unset NODEBENCH_MEASURE_LOCK_WAIT=0 to queue behind it"
                ) from None
            progress(f"waiting for the measurement lock {path}: held by {holder}")
            fcntl.flock(fd, fcntl.LOCK_EX)
            progress(f"took the measurement lock {path}")
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, {label}, checkout {os.getcwd()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)

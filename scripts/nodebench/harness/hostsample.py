"""CPU over the measured window, read from outside the processes.

Two snapshots, one at each end of the server's ELU window (as close as the harness can
take them; the record says how close, on the monotonic clock the server reports its
window on): the client CPU set's busy time from /proc/stat, the CPU time of the
job's PostgreSQL (the postmaster and all its children, including children that ended,
through the postmaster's reaped-children times), and the server's side: each of its
threads' on-CPU time and run-queue wait (/proc/<pid>/task/<tid>/schedstat, nanoseconds)
and its CPUs' steal, irq, softirq and busy time (/proc/stat). Nothing is added to the
server: the disturbance of a run is measured from outside it.
"""

import os
import time
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


#: /proc/stat's per-CPU fields, in order (guest and guest_nice are already inside user and nice).
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class Snapshot:
    mono_ms: float
    busy_ticks: int
    total_ticks: int
    db_cpu_s: float | None
    #: The server's threads: tid -> (on-CPU ns, run-queue wait ns); None where the kernel gives no schedstat.
    server_threads: dict | None = None
    #: The server CPUs' /proc/stat fields (CPU_FIELDS), summed over its CPUs, in clock ticks.
    server_cpu_ticks: dict | None = None
    #: Which CPUs those are.
    server_cpus: tuple = ()


def cpu_fields(stat_text: str, cpus: list[int]) -> dict:
    """The CPU_FIELDS of /proc/stat's lines for the given CPUs, summed, in clock ticks."""
    wanted = {f"cpu{c}" for c in cpus}
    sums = dict.fromkeys(CPU_FIELDS, 0)
    seen = set()
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if name in wanted:
            for field, ticks in zip(CPU_FIELDS, rest.split()[: len(CPU_FIELDS)], strict=False):
                sums[field] += int(ticks)
            seen.add(name)
    if seen != wanted:
        raise ValueError(f"/proc/stat has no line for {sorted(wanted - seen)}")
    return sums


def cpu_ticks(stat_text: str, cpus: list[int]) -> tuple[int, int]:
    """(busy, total) clock ticks of the given CPUs from /proc/stat's per-CPU lines; busy = total - idle - iowait.

    guest and guest_nice are left out: the kernel already counts them in user and nice.
    """
    fields = cpu_fields(stat_text, cpus)
    total = sum(fields.values())
    return total - fields["idle"] - fields["iowait"], total


def thread_schedstat(pid: int, proc: Path = Path("/proc")) -> dict | None:
    """Each thread of a process: tid -> (on-CPU ns, run-queue wait ns), from its schedstat; None if unreadable.

    schedstat's first two numbers are the thread's sum_exec_runtime and its run_delay: time spent
    running, and time spent runnable but waiting for a CPU (behind any other task, its own threads included).
    """
    out = {}
    try:
        tids = os.listdir(proc / str(pid) / "task")
    except OSError:
        return None
    for tid in tids:
        try:
            run_ns, wait_ns, *_ = (proc / str(pid) / "task" / tid / "schedstat").read_text().split()
        except (OSError, ValueError):  # the thread ended meanwhile, or the kernel has no schedstat
            continue
        out[int(tid)] = (int(run_ns), int(wait_ns))
    return out or None


def tree_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process, its live children and its reaped children; None if it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        t = root.cpu_times()
        seconds = t.user + t.system + t.children_user + t.children_system
        for child in root.children(recursive=True):
            try:
                c = child.cpu_times()
                seconds += c.user + c.system
            except psutil.NoSuchProcess:  # it ended meanwhile: the parent's children times hold it once reaped
                pass
    except psutil.Error:
        return None
    return seconds


class WindowSampler:
    """Takes a Snapshot of the client CPUs, (when the database is ours) PostgreSQL's process tree, and (when
    given) the server's threads and CPUs."""

    def __init__(
        self,
        client_cpus: list[int],
        db_pid: int | None,
        stat_path: Path = Path("/proc/stat"),
        server_pid: int | None = None,
        server_cpus: list[int] | None = None,
    ):
        self.cpus, self.db_pid, self.stat_path = list(client_cpus), db_pid, stat_path
        self.server_pid, self.server_cpus = server_pid, list(server_cpus or [])

    def prepare(self) -> None:
        """Import what a snapshot needs (psutil, 23 ms here), so that it is never imported inside the window."""
        if self.db_pid is not None:
            import psutil  # noqa: F401

    def __call__(self) -> Snapshot:
        # The server's threads first and last: they are what the window's two ends must bracket most closely.
        threads = thread_schedstat(self.server_pid) if self.server_pid is not None else None
        stat = self.stat_path.read_text()
        busy, total = cpu_ticks(stat, self.cpus)
        server_cpu = cpu_fields(stat, self.server_cpus) if self.server_cpus else None
        db = tree_cpu_s(self.db_pid) if self.db_pid is not None else None
        return Snapshot(time.monotonic_ns() / 1e6, busy, total, db, threads, server_cpu, tuple(self.server_cpus))


#: The record's server-side figures from two snapshots, all null where the snapshots lack them.
DISTURBANCE_FIELDS = (
    "main_oncpu_ms", "main_wait_ms", "threads_oncpu_ms", "threads_wait_ms", "server_threads_seen",
    "server_cpu_busy_ms", "server_cpu_idle_ms", "server_cpu_others_ms", "server_cpu_steal_ms", "server_cpu_irq_ms",
    "server_cpu_softirq_ms", "stolen_share",
)  # fmt: skip


def disturbance(s0: Snapshot | None, s1: Snapshot | None, server_pid: int | None) -> dict:
    """What the server's threads and its CPUs did between two snapshots: the run's disturbance, measured.

    main_*: the main thread (the event loop, tid = pid): its on-CPU time and its run-queue wait.
    threads_*: every thread alive at the end (a thread born in the window counts from zero; one that
    ended in it is missing, and server_threads_seen says how many were summed).
    server_cpu_*: the server CPUs' time from /proc/stat: busy (user + nice + system), steal (taken by
    the hypervisor), irq and softirq, idle, and others: the window's time on its CPUs that was neither
    idle, nor steal, nor any server thread's, i.e. other tasks. It is taken from idle (exact on a tickless
    kernel) rather than from user + system, which the kernel samples at its tick: a task running in short
    bursts between ticks is missed there (a 5 % busy loop in 0.5 ms bursts read as 0 here).
    stolen_share: the share of the window the event loop waited for its CPU beyond what its own helper
    threads ran (V8's GC threads share a pinned server's CPU: the main thread waiting behind them is the
    server's own cost, not a disturbance), plus steal, over the window's wall time (the snapshots' distance).
    Only per-thread accounting from schedstat (exact, in nanoseconds) goes into it.
    """
    out = dict.fromkeys(DISTURBANCE_FIELDS)
    if s0 is None or s1 is None or s1.mono_ms <= s0.mono_ms:
        return out
    window_ms = s1.mono_ms - s0.mono_ms
    t0, t1 = s0.server_threads, s1.server_threads
    if t0 is not None and t1 is not None:
        delta = {tid: (run - t0.get(tid, (0, 0))[0], wait - t0.get(tid, (0, 0))[1]) for tid, (run, wait) in t1.items()}
        if server_pid in delta:
            out["main_oncpu_ms"], out["main_wait_ms"] = (v / 1e6 for v in delta[server_pid])
        out["threads_oncpu_ms"] = sum(run for run, _ in delta.values()) / 1e6
        out["threads_wait_ms"] = sum(wait for _, wait in delta.values()) / 1e6
        out["server_threads_seen"] = len(delta)
    c0, c1 = s0.server_cpu_ticks, s1.server_cpu_ticks
    if c0 is not None and c1 is not None:
        tick_ms = 1000.0 / CLK_TCK
        d = {k: (c1[k] - c0[k]) * tick_ms for k in CPU_FIELDS}
        cpus = len(s1.server_cpus or ()) or 1
        out["server_cpu_busy_ms"] = d["user"] + d["nice"] + d["system"]
        out["server_cpu_idle_ms"] = d["idle"] + d["iowait"]
        out["server_cpu_steal_ms"] = d["steal"]
        out["server_cpu_irq_ms"] = d["irq"]
        out["server_cpu_softirq_ms"] = d["softirq"]
        if out["threads_oncpu_ms"] is not None:
            left = window_ms * cpus - out["server_cpu_idle_ms"] - d["steal"] - out["threads_oncpu_ms"]
            out["server_cpu_others_ms"] = max(0.0, left)
        if out["main_wait_ms"] is not None:
            helpers_ms = out["threads_oncpu_ms"] - out["main_oncpu_ms"]
            lost = max(0.0, out["main_wait_ms"] - helpers_ms) + d["steal"] / cpus
            out["stolen_share"] = min(1.0, lost / window_ms)
    return out


def window_figures(s0: Snapshot | None, s1: Snapshot | None, elu: dict) -> dict:
    """The record's client-CPU-set and database figures over the window between two snapshots.

    Every figure is null when the snapshots are missing; the database's when it is not ours.
    The offsets say how far each snapshot was from the server's window end it stands for
    (negative: before it), when the server reported its window on the monotonic clock.
    """
    none = {
        "sample_window_s": None,
        "sample_start_offset_ms": None,
        "sample_stop_offset_ms": None,
        "client_cpus_busy": None,
        "db_cpu_s": None,
        "db_cpu_util": None,
    }
    if s0 is None or s1 is None or s1.mono_ms <= s0.mono_ms:
        return none
    window_s = (s1.mono_ms - s0.mono_ms) / 1000.0
    total = s1.total_ticks - s0.total_ticks
    db = s1.db_cpu_s - s0.db_cpu_s if s0.db_cpu_s is not None and s1.db_cpu_s is not None else None
    has_clock = "mono_start_ms" in elu and "mono_stop_ms" in elu
    return {
        "sample_window_s": window_s,
        "sample_start_offset_ms": s0.mono_ms - elu["mono_start_ms"] if has_clock else None,
        "sample_stop_offset_ms": s1.mono_ms - elu["mono_stop_ms"] if has_clock else None,
        "client_cpus_busy": min(1.0, max(0.0, (s1.busy_ticks - s0.busy_ticks) / total)) if total > 0 else None,
        "db_cpu_s": db,
        "db_cpu_util": db / window_s if db is not None else None,
    }

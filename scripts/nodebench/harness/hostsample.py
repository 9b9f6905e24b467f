"""CPU the client side used over the measured window, read from outside the processes.

Two snapshots, one at each end of the server's ELU window (as close as the harness can
take them; the record says how close, on the monotonic clock the server reports its
window on): the client CPU set's busy time from /proc/stat, and the CPU time of the
job's PostgreSQL (the postmaster and all its children, including children that ended,
through the postmaster's reaped-children times).
"""

import os
import time
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Snapshot:
    mono_ms: float
    busy_ticks: int
    total_ticks: int
    db_cpu_s: float | None


def cpu_ticks(stat_text: str, cpus: list[int]) -> tuple[int, int]:
    """(busy, total) clock ticks of the given CPUs from /proc/stat's per-CPU lines; busy = total - idle - iowait.

    guest and guest_nice are left out: the kernel already counts them in user and nice.
    """
    wanted = {f"cpu{c}" for c in cpus}
    busy = total = 0
    seen = set()
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if name in wanted:
            ticks = [int(x) for x in rest.split()[:8]]  # user nice system idle iowait irq softirq steal
            total += sum(ticks)
            busy += sum(ticks) - ticks[3] - ticks[4]
            seen.add(name)
    if seen != wanted:
        raise ValueError(f"/proc/stat has no line for {sorted(wanted - seen)}")
    return busy, total


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
    """Takes a Snapshot of the client CPUs and (when the database is ours) PostgreSQL's process tree."""

    def __init__(self, client_cpus: list[int], db_pid: int | None, stat_path: Path = Path("/proc/stat")):
        self.cpus, self.db_pid, self.stat_path = list(client_cpus), db_pid, stat_path

    def prepare(self) -> None:
        """Import what a snapshot needs (psutil, 23 ms here), so that it is never imported inside the window."""
        if self.db_pid is not None:
            import psutil  # noqa: F401

    def __call__(self) -> Snapshot:
        busy, total = cpu_ticks(self.stat_path.read_text(), self.cpus)
        db = tree_cpu_s(self.db_pid) if self.db_pid is not None else None
        return Snapshot(time.monotonic_ns() / 1e6, busy, total, db)


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

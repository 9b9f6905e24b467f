"""A job's scratch space: created with an owner file, and swept up after a job that died without removing it.

A job normally removes its scratch directory (the database copy, the logs of its
processes) on every path out, Ctrl-C included. A job killed with SIGKILL, or a machine
that rebooted, cannot: its directory (tens of MB, in RAM when it is under /dev/shm)
stays. So the job writes who it is into the directory first (host, boot, pid and that
process's start time, checkout, cell) and, as it starts them, its server's and
PostgreSQL's pids and start times. The next job on this machine (and the next
Snakemake run) removes a directory whose owner is provably dead: same host, and
either another boot or no process with that pid and start time. Before removing
it, it stops the processes that belonged to that job and still run (same boot, pid
and start time as recorded, or holding a file in the directory). A directory without
an owner file, or owned by another host or a live process, is never touched.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

PREFIX = "nodebench-"
OWNER = "owner.json"
PIPELINE = "nodebench"


def boot_id() -> str:
    """This boot of the machine (Linux gives each boot a random id)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When a process started, in clock ticks since boot (None: no such process)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def identity(pid: int) -> dict:
    """What tells this process apart from any other, on any machine and boot, with its pid reused or not."""
    return {"host": socket.gethostname(), "boot_id": boot_id(), "pid": pid, "started": start_ticks(pid)}


def _write_owner(scratch: Path, owner: dict) -> None:
    tmp = scratch / f".{OWNER}.{os.getpid()}"
    tmp.write_text(json.dumps(owner, indent=1) + "\n")
    os.replace(tmp, scratch / OWNER)


def create(base: str, cell: str) -> Path:
    """A new scratch directory under base that names this process as its owner."""
    scratch = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    _write_owner(
        scratch,
        {"pipeline": PIPELINE, **identity(os.getpid()), "checkout": os.getcwd(), "cell": cell, "children": []},
    )
    return scratch


def adopt(scratch: Path, name: str, pid: int) -> None:
    """Record a process this job started, so that a sweep after this job's death can stop it."""
    owner = read_owner(scratch)
    if owner is None:
        return
    owner["children"].append({"name": name, **identity(pid)})
    _write_owner(scratch, owner)


def read_owner(scratch: Path) -> dict | None:
    """The owner file of a scratch directory, or None when it has none (or not one of ours)."""
    try:
        owner = json.loads((scratch / OWNER).read_text())
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) and owner.get("pipeline") == PIPELINE else None


def same_process(who: dict) -> bool:
    """Is the process who describes running now (this host, this boot, that pid with that start time)?"""
    return (
        who.get("host") == socket.gethostname()
        and who.get("boot_id") == boot_id()
        and who.get("started") is not None
        and start_ticks(int(who["pid"])) == who["started"]
    )


def owner_dead(owner: dict) -> bool:
    """The owner is provably dead: same host, and another boot or no such process. Another host's: not ours to judge."""
    if owner.get("host") != socket.gethostname():
        return False
    return not same_process(owner)


def holders(scratch: Path, since_ticks: int | None) -> list[int]:
    """Pids of processes that name the directory on their command line or hold a file in it.

    Only processes started after the owner (since_ticks) count: nothing older can be the
    dead job's child. Other users' processes are invisible without root, and not ours to stop.
    """
    path = str(scratch)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        started = start_ticks(pid)
        if started is None or (since_ticks is not None and started < since_ticks):
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            held = path in cmdline
            if not held:
                for fd in os.scandir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path).startswith(path + "/"):
                            held = True
                            break
        except OSError:
            continue
        if held:
            found.append(pid)
    return found


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_process(pid: int, started: int | None, first: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
    """Send first to pid if it is still the process that started at started; SIGKILL if it lingers."""
    if started is None or start_ticks(pid) != started or not _signal(pid, first):
        return False
    deadline = time.monotonic() + timeout
    while start_ticks(pid) == started and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # our own child (in tests): reap it
        time.sleep(0.02)
    if start_ticks(pid) == started:
        _signal(pid, signal.SIGKILL)
    return True


def sweep_one(scratch: Path) -> str | None:
    """Stop what a dead job left running in scratch and remove it; a line saying what was done, or None."""
    owner = read_owner(scratch)
    if owner is None or not owner_dead(owner):
        return None
    stopped = []
    if owner.get("boot_id") == boot_id():
        for child in owner.get("children", []):
            # PostgreSQL's immediate shutdown (SIGQUIT) stops its backends and frees its shared memory.
            first = signal.SIGQUIT if child.get("name") == "postgres" else signal.SIGKILL
            if same_process(child) and stop_process(int(child["pid"]), child["started"], first):
                stopped.append(f"{child['name']} pid {child['pid']}")
        for pid in holders(scratch, owner.get("started")):
            if stop_process(pid, start_ticks(pid)):
                stopped.append(f"pid {pid}")
    shutil.rmtree(scratch, ignore_errors=True)
    if scratch.exists():
        return None  # another user's, or removed meanwhile by another sweep
    what = f"stopped {', '.join(stopped)} and " if stopped else ""
    return (
        f"{what}removed {scratch}, left by a job that died without cleaning up "
        f"(pid {owner.get('pid')}, {owner.get('cell')}, checkout {owner.get('checkout')})"
    )


def bases(setting: str | None = None) -> list[str]:
    """Every directory a job's scratch space may be under: /dev/shm, the temp dir and a configured one."""
    found = ["/dev/shm", tempfile.gettempdir()]
    if setting and setting != "auto":
        found.append(os.path.expandvars(setting))
    return list(dict.fromkeys(b for b in found if os.path.isdir(b)))


def sweep(where: list[str], say=lambda line: None) -> list[str]:
    """Sweep every dead job's scratch directory under the given bases; returns (and says) what was done."""
    done = []
    for base in where:
        try:
            candidates = sorted(p for p in Path(base).glob(f"{PREFIX}*") if p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        for scratch in candidates:
            line = sweep_one(scratch)
            if line:
                say(line)
                done.append(line)
    return done

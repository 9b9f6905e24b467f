"""Where a job writes: a probe before anything is measured, and files written whole or not at all."""

import errno
import os
import tempfile
from pathlib import Path

from nodebench.harness.errors import StorageError

#: What a probe writes: room for a few dozen run records (about 6 KB each), so a full disk
#: is found before a measurement rather than after it.
PROBE_BYTES = 256 * 1024

_HINTS = {
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full: free some space",
    errno.EDQUOT: "the disk quota is used up: free some space",
    errno.EACCES: "no permission to write there",
    errno.EPERM: "no permission to write there",
}


def describe(path: Path, e: OSError) -> str:
    """A message that names the path, absolute too, and what to do about the error."""
    hint = _HINTS.get(e.errno, e.strerror or str(e))
    where = f"{path} ({Path(path).absolute()})" if not Path(path).is_absolute() else str(path)
    return f"cannot write {where}: {hint} [{errno.errorcode.get(e.errno, e.errno)}]"


def probe(directory: Path, size: int = PROBE_BYTES) -> None:
    """Raise StorageError naming directory unless size bytes can be written there; nothing is left behind."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".nodebench-probe-", dir=directory)
    except OSError as e:
        raise StorageError(describe(directory, e)) from None
    try:
        chunk = b"\0" * 65536
        left = size
        while left > 0:
            left -= os.write(fd, chunk[: min(left, len(chunk))])
        os.fsync(fd)
    except OSError as e:
        raise StorageError(describe(directory, e)) from None
    finally:
        os.close(fd)
        os.unlink(tmp)


def write_atomically(path: Path, text: str) -> None:
    """Write text to path through a temporary file in the same directory and a rename.

    A reader (Snakemake, the aggregation) sees the old file or the whole new one, never
    part of one: a full disk, a read-only file system or a kill half-way leaves no
    partial file at path, and no temporary file either, unless the process is killed.
    """
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)  # the rename itself survives a power cut
        finally:
            os.close(dirfd)
    except OSError as e:
        raise StorageError(describe(path, e)) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)

"""The Node.js binaries that run the servers: the pipeline's own, and majors installed from npm.

probe() describes the pipeline's own Node.js (config's `node`); node_install.install()
describes each installed major the same way (version, binary, SHA-256, size). A
measurement runs its server on the binary its description names, after usable() has
checked that the file is the one described (its size; the server then reports its
version, which check() compares with the description).
"""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from nodebench.harness.errors import RunError, ToolchainError


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def version_of(binary: str) -> str:
    """`node --version` of a binary, without the v."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise ToolchainError(f"{binary} --version failed: {e}") from None
    return out.stdout.strip().removeprefix("v")


def identity(node: str) -> dict:
    """Where config's `node` resolves and what that file is now: a change of it reruns probe()."""
    found = shutil.which(node)
    if found is None:
        return {"node": node, "path": None}
    path = Path(found).resolve()
    st = path.stat()
    return {"node": node, "path": str(path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def probe(node: str) -> dict:
    """The pipeline's own Node.js (config's `node`) described like an installed one."""
    found = identity(node)
    if found["path"] is None:
        raise ToolchainError(f"config key 'node' is {node!r}, which is not an executable on PATH")
    return {
        "node": "system",
        "package": None,
        "version": version_of(found["path"]),
        "binary": found["path"],
        "sha256": sha256(Path(found["path"])),
        "binary_bytes": found["bytes"],
    }


def usable(info: dict, path: Path) -> str:
    """The binary to run, as an absolute path, once it is the file described: there, executable, the same size.

    A copy a storage provider staged may have lost its executable bit: it gets it back.
    """
    if not path.is_file():
        raise RunError(f"{path}, the Node.js binary described in {info.get('node')!r}'s description, is not there")
    size = path.stat().st_size
    if size != info["binary_bytes"]:
        raise RunError(
            f"{path} is {size:,} bytes, but the Node.js {info['version']} described as {info['binary']} was "
            f"{info['binary_bytes']:,}: the binary changed since it was described; rerun to describe it again"
        )
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return str(path.resolve())


def check(info: dict, reported: str) -> None:
    """The server must report the version its binary was described with."""
    if reported.removeprefix("v") != info["version"]:
        raise RunError(
            f"the server runs Node.js {reported}, but {info['binary']} was recorded as {info['version']}: "
            "the binary changed since it was described; rerun to describe it again"
        )

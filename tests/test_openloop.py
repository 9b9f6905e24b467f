"""Validation of the open-loop load client (servers/loadgen/openloop.js) against tiny servers, in the suite.

Each test starts its servers (tests/fixtures/openloop/*.js) as subprocesses on free loopback
ports and always stops them (the fixture checks that none survives). With two CPUs or more,
the server runs on the first CPU of this process's affinity mask and the client (and wrk) on
the second, so that neither delays the other. About 40 s in all.

    (a) accuracy: a server that answers after a fixed 1 ms measures 1 ms at p50;
    (b) coordinated omission: a 1 s stall of the server shows in the open loop's p99.9, and not
        in autocannon's closed-loop p99 over the same server and stall (wrk's p99 does show it,
        from the correction wrk applies to its histogram after the run);
    (c) refusal: a rate the client cannot keep ends with exit 3 and a message naming the lag;
    (d) reproducibility: the Poisson schedule is a function of its seed.

The machine these run on is shared and noisy (docs/openloop.md: its CPUs pause for more than
1 ms several times a second), so (a) and (b), which check the latency measurement, allow the
client a schedule lag p99 of up to 10 ms instead of the default 1 ms, and run again (3 runs in all)
when the client refuses anyway; the refusal itself is what (c) checks, at the default threshold.
"""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from nodebench.harness import procs

REPO = Path(__file__).resolve().parents[1]
CLIENT = REPO / "servers" / "loadgen" / "openloop.js"
FIXTURES = REPO / "tests" / "fixtures" / "openloop"
NODE = shutil.which("node")
WRK = shutil.which("wrk")
TASKSET = shutil.which("taskset")
VALIDATION_LAG_MS = "10"
EXIT_REFUSED = 3

pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")


def cpu_prefixes() -> tuple[list[str], list[str]]:
    """taskset prefixes pinning the server and the client to different CPUs, when there are two."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or TASKSET is None:
        return [], []
    return [TASKSET, "-c", str(cpus[0])], [TASKSET, "-c", str(cpus[1])]


SERVER_CPU, CLIENT_CPU = cpu_prefixes()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """servers/ with its npm packages (autocannon, pg): the checkout's own where a run installed them there, else
    a copy installed from the lockfile (a fresh clone has none: without it these tests would be skipped in CI)."""
    if all((REPO / "servers" / "node_modules" / p / "package.json").exists() for p in ("autocannon", "pg")):
        return REPO / "servers"
    copy = tmp_path_factory.mktemp("installed") / "servers"
    shutil.copytree(REPO / "servers", copy, ignore=shutil.ignore_patterns("node_modules"))
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=copy, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return copy


@pytest.fixture
def servers():
    """start(script, *args) -> port: a fixture server, READY on a free loopback port; all stopped after."""
    started: list[subprocess.Popen] = []

    def start(script: str, *args: str) -> int:
        port = procs.free_port()
        proc = subprocess.Popen(
            [*SERVER_CPU, NODE, str(FIXTURES / script), str(port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        started.append(proc)
        line = proc.stdout.readline()
        assert line.strip() == "READY", f"{script} did not start: {line!r}"
        return port

    start.procs = started
    try:
        yield start
    finally:
        for proc in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=10)
        time.sleep(0.1)
        survivors = [p.pid for p in started if psutil.pid_exists(p.pid) and p.poll() is None]
        assert not survivors, f"fixture servers survived: {survivors}"


def openloop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*CLIENT_CPU, NODE, str(CLIENT), *args], capture_output=True, text=True, timeout=timeout)


def measure(port: int, *args: str, attempts: int = 3) -> dict:
    """One open-loop run's result; run again (attempts in all) if the client refuses the run."""
    for _ in range(attempts):
        done = openloop("--url", f"http://127.0.0.1:{port}/", "--max-lag-p99-ms", VALIDATION_LAG_MS, *args)
        if done.returncode != EXIT_REFUSED:
            break
    if done.returncode == EXIT_REFUSED:
        # The client measured its own schedule lag above the validation limit every time: that is this
        # machine's jitter at that moment (a loaded CI runner once refused 500 req/s), which the refusal
        # exists to report, not a wrong result. Said as a skip with the client's own figures.
        pytest.skip(
            f"this machine was too busy to keep an open-loop schedule ({attempts} tries): {done.stderr.strip()}"
        )
    assert done.returncode == 0, f"openloop exited {done.returncode}: {done.stderr}"
    result = json.loads(done.stdout)
    print(json.dumps(result))
    return result


def test_fixed_delay_measures_one_millisecond(servers):
    """(a) 2000 req/s, constant arrivals, for 3 s: a server answering in 1 ms measures 1 ms at p50.

    The server's delay is spun (setImmediate until performance.now() has passed it: 1.0005 ms at
    p50 measured in the server) rather than setTimeout(1), which libuv fires early or late (0.7-1.0
    ms at p50, 13 ms at p99, measured from the client at 2000 req/s). At 200
    req/s the loopback transport itself took 0.2-0.7 ms at p50 on this virtual machine (2000
    req/s: 0.07-0.15 ms), so the check runs at 2000 req/s, still light for this server (its delay
    does not block it). Its p99 is not checked against 1 ms: the machine's own pauses (more than
    1 ms, several times a second on each CPU) put it at 3-9 ms; docs/openloop.md has the figures.
    """
    # "hot": the server's event loop never sleeps, so no request pays its CPU's wake-up.
    port = servers("delay.js", "1", "spin", "hot")
    # A burst of the machine's noise can move even the p50 (once in 11 runs here: 2.9 ms),
    # so up to 3 runs; the first whose p50 is within 0.2 ms of 1 ms passes.
    for _ in range(3):
        result = measure(port, "--rate", "2000", "--duration", "3")
        assert result["sent"] == result["completed"] == 6000
        assert result["errors"] == result["non2xx"] == 0
        assert result["delivered_rate"] == 2000
        latency = result["latency_ms"]
        print(f"1 ms server at 2000 req/s: {latency}")
        if 1.0 <= latency["p50"] <= 1.2:
            break
    else:
        # Before blaming the client: the machine's own latency on the same path, a server that answers at once
        # (the same fixture, delay 0), measured right now. Above the 0.2 ms this check allows, the machine
        # cannot resolve it today (a loaded CI runner read a 4.9 ms p50 here): a skip that gives the figure.
        own = measure(servers("delay.js", "0", "spin", "hot"), "--rate", "2000", "--duration", "3")["latency_ms"]
        if own["p50"] > 0.2:
            pytest.skip(f"this machine's own p50 on loopback was {own['p50']:.2f} ms (a 0 ms server, just now), "
                        f"above the 0.2 ms tolerance; the 1 ms server read {latency['p50']:.2f} ms")  # fmt: skip
    assert 1.0 <= latency["p50"] <= 1.2, latency
    # Counted from the scheduled time, no latency can be below the server's own 1 ms.
    assert latency["max"] >= latency["p99"] >= latency["p90"] >= latency["p50"] >= 1.0


def wrk_ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}[unit]


def parse_wrk(text: str) -> dict:
    """wrk --latency: its max (Thread Stats) and its 50/75/90/99 % percentiles, in ms."""
    out = {"max": wrk_ms(re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", text).group(1))}
    for pct, value in re.findall(r"^\s+(\d+)%\s+(\S+)$", text, re.M):
        out[f"p{pct}"] = wrk_ms(value)
    out["requests"] = int(re.search(r"(\d+) requests in", text).group(1))
    return out


def autocannon_ms(installed: Path, port: int, connections: str, seconds: int) -> dict:
    """autocannon's closed loop (the project's own client): its latency percentiles, in whole ms."""
    autocannon = installed / "node_modules" / "autocannon" / "autocannon.js"
    done = subprocess.run(
        [*CLIENT_CPU, NODE, str(autocannon), "-c", connections, "-d", str(seconds), "-j", f"http://127.0.0.1:{port}/"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return {**result["latency"], "requests": result["requests"]["total"]}


@pytest.mark.skipif(WRK is None, reason="needs wrk (scripts/setup.sh --tests installs it)")
def test_stall_shows_in_open_loop_not_in_closed_loop(servers, installed):
    """(b) A 1 s stall of the server, 5 s after its first request, with 4 connections for every client.

    The open loop (1000 req/s) shows it at p99.9 (about 1 s). autocannon's closed loop does not
    (its p99 is a few ms at most: only its 4 stuck requests, of ~100,000, saw the stall). wrk's
    closed loop does show it, but only because wrk (4.x) corrects its histogram after the run
    (stats_correct: each sample longer than the mean interval between one connection's
    requests, runtime / (requests / connections), is completed with the samples a steady
    schedule would have had), so its own percentiles are corrected estimates, not measurements.
    """
    connections = "4"
    port = servers("stall.js", "5000", "1000")
    # Window 2-10 s from the first request; the stall begins at 5 s.
    result = measure(port, "--rate", "1000", "--duration", "8", "--warmup", "2", "--connections", connections)
    assert servers.procs[-1].stdout.readline().strip() == "STALLED"
    assert result["errors"] == 0 and result["completed"] == result["sent"] == 8000
    assert result["latency_ms"]["p99_9"] >= 500, result["latency_ms"]
    assert result["latency_ms"]["max"] >= 900

    port = servers("stall.js", "5000", "1000")
    closed = autocannon_ms(installed, port, connections, 8)
    print(f"autocannon: {json.dumps(closed)}")
    assert servers.procs[-1].stdout.readline().strip() == "STALLED"
    assert closed["max"] >= 900  # the stall happened during its run, and it saw it ...
    assert closed["p99"] < 100  # ... yet its percentiles hide it: coordinated omission

    port = servers("stall.js", "5000", "1000")
    done = subprocess.run(
        [
            *CLIENT_CPU,
            WRK,
            "-t1",
            f"-c{connections}",
            "-d8s",
            "--latency",
            "--timeout",
            "10s",
            f"http://127.0.0.1:{port}/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert servers.procs[-1].stdout.readline().strip() == "STALLED"
    wrk = parse_wrk(done.stdout)
    print(f"wrk: {json.dumps(wrk)}")
    assert wrk["max"] >= 900
    assert wrk["p99"] >= 500  # wrk's after-the-fact correction, see above


def test_refuses_a_rate_it_cannot_keep(servers):
    """(c) 200,000 req/s is far above the client's ceiling: exit 3, a message naming the lag."""
    port = servers("fast.js")
    done = openloop("--url", f"http://127.0.0.1:{port}/", "--rate", "200000", "--duration", "3", "--warmup", "0")
    print(done.stderr)
    assert done.returncode == EXIT_REFUSED
    assert done.stdout == ""
    assert re.search(r"REFUSED: schedule lag (p99 )?(reached )?[\d.]+ ms", done.stderr)


def test_nap_frees_its_cpu_between_sends(servers):
    """--nap (what the pipeline's openloop does beside the database it shares a CPU with): the same schedule kept,
    every request answered, each latency still counted from its scheduled time, and the client's CPU free between
    sends. At 1,000 req/s a spinning client keeps its CPU busy (0.98-0.99 of it here, 2026-12-06); napping it used
    0.22-0.25 (docs/openloop.md#waiting-between-sends). CPU time is what this checks, not a latency: a busy machine
    can only take CPU away from the client, never add to what it uses."""
    import resource

    port = servers("delay.js", "1", "spin", "hot")
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    result = measure(port, "--rate", "1000", "--duration", "3", "--warmup", "1", "--arrivals", "poisson", "--nap")
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"--nap at 1000 req/s: {cpu:.2f} s of CPU in {wall:.2f} s; {result['latency_ms']=}, {result['lag_ms']=}")
    assert result["wait"] == "nap"
    assert result["sent"] == result["completed"] > 2500 and result["errors"] == 0
    # Counted from the schedule, no latency can be below the server's own 1 ms.
    assert result["latency_ms"]["p50"] >= 1.0
    assert cpu < 0.6 * wall, f"the napping client used {cpu:.2f} s of CPU in {wall:.2f} s: it did not sleep"


def test_sleep_and_nap_are_one_choice():
    done = openloop("--url", "http://127.0.0.1:1/", "--rate", "10", "--duration", "1", "--sleep", "--nap")
    assert done.returncode == 2
    assert "--sleep and --nap" in done.stderr


def test_refuses_a_non_loopback_host():
    done = openloop("--url", "http://192.0.2.1:80/", "--rate", "10", "--duration", "1")
    assert done.returncode == 2
    assert "non-loopback" in done.stderr


def dry(*args: str) -> list[float]:
    done = openloop("--rate", "1000", "--dry-schedule", "20000", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_poisson_schedule_is_reproducible():
    """(d) Same seed, same schedule; another seed, another; the gaps average 1/rate."""
    first = dry("--arrivals", "poisson", "--seed", "42")
    assert first == dry("--arrivals", "poisson", "--seed", "42")
    other = dry("--arrivals", "poisson", "--seed", "43")
    assert other != first
    for offsets in (first, other):
        assert offsets[0] == 0
        gaps = [b - a for a, b in zip(offsets, offsets[1:], strict=False)]
        assert min(gaps) > 0
        mean = sum(gaps) / len(gaps)
        assert abs(mean - 1.0) < 0.03  # 1000 req/s: 1 ms on average
        # Exponential gaps: the standard deviation equals the mean (constant arrivals: 0).
        sd = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
        assert abs(sd - mean) < 0.05
    constant = dry("--arrivals", "constant")
    assert constant[:4] == [0, 1, 2, 3] and constant[-1] == pytest.approx(19999)


def test_reads_chunked_answers_and_a_server_that_closes(servers):
    """Answers without content-length (chunked), and a connection the server closes after every fifth answer:
    every request is answered and counted, with its whole size on the wire, and the closed connections are
    replaced (its own HTTP/1.1 reader, not node:http's)."""
    port = servers("chunked.js")
    # Five answers read by hand on one connection: four keep-alive ones, then one that closes it.
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 5)
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    answers = [a + b"0\r\n\r\n" for a in raw.split(b"0\r\n\r\n")[:-1]]
    assert len(answers) == 5 and b"2\r\nok\r\n1\r\n-\r\n2\r\nok\r\n" in answers[0]
    keep, close = len(answers[0]), len(answers[4])
    result = measure(port, "--rate", "500", "--duration", "2", "--warmup", "1", "--connections", "8", attempts=1)
    assert result["sent"] == result["completed"] == 1000 and result["errors"] == 0
    assert result["status_counts"] == {"200": 1000}
    # The warm-up's 500 and these 5 keep the count a multiple of five: 200 of the window's answers close.
    assert result["bytes"] == 800 * keep + 200 * close
    # Connections closed by the server after every fifth answer were replaced by new ones.
    assert result["connections_opened"] >= 1500 / 5


@pytest.fixture
def contract_server(installed):
    """servers/node-http.js (the contract's probe: /__elu/start and /__elu/stop) on a free port, no database (its
    `empty` route makes no query); stopped after."""
    port = procs.free_port()
    proc = subprocess.Popen(
        [*SERVER_CPU, NODE, str(installed / "node-http.js")], cwd=installed,
        # With the per-request hook, so the server counts its window's requests and the test can see that the
        # driver's window holds exactly its run's (the pipeline runs without it and divides by the client's count).
        env={**os.environ, "PORT": str(port), "NODEBENCH_PROBE": "hook"}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().startswith("READY "), "node-http.js did not start"
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(timeout=10)


def drive(port: int, *args: str) -> tuple[list[dict], subprocess.CompletedProcess]:
    done = subprocess.run(
        [*CLIENT_CPU, NODE, str(CLIENT), "--driver", "--url", f"http://127.0.0.1:{port}/static/1", *args],
        input="warmup\ngo\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return [json.loads(line) for line in done.stdout.splitlines()], done


def test_driver_opens_the_window_and_reports_refusal_instead_of_exiting(contract_server):
    """--driver, the harness's protocol: the server's window holds exactly the window's requests, and a rate the
    client cannot keep comes back as a result that says why it is refused, with no latencies, not as exit 3."""
    lines, done = drive(contract_server, "--rate", "1000", "--duration", "1", "--warmup", "1")
    assert done.returncode == 0, done.stderr
    assert [x["event"] for x in lines] == ["loaded", "warmup", "window", "result"]
    result = lines[-1]
    assert result["openloop"]["completed"] == 1000 and result["elu"]["requests"] == 1000
    assert result["openloop"]["timed"] == 1000  # no lead-in: every answer is timed
    assert result["openloop"]["bytes"] > 1000 * 200  # the whole answers: status line, headers and the row
    lines, done = drive(contract_server, "--rate", "400000", "--duration", "1", "--warmup", "0")
    assert done.returncode == 0, done.stderr
    result = lines[-1]["openloop"]
    print(result["refused"])
    assert result["refused"] and result["latency_ms"]["p99"] is None and result["client_effect_ms"] is None
    assert result["completed"] == lines[-1]["elu"]["requests"] - result["abandoned"]

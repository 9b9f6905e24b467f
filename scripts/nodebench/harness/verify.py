"""Is the answer right, and did the run do the work it claims? Each check raises RunError naming the problem."""

import json
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nodebench.catalogue.workloads import Workload
from nodebench.harness.errors import RunError
from nodebench.harness.server import get_json, http_get, request

if TYPE_CHECKING:
    import psycopg


def expected_answer(workload: Workload, admin: "psycopg.Connection", fixture: Path | None):
    """What the workload's path must answer: its fixture file, its literal answer, or read independently of
    the server's SQL (None where the answer is matched by shape, not by value)."""
    if workload.answer_fixture:
        return json.loads(fixture.read_text())
    if workload.answer is not None or workload.answer_sql is None:
        return workload.answer
    row = admin.execute(workload.answer_sql).fetchone()
    if row is None or row[0] is None:
        raise RunError(f"the database holds no answer for {workload.name} ({workload.path}); is the template seeded?")
    return row[0]


def answer_problem(workload: Workload, status: int, headers: dict, body: bytes, expected) -> str | None:
    """Why one answer is not the workload's (None: it is): status, content type, headers, then the body.

    The same code checks every server's answer, before measuring and in the tests.
    """
    if status != workload.status:
        return f"answered HTTP {status}, expected {workload.status}: {body[:200]!r}"
    ctype = headers.get("content-type", "")
    if not ctype.startswith("application/json"):
        return f"answered content type {ctype!r}, expected application/json"
    for name, value in workload.headers:
        if headers.get(name) != value:
            return f"answered header {name}: {headers.get(name)!r}, expected {value!r}"
    try:
        got = json.loads(body)
    except ValueError:
        return f"answered a body that is not JSON: {body[:200]!r}"
    if workload.match == "error":
        if not (isinstance(got, dict) and isinstance(got.get("error"), str)):
            return f'answered {json.dumps(got)[:300]}, expected an object with an "error" string'
        return None
    if workload.match == "created":
        want = {**workload.body}
        ok = isinstance(got, dict) and isinstance(got.get("id"), int) and {k: got.get(k) for k in want} == want
        ok = ok and all(isinstance(got.get(k), str) for k in workload.stamps)
        if not ok or set(got) != {"id", *want, *workload.stamps}:
            stamps = "".join(f" and a string {k}" for k in workload.stamps)
            wanted = f"the request's {json.dumps(want)} with an integer id{stamps}"
            return f"answered {json.dumps(got)[:300]}, expected {wanted}"
        return None
    if got != expected:
        source = "the database holds" if workload.answer_sql else "the catalogue expects"
        return (
            f"answered a body that differs from what {source}:\n"
            f"  got      {json.dumps(got)[:300]}\n  expected {json.dumps(expected)[:300]}"
        )
    return None


def verify_answers(port: int, workload: Workload, expected) -> None:
    """The workload's answer is right (status, content type, headers, body); each refused request gets its status."""
    try:
        status, headers, body = request(port, workload.method, workload.path, workload.body_bytes())
    except OSError as e:
        raise RunError(f"{workload.method} {workload.path} failed: {e}") from None
    problem = answer_problem(workload, status, headers, body, expected)
    if problem:
        raise RunError(f"{workload.method} {workload.path} {problem}")
    for bad, status in workload.rejects:
        got_status = http_get(port, bad)[0]
        if got_status != status:
            raise RunError(f"GET {bad} answered HTTP {got_status}, expected {status}")


def raw_answer_size(port: int, path: str, request: bytes, timeout: float = 5.0) -> int:
    """Bytes on the wire (status line, headers, body) of one answer to the request the load generator sends."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""

        def complete() -> bool:
            head, sep, body = data.partition(b"\r\n\r\n")
            if not sep:
                return False
            fields = dict(line.lower().split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
            if b"content-length" in fields:
                return len(body) >= int(fields[b"content-length"])
            if fields.get(b"transfer-encoding", b"").strip() == b"chunked":
                return body.endswith(b"0\r\n\r\n")
            raise RunError(f"GET {path} answered with neither Content-Length nor chunked encoding")

        while not complete():
            chunk = sock.recv(65536)
            if not chunk:
                raise RunError(f"GET {path} closed the connection before its answer ended")
            data += chunk
        return len(data)


def check_load(load: dict, phase: str = "measured window", status: int = 200) -> None:
    """Raise RunError if the load generator saw any error, timeout or answer of another status than `status`.

    autocannon counts each status; wrk counts answers above 399 and ab answers outside 2xx
    (non2xx), so for them a 2xx scenario must have none and a 4xx scenario nothing else.
    """
    problems = []
    if load["errors"]:
        problems.append(f"{load['errors']} errors")
    if load["timeouts"]:
        problems.append(f"{load['timeouts']} timeouts")
    counts = load.get("status_counts")
    if counts:
        bad = {k: v for k, v in counts.items() if k != str(status)}
        if bad:
            detail = ", ".join(f"{v} x HTTP {k}" for k, v in sorted(bad.items()))
            only_non2xx = status < 300 and not any(k.startswith("2") for k in bad)
            what = "non-2xx responses" if only_non2xx else f"answers of another status than {status}"
            problems.append(f"{sum(bad.values())} {what} ({detail})")
    elif status < 300 and load["non2xx"]:
        problems.append(f"{load['non2xx']} non-2xx responses")
    elif status >= 400 and load["non2xx"] != load["requests"]:
        problems.append(f"{load['requests'] - load['non2xx']} of {load['requests']} answers were not HTTP {status}")
    if load.get("mismatches"):
        problems.append(f"{load['mismatches']} answers that differed from the expected body")
    if problems:
        raise RunError(f"the load generator saw {', '.join(problems)} during the {phase}; this run is not a result")
    if load["requests"] <= 0:
        raise RunError(f"the load generator completed no requests during the {phase}")


def check_database(queries: int, requests: int, per_request: int, connections: int) -> None:
    """Raise RunError unless the database ran per_request queries for each request the client counted, and for
    at most one more request per connection.

    Every response the client read was sent inside the window, so its queries ran there:
    at least requests x per_request. When the client stops it drops each connection's one
    outstanding request (keep-alive, no pipelining), whose handler may have run its query
    all the same, answered or not: at most (requests + connections) x per_request.
    """
    lo, hi = requests * per_request, (requests + connections) * per_request
    if not lo <= queries <= hi:
        raise RunError(
            f"the database ran {queries} workload queries for the {requests} requests the load generator counted "
            f"(expected {lo} to {hi}: {per_request} per request, and at most one more request for each of the "
            f"{connections} connections); the workload did not do the work it claims"
        )


def check_statuses(statuses: dict | None, status: int) -> None:
    """Raise RunError unless every response the server completed in its window had the scenario's status.

    Only a server run with NODEBENCH_PROBE=hook counts its statuses (None otherwise); the client's
    statuses are check_load's, and a wrong status the client cannot name (wrk, ab) changes the
    answer's length, which check_bytes compares with the verified answer.
    """
    bad = {k: v for k, v in (statuses or {}).items() if str(k) != str(status)}
    if bad:
        seen = ", ".join(f"{v} x HTTP {k}" for k, v in sorted(statuses.items()))
        raise RunError(f"the server answered {seen} in its window, but every answer must be HTTP {status}")


#: How many bytes longer than the verified one an answer that carries a new id may be (ids up to 10^9).
VARYING_SLACK = 9


def check_bytes(received: int, responses: int, answer_size: int, varies: bool = False) -> None:
    """Raise RunError unless every response was as long as the verified answer (headers and body).

    Where the answer carries a new id each time (varies), each may be up to VARYING_SLACK
    bytes longer than the verified one, whose id came first and so is the shortest.
    """
    if varies:
        if not responses * answer_size <= received <= responses * (answer_size + VARYING_SLACK):
            raise RunError(
                f"the load generator received {received} bytes in {responses} responses, outside the "
                f"{responses * answer_size} to {responses * (answer_size + VARYING_SLACK)} that answers of "
                f"{answer_size} bytes with growing ids can make: some answers differed from the verified one"
            )
        return
    if received != responses * answer_size:
        raise RunError(
            f"the load generator received {received} bytes in {responses} responses, but the verified answer is "
            f"{answer_size} bytes (expected {responses * answer_size}): some answers differed from the verified one"
        )


def check_server_requests(server_requests: int, requests: int, connections: int, aborted: int = 0) -> None:
    """Raise RunError unless the server's completed responses match the client's count (NODEBENCH_PROBE=hook only:
    by default the server keeps no count, and the client's is the window's).

    The server counts a response once it is sent; the client, once it has read it. Every
    response the client read was sent inside the window (the client starts after the window
    opens), so the server cannot count fewer. It may count more: when a duration run ends,
    the client drops its connections, each with at most one request outstanding (keep-alive,
    no pipelining), whose response was either sent but never read (counted by the server
    only) or not sent at all (aborted). So completed-but-unread plus aborted is at most one
    per connection: requests <= server_requests and server_requests + aborted <= requests + connections.
    A fixed-count run, which reads every response, has server_requests == requests.
    """
    extra = server_requests - requests
    if extra < 0 or extra + aborted > connections:
        also = f" (and {aborted} aborted)" if aborted else ""
        raise RunError(
            f"the server completed {server_requests} requests{also} in its window but the load generator counted "
            f"{requests}; expected {requests} to {requests + connections - aborted} completed, at most one unread "
            f"or aborted per connection ({connections}): something else is talking to it, or requests were lost"
        )


def check_elu(elu: dict) -> None:
    """Raise RunError when the server's ELU window is not a plausible measurement or did not drain."""
    u = elu["utilization"]
    if not (0.0 < u <= 1.0):
        raise RunError(f"the server reported event-loop utilization {u!r}, outside (0, 1]")
    if elu["wall_ms"] <= 0:
        raise RunError("the server's ELU window has no duration")
    if elu.get("drained") is False:  # None: a server without the hook does not drain
        raise RunError(
            f"the server still had {elu.get('in_flight_after_drain')} of the window's "
            f"{elu.get('in_flight_at_stop')} requests in flight {elu.get('drain_ms', 0):.0f} ms after /__elu/stop; "
            "its count would leave out work done inside the window, so this run is not a result"
        )


# The workload queries the servers ran, from pg_stat_statements: the proof that the database did the work.
QUERY_COUNTER_SQL = """
SELECT coalesce(sum(s.calls), 0)::bigint
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = current_database()
  AND (s.query ILIKE '%from users%' OR s.query ILIKE 'insert into signups%')
  AND s.query NOT ILIKE '%pg_stat_statements%'
"""


def settled_count(
    admin: "psycopg.Connection",
    expected: int | None = None,
    timeout: float = 10.0,
    interval: float = 0.02,
    steady_reads: int = 3,
) -> int:
    """The workload-query counter once it stops moving.

    Requests still queued for the pool when a load run ends finish their queries a
    little later; reading the counter only after it settles keeps those queries in
    the run they belong to (warm-up before the window, the window after it). After the
    window the count the server's requests must have cost is known (`expected`): once
    the counter reaches it, one read an interval later that finds it unchanged is enough.
    A counter that never reaches it is read as it settles, and check_database names the
    difference.
    """
    deadline = time.monotonic() + timeout
    last = admin.execute(QUERY_COUNTER_SQL).fetchone()[0]
    if expected is not None:
        reach_by = time.monotonic() + min(timeout, 2.0)
        while last < expected and time.monotonic() < reach_by:
            time.sleep(0.005)
            last = admin.execute(QUERY_COUNTER_SQL).fetchone()[0]
        if last == expected:
            steady_reads = 1
    steady = 0
    while steady < steady_reads and time.monotonic() < deadline:
        time.sleep(interval)
        now = admin.execute(QUERY_COUNTER_SQL).fetchone()[0]
        steady = steady + 1 if now == last else 0
        last = now
    return last


def server_idle_count(
    port: int,
    admin: "psycopg.Connection",
    timeout: float = 10.0,
    interval: float = 0.005,
    when: str = "before the window",
) -> int:
    """The workload-query counter once the server says it has no query left to run (before and after the window).

    The counter alone cannot tell a finished warm-up from a paused one: a server in a
    garbage-collection pause, or queries waiting on a lock, leave it flat while queries
    of the warm-up are still to come. So the server is asked (/__elu/sample) until no
    query is at its pools (`db_busy`: clients checked out and queries queued for one,
    those whose client went away too). That needs no per-request hook, and it is enough
    once the load generator has exited (the harness asks only then): every request it
    left behind was in the server's socket buffers before the harness's /__elu/sample
    connected, so the server reads it, in the same or an earlier turn of its loop, before
    it answers the sample, and its handler has by then handed its query to a pool (pg's
    pool.query queues it at once: waitingCount), where db_busy counts it. (A server run
    with NODEBENCH_PROBE=hook also reports its requests in flight, which must be 0 too.)
    Then the counter is read once, and again 10 ms later (settled_count), so a query
    counted late still lands on the right side of the window. RunError if the server is
    not idle in time.
    """
    deadline = time.monotonic() + timeout
    while True:
        sample = get_json(port, "/__elu/sample")
        if "db_busy" not in sample:
            raise RunError("the server's /__elu/sample has no db_busy (see makeProbe in servers/contract/probe.js)")
        in_flight = sample.get("in_flight") or 0  # None: no hook, nothing counts requests
        if in_flight == 0 and sample["db_busy"] == 0:
            return settled_count(admin, steady_reads=1, interval=0.01)
        if time.monotonic() > deadline:
            requests = f"{in_flight} requests in flight and " if sample.get("in_flight") is not None else ""
            raise RunError(
                f"the server still had {requests}{sample['db_busy']} queries at its database pools "
                f"{timeout:g} s after the harness first asked ({when})"
            )
        time.sleep(interval)


#: The backlog every server listens with (servers/contract/serve.js LISTEN_BACKLOG); the kernel caps it.
LISTEN_BACKLOG = 4096


def listen_overflows(netstat: str | None = None) -> int | None:
    """The kernel's count of handshakes dropped because a listen queue was full (TcpExt ListenOverflows).

    Read from /proc/net/netstat (or the text given); None where there is no such file (not Linux).
    """
    if netstat is None:
        try:
            netstat = Path("/proc/net/netstat").read_text()
        except OSError:
            return None
    lines = [line.split() for line in netstat.splitlines()]
    for names, values in zip(lines, lines[1:], strict=False):
        if names[:1] == ["TcpExt:"] and values[:1] == ["TcpExt:"] and "ListenOverflows" in names:
            return int(values[names.index("ListenOverflows")])
    return None


def somaxconn() -> int | None:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return None


def check_listen_queue(before: int | None, after: int | None) -> None:
    """Raise RunError if a listen queue on this host overflowed during the measured window.

    A dropped handshake makes the client wait for a SYN retransmit (1 s, then 3 s), and
    the load generator counts that wait as the server's latency.
    """
    if before is None or after is None or after <= before:
        return
    cap = somaxconn()
    cap_note = f"; net.core.somaxconn is {cap}" if cap is not None else ""
    raise RunError(
        f"a listen queue on this host overflowed {after - before} times during the measured window "
        f"(TcpExt ListenOverflows): clients waited for SYN retransmits, which the load generator counts "
        f"as the server's latency; this run is not a result. The servers listen with a backlog of "
        f"{LISTEN_BACKLOG}, capped by the kernel{cap_note}: raise it (sysctl -w net.core.somaxconn="
        f"{LISTEN_BACKLOG}), use fewer connections, or stop whatever else on this host is refusing connections"
    )

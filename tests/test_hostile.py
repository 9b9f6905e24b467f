"""Hostile requests: generated paths, ids, query strings, methods, headers and bodies against every server.

Every answer must have the status the contract says (the oracle below, written from the
catalogue and servers/contract.js), never a 5xx, never a dropped connection and never a
hang (each request has a 5-second timeout). The servers run without a database, so the
requests that would reach it (a valid id on /users/:id, a valid body on /signups) are left
out; everything that must be refused before the database is in.
"""

import http.client
import json
import os
import re
import socket
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodebench.harness import procs, server

SERVERS = ["node-http", "express", "express-lean", "fastify", "fastify-schema", "hono", "koa"]
BODY_LIMIT = 100 * 1024
KINDS = ("green", "black", "oolong")
ID = re.compile(r"[0-9]{1,9}")
EXAMPLES = settings(
    max_examples=int(os.environ.get("NODEBENCH_HOSTILE_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


@pytest.fixture(scope="module")
def ports(tmp_path_factory, project):
    """Every server, started as the harness starts them, without a database, from the tiny run's copy (where the
    pipeline installed the servers' packages)."""
    started = {}
    try:
        for name in SERVERS:
            port = procs.free_port()
            log = tmp_path_factory.mktemp(name) / "server.log"
            env = {"PATH": os.environ["PATH"], "PORT": str(port), "NODE_ENV": "production", "PGHOST": "/nonexistent"}
            proc = server.start("node", project / "servers" / f"{name}.js", env, procs.job_cpus(), log)
            started[name] = (proc, port)
            server.wait_ready(proc, name, log)
        yield {name: port for name, (_, port) in started.items()}
    finally:
        for proc, _ in started.values():
            procs.stop(proc)
        for name, (proc, _) in started.items():
            assert proc.returncode == 0, f"{name} did not stop cleanly after the hostile requests: {proc.returncode}"


def send(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """(status, body); a dropped connection or a timeout fails the test with what was sent."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        return res.status, res.read()
    except (OSError, http.client.HTTPException) as e:
        raise AssertionError(f"{method} {path[:80]} ({len(body or b'')} body bytes): no answer: {e!r}") from None
    finally:
        conn.close()


def check_all(ports, method, path, expected, body=None, headers=None):
    """Every server answers the request with the expected status (a set of them where the contract allows)."""
    wrong = {}
    for name, port in ports.items():
        status, answer = send(port, method, path, body, headers)
        if status >= 500 or status not in expected:
            wrong[name] = (status, answer[:160])
    assert not wrong, f"{method} {path[:100]}: expected {sorted(expected)}, got {wrong}"


# --- The oracle: what the contract says a request gets ----------------------------------------------------


def integer(v) -> bool:
    """An integer as JavaScript reads the JSON: 3 and 3.0 alike (JSON.parse gives the same number)."""
    return not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))


def user_problem(b) -> bool:
    return not (isinstance(b, dict) and isinstance(b.get("name"), str) and b["name"] != "" and integer(b.get("age")))


def item_ok(t) -> bool:
    return (
        isinstance(t, dict)
        and isinstance(t.get("name"), str)
        and t["name"] != ""
        and t.get("kind") in KINDS
        and integer(t.get("grams"))
        and t["grams"] >= 1
        and isinstance(t.get("price"), (int, float))
        and not isinstance(t.get("price"), bool)
        and t["price"] >= 0
    )


def teas_problem(b) -> bool:
    if not (isinstance(b, dict) and isinstance(b.get("items"), list)):
        return True
    return not (1 <= len(b["items"]) <= 500 and all(item_ok(t) for t in b["items"]))


# --- Strategies -------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)
numbers = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40), st.floats(allow_nan=False, allow_infinity=False, width=32)
)
# Mostly well-formed, so that valid and nearly valid bodies (a float age, an empty name) both come up often.
users = (
    st.fixed_dictionaries(
        {
            "name": st.one_of(st.text(min_size=1, max_size=30), st.just(""), json_values),
            "age": st.one_of(numbers, json_values),
        },
        optional={"extra": json_values},
    )
    | st.fixed_dictionaries({}, optional={"name": st.text(max_size=5), "age": numbers})
    | json_values
)
items = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=12), st.integers()),
        "kind": st.one_of(st.sampled_from(KINDS), st.text(max_size=8)),
        "grams": st.one_of(
            st.integers(min_value=-5, max_value=10_000), st.floats(allow_nan=False, allow_infinity=False)
        ),
        "price": st.one_of(st.floats(min_value=-10, max_value=1e6), st.integers(), st.text(max_size=4)),
    },
)
teas = st.one_of(
    st.fixed_dictionaries({"items": st.lists(items, max_size=8)}),
    st.fixed_dictionaries({"items": st.lists(items, min_size=499, max_size=502)}),
    json_values,
)
# Path segments of any printable shape, percent-encoded as a client would send them.
segments = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=24)


def encoded(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


# --- The properties ---------------------------------------------------------------------------------------


@EXAMPLES
@given(body=users)
def test_small_bodies_are_created_or_refused_alike(ports, body):
    check_all(ports, "POST", "/users", {400 if user_problem(body) else 201}, json.dumps(body).encode(),
              {"content-type": "application/json"})  # fmt: skip


@EXAMPLES
@given(body=teas)
def test_bulk_bodies_are_counted_or_refused_alike(ports, body):
    check_all(ports, "POST", "/teas/bulk", {400 if teas_problem(body) else 201}, json.dumps(body).encode(),
              {"content-type": "application/json"})  # fmt: skip


@EXAMPLES
@given(raw=st.binary(max_size=200))
def test_bytes_that_are_not_json_are_a_400(ports, raw):
    try:
        json.loads(raw)
        return  # valid JSON is the other properties' business
    except ValueError:
        pass
    check_all(ports, "POST", "/users", {400}, raw, {"content-type": "application/json"})


@EXAMPLES
@given(ctype=st.sampled_from(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                              "application/xml", "text/json"]))  # fmt: skip
def test_another_content_type_is_a_415(ports, ctype):
    check_all(ports, "POST", "/users", {415}, b'{"name":"Mio","age":3}', {"content-type": ctype})


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.integers(min_value=1_000, max_value=20_000))
def test_deeply_nested_json_is_refused_not_a_crash(ports, depth):
    body = ("[" * depth + "]" * depth).encode()
    check_all(ports, "POST", "/users", {400, 413}, body, {"content-type": "application/json"})


def test_a_body_over_the_limit_is_a_413(ports):
    body = json.dumps({"name": "a" * BODY_LIMIT, "age": 3}).encode()
    check_all(ports, "POST", "/users", {413}, body, {"content-type": "application/json"})


@EXAMPLES
@given(segment=segments, fields=st.one_of(st.none(), st.text(max_size=20)))
def test_ids_of_every_shape(ports, segment, fields):
    path = f"/people/{encoded(segment)}" + ("" if fields is None else f"?fields={encoded(fields)}")
    # A valid id echoes; anything else is refused before any work; "/" inside an id is a path of its own.
    expected = {200} if ID.fullmatch(segment) else ({400, 404} if "/" in segment else {400})
    check_all(ports, "GET", path, expected)
    # /users/:id refuses a non-integer id before it reaches the database.
    if not ID.fullmatch(segment):
        check_all(ports, "GET", f"/users/{encoded(segment)}", expected - {200} or {400})


@EXAMPLES
@given(segments=st.lists(segments, min_size=1, max_size=6), query=st.text(max_size=30))
def test_unknown_paths_are_a_404(ports, segments, query):
    path = "/zz-" + "/".join(encoded(s) for s in segments) + (f"?{encoded(query)}" if query else "")
    check_all(ports, "GET", path, {404})


@EXAMPLES
@given(
    method=st.sampled_from(["PUT", "DELETE", "PATCH", "POST"]),
    path=st.sampled_from(["/hello", "/teas", "/static/1", "/list", "/mw", "/async/7", "/p199/7/items/abc"]),
)
def test_a_method_no_route_has_is_a_404(ports, method, path):
    check_all(ports, method, path, {404}, b"{}", {"content-type": "application/json"})


@EXAMPLES
@given(size=st.integers(min_value=20_000, max_value=200_000))
def test_oversized_headers_are_refused(ports, size):
    # Node's own limit (16 KB of headers) answers 431 before any framework sees the request.
    for name, port in ports.items():
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n")
            head = b""
            try:
                while b"\r\n" not in head:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    head += chunk
            except ConnectionResetError:
                pass
        assert head.startswith(b"HTTP/1.1 431"), f"{name}: {head[:80]!r}"


def test_malformed_request_lines_are_a_400(ports):
    for name, port in ports.items():
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n")
            head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 400"), f"{name}: {head[:80]!r}"
    # Every server still answers afterwards.
    check_all(ports, "GET", "/hello", {200})

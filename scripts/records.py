"""Pure functions that turn what one measurement saw into a run record, and judge it."""

import json
from pathlib import Path


class RunError(RuntimeError):
    """A measurement that is not a result: the job fails with this message."""


# What each workload asks and how many queries one request must cost the database.
WORKLOADS = {
    "empty": {"path": "/static/1", "queries_per_request": 0},
    "point-lookup": {"path": "/users/4242", "queries_per_request": 1},
    "list": {"path": "/list", "queries_per_request": 1},
}

LATENCY_KEYS = {
    "p50": "latency_p50_ms",
    "p90": "latency_p90_ms",
    "p99": "latency_p99_ms",
    "max": "latency_max_ms",
    "mean": "latency_mean_ms",
}


def parse_autocannon(result: dict) -> dict:
    """The fields of an autocannon result (its JSON output) that a run record keeps."""
    status_counts = {str(k): int(v.get("count", 0)) for k, v in (result.get("statusCodeStats") or {}).items()}
    out = {
        "requests": int(result["requests"]["total"]),
        "responses_2xx": int(result["2xx"]),
        "errors": int(result["errors"]),
        "timeouts": int(result["timeouts"]),
        "non2xx": int(result["non2xx"]),
        "resets": int(result.get("resets", 0)),
        "mismatches": int(result.get("mismatches", 0)),
        "bytes": int(result["throughput"]["total"]),
        "client_reported_duration_s": float(result["duration"]),
        "client_reported_req_per_s": float(result["requests"]["average"]),
        "status_counts": status_counts,
    }
    for key, name in LATENCY_KEYS.items():
        out[name] = float(result["latency"][key])
    return out


def check_load(load: dict, phase: str = "measured window") -> None:
    """Raise RunError if the load generator saw any error, timeout or non-2xx answer."""
    problems = []
    if load["errors"]:
        problems.append(f"{load['errors']} errors")
    if load["timeouts"]:
        problems.append(f"{load['timeouts']} timeouts")
    if load["non2xx"]:
        bad = {k: v for k, v in (load.get("status_counts") or {}).items() if not k.startswith("2")}
        detail = ", ".join(f"{v} x HTTP {k}" for k, v in sorted(bad.items()))
        problems.append(f"{load['non2xx']} non-2xx responses" + (f" ({detail})" if detail else ""))
    if load.get("mismatches"):
        problems.append(f"{load['mismatches']} answers that differed from the expected body")
    if problems:
        raise RunError(f"the load generator saw {', '.join(problems)} during the {phase}; this run is not a result")
    if load["requests"] <= 0:
        raise RunError(f"the load generator completed no requests during the {phase}")


def check_database(queries: int, server_requests: int, per_request: int) -> None:
    """Raise RunError unless the database ran per_request queries for each request the server received."""
    expected = server_requests * per_request
    if queries != expected:
        raise RunError(
            f"the database ran {queries} workload queries for the {server_requests} requests the server received "
            f"(expected {expected}); the workload did not do the work it claims"
        )


def check_bytes(received: int, responses: int, answer_size: int) -> None:
    """Raise RunError unless every response was as long as the verified answer (headers and body)."""
    if received != responses * answer_size:
        raise RunError(
            f"the load generator received {received} bytes in {responses} responses, but the verified answer is "
            f"{answer_size} bytes (expected {responses * answer_size}): some answers differed from the verified one"
        )


def check_server_requests(server_requests: int, requests: int, connections: int) -> None:
    """Raise RunError unless the server saw the client's requests plus at most one in flight per connection."""
    if not (requests <= server_requests <= requests + connections):
        raise RunError(
            f"the server received {server_requests} requests in its window but the load generator counted "
            f"{requests} (expected {requests} to {requests + connections}); something else is talking to it"
        )


def derive(load: dict, window_s: float, elu: dict) -> dict:
    """Rates and CPU per request from the raw counts of one measured window.

    The server's figures use the server's own window and the requests that reached it
    in that window, so time and count cover the same work (the client stops counting
    while its last requests, one per connection, are still being served).
    """
    # The ELU's own clock (idle + active), so that ELU x 1e6 / req_per_s is exactly active time per request.
    server_window_s = (elu["idle_ms"] + elu["active_ms"]) / 1000.0
    server_requests = elu["requests"]
    req_per_s = server_requests / server_window_s
    cpu_us = elu["cpu_user_us"] + elu["cpu_system_us"]
    return {
        "req_per_s": req_per_s,
        "client_req_per_s": load["requests"] / window_s,
        "bytes_per_s": load["bytes"] / window_s,
        "us_per_req_elu": elu["utilization"] * 1e6 / req_per_s,
        "us_per_req_cpu": cpu_us / server_requests,
        "server_cpu_util": cpu_us / (elu["wall_ms"] * 1000.0),
    }


def check_elu(elu: dict) -> None:
    """Raise RunError when the server's ELU window is not a plausible measurement."""
    u = elu["utilization"]
    if not (0.0 < u <= 1.0):
        raise RunError(f"the server reported event-loop utilization {u!r}, outside (0, 1]")
    if elu["wall_ms"] <= 0:
        raise RunError("the server's ELU window has no duration")


def lockfile_versions(lock_path: Path, packages=("express", "fastify", "pg", "autocannon")) -> dict:
    """Installed versions of the packages that matter, read from package-lock.json."""
    lock = json.loads(Path(lock_path).read_text())
    pkgs = lock.get("packages", {})
    return {f"{name}_version": pkgs.get(f"node_modules/{name}", {}).get("version") for name in packages}


# --- wrk and ab: their text output, parsed into the same fields as autocannon's ---


def parse_wrk(text: str) -> dict:
    """The run-record fields from wrk's stdout with servers/loadgen/wrk-report.lua's JSON line.

    wrk cannot give per-status counts, resets or mismatches (None); it counts a status
    above 399 as an error of kind "status", which is what non2xx holds. A 3xx answer
    would pass that count, but not the byte check against the verified answer.
    """
    report = None
    for line in text.splitlines():
        if line.startswith('{"wrk_report"'):
            report = json.loads(line)
    if report is None:
        raise RunError(f"wrk printed no report line (is servers/loadgen/wrk-report.lua loaded?): {text[-300:]!r}")
    e, lat = report["errors"], report["latency_us"]
    duration_s = report["duration_us"] / 1e6
    requests = int(report["requests"])
    out = {
        "requests": requests,
        "responses_2xx": requests - int(e["status"]),
        "errors": int(e["connect"]) + int(e["read"]) + int(e["write"]),
        "timeouts": int(e["timeout"]),
        "non2xx": int(e["status"]),
        "resets": None,
        "mismatches": 0,
        "bytes": int(report["bytes"]),
        "client_reported_duration_s": duration_s,
        "client_reported_req_per_s": requests / duration_s if duration_s > 0 else 0.0,
        "status_counts": None,
    }
    for key in ("p50", "p90", "p99", "max", "mean"):
        out[LATENCY_KEYS[key]] = float(lat[key]) / 1000.0
    return out


def _ab_field(text: str, label: str, default=None) -> str | None:
    for line in text.splitlines():
        if line.startswith(label + ":"):
            return line.split(":", 1)[1].strip()
    return default


def parse_ab(text: str) -> dict:
    """The run-record fields from ApacheBench's (ab) report.

    ab gives latency in whole milliseconds, no p90 from its table other than the 90%
    line, no per-status counts (None) and no resets (None). Failed requests of kind
    "Length" (an answer whose length differs from the first one) are mismatches.
    """
    complete = _ab_field(text, "Complete requests")
    if complete is None:
        raise RunError(f"ab printed no report: {text.strip()[-300:]!r}")
    requests = int(complete)
    failed = {"Connect": 0, "Receive": 0, "Length": 0, "Exceptions": 0}
    for line in text.splitlines():
        if line.strip().startswith("(Connect:"):
            for part in line.strip().strip("()").split(","):
                name, value = part.split(":")
                failed[name.strip()] = int(value)
    non2xx = int(_ab_field(text, "Non-2xx responses", "0"))
    write_errors = int(_ab_field(text, "Write errors", "0"))
    percentiles = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith("%") and parts[0][:-1].isdigit():
            percentiles[int(parts[0][:-1])] = float(parts[1])
    duration_s = float(_ab_field(text, "Time taken for tests").split()[0])
    out = {
        "requests": requests,
        "responses_2xx": requests - non2xx,
        "errors": failed["Connect"] + failed["Receive"] + failed["Exceptions"] + write_errors,
        "timeouts": 0,
        "non2xx": non2xx,
        "resets": None,
        "mismatches": failed["Length"],
        "bytes": int(_ab_field(text, "Total transferred").split()[0]),
        "client_reported_duration_s": duration_s,
        "client_reported_req_per_s": float(_ab_field(text, "Requests per second").split()[0]),
        "status_counts": None,
        "latency_p50_ms": percentiles[50],
        "latency_p90_ms": percentiles[90],
        "latency_p99_ms": percentiles[99],
        "latency_max_ms": percentiles[100],
        # "Time per request (mean)" = concurrency x time / requests: the mean latency of a closed loop.
        "latency_mean_ms": float(_ab_field(text, "Time per request").split()[0]),
    }
    return out

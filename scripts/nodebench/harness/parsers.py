"""The load generators' outputs, parsed into the same run-record fields."""

import json

from nodebench.harness.errors import RunError

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


def parse_openloop(result: dict) -> dict:
    """The run-record fields of servers/loadgen/openloop.js's result (its window). Its latencies count from each
    request's scheduled time; they are None when the client refused the run (it fell behind its schedule)."""
    latency = result["latency_ms"]
    duration_s = float(result["duration_s"])
    out = {
        "requests": int(result["completed"]),
        "responses_2xx": int(result["completed"]) - int(result["non2xx"]),
        "errors": int(result["errors"]) - int(result["timeouts"]),
        "timeouts": int(result["timeouts"]),
        "non2xx": int(result["non2xx"]),
        "resets": None,
        "mismatches": 0,
        "bytes": int(result["bytes"]),
        "client_reported_duration_s": duration_s,
        "client_reported_req_per_s": float(result["delivered_rate"]),
        "status_counts": {str(k): int(v) for k, v in result["status_counts"].items()},
        "latency_p99_9_ms": latency["p99_9"],
        "openloop_target_rate": float(result["target_rate"]),
        "openloop_arrivals": result.get("arrivals"),
        "openloop_seed": None if result.get("seed") is None else int(result["seed"]),
        "openloop_wait": result.get("wait"),
        "openloop_timed": None if result.get("timed") is None else int(result["timed"]),
        "openloop_sent": int(result["sent"]),
        "openloop_lag_p99_ms": result["lag_ms"]["p99"],
        "openloop_lag_max_ms": result["lag_ms"]["max"],
        "openloop_client_effect_p99_ms": (result.get("client_effect_ms") or {}).get("p99"),
        "openloop_backlog_at_end": result["backlog_at_end"],
        "openloop_lead_in_s": float(result.get("lead_in_s") or 0),
        "openloop_refused": result["refused"],
        "openloop_queued_max": int(result["queued_max"]),
        "openloop_unsent": int(result["unsent"]),
        "openloop_connections_opened": int(result["connections_opened"]),
    }
    for key, name in LATENCY_KEYS.items():
        out[name] = None if latency[key] is None else float(latency[key])
    return out

"""One run record: the figures derived from what a run saw, the provenance, and the schema check."""

import json
import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from nodebench.catalogue.preemption import DISTURBED_STOLEN_SHARE, PREEMPT_ACTIVE_OVER_CPU, PREEMPT_INVOL_CSW_PER_S
from nodebench.harness.errors import RunError
from nodebench.harness.hostsample import disturbance, window_figures

#: The run record's format. 1: every record written before the field existed (aggregation reads it as one of
#: today: renamed fields under today's names, fields it lacks as null); 2: the same fields, with this one.
#: Raise it when a field changes meaning or unit, and say in analysis/aggregate.py how an older one is read
#: (or that it is refused).
FORMAT_VERSION = 2


def derive(load: dict, window_s: float, elu: dict) -> dict:
    """Rates and CPU per request from the raw counts of one measured window.

    The count is the load generator's (the server touches no request): every response it
    read was sent inside the server's window, which opens before the client starts and
    closes after it exits. What the window holds beyond that is the work, done in part,
    of each connection's one request outstanding when the client stopped: at most
    `connections` requests uncounted, so the figures per request are upper bounds, by
    connections / requests at most (docs/measurement.md, "What the window counts").
    """
    # The ELU's own clock (idle + active), so that ELU x 1e6 / req_per_s is exactly active time per request.
    server_window_s = (elu["idle_ms"] + elu["active_ms"]) / 1000.0
    requests = load["requests"]
    req_per_s = requests / server_window_s
    cpu_us = elu["cpu_user_us"] + elu["cpu_system_us"]
    return {
        "req_per_s": req_per_s,
        "client_req_per_s": load["requests"] / window_s,
        "bytes_per_s": load["bytes"] / window_s,
        "us_per_req_elu": elu["utilization"] * 1e6 / req_per_s,
        "us_per_req_cpu": cpu_us / requests,
        "server_cpu_util": cpu_us / (elu["wall_ms"] * 1000.0),
    }


def server_cpu_figures(host: tuple, server_pid: int, elu: dict, requests: int) -> dict:
    """The disturbance measured from outside the server (hostsample.disturbance), the main thread's and all
    threads' on-CPU time per request (requests: the load generator's count, as in derive), and whether the run
    was disturbed (catalogue/preemption.py)."""
    got = disturbance(*host, server_pid)
    per_req = lambda ms: None if ms is None or requests <= 0 else ms * 1000.0 / requests  # noqa: E731
    share = got["stolen_share"]
    return {
        **got,
        "us_per_req_oncpu": per_req(got["main_oncpu_ms"]),
        "us_per_req_threads": per_req(got["threads_oncpu_ms"]),
        "main_wait_share": None if got["main_wait_ms"] is None else got["main_wait_ms"] / elu["wall_ms"],
        "disturbed": None if share is None else share > DISTURBED_STOLEN_SHARE,
    }


def _mb(n_bytes) -> float | None:
    """Bytes as MiB (None stays None: a server that did not say)."""
    return None if n_bytes is None else n_bytes / 2**20


def preemption(elu: dict) -> dict:
    """Was the server kept off its CPU during the window? The flag, its reason, and the figures behind it.

    Event-loop active time is wall time the loop spent outside its wait for events; if the
    thread is preempted meanwhile, that time is active without CPU. Process CPU (every
    thread) normally exceeds it, so active time clearly above process CPU means the server
    was runnable but not running. Many involuntary context switches per second say the
    same from the scheduler's side. Thresholds: catalogue/thresholds.py.
    """
    cpu_us = elu["cpu_user_us"] + elu["cpu_system_us"]
    ratio = elu["active_ms"] * 1000.0 / cpu_us if cpu_us > 0 else None
    invol = elu.get("invol_csw")
    per_s = invol / (elu["wall_ms"] / 1000.0) if invol is not None and elu["wall_ms"] > 0 else None
    reasons = []
    if ratio is not None and ratio > PREEMPT_ACTIVE_OVER_CPU:
        reasons.append(f"event-loop active time {ratio:.2f}x the process CPU (> {PREEMPT_ACTIVE_OVER_CPU:g}x)")
    if per_s is not None and per_s > PREEMPT_INVOL_CSW_PER_S:
        reasons.append(f"{per_s:,.0f} involuntary context switches/s (> {PREEMPT_INVOL_CSW_PER_S:,.0f})")
    return {
        "server_invol_csw": invol,
        "server_invol_csw_per_s": per_s,
        "server_vol_csw": elu.get("vol_csw"),
        "elu_active_over_cpu": ratio,
        "preempted": bool(reasons),
        "preempted_reason": "; ".join(reasons) or None,
    }


def lockfile_versions(lock_path: Path, packages=("express", "fastify", "pg", "autocannon")) -> dict:
    """Installed versions of the packages that matter, read from package-lock.json."""
    lock = json.loads(Path(lock_path).read_text())
    pkgs = lock.get("packages", {})
    return {f"{name}_version": pkgs.get(f"node_modules/{name}", {}).get("version") for name in packages}


def client_version(name: str, lockfile: Path) -> str:
    """The load generator's version: autocannon's from the lockfile, wrk's and ab's from the program."""
    if name == "autocannon":
        return lockfile_versions(lockfile, ("autocannon",))["autocannon_version"] or "unknown"
    from nodebench.catalogue.clients import CLIENTS

    if CLIENTS[name].open_loop:
        # The project's own client: its version is its files' content (its file and those it requires).
        import hashlib

        from nodebench.jsrequire import js_files

        main = CLIENTS[name].files[0]
        digest = hashlib.sha256()
        for path in (main, *js_files(main)):
            digest.update(Path(path).read_bytes())
        return "sha256:" + digest.hexdigest()[:12]
    from nodebench.harness.loadgen import program_version

    return program_version(name)


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's guess)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(workdir: Path) -> str:
    """HEAD of the pipeline's repository, with '-dirty' when tracked files differ."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=workdir, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("-dirty" if dirty else "")


def machine() -> dict:
    """Host, CPU and kernel facts."""
    return {
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "kernel": platform.release(),
    }


def _compile(schema_path: Path):
    """The record schema as a validating function, and the exception type it raises."""
    import fastjsonschema
    import yaml

    # libyaml's loader where PyYAML has it: the pure-Python one takes 25 ms of every job for this file.
    schema = yaml.load(schema_path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return fastjsonschema.compile({k: v for k, v in schema.items() if k != "$schema"})


#: Record schemas compiled in this process, by path.
_compiled: dict[Path, object] = {}


def run_independent_facts(client: str, lockfile: Path) -> dict:
    """What a record says that no run changes: versions, the machine, the pipeline's commit.

    Two of them start programs (the load generator's version, git), so the measurement job
    gathers them during its warm-up (on a thread of its own), not after the window.
    """
    return {
        "client_version": client_version(client, lockfile),
        "lockfile": lockfile_versions(lockfile),
        "machine": machine(),
        "pipeline_commit": git_commit(Path.cwd()),
    }


def gather(client: str, lockfile: Path, schema_path: Path) -> dict:
    """run_independent_facts, and the record's schema compiled for check_record (done during the warm-up)."""
    _compiled[schema_path] = _compile(schema_path)
    return run_independent_facts(client, lockfile)


def check_record(record: dict, schema_path: Path) -> None:
    """Raise RunError if the record breaks its schema, so a bad record never counts as done."""
    import fastjsonschema

    validate = _compiled.get(schema_path) or _compile(schema_path)
    try:
        validate(record)
    except fastjsonschema.JsonSchemaException as e:
        raise RunError(f"the run record breaks {schema_path}: {e.message}") from None


def build(o: dict, facts: dict) -> dict:
    """The run record from what one measurement observed (measure.measure's `observed`) and run_independent_facts."""
    cell, opts, client, out, elu, load = o["cell"], o["opts"], o["client"], o["out"], o["out"]["elu"], o["out"]["load"]
    stop, window_s, workload = cell.stop, out["window_s"], o["workload"]
    finished_at = datetime.now(UTC)
    warmup_s = float(opts.warmup_s)
    return {
        "format_version": FORMAT_VERSION,
        "server": cell.server,
        "workload": cell.workload,
        "connections": cell.connections,
        "round": cell.round,
        "client": cell.client,
        "client_version": facts["client_version"],
        "client_threads": client.threads,
        "client_cpu_capacity": float(min(client.threads, len(o["client_cpus"]))),
        "stopping_rule": stop.rule,
        "stop": stop.label,
        "path": workload.path,
        "method": workload.method,
        "expected_status": workload.status,
        "warmup_s": warmup_s,
        "duration_s": float(stop.value) if stop.rule == "duration" else None,
        "requests_target": int(stop.value) if stop.rule == "count" else None,
        "last_response_s": out["last_response_s"],
        "first_connection_done_s": out["first_connection_done_s"],
        "responses_at_first_done": out["responses_at_first_done"],
        "client_samples": out["samples"],
        "pool_size": opts.pool_size,
        "window_s": window_s,
        **load,
        "latency_p99_9_ms": load.get("latency_p99_9_ms"),
        "load_pct": stop.load_pct,
        "load_rate": stop.rate,
        **o.get("open_loop", {}),
        "warmup_requests": o["warm"]["requests"],
        "answer_bytes": o["answer_bytes"],
        "elu_idle_ms": elu["idle_ms"],
        "elu_active_ms": elu["active_ms"],
        "elu_utilization": elu["utilization"],
        "elu_window_ms": elu["wall_ms"],
        # The server's own count: null since the window touches no request (NODEBENCH_PROBE=hook only).
        "server_requests": elu.get("requests"),
        "server_statuses": None
        if elu.get("statuses") is None
        else {str(k): int(v) for k, v in elu["statuses"].items()},
        "server_aborted": elu.get("aborted"),
        "server_in_flight_at_stop": elu.get("in_flight_at_stop"),
        "server_drain_ms": elu.get("drain_ms"),
        "server_startup_ms": o["startup_ms"],
        "rss_peak_mb": _mb(elu.get("rss_peak_bytes")),
        "heap_used_peak_mb": _mb(elu.get("heap_used_peak_bytes")),
        "heap_total_peak_mb": _mb(elu.get("heap_total_peak_bytes")),
        "server_cpu_user_us": elu["cpu_user_us"],
        "server_cpu_system_us": elu["cpu_system_us"],
        "client_cpu_user_us": out["client_cpu_user_us"],  # the load generator's own CPU over its run
        "client_cpu_system_us": out["client_cpu_system_us"],
        "client_cpu_util": (out["client_cpu_user_us"] + out["client_cpu_system_us"]) / (window_s * 1e6),
        "db_counter": "pg_stat_statements.calls",
        "db_queries": o["queries"],
        "db_queries_per_request": o["queries"] / load["requests"],
        **derive(load, window_s, elu),
        **preemption(elu),
        **window_figures(*out.get("host", (None, None)), elu),
        **server_cpu_figures(out.get("host", (None, None)), o["who"]["pid"], elu, load["requests"]),
        "cpu_shared": o["server_cpus"] == o["client_cpus"],
        "server_cpus": ",".join(map(str, o["server_cpus"])),
        "client_cpus": ",".join(map(str, o["client_cpus"])),
        "client_cpu_count": len(o["client_cpus"]),
        "db_cpus": ",".join(map(str, o["client_cpus"])) if o["database_mode"] == "embedded" else "",
        "server_pid": o["who"]["pid"],
        "server_exit_code": o["server_exit"],
        "framework": o["who"]["framework"],
        "framework_version": o["who"]["framework_version"],
        "node_version": o["who"]["node_version"],
        **facts["lockfile"],
        "database_mode": o["database_mode"],
        "database_dsn": o["database_dsn"],
        "postgres_version": o["postgres_version"],
        **facts["machine"],
        "pipeline_commit": facts["pipeline_commit"],
        "process_started_at": o["process_started_at"].isoformat(timespec="milliseconds"),
        "started_at": o["started_at"].isoformat(timespec="milliseconds"),
        "finished_at": finished_at.isoformat(timespec="milliseconds"),
        # Everything this job's process spent besides the warm-up and the window (and waiting for another
        # measurement) until this record was built: interpreter start and imports, starting and verifying,
        # settling the query counter, stopping and cleaning up. Checking and writing the record come after.
        "harness_overhead_s": (finished_at - o["process_started_at"]).total_seconds()
        - warmup_s
        - window_s
        - o["phases"].seconds["lock"],
        **o["phases"].columns(),
    }

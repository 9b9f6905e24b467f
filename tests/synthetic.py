"""Synthetic run records with known structure, for the metrics tests, the scale benchmark and every target's report."""

import copy
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from nodebench import runs
from nodebench.catalogue.clients import Stop
from nodebench.catalogue.workloads import WORKLOADS

# Event-loop microseconds per request that each server spends on the framework,
# and what each workload adds on top of it.
FRAMEWORK_US = {
    "node-http": 60.0,
    # The A/A control's twin: node-http measured again, so the same cost.
    "node-http-aa": 60.0,
    "express": 250.0,
    "express-lean": 240.0,
    "fastify": 55.0,
    "fastify-schema": 52.0,
}
WORKLOAD_US = {"empty": 0.0, "point-lookup": 120.0, "list": 700.0}
# A campaign: every server and workload at as many connection counts as the size takes.
CAMPAIGN_SERVERS = ["node-http", "express", "express-lean", "fastify", "fastify-schema"]
CAMPAIGN_WORKLOADS = ["empty", "point-lookup", "list", "write"]
CAMPAIGN_REPETITIONS = 4


def campaign(total: int, seed: int = 1) -> list[dict]:
    """total records: 5 servers x 4 workloads x 4 rounds at 10, 15, 20, ... connections
    (100,000 records: 1,250 connection counts, 25,000 cells)."""
    per_level = len(CAMPAIGN_SERVERS) * len(CAMPAIGN_WORKLOADS) * CAMPAIGN_REPETITIONS
    connections = [10 + 5 * i for i in range(max(1, -(-total // per_level)))]
    records = synthetic_records(CAMPAIGN_SERVERS, CAMPAIGN_WORKLOADS, connections, CAMPAIGN_REPETITIONS, seed=seed)
    return records[:total]


def synthetic_records(servers, workloads, connections, rounds, seed=0, noise=0.02) -> list[dict]:
    """Records whose us/req is framework + workload cost, with multiplicative noise."""
    rng = np.random.default_rng(seed)
    out = []
    for workload in workloads:
        for server in servers:
            for conn in connections:
                for round_ in range(1, rounds + 1):
                    us = (FRAMEWORK_US.get(server, 100.0) + WORKLOAD_US.get(workload, 300.0)) * rng.lognormal(0, noise)
                    elu = min(1.0, 0.5 + conn / 100)
                    rps = elu * 1e6 / us
                    window = 10.0
                    requests = int(rps * window)
                    out.append(
                        {
                            "server": server,
                            "workload": workload,
                            "connections": int(conn),
                            "round": round_,
                            "client": "autocannon",
                            "client_version": "9.0.0",
                            "client_threads": 1,
                            "client_cpu_capacity": 1.0,
                            "stopping_rule": "duration",
                            "stop": "10s",
                            "requests_target": None,
                            "last_response_s": None,
                            "first_connection_done_s": None,
                            "client_samples": 10,
                            "path": "/x",
                            "warmup_s": 3.0,
                            "duration_s": window,
                            "pool_size": 10,
                            "window_s": window,
                            "requests": requests,
                            "responses_2xx": requests,
                            "errors": 0,
                            "timeouts": 0,
                            "non2xx": 0,
                            "resets": 0,
                            "bytes": requests * 450,
                            "client_reported_duration_s": window,
                            "client_reported_req_per_s": rps,
                            "status_counts": {"200": requests},
                            "latency_p50_ms": conn / rps * 1000,
                            "latency_p90_ms": 1.5 * conn / rps * 1000,
                            "latency_p99_ms": 3 * conn / rps * 1000,
                            "latency_max_ms": 10 * conn / rps * 1000,
                            "latency_mean_ms": conn / rps * 1000,
                            "warmup_requests": requests // 3,
                            "answer_bytes": 450,
                            "mismatches": 0,
                            "client_req_per_s": rps,
                            "elu_idle_ms": (1 - elu) * window * 1000,
                            "elu_active_ms": elu * window * 1000,
                            "elu_utilization": elu,
                            "elu_window_ms": window * 1000,
                            "server_requests": None,  # the window touches no request: the count is the client's
                            "server_cpu_user_us": int(us * requests * 0.9),
                            "server_cpu_system_us": int(us * requests * 0.15),
                            "client_cpu_user_us": int(0.3 * window * 1e6),
                            "client_cpu_system_us": int(0.1 * window * 1e6),
                            "client_cpu_util": 0.4,
                            "db_counter": "pg_stat_statements.calls",
                            "db_queries": 0 if workload == "empty" else requests,
                            "db_queries_per_request": 0.0 if workload == "empty" else 1.0,
                            "req_per_s": rps,
                            "bytes_per_s": rps * 270,
                            "us_per_req_elu": us,
                            "us_per_req_cpu": us * 1.05,
                            "server_cpu_util": elu * 1.05,
                            "server_cpus": "0",
                            "client_cpus": "1",
                            "db_cpus": "1",
                            "server_pid": 1000 + round_,
                            "server_exit_code": 0,
                            "framework": server,
                            "framework_version": "1.0.0",
                            "node_version": "v20.0.0",
                            "express_version": "5.0.0",
                            "fastify_version": "5.0.0",
                            "pg_version": "8.0.0",
                            "autocannon_version": "9.0.0",
                            "database_mode": "embedded",
                            "database_dsn": "",
                            "cpu_shared": False,
                            "postgres_version": "18.0",
                            "host": "synthetic",
                            "cpu_model": "Synthetic CPU",
                            "cpu_count": 2,
                            "kernel": "6.0",
                            "pipeline_commit": "synthetic",
                            "started_at": "2026-01-01T00:00:00+00:00",
                            "finished_at": "2026-01-01T00:00:13+00:00",
                        }
                    )
    return out


#: What a synthetic cell expected to fail reports.
_FAILED_CHECK = "synthetic: the load generator reported 10 timeouts (the handler never answered)"


def records_like(templates: dict, targets, seed: int = 7) -> tuple[dict[str, dict], dict[str, dict]]:
    """Every run and every cell expected to fail that a configuration plans, as records made from real ones.

    templates: a real record (a dict, as measure_run wrote it) for each (client, stopping rule);
    targets: the configuration's nodebench.targets.Targets. Each run is its template with the cell's
    identity (server, workload, connections, client, stop, round, place in its round, Node.js) and a cost
    of framework + workload with 3 % noise, its other figures following from that cost. Runs are stamped
    3 s apart in plan order, so pairs are measured where the plan puts them. Returns ({record path:
    record}, {failure path: outcome}).
    """
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    records = {}
    for run in targets.measured_runs():
        _, workload, server, connections, client, stop, round_ = run
        rule = Stop.parse(stop)
        r = copy.deepcopy(templates[(client, rule.rule)])
        name, node = runs.runtime(server)
        w = WORKLOADS[workload]
        us = (FRAMEWORK_US.get(name.removesuffix("-aa"), 150.0) + WORKLOAD_US.get(workload, 300.0)) * rng.lognormal(
            0, 0.03
        )
        elu = 0.97
        if rule.rate is not None:  # a fixed rate below the server's capacity: the loop is busy that share of the time
            elu = min(0.97, rule.rate * us / 1e6)
        rps = elu * 1e6 / us
        window = float(rule.value) if rule.rule == "duration" else rule.value / rps
        requests = int(rps * window) if rule.rule == "duration" else int(rule.value)
        index, position, size = targets.plan.find(runs.Run.of(*run))
        began = start + timedelta(seconds=3 * index)
        statuses = {str(w.status): requests}
        r.update(
            server=server,
            workload=workload,
            connections=int(connections),
            round=int(round_),
            round_position=position,
            round_size=size,
            client=client,
            stop=stop,
            stopping_rule=rule.rule,
            duration_s=float(rule.value) if rule.rule == "duration" else None,
            requests_target=int(rule.value) if rule.rule == "count" else None,
            path=w.path,
            method=w.method,
            expected_status=w.status,
            window_s=window,
            elu_window_ms=window * 1000,
            requests=requests,
            # As today's records: the window's count is the client's, the server keeps none.
            server_requests=None,
            server_statuses=None,
            server_aborted=None,
            server_in_flight_at_stop=None,
            server_drain_ms=None,
            responses_2xx=requests if w.status < 300 else 0,
            non2xx=0 if w.status < 300 else 0,
            bytes=requests * r["answer_bytes"],
            req_per_s=rps,
            client_req_per_s=rps,
            client_reported_req_per_s=rps * (0.97 if rule.rule == "count" else 1.0),
            client_reported_duration_s=window,
            elu_utilization=elu,
            elu_active_ms=elu * window * 1000,
            elu_idle_ms=(1 - elu) * window * 1000,
            us_per_req_elu=us,
            us_per_req_cpu=us * 1.1,
            server_cpu_util=elu * 1.1,
            latency_p50_ms=connections / rps * 1000,
            latency_p90_ms=1.5 * connections / rps * 1000,
            latency_p99_ms=3 * connections / rps * 1000,
            latency_max_ms=10 * connections / rps * 1000,
            latency_mean_ms=connections / rps * 1000,
            db_queries=requests * w.queries_per_request,
            db_queries_per_request=float(w.queries_per_request),
            node=node,
            started_at=began.isoformat(),
            finished_at=(began + timedelta(seconds=window + 1)).isoformat(),
            process_started_at=(began - timedelta(seconds=1)).isoformat(),
            session="synthetic",
            preempted=False,
            preempted_reason=None,
            load_pct=rule.load_pct,
            load_rate=rule.rate,
        )
        if rule.open:
            # An open loop kept its schedule: its latency grows with the load, from the scheduled time.
            share = rule.load_pct / 100 if rule.load_pct is not None else elu
            r.update(openloop_refused=None, openloop_target_rate=rps, capacity_req_per_s=rps / share,
                     latency_p50_ms=0.2 / (1 - share), latency_p90_ms=0.5 / (1 - share),
                     latency_p99_ms=2 / (1 - share), latency_p99_9_ms=5 / (1 - share), capacity_gap_s=3.0)  # fmt: skip
        for key in ("status_counts", "server_statuses"):
            if r.get(key) is not None:
                r[key] = statuses
        if node != runs.SYSTEM_NODE:
            r.update(
                node_version=f"v{node}.0.0", node_binary=f"data/toolchain/node{node}/bin/node", node_sha256="0" * 64
            )
        if rule.rule == "count" and r.get("last_response_s") is not None:
            r.update(last_response_s=window * 0.95, first_connection_done_s=window * 0.9)
        records[runs.record_path(*run)] = r
    failures = {
        runs.failure_path(*cell): {
            **dict(zip(("workload", "server", "connections", "client", "stop"), cell, strict=True)),
            "started_at": start.isoformat(),
            "outcome": "failed",
            "check": _FAILED_CHECK,
            "finished_at": start.isoformat(),
        }
        for cell in targets.all_failure_cells()
    }
    return records, failures


def runs_from(rows) -> pd.DataFrame:
    """A runs table from (workload, server, connections, round, req_per_s, us_per_req_elu, elu, client_cpu) tuples."""
    cols = [
        "workload",
        "server",
        "connections",
        "round",
        "req_per_s",
        "us_per_req_elu",
        "elu_utilization",
        "client_cpu_util",
    ]
    df = pd.DataFrame(rows, columns=cols)
    return df.assign(
        client="autocannon",
        stopping_rule="duration",
        stop="10s",
        client_cpu_capacity=1.0,
        us_per_req_cpu=df["us_per_req_elu"] * 1.1,
        latency_p50_ms=1.0,
        latency_p99_ms=5.0,
        cpu_model="Test CPU",
    )

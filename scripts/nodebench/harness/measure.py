"""One measurement: private database, pinned server, verified answer, warm-up, ELU window, checks, record.

The job begins copying the database template (on a thread, in a child process, which
then starts PostgreSQL on the copy), starts the server and the load generator meanwhile
(neither needs the database until the first request), imports the database driver and
waits for all three; then it pins the server and itself apart. Every phase's wall time
goes into the record.
"""

import os
import shutil
import subprocess
import time
from concurrent import futures
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from nodebench.catalogue.calibration import CALIBRATION_SERVER, is_calibration
from nodebench.catalogue.clients import Stop
from nodebench.catalogue.thresholds import SUSTAINED_SHARE
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.harness import hostsample, loadgen, nodejs, pgcluster, procs, record, server, verify, workspace
from nodebench.harness.errors import RunError, StartError
from nodebench.harness.procs import tail


@dataclass(frozen=True)
class Cell:
    server: str
    workload: str
    connections: int
    round: int
    client: str
    stop: Stop
    #: The server configuration the name runs (servers/<configuration>.js, the name its
    #: /__whoami gives): the server's own name, except for the A/A control's twin.
    configuration: str = ""

    @property
    def runs(self) -> str:
        return self.configuration or self.server

    def label(self) -> str:
        client = f"{self.client}-{self.stop.label}"
        return f"{self.workload}/{self.server} c{self.connections} {client} r{self.round}"


@dataclass(frozen=True)
class Options:
    warmup_s: float
    pool_size: int
    server_port: int
    database: dict
    scratch_dir: str
    node: str
    allow_shared_cpu: bool = False
    #: The server's Node.js, described by node_install.install() or nodejs.probe(); None: `node` as it is.
    server_node: dict | None = None
    #: The binary that runs the server (checked by nodejs.usable()); None: `node`.
    server_binary: str | None = None
    #: How many more times a disturbed run is measured (config's remeasure.attempts).
    remeasure_attempts: int = 0
    #: The servers' per-request probe: "" (the pipeline: none) or "hook", which counts every response and serves
    #: /__elu/sample's running count (tests/benchmarks/convergence.py needs one); never set from the config.
    probe: str = ""
    #: The open loop's arrivals and seed (config's openloop.arrivals; the seed from round_seed and the round, so
    #: every server of a round gets the same stream, scaled to its rate).
    arrivals: tuple[str, int] = ("constant", 1)


@dataclass(frozen=True)
class Paths:
    """The files a cell uses, relative to the working directory (the checkout)."""

    server_file: Path
    client_file: Path | None
    lockfile: Path
    answer_fixture: Path | None
    template: Path | None
    run_schema: Path
    #: An open-loop cell's capacity: the record of its closed-loop cell in the same round (plan.capacity_cell).
    capacity: Path | None = None


class Phases:
    """Wall time of each phase of one job, for the record's per-phase breakdown."""

    NAMES = ("lock", "start", "verify", "warmup", "settle", "window", "stop")

    def __init__(self):
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self.mark = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] += now - self.mark
        self.mark = now

    def columns(self) -> dict:
        return {f"phase_{k}_s": round(v, 4) for k, v in self.seconds.items()}


def ports(opts: Options) -> tuple[int, int]:
    """The server's and the database's ports, taken together so they can never be the same."""
    server_port, db_port = procs.free_ports(2)
    if opts.server_port:
        return procs.require_free_port(opts.server_port), next(p for p in procs.free_ports(2) if p != opts.server_port)
    return server_port, db_port


@dataclass
class Started:
    """What start() left running for one cell, all of it ready."""

    proc: subprocess.Popen
    server_log: Path
    port: int
    client: object
    admin_conninfo: str
    database_mode: str
    sampler: hostsample.WindowSampler
    server_cpus: list[int]
    #: Milliseconds from the server's process start to its first answer (server.time_to_first_answer).
    startup_ms: float


def split_cpus(opts: Options) -> tuple[list[int], list[int]]:
    """The server's CPU and the client's, from the job's own affinity mask (never fixed ids)."""
    cpus = procs.job_cpus()
    if len(cpus) < 2 and not opts.allow_shared_cpu:
        raise RunError(
            f"the job may run only on CPU {cpus}: the server and the load generator would share it and its ELU "
            "would count the client's time; give the job two or more CPUs (or set allow_shared_cpu: true)"
        )
    return procs.split_cpus(cpus)


def capacity_record(paths: Paths) -> dict:
    import json

    if paths.capacity is None:
        raise RunError("an open-loop cell needs its capacity cell's record (the job has no 'capacity' input)")
    return json.loads(paths.capacity.read_text())


def open_loop_facts(cell: Cell, paths: Paths, started_at: datetime) -> dict:
    """An open-loop run's capacity, and how long before this run it was measured (empty for a closed loop)."""
    if not cell.stop.open or is_calibration(cell.server):  # the instrument's calibration has no capacity
        return {}
    capacity = capacity_record(paths)
    began = datetime.fromisoformat(capacity["started_at"])
    return {"capacity_req_per_s": capacity["req_per_s"], "capacity_gap_s": (started_at - began).total_seconds()}


def judge_sustained(cell: Cell, out: dict) -> None:
    """Whether the system sustained an open-loop window's rate, from the whole window rather than one instant:
    the answers delivered per second against the rate asked for, and the requests in flight on average (Little's
    law: delivered rate x mean latency, each latency counted from its scheduled time), against the connections.
    Below SUSTAINED_SHARE of the rate, more in flight on average than connections (requests queued for one), or
    requests never sent: not sustained. That is a result, not a failure: the latencies stand as a censored value
    (the real ones were at least these: requests still queued at the end are missing from them), and
    openloop_not_sustained says why. A window the client refused for its own lateness (openloop_refused) was not
    measured, and is not judged."""
    load = out["load"]
    if not cell.stop.open:
        return
    delivered, target = load.get("client_reported_req_per_s"), load.get("openloop_target_rate")
    mean_ms = load.get("latency_mean_ms")
    in_flight = None if delivered is None or mean_ms is None else delivered * mean_ms / 1000.0
    load["openloop_mean_in_flight"] = in_flight
    load["openloop_not_sustained"] = None
    if load.get("openloop_refused"):
        return
    reasons = []
    # Against the requests the schedule had due in the window (sent + unsent): with Poisson arrivals their count
    # is itself random (sd sqrt(rate x window): 3 % at 1,000 req/s for 1 s), so the rate asked for is not it.
    due = (load.get("openloop_sent") or 0) + (load.get("openloop_unsent") or 0)
    window = load.get("client_reported_duration_s")
    asked = due / window if due and window else target
    if delivered is not None and asked and delivered < SUSTAINED_SHARE * asked:
        reasons.append(
            f"delivered {delivered:,.0f} req/s of the {asked:,.0f} its schedule had due ({delivered / asked:.0%}; "
            f"{target:,.0f} asked for)"
        )
    if in_flight is not None and in_flight > cell.connections:
        reasons.append(
            f"{in_flight:,.1f} requests in flight on average, more than the {cell.connections} connections: requests "
            "queued for one"
        )
    if load.get("openloop_unsent"):
        reasons.append(f"{load['openloop_unsent']:,} requests of the schedule never sent")
    load["openloop_not_sustained"] = "; ".join(reasons) or None


def open_loop_rate(cell: Cell, capacity: dict) -> float:
    """An open-loop cell's rate: its fixed rate (stop.rate, req/s), or its share (stop.load_pct) of the req/s its
    capacity cell's server completed in the same round. RunError if that record is not the same server, workload,
    connections and round (a fixed rate's cell reads it too: its capacity is measured first, beside it)."""
    for key, want in (("server", cell.server), ("workload", cell.workload), ("connections", cell.connections),
                      ("round", cell.round)):  # fmt: skip
        if capacity.get(key) != want:
            raise RunError(f"the capacity record for {cell.label()} has {key} {capacity.get(key)!r}, not {want!r}")
    if cell.stop.rate is not None:
        return float(cell.stop.rate)
    return capacity["req_per_s"] * cell.stop.load_pct / 100.0


def calibration_rate(cell: Cell) -> float:
    """The instrument's calibration's rate: its fixed rate only (it has no capacity to take a share of)."""
    if cell.stop.rate is None:
        raise RunError(
            f"{cell.label()}: {CALIBRATION_SERVER} is the instrument's calibration and runs at fixed rates only "
            "(rates_per_s), not at a share of a capacity it does not have"
        )
    return float(cell.stop.rate)


def start(cell: Cell, opts: Options, paths: Paths, cpus: tuple[list[int], list[int]], stack: ExitStack, log):
    """Start the database, the server and the load generator, and wait until all are ready.

    Neither the server (its pool connects on the first query) nor the load generator
    needs the database to boot, so the template's copy, and PostgreSQL's start on it,
    overlap with their start and with importing the database driver.
    """
    server_cpus, client_cpus = cpus
    # Until every process is ready, the server's boot, the template's copy and the imports share
    # all the job's CPUs (V8 compiles on threads of its own: Fastify boots in 0.27 s on two CPUs,
    # 0.36 s on one). PostgreSQL alone starts pinned to the client CPUs, which its processes keep;
    # the server and the harness are pinned apart once all are ready, before anything is measured.
    port, db_port = ports(opts)
    dsn = opts.database.get("dsn") or ""
    # Its owner file lets the next job remove it, should this one be killed before it can.
    scratch = workspace.create(pgcluster.scratch_base(opts.scratch_dir), cell.label())
    stack.callback(shutil.rmtree, scratch, ignore_errors=True)
    if dsn:
        from nodebench.harness.database import dsn_environment

        cluster, db_env, admin_conninfo = None, dsn_environment(dsn, os.environ), dsn
    else:
        cluster = pgcluster.JobCluster(
            paths.template, scratch, opts.database.get("run_as", "nobody"),
            opts.database.get("settings", {}), client_cpus, db_port,
        )  # fmt: skip
        db_env, admin_conninfo = cluster.app_env, cluster.admin_conninfo
        stack.callback(cluster.stop)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PORT": str(port),
        "NODE_ENV": "production",
        "NODEBENCH_POOL_SIZE": str(opts.pool_size),
        **({"NODEBENCH_PROBE": opts.probe} if opts.probe else {}),
        **db_env,
    }
    server_log = scratch / "server.log"
    job_cpus = sorted({*server_cpus, *client_cpus})
    # Start-up first, alone: the server on its own CPU (as it is measured) and this thread knocking from the
    # client's, with nothing else starting yet, so the figure is the server's boot and not the template's copy.
    os.sched_setaffinity(0, client_cpus)
    spawned = time.monotonic()
    proc = server.start(opts.server_binary or opts.node, paths.server_file, env, server_cpus, server_log)
    stack.callback(procs.stop, proc)
    workspace.adopt(scratch, "server", proc.pid)
    startup_ms = server.time_to_first_answer(proc, port, cell.runs, server_log, spawned)
    os.sched_setaffinity(0, job_cpus)
    log(f"server {cell.server} answered its first request {startup_ms:.1f} ms after its process started")
    if cluster is not None:
        cluster.prepare()
    workload = WORKLOADS[cell.workload]
    rate = None
    if cell.stop.open:
        rate = calibration_rate(cell) if is_calibration(cell.server) else open_loop_rate(cell, capacity_record(paths))
    target = loadgen.Target(
        "127.0.0.1", port, workload.path, cell.connections, client_cpus, scratch, workload.method, workload.body_bytes()
    )
    client = loadgen.make(
        cell.client, target, cell.stop, opts.warmup_s, node=opts.node, file=paths.client_file, rate=rate,
        arrivals=opts.arrivals, beside_database=cluster is not None and workload.queries_per_request > 0,
        elu_window=(lambda: server.get_json(port, "/__elu/start"), lambda: server.get_json(port, "/__elu/stop")),
        stack=stack,
    )  # fmt: skip
    mode = "dsn" if dsn else "embedded"
    log(f"server {cell.server}, load generator {cell.client} and database ({mode}) starting")
    import psycopg  # noqa: F401  (here: it loads while the server boots and the template is copied)

    if cluster is not None:
        cluster.start()
        workspace.adopt(scratch, "postgres", cluster.proc.pid)
    # PostgreSQL's CPU over the window is ours to read only when we started it.
    sampler = hostsample.WindowSampler(
        client_cpus, cluster.proc.pid if cluster is not None else None, server_pid=proc.pid, server_cpus=server_cpus
    )

    if cluster is not None:
        cluster.wait_ready()
        log(f"database ready on 127.0.0.1:{cluster.port} ({pgcluster.AUTH_METHOD}, this job's passwords only)")
    else:
        log("database ready")
    server.wait_ready(proc, cell.runs, server_log)
    procs.pin(proc.pid, server_cpus)
    os.sched_setaffinity(0, client_cpus)  # this thread (the copy's thread is parked until stop)
    client.pin()
    log(f"server ready, pinned to CPU {server_cpus}")
    return Started(proc, server_log, port, client, admin_conninfo, mode, sampler, server_cpus, startup_ms)


def run_window(cell: Cell, s: Started, admin, phases: Phases) -> tuple[dict, int]:
    """The measured run between two settled reads of the query counter: (its output, queries it cost)."""
    stop = cell.stop
    # A workload that makes no query has none left over from its warm-up to wait for: one read.
    # Otherwise the counter is read once the server has no query at its pools (a flat counter
    # alone let a paused server's leftover warm-up queries into the window), before the window
    # and again after it, once the load generator has exited (verify.server_idle_count).
    per_request = WORKLOADS[cell.workload].queries_per_request
    if per_request:
        q0 = verify.server_idle_count(s.port, admin)
    else:
        q0 = verify.settled_count(admin, steady_reads=0)
    phases.done("settle")
    # A fixed count has no known end: allow it a generous floor of 30 requests per second.
    limit = stop.value + 60 if stop.rule == "duration" else max(600.0, stop.value / 30)
    overflows = verify.listen_overflows()
    try:
        out = s.client.measure(limit, s.sampler)
        out["listen_overflows"] = (overflows, verify.listen_overflows())
    except RunError:
        if s.proc.poll() is not None:
            raise RunError(
                f"server {cell.server} exited with status {s.proc.returncode} during the measured "
                f"window: {tail(s.server_log)}"
            ) from None
        raise
    phases.done("window")
    # The window's requests are the client's: each answered one ran its queries, and so may each
    # connection's one outstanding request that the client dropped, answered or not (check_database).
    if per_request:
        q1 = verify.server_idle_count(s.port, admin, when="after the window")
    else:
        q1 = verify.settled_count(admin, expected=q0, interval=0.01)
    phases.done("settle")
    return out, q1 - q0


def check_window(cell: Cell, s: Started, out: dict, queries: int, answer_bytes: int) -> None:
    """Every check of the measured run; each raises RunError naming what failed."""
    if s.proc.poll() is not None:
        raise RunError(f"server {cell.server} exited with status {s.proc.returncode} during the measured window")
    server.check_identity(s.port, cell.runs, s.proc.pid)
    stray = procs.threads_off(s.proc.pid, s.server_cpus)
    if stray:
        raise RunError(f"server {cell.server} ran threads off its CPU {s.server_cpus} in the window: {stray}")
    load, elu = out["load"], out["elu"]
    workload = WORKLOADS[cell.workload]
    verify.check_load(load, status=workload.status)
    verify.check_listen_queue(*out["listen_overflows"])
    verify.check_elu(elu)
    # The window's count is the client's (record.derive); only a server run with NODEBENCH_PROBE=hook
    # also counts its own, which must then agree with the client's.
    if elu.get("requests") is not None:
        verify.check_statuses(elu.get("statuses"), workload.status)
        verify.check_server_requests(elu["requests"], load["requests"], cell.connections, elu.get("aborted") or 0)
    verify.check_bytes(load["bytes"], load["requests"], answer_bytes, workload.answer_varies)
    verify.check_database(queries, load["requests"], workload.queries_per_request, cell.connections)


def measure(cell: Cell, opts: Options, paths: Paths, log, progress) -> dict:
    """Run one cell end to end and return its run record; raise RunError if it is not a result."""
    phases = Phases()
    started_at = datetime.now(UTC)
    server_cpus, client_cpus = split_cpus(opts)
    workload = WORKLOADS[cell.workload]
    stop = cell.stop
    what = f"window {stop.value:g} s" if stop.rule == "duration" else f"{int(stop.value):,} requests"
    progress(
        f"start {cell.label()}: warm-up {opts.warmup_s:g} s, {what} with {cell.client}, "
        f"server CPU {server_cpus}, client CPU {client_cpus}"
    )
    with ExitStack() as stack:
        # The job's own mask again on the way out (start() narrows this process to the client's CPUs), so that a
        # disturbed run measured again (harness/remeasure.py) splits the same CPUs the same way.
        stack.callback(os.sched_setaffinity, 0, os.sched_getaffinity(0))
        # One measurement at a time on this machine, whichever checkout, user or Snakemake started it.
        stack.enter_context(procs.one_measurement_per_machine(cell.label(), progress))
        # Snakemake and whatever it runs beside this job take no CPU time the server or the client wants.
        procs.ordinary_scheduling()
        stack.enter_context(procs.workflow_off(server_cpus, log))
        phases.done("lock")
        for line in workspace.sweep(workspace.bases(opts.scratch_dir)):
            progress(line)
        try:
            s = start(cell, opts, paths, (server_cpus, client_cpus), stack, log)
        except RunError as e:  # a server or load generator that did not come up: worth one more attempt
            raise StartError(str(e)) from None
        phases.done("start")
        import psycopg

        who = server.check_identity(s.port, cell.runs, s.proc.pid)
        if opts.server_node:
            nodejs.check(opts.server_node, who["node_version"])
        admin = stack.enter_context(psycopg.connect(s.admin_conninfo, autocommit=True))
        pg_version = admin.execute("SHOW server_version").fetchone()[0]
        verify.verify_answers(s.port, workload, verify.expected_answer(workload, admin, paths.answer_fixture))
        answer_bytes = verify.raw_answer_size(s.port, workload.path, s.client.request_head())
        phases.done("verify")
        log(f"server {who} verified on port {s.port}; {answer_bytes} bytes per answer to {cell.client}")
        # What the record needs that no run changes (its schema compiled, versions, the commit) and
        # the window's sampler's imports are done on a thread during the warm-up, not on the way to it
        # or after the run; it is waited for before the window, so it can never run beside it. It waits
        # until the load generator is under way: wrk ends a run at the first of its 100 ms ticks
        # after the duration, and a CPU kept busy while wrk started moved that end by 0.1 s here.
        delay = 0.25 if opts.warmup_s >= 1 else 0.0

        def beside_warmup():
            time.sleep(delay)
            s.sampler.prepare()
            return record.gather(cell.client, paths.lockfile, paths.run_schema)

        # Leaving the stack shuts the pool down and waits for the thread: git and the client's
        # version are processes, never left running.
        pool = stack.enter_context(futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside-warmup"))
        facts = pool.submit(beside_warmup)
        warm = s.client.warmup() or {"requests": 0}
        if opts.warmup_s > 0:
            verify.check_load(warm, phase="warm-up", status=workload.status)
        futures.wait([facts])
        phases.done("warmup")
        log(f"warm-up done: {warm['requests']} requests")
        out, queries = run_window(cell, s, admin, phases)
        elu = out["elu"]
        counted = (
            f"; the server completed {elu['requests']} requests ({elu.get('aborted', 0)} aborted), "
            f"{elu.get('in_flight_at_stop', 0)} of them in flight at stop, drained in {elu.get('drain_ms', 0):.1f} ms"
            if elu.get("requests") is not None
            else ""
        )
        log(f"window closed: {out['window_s']:.3f} s; the load generator counted {out['load']['requests']} requests"
            f"{counted}")  # fmt: skip
        check_window(cell, s, out, queries, answer_bytes)
        judge_sustained(cell, out)
        server_exit = procs.stop(s.proc)
        log(f"server stopped ({server_exit})")
        if server_exit != 0:
            log(f"warning: server exited with status {server_exit} on SIGTERM (expected a graceful 0)")
    phases.done("stop")
    dsn = opts.database.get("dsn") or ""
    if dsn:
        from nodebench.harness.database import redacted_dsn
    observed = {
        "cell": cell,
        "opts": opts,
        "workload": workload,
        "client": s.client,
        "client_cpus": client_cpus,
        "server_cpus": server_cpus,
        "out": out,
        "warm": warm,
        "answer_bytes": answer_bytes,
        "queries": queries,
        "who": who,
        "server_exit": server_exit,
        "database_mode": s.database_mode,
        "database_dsn": redacted_dsn(dsn) if dsn else "",
        "postgres_version": pg_version,
        "process_started_at": procs.process_started_at(),
        "started_at": started_at,
        "phases": phases,
        "startup_ms": s.startup_ms,
        "open_loop": open_loop_facts(cell, paths, started_at),
    }
    rec = record.build(observed, facts.result())
    took = f", {rec['requests']:,} requests in {out['window_s']:.2f} s" if stop.rule == "count" else ""
    oncpu = "" if rec["us_per_req_oncpu"] is None else f", main thread {rec['us_per_req_oncpu']:.1f} us/req on CPU"
    stolen = "" if rec["stolen_share"] is None else f", stolen {rec['stolen_share']:.1%}"
    progress(
        f"done  {cell.label()}: {rec['req_per_s']:,.0f} req/s, {rec['us_per_req_elu']:.1f} us/req "
        f"(ELU {rec['elu_utilization']:.2f}){oncpu}, client CPU {rec['client_cpu_util']:.2f}{stolen}, "
        f"harness {rec['harness_overhead_s']:.2f} s{took}"
    )
    return rec

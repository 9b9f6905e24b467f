"""One measurement job: private database, pinned server, verified answer, warm-up, ELU window, record."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import psycopg
import yaml
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import loadgen
import pgcluster
import procs
import provenance
from loadgen import Stop, tail
from records import (
    WORKLOADS,
    RunError,
    check_bytes,
    check_database,
    check_elu,
    check_load,
    check_server_requests,
    derive,
    lockfile_versions,
)

SERVER_READY_TIMEOUT_S = 20.0
DB_COUNTER_SQL = """
SELECT coalesce(sum(s.calls), 0)::bigint
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = current_database()
  AND s.query ILIKE '%from users%' AND s.query NOT ILIKE '%pg_stat_statements%'
"""


@dataclass(frozen=True)
class Cell:
    server: str
    workload: str
    connections: int
    repetition: int
    load_generator: str
    stop: Stop

    def label(self) -> str:
        client = f"{self.load_generator}-{self.stop.label}"
        return f"{self.workload}/{self.server} c{self.connections} {client} r{self.repetition}"


@dataclass(frozen=True)
class Options:
    warmup_s: float
    pool_size: int
    server_port: int
    database: dict
    scratch_dir: str
    node: str
    allow_shared_cpu: bool = False


@dataclass(frozen=True)
class Paths:
    repo: Path
    server_file: Path
    driver: Path
    lua: Path
    lockfile: Path
    fixture: Path
    template: Path | None
    run_schema: Path | None = None


def redacted_dsn(dsn: str) -> str:
    """The DSN without its password, for records and logs."""
    params = conninfo_to_dict(dsn)
    params.pop("password", None)
    return make_conninfo(**params)


def scratch_base(setting: str) -> str:
    """Where private copies of the database go: RAM-backed /dev/shm when usable, else the temp dir."""
    if setting and setting != "auto":
        path = os.path.expandvars(setting)
        if not os.path.isdir(path) or not os.access(path, os.W_OK):
            raise RunError(f"config key 'scratch_dir' is {setting!r}, which is not a writable directory")
        return path
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
        return shm
    return tempfile.gettempdir()


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, str, bytes]:
    """GET a path on the server: (status, content type, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        return res.status, res.getheader("content-type", ""), res.read()
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


def expected_answer(workload: str, admin: psycopg.Connection, fixture: Path):
    """What the workload's path must answer, read independently of the server's SQL."""
    if workload == "empty":
        return json.loads(fixture.read_text())
    if workload == "point-lookup":
        uid = int(WORKLOADS[workload]["path"].rsplit("/", 1)[1])
        row = admin.execute("SELECT row_to_json(u) FROM users u WHERE id = %s", (uid,)).fetchone()
        if row is None:
            raise RunError(f"the database has no user {uid}; is the template seeded?")
        return row[0]
    if workload == "list":
        return admin.execute(
            "SELECT json_agg(row_to_json(u) ORDER BY u.id) FROM (SELECT * FROM users ORDER BY id LIMIT 100) u"
        ).fetchone()[0]
    raise RunError(f"unknown workload {workload!r}")


def verify_answers(port: int, workload: str, expected) -> None:
    """The workload's answer equals what the database holds; bad ids are 400 and 404."""
    path = WORKLOADS[workload]["path"]
    got = get_json(port, path)
    if got != expected:
        raise RunError(
            f"GET {path} answered a body that differs from what the database holds:\n"
            f"  got      {json.dumps(got)[:300]}\n  expected {json.dumps(expected)[:300]}"
        )
    if workload == "point-lookup":
        for bad, status in (("/users/abc", 400), ("/users/999999999", 404)):
            got_status = http_get(port, bad)[0]
            if got_status != status:
                raise RunError(f"GET {bad} answered HTTP {got_status}, expected {status}")


def settled_count(admin: psycopg.Connection, timeout: float = 10.0) -> int:
    """The workload-query counter once it stops moving.

    Requests still queued for the pool when a load run ends finish their queries a
    little later; reading the counter only after it settles keeps those queries in
    the run they belong to (warm-up before the window, the window after it).
    """
    deadline = time.monotonic() + timeout
    last = admin.execute(DB_COUNTER_SQL).fetchone()[0]
    steady = 0
    while steady < 3 and time.monotonic() < deadline:
        time.sleep(0.03)
        now = admin.execute(DB_COUNTER_SQL).fetchone()[0]
        steady = steady + 1 if now == last else 0
        last = now
    return last


# libpq connection keywords and the environment variables node-postgres (and libpq) read.
DSN_ENV = {
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
    "dbname": "PGDATABASE",
    "user": "PGUSER",
    "password": "PGPASSWORD",
    "passfile": "PGPASSFILE",
    "sslmode": "PGSSLMODE",
    "options": "PGOPTIONS",
    "application_name": "PGAPPNAME",
    "connect_timeout": "PGCONNECT_TIMEOUT",
}


def dsn_environment(dsn: str, environ) -> dict:
    """The servers' database environment for a DSN: the user's PG* variables and HOME, then the DSN's keys."""
    env = {k: v for k, v in environ.items() if k.startswith("PG") or k == "HOME"}
    for key, value in conninfo_to_dict(dsn).items():
        if key not in DSN_ENV:
            raise RunError(f"database.dsn uses {key!r}, which the servers' driver cannot be given; remove it")
        env[DSN_ENV[key]] = str(value)
    return env


class Database:
    """The job's database: a private copy of the template, or the configured DSN."""

    def __init__(self, opts: Options, paths: Paths, scratch: Path, cpus: list[int], port: int, log):
        self.opts, self.paths, self.scratch, self.cpus, self.port, self.log = opts, paths, scratch, cpus, port, log
        self.proc = None

    def __enter__(self):
        dsn = self.opts.database.get("dsn") or ""
        if dsn:
            self.mode = "dsn"
            self.admin_conninfo = dsn
            self.app_env = dsn_environment(dsn, os.environ)
            return self
        self.mode = "embedded"
        if self.paths.template is None or not (self.paths.template / "PG_VERSION").is_file():
            raise pgcluster.DatabaseError(
                f"the database template {self.paths.template} is missing or incomplete; "
                "rebuild it with `snakemake --cores 1 --forcerun build_database_template reports/all`"
            )
        user = pgcluster.run_as_account(self.opts.database.get("run_as", "nobody"))
        pgcluster.hand_over(self.scratch, user)
        install = pgcluster.usable_install(user, self.scratch)
        datadir = self.scratch / "pgdata"
        shutil.copytree(self.paths.template, datadir, symlinks=True)
        os.chmod(datadir, 0o700)
        pgcluster.hand_over(datadir, user)
        self.log_path = self.scratch / "postgres.log"
        self.proc = pgcluster.start(
            install, datadir, self.port, self.opts.database.get("settings", {}), self.log_path, cpus=self.cpus
        )
        self.admin_conninfo = pgcluster.conninfo(self.port, dbname=pgcluster.APP_DB)
        self.app_env = {
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGUSER": pgcluster.APP_ROLE,
            "PGDATABASE": pgcluster.APP_DB,
        }
        return self

    def wait_ready(self):
        if self.proc is not None:
            pgcluster.wait_ready(self.proc, self.port, self.log_path)

    def __exit__(self, *exc):
        pgcluster.stop(self.proc)


def start_server(node: str, paths: Paths, port: int, env: dict, cpus: list[int], log_path: Path):
    """Start the server pinned to cpus; its stdout and stderr go to log_path."""
    if shutil.which(node) is None:
        raise RunError(f"config key 'node' is {node!r}, which is not an executable on PATH")
    with open(log_path, "wb") as out:
        return procs.spawn(
            [node, str(paths.server_file)],
            cpus=cpus,
            cwd=paths.server_file.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def wait_server_ready(proc: subprocess.Popen, name: str, log_path: Path) -> None:
    """Wait for the readiness line; fail with the server's own words if it exits first."""

    def ready():
        if proc.poll() is not None:
            raise RunError(f"server {name} exited with status {proc.returncode} before it was ready: {tail(log_path)}")
        try:
            return any(line.startswith("READY ") for line in log_path.read_text(errors="replace").splitlines())
        except OSError:
            return False

    try:
        procs.wait_for(ready, SERVER_READY_TIMEOUT_S, interval=0.01, what=f"server {name} to print READY")
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


def measure(cell: Cell, opts: Options, paths: Paths, log, progress) -> dict:
    """Run one cell end to end and return its run record; raise RunError if it is not a result."""
    started_at = datetime.now(UTC)
    cpus = procs.job_cpus()
    if len(cpus) < 2 and not opts.allow_shared_cpu:
        raise RunError(
            f"the job may run only on CPU {cpus}: the server and the load generator would share it and its ELU "
            "would count the client's time; give the job two or more CPUs (or set allow_shared_cpu: true)"
        )
    server_cpus, client_cpus = procs.split_cpus(cpus)
    # This harness polls while the server runs: keep it off the server's CPU too.
    os.sched_setaffinity(0, client_cpus)
    workload = WORKLOADS[cell.workload]
    stop = cell.stop
    what = f"window {stop.value:g} s" if stop.rule == "duration" else f"{int(stop.value):,} requests"
    progress(
        f"start {cell.label()}: warm-up {opts.warmup_s:g} s, {what} with {cell.load_generator}, "
        f"server CPU {server_cpus}, client CPU {client_cpus}"
    )
    # Both ports at once, so the database can never be handed the server's port.
    server_port, db_port = procs.free_ports(2)
    if opts.server_port:
        port = procs.require_free_port(opts.server_port)
        db_port = next(p for p in procs.free_ports(2) if p != port)
    else:
        port = server_port
    with ExitStack() as stack:
        scratch = Path(tempfile.mkdtemp(prefix="nodebench-", dir=scratch_base(opts.scratch_dir)))
        stack.callback(shutil.rmtree, scratch, ignore_errors=True)
        db = stack.enter_context(Database(opts, paths, scratch, client_cpus, db_port, log))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PORT": str(port),
            "NODE_ENV": "production",
            "NODEBENCH_POOL_SIZE": str(opts.pool_size),
            **db.app_env,
        }
        server_log = scratch / "server.log"
        server = start_server(opts.node, paths, port, env, server_cpus, server_log)
        stack.callback(procs.stop, server)
        target = loadgen.Target("127.0.0.1", port, workload["path"], cell.connections, client_cpus, scratch)
        client = loadgen.make(
            cell.load_generator,
            target,
            stop,
            opts.warmup_s,
            node=opts.node,
            driver=paths.driver,
            lua=paths.lua,
            elu_window=(lambda: get_json(port, "/__elu/start"), lambda: get_json(port, "/__elu/stop")),
            stack=stack,
        )
        log(f"database ({db.mode}), server {cell.server} and load generator {cell.load_generator} starting")
        db.wait_ready()
        log("database ready")
        wait_server_ready(server, cell.server, server_log)
        log("server ready")
        who = check_identity(port, cell.server, server.pid)
        admin = stack.enter_context(psycopg.connect(db.admin_conninfo, autocommit=True))
        pg_version = admin.execute("SHOW server_version").fetchone()[0]
        verify_answers(port, cell.workload, expected_answer(cell.workload, admin, paths.fixture))
        answer_bytes = raw_answer_size(port, workload["path"], client.request_head())
        log(f"server {who} verified on port {port}; {answer_bytes} bytes per answer to {cell.load_generator}")

        warm = client.warmup() or {"requests": 0}
        if opts.warmup_s > 0:
            check_load(warm, phase="warm-up")
        log(f"warm-up done: {warm['requests']} requests")
        q0 = settled_count(admin)
        # A fixed count has no known end: allow it a generous floor of 30 requests per second.
        limit = stop.value + 60 if stop.rule == "duration" else max(600.0, stop.value / 30)
        try:
            out = client.measure(limit)
        except RunError as e:
            if server.poll() is not None:
                raise RunError(
                    f"server {cell.server} exited with status {server.returncode} during the measured "
                    f"window: {tail(server_log)}"
                ) from None
            raise e
        q1 = settled_count(admin)
        log(f"window closed: {out['window_s']:.3f} s")
        if server.poll() is not None:
            raise RunError(f"server {cell.server} exited with status {server.returncode} during the measured window")
        check_identity(port, cell.server, server.pid)
        load = out["load"]
        check_load(load)
        elu = out["elu"]
        check_elu(elu)
        check_server_requests(elu["requests"], load["requests"], cell.connections)
        check_bytes(load["bytes"], load["requests"], answer_bytes)
        check_database(q1 - q0, elu["requests"], workload["queries_per_request"])
        procs.stop(server)
        server_exit = server.returncode
        log(f"server stopped ({server_exit})")
        if server_exit != 0:
            log(f"warning: server exited with status {server_exit} on SIGTERM (expected a graceful 0)")
    window_s = out["window_s"]
    record = {
        "server": cell.server,
        "workload": cell.workload,
        "connections": cell.connections,
        "repetition": cell.repetition,
        "load_generator": cell.load_generator,
        "load_generator_version": client_version(cell.load_generator, paths.lockfile),
        "client_threads": client.threads,
        "client_cpu_capacity": float(min(client.threads, len(client_cpus))),
        "stopping_rule": stop.rule,
        "stop": stop.label,
        "path": workload["path"],
        "warmup_s": float(opts.warmup_s),
        "duration_s": float(stop.value) if stop.rule == "duration" else None,
        "requests_target": int(stop.value) if stop.rule == "count" else None,
        "last_response_s": out["last_response_s"],
        "first_connection_done_s": out["first_connection_done_s"],
        "responses_at_first_done": out["responses_at_first_done"],
        "client_samples": out["samples"],
        "pool_size": opts.pool_size,
        "window_s": window_s,
        **{k: v for k, v in load.items()},
        "warmup_requests": warm["requests"],
        "answer_bytes": answer_bytes,
        "elu_idle_ms": elu["idle_ms"],
        "elu_active_ms": elu["active_ms"],
        "elu_utilization": elu["utilization"],
        "elu_window_ms": elu["wall_ms"],
        "server_requests": elu["requests"],
        "server_cpu_user_us": elu["cpu_user_us"],
        "server_cpu_system_us": elu["cpu_system_us"],
        "client_cpu_user_us": out["client_cpu_user_us"],  # the load generator's own CPU over its run
        "client_cpu_system_us": out["client_cpu_system_us"],
        "client_cpu_util": (out["client_cpu_user_us"] + out["client_cpu_system_us"]) / (window_s * 1e6),
        "db_counter": "pg_stat_statements.calls",
        "db_queries": q1 - q0,
        "db_queries_per_request": (q1 - q0) / elu["requests"],
        **derive(load, window_s, elu),
        "cpu_shared": server_cpus == client_cpus,
        "server_cpus": ",".join(map(str, server_cpus)),
        "client_cpus": ",".join(map(str, client_cpus)),
        "db_cpus": ",".join(map(str, client_cpus)) if db.mode == "embedded" else "",
        "server_pid": who["pid"],
        "server_exit_code": server_exit,
        "framework": who["framework"],
        "framework_version": who["framework_version"],
        "node_version": who["node_version"],
        **lockfile_versions(paths.lockfile),
        "database_mode": db.mode,
        "database_dsn": redacted_dsn(db.admin_conninfo) if db.mode == "dsn" else "",
        "postgres_version": pg_version,
        **provenance.machine(),
        "pipeline_commit": provenance.git_commit(paths.repo),
        "started_at": started_at.isoformat(timespec="milliseconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }
    took = f", {record['requests']:,} requests in {window_s:.2f} s" if stop.rule == "count" else ""
    progress(
        f"done  {cell.label()}: {record['req_per_s']:,.0f} req/s, {record['us_per_req_elu']:.1f} us/req "
        f"(ELU {record['elu_utilization']:.2f}), client CPU {record['client_cpu_util']:.2f}{took}"
    )
    return record


def client_version(name: str, lockfile: Path) -> str:
    """The load generator's version: autocannon's from the lockfile, wrk's and ab's from the program."""
    if name == "autocannon":
        return lockfile_versions(lockfile, ("autocannon",))["autocannon_version"] or "unknown"
    return loadgen.program_version(name)


def check_record(record: dict, schema_path: Path) -> None:
    """Raise RunError if the record breaks its schema, so a bad record never counts as done."""
    schema = yaml.safe_load(schema_path.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(record), key=lambda e: list(e.path))
    if errors:
        where = "/".join(map(str, errors[0].path)) or "(record)"
        raise RunError(f"the run record breaks workflow/schemas/run-record.schema.yaml at {where}: {errors[0].message}")


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(sm) -> None:
    """The Snakemake entry point: read the job's wildcards and params, write the record."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    wc = sm.wildcards
    cell = Cell(wc.server, wc.workload, int(wc.connections), int(wc.rep), wc.loadgen, Stop.parse(wc.stop))
    p = sm.params
    opts = Options(
        float(p.warmup_s),
        int(p.pool_size),
        int(p.server_port),
        dict(p.database),
        str(p.scratch_dir),
        str(p.node),
        bool(p.allow_shared_cpu),
    )
    template = Path(sm.input.template) if "template" in sm.input.keys() else None
    paths = Paths(
        Path(p.repo),
        Path(sm.input.server).resolve(),
        Path(sm.input.driver).resolve(),
        Path(sm.input.lua).resolve(),
        Path(sm.input.lockfile),
        Path(sm.input.fixture),
        template,
        Path(sm.input.run_schema),
    )
    out = Path(sm.output.record)
    with open(sm.log[0], "w") as logf:

        def log(msg):
            print(f"{datetime.now().isoformat(timespec='milliseconds')} {msg}", file=logf, flush=True)

        def progress(msg):
            log(msg)
            print(f"[measure] {msg}", file=sys.stderr, flush=True)

        try:
            record = measure(cell, opts, paths, log, progress)
            check_record(record, paths.run_schema)
        except psycopg.Error as e:
            e = pgcluster.DatabaseError(f"database error: {e}")
            log(f"error: {e}")
            print(f"[measure] FAILED {cell.label()}: {e}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        except (RunError, pgcluster.DatabaseError, procs.PortInUseError) as e:
            log(f"error: {e}")
            print(f"[measure] FAILED {cell.label()}: {e}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(out)


if __name__ == "__main__" and "snakemake" in globals():
    main(snakemake)  # noqa: F821

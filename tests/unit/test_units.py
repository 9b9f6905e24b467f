"""Unit tests of the pure functions: parsing, checks, derivations, aggregation, summary, seed."""

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml

import list_outputs
from conftest import FIXTURES, REPO
from nodebench.analysis import aggregate, metrics
from nodebench.harness import database, errors, hostsample, loadgen, parsers, procs, record, seed, verify
from nodebench.render import markdown
from synthetic import synthetic_records

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())


def autocannon_fixture(name: str) -> dict:
    return json.loads((FIXTURES / "autocannon" / f"{name}.json").read_text())


def test_parse_clean_autocannon_output():
    load = parsers.parse_autocannon(autocannon_fixture("clean"))
    assert load["requests"] == 5700 and load["responses_2xx"] == 5700
    assert load["errors"] == load["timeouts"] == load["non2xx"] == 0
    assert load["bytes"] == 2553600
    assert load["latency_p99_ms"] == 8.0
    assert load["status_counts"] == {"200": 5700}
    verify.check_load(load)


def test_non_2xx_output_fails_with_counts_per_status():
    load = parsers.parse_autocannon(autocannon_fixture("non2xx"))
    with pytest.raises(errors.RunError, match=r"264 non-2xx responses \(264 x HTTP 503\)"):
        verify.check_load(load)


def test_connection_errors_fail_with_their_count():
    load = parsers.parse_autocannon(autocannon_fixture("refused"))
    with pytest.raises(errors.RunError, match=r"saw 5302 errors"):
        verify.check_load(load)


def test_zero_requests_is_not_a_result():
    load = {"requests": 0, "errors": 0, "timeouts": 0, "non2xx": 0}
    with pytest.raises(errors.RunError, match="no requests"):
        verify.check_load(load)


@pytest.mark.parametrize(
    ("queries", "requests", "per_request", "ok"),
    [
        (1000, 1000, 1, True),
        (1050, 1000, 1, True),  # every one of the 50 connections' outstanding requests ran its query
        (1051, 1000, 1, False),
        (999, 1000, 1, False),  # a counted response whose query did not run
        (2000, 1000, 1, False),  # two queries a request where the workload claims one
        (2000, 1000, 2, True),
        (2100, 1000, 2, True),
        (2101, 1000, 2, False),
        (1000, 1000, 2, False),
        (0, 1000, 0, True),
        (3, 1000, 0, False),
    ],
)
def test_database_counter_must_match_the_requests_the_client_counted(queries, requests, per_request, ok):
    if ok:
        verify.check_database(queries, requests, per_request, connections=50)
    else:
        with pytest.raises(errors.RunError, match=f"ran {queries} workload queries for the {requests} requests"):
            verify.check_database(queries, requests, per_request, connections=50)


def test_every_response_must_have_the_verified_size():
    verify.check_bytes(4500, 10, 450)
    with pytest.raises(errors.RunError, match="received 4490 bytes in 10 responses, but the verified answer is 450"):
        verify.check_bytes(4490, 10, 450)


@pytest.mark.parametrize("server_count", [None, 20_050])
def test_derive_cpu_per_request_pairs_the_server_window_with_the_clients_count(server_count):
    # The client counted 20,000 responses in its 1.995 s run, inside the server's 2.0 s window. A server run with
    # NODEBENCH_PROBE=hook also counts its own (here 50 more: answered, never read); the figures ignore it.
    load = {"requests": 20_000, "bytes": 5_400_000}
    elu = {
        "utilization": 0.5,
        "idle_ms": 1000.0,
        "active_ms": 1000.0,
        "cpu_user_us": 800_000,
        "cpu_system_us": 200_000,
        "wall_ms": 2000.0,
        "requests": server_count,
    }
    d = record.derive(load, 1.995, elu)
    assert d["req_per_s"] == 10_000  # on the ELU's clock: 20,000 / (1,000 + 1,000 ms)
    assert d["client_req_per_s"] == pytest.approx(20_000 / 1.995)
    assert d["us_per_req_elu"] == pytest.approx(50.0)  # 0.5 * 1e6 / 10,000 = 1,000 ms active / 20,000
    assert d["us_per_req_elu"] * d["req_per_s"] / 1e6 == pytest.approx(elu["utilization"], rel=1e-12)
    assert d["us_per_req_cpu"] == pytest.approx(50.0)  # 1,000,000 us / 20,000
    assert d["server_cpu_util"] == pytest.approx(0.5)


@pytest.mark.parametrize("u", [0.0, 1.2, -0.1])
def test_implausible_elu_is_rejected(u):
    with pytest.raises(errors.RunError, match="outside"):
        verify.check_elu({"utilization": u, "wall_ms": 1000.0})


def test_cpu_split_never_uses_fixed_ids():
    assert procs.split_cpus([5, 3]) == ([3], [5])
    assert procs.split_cpus([8, 9, 10, 11]) == ([8], [9, 10, 11])
    assert procs.split_cpus([7]) == ([7], [7])
    with pytest.raises(ValueError):
        procs.split_cpus([])


def test_lockfile_versions_come_from_the_lockfile():
    versions = record.lockfile_versions(REPO / "servers/package-lock.json")
    lock = json.loads((REPO / "servers/package-lock.json").read_text())["packages"]
    assert versions["express_version"] == lock["node_modules/express"]["version"]
    assert versions["fastify_version"].startswith("5.")


def test_seed_is_deterministic_and_the_static_fixture_is_row_one():
    assert seed.user_row(4242) == seed.user_row(4242)
    assert seed.user_row(1) == json.loads((REPO / "servers/fixtures/static-user.json").read_text())
    assert list(seed.user_rows(3))[2] == tuple(seed.user_row(3)[c] for c in seed.COLUMNS)


def test_payload_sizes_match_the_reference_workloads():
    one = len(json.dumps(seed.user_row(4242), separators=(",", ":")))
    hundred = len(json.dumps([seed.user_row(i) for i in range(1, 101)], separators=(",", ":")))
    assert 250 <= one <= 300  # about 270 bytes
    assert 25_000 <= hundred <= 29_000  # about 27 KB


def make_record(**overrides) -> dict:
    """A schema-valid run record with made-up numbers."""
    base = {}
    for name, spec in RUN_SCHEMA["properties"].items():
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        base[name] = {"integer": 1, "number": 0.5, "string": "x", "object": {}, "boolean": False, "array": []}[kinds[0]]
        if spec.get("enum"):
            base[name] = spec["enum"][0]
    base.update(errors=0, timeouts=0, non2xx=0, mismatches=0, database_mode="embedded", status_counts={"200": 1})
    base.update(client="autocannon", stopping_rule="duration")
    base.update(overrides)
    return base


def test_every_record_field_is_in_the_data_dictionary():
    assert all(spec.get("description") for spec in RUN_SCHEMA["properties"].values())


def test_aggregate_types_and_sorts(tmp_path: Path):
    paths = []
    for i, (server, round_) in enumerate([("fastify", 2), ("express", 1), ("fastify", 1)]):
        p = tmp_path / f"{i}.json"
        p.write_text(json.dumps(make_record(server=server, workload="empty", round=round_)))
        paths.append(p)
    frame = aggregate.to_frame(aggregate.load_records(paths, RUN_SCHEMA), RUN_SCHEMA)
    assert list(frame["server"]) == ["express", "fastify", "fastify"]
    assert list(frame["round"]) == [1, 1, 2]
    assert str(frame["server"].dtype) == "category"
    assert str(frame["requests"].dtype) == "int64"
    assert str(frame["req_per_s"].dtype) == "float64"
    assert frame["status_counts"].iloc[0] == '{"200": 1}'
    assert list(frame.columns) == list(RUN_SCHEMA["properties"])


NEW_IN_ISSUE_10 = [
    "server_aborted", "server_in_flight_at_stop", "server_drain_ms", "server_invol_csw", "server_invol_csw_per_s",
    "server_vol_csw", "elu_active_over_cpu", "preempted", "preempted_reason", "client_cpu_count",
    "client_cpus_busy", "db_cpu_s", "db_cpu_util", "sample_window_s", "sample_start_offset_ms",
    "sample_stop_offset_ms",
]  # fmt: skip


def test_records_from_before_a_field_existed_read_as_null(tmp_path: Path):
    old = {k: v for k, v in make_record(server="express", workload="empty").items() if k not in NEW_IN_ISSUE_10}
    new = make_record(server="fastify", workload="empty", preempted=True, server_aborted=3, db_cpu_util=0.25)
    paths = []
    for i, r in enumerate([old, new]):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(r))
    frame = aggregate.to_frame(aggregate.load_records(paths, RUN_SCHEMA), RUN_SCHEMA).set_index("server")
    assert str(frame["preempted"].dtype) == "boolean" and str(frame["server_aborted"].dtype) == "Int64"
    assert frame[NEW_IN_ISSUE_10].loc["express"].isna().all()
    assert frame.loc["fastify", "preempted"] and frame.loc["fastify", "server_aborted"] == 3
    assert frame.loc["fastify", "db_cpu_util"] == 0.25
    frame.reset_index().to_parquet(tmp_path / "runs.parquet", index=False)


SERVER_COUNT = ["server_requests", "server_statuses", "server_aborted", "server_in_flight_at_stop", "server_drain_ms"]


def test_records_without_the_servers_count_validate_and_read_as_null(tmp_path: Path):
    # Since the window touches no request the server keeps no count: today's records carry nulls, older ones theirs.
    today = make_record(server="fastify", workload="empty", **dict.fromkeys(SERVER_COUNT))
    older = make_record(server="express", workload="empty", server_requests=1050, server_statuses={"200": 1050})
    for i, r in enumerate([today, older]):
        (tmp_path / f"{i}.json").write_text(json.dumps(r))
    paths = sorted(tmp_path.glob("*.json"))
    frame = aggregate.to_frame(aggregate.load_records(paths, RUN_SCHEMA), RUN_SCHEMA).set_index("server")
    assert str(frame["server_requests"].dtype) == "Int64"
    assert frame.loc["fastify", ["server_requests", "server_aborted", "server_drain_ms"]].isna().all()
    assert frame.loc["express", "server_requests"] == 1050
    # Every figure per request still needs the client's count.
    with pytest.raises(ValueError, match="requests"):
        aggregate.load_records([_write(tmp_path / "bad.json", {k: v for k, v in today.items() if k != "requests"})],
                               RUN_SCHEMA)  # fmt: skip


def _write(path: Path, record: dict) -> Path:
    path.write_text(json.dumps(record))
    return path


def test_records_written_under_the_old_field_names_read_as_todays(tmp_path: Path):
    """repetition, load_generator and load_generator_version are now round, client and client_version."""
    today = make_record(server="express", workload="empty", round=2, client="wrk", client_version="4.2.0")
    renamed = {"round": "repetition", "client": "load_generator", "client_version": "load_generator_version"}
    old = {renamed.get(k, k): v for k, v in today.items()}
    assert "round" not in old and old["load_generator"] == "wrk"
    frames = []
    for name, written in (("old", old), ("today", today)):
        (tmp_path / f"{name}.json").write_text(json.dumps(written))
        frames.append(aggregate.to_frame(aggregate.load_records([tmp_path / f"{name}.json"], RUN_SCHEMA), RUN_SCHEMA))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    assert frames[0].loc[0, "round"] == 2 and frames[0].loc[0, "client"] == "wrk"


def test_a_record_says_its_format_and_one_from_before_reads_as_format_1(tmp_path: Path):
    from nodebench.harness.record import FORMAT_VERSION

    today = make_record(server="express", workload="empty", format_version=FORMAT_VERSION)
    before = {k: v for k, v in today.items() if k != "format_version"}
    frame = aggregate.to_frame(
        aggregate.load_records([_write(tmp_path / "a.json", today), _write(tmp_path / "b.json", before)], RUN_SCHEMA),
        RUN_SCHEMA,
    )
    assert sorted(frame["format_version"]) == [1, FORMAT_VERSION] and str(frame["format_version"].dtype) == "int64"


def test_a_record_of_a_newer_format_is_refused_naming_its_file_and_what_to_do(tmp_path: Path):
    from nodebench.harness.record import FORMAT_VERSION

    newer = _write(tmp_path / "r3.json", make_record(format_version=FORMAT_VERSION + 1))
    with pytest.raises(aggregate.RecordFormatError, match=rf"r3.json: record format {FORMAT_VERSION + 1}, .*newer"):
        aggregate.load_records([newer], RUN_SCHEMA)
    # An older record that lacks what today's must have says it is older and how to measure it again.
    old = {k: v for k, v in make_record().items() if k != "requests"}
    with pytest.raises(ValueError, match=r"old.json: .*requests.*a record of format 1, older .*--forcerun"):
        aggregate.load_records([_write(tmp_path / "old.json", old)], RUN_SCHEMA)


def test_aggregate_in_batches_gives_the_same_table(tmp_path: Path):
    # Records stream into the frame a batch at a time; categories are set over all batches.
    records = synthetic_records(["node-http", "express", "fastify"], ["empty", "point-lookup"], [10, 50], 3)
    whole = aggregate.to_frame(records, RUN_SCHEMA)
    batched = aggregate.to_frame(iter(records), RUN_SCHEMA, batch=7)
    pd.testing.assert_frame_equal(batched, whole)
    assert str(batched["server"].dtype) == "category" and len(batched) == len(records) == 36
    paths = []
    for i, r in enumerate(records):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(r))
    streamed = aggregate.to_frame(aggregate.iter_records(paths, RUN_SCHEMA), RUN_SCHEMA, batch=5)
    pd.testing.assert_frame_equal(streamed, whole)


def test_aggregate_names_the_file_and_field_of_a_bad_record(tmp_path: Path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(make_record(errors=3)))
    with pytest.raises(ValueError, match=r"bad.json: errors: 0 was expected"):
        aggregate.load_records([p], RUN_SCHEMA)


def test_summary_renders_tables_marks_and_machine():
    records = synthetic_records(["node-http", "express", "fastify"], ["empty", "point-lookup"], [10, 50], 3)
    runs = aggregate.to_frame(records, RUN_SCHEMA)
    cells = metrics.compute_metrics(runs)
    text = markdown.render(runs, cells, metrics.geomean_scores(cells), datetime(2026, 1, 2, tzinfo=UTC))
    assert "Measured on Synthetic CPU" in text and "Node.js v20.0.0" in text and "Generated 2026-01-02" in text
    assert "### empty: a fixed ~270-byte object" in text and "### point-lookup: one indexed query" in text
    assert "## Framework share" in text and "## Score" in text
    # The synthetic ELU is 0.6 at 10 connections: those cells' verdict says they were not server-bound.
    lines = text.splitlines()
    # Synthetic records have no client-set or database figures: the verdict says what was not measured.
    assert any(
        line.startswith("| express | 10 |") and "| not saturated (ELU 0.60," in line and "not measured" in line
        for line in lines
    )
    assert any(
        line.startswith("| express |") and line.endswith("| server-bound (ELU 1.00 >= 0.95) |") for line in lines
    )
    fastify = cells[(cells["server"] == "fastify") & (cells["workload"] == "empty") & (cells["connections"] == 50)]
    r = fastify.iloc[0]
    assert f"| {r['cost_vs_express']:.2f}x [{r['cost_vs_express_lo']:.2f}–{r['cost_vs_express_hi']:.2f}] |" in text
    # The answer comes first: the paired cost of each framework against express and node-http.
    assert text.split("\n\n")[1].startswith("- **empty** at 50 connections: ")
    assert f"fastify costs {r['cost_vs_express']:.2f}x express's event-loop CPU per request" in text


def test_summary_interval_formatting():
    assert markdown.ci(4209.4, 3754.0, 4310.2) == "4,209 [3,754–4,310]"
    assert markdown.ci(4.2, 4.2, 4.2, ".2f", "x") == "4.20x"
    assert markdown.ci(float("nan"), 1, 2) == "n/a"


def test_manifest_is_sorted_and_unique():
    assert list_outputs.manifest_lines(["b", "a", "b"]) == ["a", "b"]


def test_config_schema_describes_every_key():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())

    def walk(node, where):
        for name, spec in node.get("properties", {}).items():
            assert spec.get("description"), f"{where}{name} has no description"
            walk(spec, f"{where}{name}.")

    walk(schema, "")
    assert schema["additionalProperties"] is False


def test_server_request_count_must_match_the_client():
    # Completed-but-unread plus aborted: at most one per connection.
    verify.check_server_requests(1050, 1000, 50)
    verify.check_server_requests(1000, 1000, 50)
    verify.check_server_requests(1030, 1000, 50, aborted=20)
    with pytest.raises(errors.RunError, match="completed 1051 requests"):
        verify.check_server_requests(1051, 1000, 50)
    with pytest.raises(errors.RunError, match=r"completed 1031 requests \(and 20 aborted\).*expected 1000 to 1030"):
        verify.check_server_requests(1031, 1000, 50, aborted=20)
    # A response the client read was sent inside the window: the server cannot have completed fewer.
    with pytest.raises(errors.RunError, match="completed 999 requests"):
        verify.check_server_requests(999, 1000, 50)
    with pytest.raises(errors.RunError, match="completed 999 requests"):
        verify.check_server_requests(999, 1000, 50, aborted=1)


def test_the_database_bound_names_the_outstanding_requests():
    with pytest.raises(errors.RunError, match=r"expected 1000 to 1010: 1 per request.* each of the 10 connections"):
        verify.check_database(1011, 1000, 1, connections=10)
    verify.check_database(1000, 1000, 1, connections=0)  # a fixed-count run with nothing outstanding
    with pytest.raises(errors.RunError, match="expected 1000 to 1000"):
        verify.check_database(1001, 1000, 1, connections=0)


def test_statuses_the_server_did_not_count_are_the_clients_to_check():
    verify.check_statuses(None, 200)  # no hook: check_load and check_bytes check them
    verify.check_statuses({"200": 5}, 200)
    with pytest.raises(errors.RunError, match="answered 5 x HTTP 200, 1 x HTTP 201"):
        verify.check_statuses({"200": 5, "201": 1}, 200)


def test_a_window_that_did_not_drain_is_not_a_result():
    elu = {"utilization": 0.5, "wall_ms": 1000.0, "drained": True, "in_flight_at_stop": 3, "drain_ms": 1.2}
    verify.check_elu(elu)
    verify.check_elu({"utilization": 0.5, "wall_ms": 1000.0})  # a server from before the drain
    # A server without the hook waits for nothing and says so with nulls.
    verify.check_elu({"utilization": 0.5, "wall_ms": 1000.0, "drained": None, "in_flight_at_stop": None})
    stuck = {**elu, "drained": False, "in_flight_after_drain": 2, "drain_ms": 2000.4}
    with pytest.raises(errors.RunError, match="still had 2 of the window's 3 requests in flight 2000 ms after"):
        verify.check_elu(stuck)


def test_dsn_environment_maps_every_key_and_keeps_pg_variables():
    env = database.dsn_environment(
        "host=db.example port=5433 dbname=bench user=app sslmode=require",
        {"PGPASSWORD": "s3cret", "HOME": "/h", "X": "1"},
    )
    assert env == {
        "PGHOST": "db.example",
        "PGPORT": "5433",
        "PGDATABASE": "bench",
        "PGUSER": "app",
        "PGSSLMODE": "require",
        "PGPASSWORD": "s3cret",
        "HOME": "/h",
    }
    with pytest.raises(errors.RunError, match="'target_session_attrs'"):
        database.dsn_environment("host=x target_session_attrs=any", {})


def test_redacted_dsn_drops_the_password():
    assert "s3cret" not in database.redacted_dsn("host=x user=u password=s3cret dbname=d")


def test_free_ports_are_distinct():
    for _ in range(50):
        ports = procs.free_ports(2)
        assert len(set(ports)) == 2 and all(1024 <= p <= 65535 for p in ports)


def test_machine_line_names_every_commit_and_version():
    records = synthetic_records(["node-http", "express"], ["empty"], [10], 2)
    records[0]["pipeline_commit"], records[0]["node_version"] = "aaa111", "v22.0.0"
    line = markdown.machine_line(aggregate.to_frame(records, RUN_SCHEMA))
    assert "aaa111, synthetic" in line and "v20.0.0, v22.0.0" in line


class CountingAdmin:
    """A stand-in for the admin connection: the query counter reads these values in turn, then the last."""

    def __init__(self, values):
        self.values, self.reads = list(values), 0

    def execute(self, sql):
        value = self.values[min(self.reads, len(self.values) - 1)]
        self.reads += 1
        return type("Cursor", (), {"fetchone": lambda _self: (value,)})()


def test_query_counter_waits_for_stragglers_until_it_settles():
    admin = CountingAdmin([100, 104, 109, 110, 110, 110, 110])
    assert verify.settled_count(admin, interval=0.001) == 110
    assert admin.reads == 7  # up to 110, then three more reads that agree with it


def test_query_counter_after_the_window_stops_once_it_reaches_the_expected_count():
    admin = CountingAdmin([100, 140, 150, 150, 150])
    assert verify.settled_count(admin, expected=150, interval=0.001) == 150
    assert admin.reads == 4  # up to 150, then one read that confirms it


def test_query_counter_past_the_expected_count_settles_and_reports_it():
    # Something else ran queries: the counter is read as it settles, and the check names the difference.
    admin = CountingAdmin([100, 160, 170, 170, 170, 170])
    got = verify.settled_count(admin, expected=150, interval=0.001)
    assert got == 170
    with pytest.raises(errors.RunError, match="ran 70 workload queries"):
        verify.check_database(got - 100, 50, 1, connections=10)


PROC_STAT = """cpu  900 0 300 5000 100 0 10 0 0 0
cpu0 500 0 100 2000 50 0 5 0 0 0
cpu1 300 5 150 1800 40 0 5 0 60 0
cpu2 100 0 50 1200 10 0 0 0 0 0
intr 12345
"""


def test_client_cpu_ticks_leave_out_idle_iowait_and_guest():
    # cpu1: total = 300+5+150+1800+40+0+5+0 = 2300 (guest 60 is inside user already); busy = 2300-1800-40.
    assert hostsample.cpu_ticks(PROC_STAT, [1]) == (460, 2300)
    assert hostsample.cpu_ticks(PROC_STAT, [1, 2]) == (460 + 150, 2300 + 1360)
    with pytest.raises(ValueError, match="cpu7"):
        hostsample.cpu_ticks(PROC_STAT, [1, 7])


def test_window_figures_from_two_snapshots():
    s0 = hostsample.Snapshot(mono_ms=10_000.0, busy_ticks=1000, total_ticks=4000, db_cpu_s=2.0)
    s1 = hostsample.Snapshot(mono_ms=12_000.0, busy_ticks=1300, total_ticks=4400, db_cpu_s=2.5)
    elu = {"mono_start_ms": 10_001.5, "mono_stop_ms": 11_999.0}
    got = hostsample.window_figures(s0, s1, elu)
    assert got["sample_window_s"] == 2.0 and got["client_cpus_busy"] == 0.75
    assert got["db_cpu_s"] == 0.5 and got["db_cpu_util"] == 0.25
    assert got["sample_start_offset_ms"] == -1.5 and got["sample_stop_offset_ms"] == 1.0
    # An external database: no PostgreSQL figures; no snapshots at all: every figure null.
    dsn = hostsample.window_figures(
        hostsample.Snapshot(0.0, 0, 0, None), hostsample.Snapshot(1000.0, 10, 100, None), {}
    )
    assert dsn["db_cpu_s"] is None and dsn["db_cpu_util"] is None and dsn["client_cpus_busy"] == 0.1
    assert dsn["sample_start_offset_ms"] is None
    assert set(hostsample.window_figures(None, None, elu).values()) == {None}


def test_the_sampler_reads_this_machine():
    cpus = sorted(os.sched_getaffinity(0))
    sample = hostsample.WindowSampler(cpus, db_pid=os.getpid())
    a, b = sample(), sample()
    assert b.mono_ms >= a.mono_ms and b.total_ticks >= a.total_ticks and b.db_cpu_s >= a.db_cpu_s > 0
    assert hostsample.WindowSampler(cpus, db_pid=None)().db_cpu_s is None
    assert hostsample.tree_cpu_s(2**22 + 12345) is None  # no such process


def test_preemption_flag_and_reason():
    calm = {"active_ms": 900.0, "cpu_user_us": 900_000, "cpu_system_us": 100_000, "wall_ms": 1000.0, "invol_csw": 20}
    got = record.preemption(calm)
    assert got["preempted"] is False and got["preempted_reason"] is None
    assert got["elu_active_over_cpu"] == 0.9 and got["server_invol_csw_per_s"] == 20.0
    stolen = {**calm, "active_ms": 990.0, "cpu_user_us": 700_000}
    got = record.preemption(stolen)
    assert got["preempted"] and "active time 1.24x the process CPU" in got["preempted_reason"]
    switched = {**calm, "invol_csw": 5000}
    assert "5,000 involuntary context switches/s" in record.preemption(switched)["preempted_reason"]
    assert record.preemption({**stolen, "invol_csw": 5000})["preempted_reason"].count(";") == 1
    # A server from before: no context switches reported, so that test cannot fire.
    old = {k: v for k, v in calm.items() if k != "invol_csw"}
    assert record.preemption(old)["server_invol_csw"] is None and not record.preemption(old)["preempted"]


def test_process_start_time_is_when_the_process_started():
    """Known answer: a child started between two clock readings; to /proc's 10 ms ticks, it started there.

    (Adding /proc/stat's btime, whole seconds, put it up to 1 s early, and every job's overhead
    read that much too long.)
    """
    import time

    before = time.time()
    child = subprocess.Popen(["sleep", "5"])
    after = time.time()
    try:
        started = procs.process_started_at(str(child.pid)).timestamp()
    finally:
        child.kill()
        child.wait()
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert before - tick - 0.002 <= started <= after + 0.002, (before, started, after)


@pytest.mark.parametrize(("configured", "handed"), [("host=db user=u dbname=d", ""), ("", "host=db user=u password=p")])
def test_a_job_refuses_a_dsn_other_than_the_workflows(monkeypatch, configured, handed):
    """The DSN comes in the environment: one that is missing (a command run by hand) or left over is an error."""
    from nodebench.harness import DSN_VARIABLE, job

    monkeypatch.setenv(DSN_VARIABLE, handed)
    options = {"database": {"dsn": configured, "run_as": "nobody", "settings": {}}, "warmup_s": 1}
    j = job.Job("empty", "express", 10, "wrk", "1s", 1, {}, options, Path("r1.json"), Path("r1.log"), 1, None, None)
    with pytest.raises(errors.RunError, match=DSN_VARIABLE):
        job.options(j, {})


THREADED_CHILD = """
import threading, time
for _ in range(4):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
print("up", flush=True)
time.sleep(30)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning apart needs two CPUs")
def test_pin_moves_every_thread_and_threads_off_finds_strays():
    """A server boots on all the job's CPUs and is pinned once ready: every thread must end up there."""
    import sys

    cpus = sorted(os.sched_getaffinity(0))
    child = procs.spawn([sys.executable, "-c", THREADED_CHILD], cpus=cpus, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        tids = {int(t) for t in os.listdir(f"/proc/{child.pid}/task")}
        assert len(tids) == 5
        # Before: every thread may run on any of the CPUs, so all of them are off the first.
        assert set(procs.threads_off(child.pid, cpus[:1])) == tids
        procs.pin(child.pid, cpus[:1])
        assert procs.threads_off(child.pid, cpus[:1]) == {}
        assert {frozenset(os.sched_getaffinity(t)) for t in tids} == {frozenset(cpus[:1])}
    finally:
        procs.stop(child)
    with pytest.raises(errors.RunError, match="exited before it could be pinned"):
        procs.pin(child.pid, cpus[:1])


def test_wait_exit_sees_the_exit_without_reaping_and_honours_the_deadline():
    import time

    child = subprocess.Popen(["sleep", "0.2"])
    t0 = time.monotonic()
    assert procs.wait_exit(child, t0 + 10)
    assert 0.15 < time.monotonic() - t0 < 5
    # Not reaped: its status and CPU time are still the caller's to read.
    pid, status, usage = os.wait4(child.pid, 0)
    assert pid == child.pid and os.waitstatus_to_exitcode(status) == 0 and usage.ru_utime >= 0
    child.returncode = 0

    slow = subprocess.Popen(["sleep", "30"])
    try:
        t0 = time.monotonic()
        assert not procs.wait_exit(slow, t0 + 0.2)
        assert 0.15 < time.monotonic() - t0 < 5
        assert slow.poll() is None
    finally:
        procs.stop(slow)


def test_the_schema_compiled_during_the_warm_up_judges_as_one_compiled_on_the_spot(tmp_path: Path):
    # The schema compiled ahead of time (during the warm-up) judges a record as one compiled on the spot.
    schema = tmp_path / "s.yaml"
    schema.write_text("type: object\nrequired: [a]\nproperties:\n  a: {type: integer}\n")
    fresh = tmp_path / "fresh.yaml"
    fresh.write_text(schema.read_text())
    facts = record.gather("autocannon", REPO / "servers" / "package-lock.json", schema)
    assert facts["client_version"] and schema in record._compiled and fresh not in record._compiled
    for path in (schema, fresh):
        with pytest.raises(errors.RunError, match="breaks"):
            record.check_record({"a": "x"}, path)
        with pytest.raises(errors.RunError, match="breaks"):
            record.check_record({}, path)
        record.check_record({"a": 1}, path)


def test_run_independent_facts_read_the_lockfile_the_machine_and_the_commit(tmp_path: Path, monkeypatch):
    # Known answers: a lockfile with made-up versions, a repository with a commit of our own.
    lock = tmp_path / "package-lock.json"
    lock.write_text(
        json.dumps(
            {
                "packages": {
                    "node_modules/autocannon": {"version": "1.2.3"},
                    "node_modules/express": {"version": "9.8.7"},
                    "node_modules/pg": {"version": "4.5.6"},
                }
            }
        )
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f").write_text("1")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    sha = subprocess.run([*git, "log", "-1", "--format=%H"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(repo)
    facts = record.run_independent_facts("autocannon", lock)
    assert facts["client_version"] == "1.2.3"
    assert facts["lockfile"] == {
        "express_version": "9.8.7",
        "fastify_version": None,
        "pg_version": "4.5.6",
        "autocannon_version": "1.2.3",
    }
    assert facts["pipeline_commit"] == sha
    (repo / "f").write_text("2")  # a tracked file changed: the record must not claim the clean commit
    assert record.run_independent_facts("autocannon", lock)["pipeline_commit"] == sha + "-dirty"
    monkeypatch.chdir(tmp_path)  # not a repository
    assert record.run_independent_facts("autocannon", lock)["pipeline_commit"] == "unknown"
    # wrk's version comes from the program, not the lockfile
    assert record.run_independent_facts("wrk", lock)["client_version"] == loadgen.program_version("wrk")

"""What the workflow plans, without Snakemake: paths, each scope's files and charts, a job's inputs, the charts."""

import importlib
from argparse import Namespace

import pytest
from test_configcheck import REPO, shipped

from nodebench import plan, runs, targets
from nodebench.render import chart_list
from nodebench.render.chart_list import CHART_LIST, ScopeFacts, charts_for


def tiny(**overrides) -> dict:
    config = shipped() | {
        "servers": ["node-http", "express"],
        "workloads": {"empty": {"connections": [10]}},
        "rounds": 2,
        "control": None,
        "experiments": {},
    }
    return config | overrides


def test_a_record_path_names_every_part_of_its_run():
    path = runs.record_path("main", "empty", "express@node22", 50, "wrk", "5s", 3)
    assert path == "data/runs/main/empty/express@node22/c50/wrk-5s/r3.json"
    failure = runs.failure_path("block", "express", 50, "ab", "200req")
    assert failure == "data/failures/block/express/c50/ab-200req.json"


def test_a_scope_lists_its_records_tables_reports_and_charts():
    t = targets.Targets(tiny())
    outputs = t.outputs("overall")
    assert [p for p in outputs if p.startswith("data/runs/")] == [
        runs.record_path("main", "empty", s, 10, "wrk", "5s", r) for s in ("node-http", "express") for r in (1, 2)
    ]
    assert {"data/overall/runs.parquet", "data/overall/metrics.parquet", "data/overall/scores.parquet"} <= set(outputs)
    assert {"reports/overall/summary.md", "reports/overall/index.html"} <= set(outputs)
    assert t.manifests() == ["reports/all", "reports/overall/all", "reports/empty/all"]


@pytest.mark.parametrize(
    ("overrides", "charts"),
    [
        ({}, ["cpu-per-request", "cost-ratio", "framework-share"]),
        (
            {"workloads": {"empty": {"connections": [10, 50]}}},
            ["cpu-per-request", "cost-ratio", "connection-sweep", "memory-connections", "framework-share"],
        ),
        ({"control": "node-http"}, ["cpu-per-request", "cost-ratio", "framework-share", "control-drift"]),
        ({"servers": ["fastify", "express-lean"]}, ["cpu-per-request", "framework-share"]),
    ],
)
def test_a_matrix_scope_gets_the_charts_its_measurements_support(overrides, charts):
    assert targets.Targets(tiny(**overrides)).chart_names("overall") == charts


def test_each_shipped_experiment_gets_the_charts_of_what_it_measures():
    t = targets.Targets(shipped())
    got = {e: t.chart_names(e) for e in t.experiments}
    assert got["stopping-rule"] == ["stopping-rule", "duration-sweep"]
    assert "load-generators" in got["load-generators"]
    assert got["scenarios"] == ["scenario-heatmap", "scenario-score"]
    assert got["versions"] == ["versions"]
    assert got["naive-settimeout"] == []
    assert t.tables("versions") == ["runs", "metrics", "stopping", "versions"]
    assert got["latency"] == ["latency-load"]
    assert t.tables("latency") == ["runs", "metrics", "stopping", "latency"]
    # Fixed rates only: the cost curve (drawn from the metrics), no latency table of shares of capacity.
    assert got["cost-curve"] == ["cost-load"]
    assert t.tables("cost-curve") == ["runs", "metrics", "stopping"]


def test_an_open_loop_cell_reads_its_capacity_from_its_wrk_cell_of_the_same_round():
    t = targets.Targets(shipped())
    # The instrument's calibration has fixed rates and no capacity (tests/unit/test_calibration.py).
    cells = [c for c in plan.experiment_cells(t.config, "latency") if c[1] != "fixed-delay"]
    loads = sorted({c[4] for c in cells if c[3] == "openloop"})
    assert loads == ["5s-at25", "5s-at50", "5s-at75", "5s-at90"]
    # Each server and workload's wrk cell is planned beside its open-loop cells, and comes first; the same wrk
    # cell again after them ('5s-end') comes last.
    for w, s in {(c[0], c[1]) for c in cells}:
        mine = [c for c in cells if c[:2] == (w, s)]
        assert mine[0] == (w, s, 50, "wrk", "5s") and mine[-1] == (w, s, 50, "wrk", "5s-end") and len(mine) == 6
    block = t.block_of("latency")
    run = runs.Run.from_wildcards(
        Namespace(block=block, workload="empty", server="express", connections="50", client="openloop",
                  stop="5s-at75", round="2")
    )  # fmt: skip
    inputs = t.measure_inputs(run)
    assert inputs["capacity"] == runs.record_path(block, "empty", "express", 50, "wrk", "5s", 2)
    assert inputs["client_file"] == "servers/loadgen/openloop.js"
    assert "capacity" not in t.measure_inputs(run._replace(client="wrk", stop="5s"))
    # The capacity measured again waits for every open-loop run of its sweep, in its round, and only those.
    end = t.measure_inputs(run._replace(client="wrk", stop="5s-end"))
    assert sorted(end["sweep"]) == [
        runs.record_path(block, "empty", "express", 50, "openloop", f"5s-at{p}", 2) for p in (25, 50, 75, 90)
    ]
    assert "sweep" not in t.measure_inputs(run._replace(client="wrk", stop="5s"))


def test_a_job_on_an_installed_node_takes_that_binary_and_a_node_client_the_pipelines():
    t = targets.Targets(shipped())
    on22 = t.cell_inputs("empty", "express@node22", "wrk")
    assert on22["server_binary"] == "data/toolchain/node22/bin/node" and "pipeline_node" not in on22
    assert on22["server"] == "servers/express.js" and on22["client_probe"] == "data/toolchain/wrk.json"
    own = t.cell_inputs("point-lookup", "node-http-aa", "autocannon")
    assert own["server"] == "servers/node-http.js" and own["pipeline_node"] == "data/toolchain/node-system.json"
    assert "scripts/nodebench/catalogue/workloads.py" not in own["code"]
    # The progress line prints where the invocation stands and never reaches a record: editing it re-measures nothing.
    assert (
        "scripts/nodebench/harness/progress.py" not in own["code"] and "scripts/nodebench/harness/job.py" in own["code"]
    )
    assert t.failure_inputs("block", "express", "ab")["entry"] == "scripts/expect_failure.py"


def test_jobs_inherit_this_checkout_the_dsn_and_one_session():
    env = targets.job_environment({"database": {"dsn": "host=db"}}, "/x/scripts", {"PYTHONPATH": "/y"})
    assert env["PYTHONPATH"] == "/x/scripts:/y" and env["NODEBENCH_DATABASE_DSN"] == "host=db"
    kept = targets.job_environment({"database": {"dsn": None}}, "/x", {"NODEBENCH_SESSION": "s1"})
    assert kept["NODEBENCH_SESSION"] == "s1" and kept["NODEBENCH_DATABASE_DSN"] == ""


def test_every_chart_of_the_registry_has_a_draw_function_and_a_caption():
    for name, spec in CHART_LIST.items():
        module, function = spec.draw.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name
        text = chart_list.caption(name, REPO)
        assert len(text) > 80 and "{" not in text, (name, text)
        assert (REPO / spec.draw_file()).is_file() and spec.draw_file() in targets.chart_code(name)
    captions = {p.stem for p in (REPO / "workflow/report/charts").glob("*.rst")}
    assert captions == set(CHART_LIST), "a caption file without a chart, or a chart without one"


def test_every_chart_is_drawn_for_some_scope():
    matrix = charts_for(chart_list.ALL_MATRIX)
    experiment = {
        n
        for facts in (
            ScopeFacts(experiment=True, scored=True),
            ScopeFacts(experiment=True, versioned=True, both_stops=True, durations=3, clients=2),
            ScopeFacts(experiment=True, open_loop=True, cost_curve=True),
        )
        for n in charts_for(facts)
    }
    assert set(matrix) | experiment == set(CHART_LIST)


def test_a_report_asked_for_before_the_run_names_the_target_to_run_first():
    scopes = ["overall", "point-lookup", "stopping-rule"]
    none = lambda path: False  # noqa: E731
    (line,) = targets.report_problem(["--cores", "1", "--report", "r.html"], scopes, exists=none)
    assert "reports/all is not there yet" in line and "snakemake --cores 1 reports/all` first" in line
    (line,) = targets.report_problem(["reports/point-lookup/all", "--report=r.html"], scopes, exists=none)
    assert "reports/point-lookup/all is not there yet" in line
    # Finished, or no report asked for: nothing to say.
    assert targets.report_problem(["--report", "r.html"], scopes, exists=lambda path: True) == []
    assert targets.report_problem(["reports/all"], scopes, exists=none) == []


def test_a_measurement_depends_on_the_harness_not_on_the_rule_layers_code():
    """A measurement job's code inputs are what its script imports: editing how the workflow computes them (codegraph)
    or what it plans (targets, plan) must not re-measure every cell."""
    import os

    from nodebench import codegraph

    here = os.getcwd()
    os.chdir(REPO)
    try:
        found = set(codegraph.python_modules("scripts/measure_run.py"))
    finally:
        os.chdir(here)
    assert "scripts/nodebench/harness/measure.py" in found and "scripts/nodebench/jsrequire.py" in found
    assert not found & {
        "scripts/nodebench/codegraph.py",
        "scripts/nodebench/targets.py",
        "scripts/nodebench/plan.py",
        "scripts/nodebench/recovery.py",
        # The names' grammar and record paths: read by the rule layer and the analysis, never by a job, so that
        # editing them re-measures nothing.
        "scripts/nodebench/runs.py",
    }, sorted(found)


def test_a_records_round_of_how_many_is_read_from_the_plans_paths_by_the_workflow():
    records = [
        runs.record_path("compare/express4/express", "empty", "express", 50, "wrk", "5s", r) for r in (1, 2, 3)
    ] + [runs.record_path("main", "empty", "express", 50, "wrk", "5s", 1)]
    found = runs.planned_rounds(records)
    assert found[records[1]] == (2, 3) and found[records[3]] == (1, 1)
    assert runs.Run.from_path(records[0]).block == "compare/express4/express"
    # A checkout under a folder named data/runs: the project's own data/runs/ is the last one in the path.
    assert runs.Run.from_path(f"/home/u/data/runs/nodebench/{records[0]}").block == "compare/express4/express"
    assert runs.Run.from_path("/abs/project/" + records[3]) == runs.Run("main", "empty", "express", 50, "wrk", "5s", 1)

"""The line a measurement job prints when it is done: where it stands in its round, its cell's rounds and the
invocation's plan, with the time left estimated from the pace so far."""

import json
import os
from datetime import datetime

import measure_run
from nodebench.harness import progress


def test_a_measurement_says_its_place_in_its_round_and_the_time_since_the_invocation_began():
    line = measure_run.where_we_are(
        "empty/fastify c50 wrk-5s r2",
        "data/x/r2.json",
        2,
        3,
        12,
        {"NODEBENCH_SESSION": "20261205T084600-123"},
        datetime(2026, 12, 5, 8, 50, 30),
    )
    assert line == "measured empty/fastify c50 wrk-5s r2: run 3 of 12 in round 2; 4.5 min since this invocation began"


def test_without_a_place_or_a_session_it_says_what_it_knows():
    assert measure_run.where_we_are("x r1", "x/r1.json", 1, None, None, {}) == "measured x r1: round 1"
    assert measure_run.where_we_are("x r1", "x/r1.json", 1, 1, 5, {"NODEBENCH_SESSION": "given-by-a-user"}) == (
        "measured x r1: run 1 of 5 in round 1"
    )


def _plan(tmp_path, capped=False):
    planned = [f"data/s/runs/{w}/r{k}.json" for w in ("a", "b") for k in (1, 2, 3)]
    # r1 of both cells was recorded before this invocation: not to measure.
    to_measure = {p: 10.0 for p in planned if not p.endswith("r1.json")}
    path = progress.plan_path(tmp_path, "20261205T084600-123")
    # The workflow names each record's round and its cell's rounds (runs.planned_rounds reads them from the paths).
    rounds = {p: (int(p[-6]), 3) for p in planned}
    progress.write(path, rounds, to_measure, capped=capped, now=1000.0)
    return path


def test_the_plan_gives_the_round_of_how_many_the_runs_done_and_the_time_left_at_the_pace_so_far(tmp_path):
    path = _plan(tmp_path)
    # Two of four runs done; the first finished at 1030 (so began about 1020), the second at 1060: 50 s measuring
    # for 20 s of estimate, a pace of 2.5, so the 20 s left take about 50 s.
    times = {"data/s/runs/a/r2.json": 1030.0, "data/s/runs/b/r2.json": 1060.0}
    line = measure_run.where_we_are(
        "b r2",
        "data/s/runs/b/r2.json",
        2,
        2,
        2,
        {"NODEBENCH_PLAN": str(path), "NODEBENCH_SESSION": "20261205T084600-123"},
        datetime.fromtimestamp(1070.0),
        times.get,
    )
    assert line == (
        "measured b r2: run 2 of 2 in round 2 of 3; "
        "2 of 4 runs of this invocation done, 50 s measuring, about 50 s left"
    )


def test_an_adaptive_plan_says_at_most_and_the_last_run_says_nothing_is_left(tmp_path):
    path = _plan(tmp_path, capped=True)
    times = {"data/s/runs/a/r2.json": 1030.0}
    rounds, standing = progress.standing("data/s/runs/a/r2.json", progress.read(path), 1030.0, times.get)
    assert rounds == "round 2 of 3"
    assert standing == "1 of 4 runs of this invocation done, 10 s measuring, at most about 30 s left"
    every = {p: 1100.0 for p in json.loads(path.read_text())["to_measure"]}
    _, standing = progress.standing("data/s/runs/a/r3.json", progress.read(path), 1100.0, every.get)
    assert standing == "4 of 4 runs of this invocation done, 10 s measuring"


def test_a_record_written_before_the_plan_is_not_counted_as_done_and_old_plans_are_removed(tmp_path):
    stale = tmp_path / "plan-old.json"
    stale.write_text("{}")
    fresh = tmp_path / "plan-recent.json"
    fresh.write_text("{}")
    os.utime(stale, (0, 0))
    os.utime(fresh, (8 * 86400 - 3600, 8 * 86400 - 3600))
    progress.write(progress.plan_path(tmp_path, "later"), [], {}, capped=False, now=8 * 86400.0)
    assert not stale.exists() and fresh.exists()
    path = _plan(tmp_path)
    times = {"data/s/runs/a/r2.json": 500.0, "data/s/runs/a/r3.json": 1040.0}
    _, standing = progress.standing("data/s/runs/a/r3.json", progress.read(path), 1040.0, times.get)
    assert standing.startswith("1 of 4 runs")
    assert progress.read(tmp_path / "nothing.json") is None

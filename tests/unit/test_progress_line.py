"""The line a measurement job prints when it is done: where it stands in its round and in the invocation."""

from datetime import datetime

import measure_run


def test_a_measurement_says_its_place_in_its_round_and_the_time_since_the_invocation_began():
    line = measure_run.where_we_are(
        "empty/fastify c50 wrk-5s r2",
        2,
        3,
        12,
        {"NODEBENCH_SESSION": "20261205T084600-123"},
        datetime(2026, 12, 5, 8, 50, 30),
    )
    assert line == "measured empty/fastify c50 wrk-5s r2: run 3 of 12 in round 2; 4.5 min since this invocation began"


def test_without_a_place_or_a_session_it_says_what_it_knows():
    assert measure_run.where_we_are("x r1", 1, None, None, {}) == "measured x r1: round 1"
    assert measure_run.where_we_are("x r1", 1, 1, 5, {"NODEBENCH_SESSION": "given-by-a-user"}) == (
        "measured x r1: run 1 of 5 in round 1"
    )

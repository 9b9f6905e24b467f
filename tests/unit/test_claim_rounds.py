"""When a claim block has rounds enough (issue 36, item 3): each claim's interval against a width set by the claim
alone, never by where its data lie. tests/calibration/test_claim_stopping.py checks that the rule keeps the
verdicts' error rates; these check what it reads."""

import math

import numpy as np
import pandas as pd
import pytest

from claim_data import claim, ratio_runs, runs
from nodebench.analysis import claims as C
from nodebench.analysis import looks


def test_each_kind_of_claim_gets_its_width_from_its_own_tolerance_and_unit():
    assert C.width_target(claim()) == (pytest.approx(math.log(1.1) / 2), "log")
    assert C.width_target(claim(unit="%", figure=40)) == (pytest.approx(2.5), "linear")
    assert C.width_target(claim(tolerance=0.2, tolerance_why="t")) == (pytest.approx(math.log(1.2) / 2), "log")
    # A plain number (an ELU) against a limit: a quarter of the rule's band around the limit, as measured.
    lo, hi = 0.95 / 1.1, 0.95 * 1.1
    elu = claim(unit="", compare="at_least", limit=0.95, statistic="f", figure=None)
    assert C.width_target(elu) == (pytest.approx((hi - lo) / 4), "linear")
    # A plain number centred on 0 has no band: its block measures to the cap.
    assert C.width_target(claim(unit="", compare="same", null=0, statistic="f - e", figure=None)) == (0.0, "linear")
    assert C.width_target({"compare": "order", "order": ["a", "b"]}) == (pytest.approx(math.log(1.1) / 2), "log")


def test_the_width_does_not_depend_on_which_side_of_the_band_the_data_lie():
    spread = np.exp(np.array([0.03, -0.02, 0.01, -0.04, 0.02, 0.0]))
    near = C.stopping_widths([claim()], ratio_runs(list(4.37 * spread)))
    far = C.stopping_widths([claim()], ratio_runs(list(2.0 * spread)))
    assert C.evaluate_claim(claim(), ratio_runs(list(4.37 * spread)))["verdict"] == C.REPRODUCED
    assert C.evaluate_claim(claim(), ratio_runs(list(2.0 * spread)))["verdict"] == C.NOT_REPRODUCED
    assert near["half_width"].iloc[0] == pytest.approx(far["half_width"].iloc[0])


def test_a_narrow_claim_is_narrow_enough_a_noisy_one_is_not_and_one_round_has_no_width():
    quiet = ratio_runs(list(4.37 * np.exp(np.array([0.01, -0.01, 0.005, 0.0, -0.005, 0.008]))))
    noisy = ratio_runs(list(4.37 * np.exp(np.array([0.2, -0.15, 0.1, -0.2, 0.05, 0.12]))))
    w = C.stopping_widths([claim()], quiet).iloc[0]
    assert w["comparison"] == "t-ratio" and w["n"] == 6 and w["half_width"] <= w["target"]
    w = C.stopping_widths([claim()], noisy).iloc[0]
    assert w["half_width"] > w["target"]
    w = C.stopping_widths([claim()], ratio_runs([4.37])).iloc[0]
    assert w["half_width"] == math.inf and w["n"] == 1


def test_claims_that_need_no_rounds_are_not_waited_for():
    skipped = [
        claim(id="o", compare="outcome"),
        claim(id="u", untestable="needs another machine"),
        claim(id="p", pending="no experiment yet"),
    ]
    found = C.stopping_widths([*skipped, claim()], ratio_runs([4.3, 4.4]))
    assert list(found["comparison"]) == ["t-ratio"]


def test_a_claim_whose_cells_have_no_runs_is_never_narrow_enough():
    other = claim(
        cells={"f": {"workload": "list", "server": "fastify"}, "e": {"workload": "list", "server": "express"}}
    )
    found = C.stopping_widths([other], ratio_runs([4.3, 4.4, 4.5]))
    assert found["half_width"].iloc[0] == math.inf


def test_an_order_is_as_narrow_as_its_widest_neighbouring_pair():
    order = {
        "id": "t-order",
        "compare": "order",
        "order": ["a", "b", "c"],
        "cells": {k: {"workload": "empty", "server": k} for k in "abc"},
        "unit": "",
    }
    r = np.exp(np.array([0.01, -0.01, 0.0, 0.005, -0.005, 0.002]))
    tight = runs({("empty", "a"): list(3000 * r), ("empty", "b"): [2000.0] * 6, ("empty", "c"): list(1000 / r)})
    loose = runs({("empty", "a"): list(3000 * r), ("empty", "b"): [2000.0] * 6, ("empty", "c"): list(1000 / r**20)})
    w_tight = C.stopping_widths([order], tight).iloc[0]
    w_loose = C.stopping_widths([order], loose).iloc[0]
    # Six rounds: the interval is min-max. a / b moves as r, b / c as r (tight) or r**20 (loose): log r spans 0.02.
    assert w_tight["half_width"] == pytest.approx(0.01) and w_loose["half_width"] == pytest.approx(0.2)
    assert w_tight["half_width"] <= w_tight["target"] < w_loose["half_width"]


def test_a_claim_blocks_look_stops_only_when_every_claim_is_within_its_own_width():
    found = C.stopping_widths(
        [claim(id="narrow"), claim(id="points", unit="%", figure=40, statistic="100 * (f / e) / 10")],
        ratio_runs(list(4.37 * np.exp(np.array([0.01, -0.01, 0.005, 0.0, -0.005, 0.008])))),
    )
    # The percent claim reads about 43.7 points, its interval about 1 point wide: narrow against its ±2.5.
    look = looks.decide(found, 6, [6, 10], None)
    assert look["stop"] and not look["capped"] and look["half_width_target"] is None
    found.loc[1, "half_width"] = 3.0
    look = looks.decide(found, 6, [6, 10], None)
    assert not look["stop"] and [w["comparison"] for w in look["wider_than_target"]] == ["points"]
    found.loc[1, "half_width"] = math.inf
    look = looks.decide(found, 10, [6, 10], None)
    assert (
        look["stop"]
        and look["capped"]
        and look["wider_than_target"] == [{"comparison": "points", "half_width_log": None}]
    )


def test_a_statistic_that_subtracts_is_read_as_it_is_so_its_width_does_not_depend_on_where_it_lies():
    # (e20 - f20) / (ep - fp): a ratio of differences, whose noise adds. On a log scale its width would grow as it
    # falls toward 0 and be infinite below it: where the data lie would decide whether the block stops.
    holds = claim(statistic="(f - e) / e", figure=1.0, compare="equal")
    assert C.width_target(holds) == (pytest.approx((1.1 - 1 / 1.1) / 4), "linear")
    spread = np.array([0.03, -0.02, 0.01, -0.04, 0.02, 0.0])
    near_zero = C.stopping_widths([holds], ratio_runs(list(1.05 + spread))).iloc[0]
    near_one = C.stopping_widths([holds], ratio_runs(list(2.0 + spread))).iloc[0]
    assert near_zero["half_width"] == pytest.approx(near_one["half_width"]) == pytest.approx(0.035)


def test_an_invalid_claim_is_marked_so_its_look_does_not_wait_for_it():
    below = ratio_runs([4.3, 4.4, 4.5, 4.2, 4.35, 4.4], extra={("empty", "fastify"): {"elu_utilization": [0.5] * 6}})
    found = C.stopping_widths([claim(server_bound=True), claim(id="other")], below)
    assert list(found["invalid"]) == [True, False]
    look = looks.decide(found[~found["invalid"]], 6, [6, 10], None)
    assert look["stop"] and look["comparisons"] == 1


def test_the_ledger_states_a_floor_for_intervals_whose_rounds_looks_chose():
    table = C.ledger(
        [claim(), claim(id="fixed", scope="other")],
        {"overall": ratio_runs([4.3, 4.4, 4.5, 4.2, 4.35, 4.4]), "other": ratio_runs([4.3, 4.4, 4.5, 4.2, 4.35, 4.4])},
    )
    floor = looks.stated_coverage([6, 10])
    stated = C.with_stated_coverage(table, {"overall": floor})
    row, fixed = stated.iloc[0], stated.iloc[1]
    assert (
        row["coverage"] == pytest.approx(floor)
        and row["interval"] == "n=6: min-max, at least 95.38 % (rounds chosen by looks)"
    )
    assert np.isnan(fixed["coverage"]) and fixed["interval"] == table.iloc[1]["interval"] == "n=6: min-max, 96.88 %"
    # The family counts 1 - the floor for the first, 1 - 96.88 % for the second.
    assert C.family(stated)[1] == pytest.approx((1 - floor) + (1 - 0.96875))


def widths(h: list[float], n: list[int], target: float = 0.05, invalid: list[bool] | None = None) -> pd.DataFrame:
    """A claim block's look table as claims.stopping_widths gives it."""
    return pd.DataFrame(
        {"comparison": [f"c{i}" for i in range(len(h))], "half_width": h, "target": [target] * len(h),
         "scale": ["log"] * len(h), "n": n, "invalid": invalid or [False] * len(h)}
    )  # fmt: skip


def test_the_half_width_at_the_cap_is_projected_by_the_square_root_law_with_the_rounds_left():
    at_cap = looks.projected_width([0.1, 0.1, 0.1, math.inf, 0.1], [6, 4, 6, 6, 1], 6, 10)
    # 6 rounds to 10: sqrt(6/10); a claim resting on 4 of the 6 rounds gets the 4 left: sqrt(4/8).
    assert at_cap[:3] == pytest.approx([0.1 * math.sqrt(0.6), 0.1 * math.sqrt(0.5), 0.1 * math.sqrt(0.6)])
    assert math.isinf(at_cap[3]) and math.isinf(at_cap[4])  # no interval yet: nothing to project
    assert looks.projected_width([0.1], [10], 10, 10) == pytest.approx([0.1])  # at the cap: as it is


def test_a_look_does_not_wait_for_a_claim_the_rounds_left_cannot_narrow_and_waits_for_one_they_can():
    # Target 0.05: 0.20 at 6 rounds projects to 0.155 at 10, over twice the target (beyond reach); 0.12 projects to
    # 0.093, under twice it, and 0.06 to 0.046, within it (both waited for).
    assert looks.REACH_FACTOR == 2.0
    beyond = looks.decide_claims(widths([0.20, 0.01], [6, 6]), 6, [6, 10])
    assert beyond["stop"] and not beyond["capped"] and beyond["comparisons"] == 1
    assert [b["comparison"] for b in beyond["beyond_reach"]] == ["c0"]
    assert beyond["beyond_reach"][0]["at_cap"] == pytest.approx(0.2 * math.sqrt(0.6))
    text = looks.sentence(beyond | {"stop_on": "claims"})
    assert "It stopped after 6 rounds, its one claim within it" in text
    assert "1 claim (c0) could not reach that by the cap of 10 rounds at the spread observed" in text
    for h in (0.12, 0.06):
        within = looks.decide_claims(widths([h, 0.01], [6, 6]), 6, [6, 10])
        assert not within["stop"] and within["beyond_reach"] == []
        assert [w["comparison"] for w in within["wider_than_target"]] == ["c0"]
    # A claim with no band to narrow to (target 0) is never beyond reach: its block measures to the cap.
    unbanded = looks.decide_claims(widths([0.3], [6], target=0.0), 6, [6, 10])
    assert not unbanded["stop"] and unbanded["beyond_reach"] == []
    # No interval yet (fewer than two rounds): waited for, as before.
    assert not looks.decide_claims(widths([math.inf], [1]), 6, [6, 10])["stop"]
    # At the cap nothing is beyond reach: the wide claim is named as still too wide.
    capped = looks.decide_claims(widths([0.20, 0.01], [10, 10]), 10, [6, 10])
    assert capped["stop"] and capped["capped"] and capped["beyond_reach"] == []
    # Every claim beyond reach or invalid: the look stops at once and says why.
    none = looks.decide_claims(widths([0.3, 0.01], [6, 6], invalid=[False, True]), 6, [6, 10])
    assert none["stop"] and none["invalid"] == ["c1"] and len(none["beyond_reach"]) == 1
    assert "no claim it could narrow was left to wait for" in looks.sentence(none | {"stop_on": "claims"})


def test_whether_a_claim_is_beyond_reach_does_not_depend_on_which_side_of_the_band_its_data_lie():
    spread = np.exp(np.array([0.2, -0.15, 0.05, -0.09, 0.08, 0.0]))
    on_figure = looks.decide_claims(C.stopping_widths([claim()], ratio_runs(list(4.37 * spread))), 6, [6, 10])
    far_off = looks.decide_claims(C.stopping_widths([claim()], ratio_runs(list(2.0 * spread))), 6, [6, 10])
    assert [b["comparison"] for b in on_figure["beyond_reach"]] == [b["comparison"] for b in far_off["beyond_reach"]]
    assert on_figure["beyond_reach"] != [] and on_figure["beyond_reach"][0]["at_cap"] == pytest.approx(
        far_off["beyond_reach"][0]["at_cap"]
    )
    assert on_figure["stop"] == far_off["stop"] is True

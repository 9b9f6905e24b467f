"""The whole comparison (pairing, the A/A floor, the outcomes) on thousands of synthetic campaigns with known ratios.

tests/simulate.py makes the campaigns: drift of the machine inside and between rounds, per-run
noise and 15 % preempted runs, laid out as the plan lays them out (a peer group back to back)
or as the pipeline did before blocks (the baseline borrowed from a scope measured 40 minutes
away). The blocked design must keep its stated coverage and call a null difference different
in at most 5 % of comparisons; the borrowed design must be caught failing both, or this test
could not tell the two apart. Power is a figure of tests/benchmarks/simulation.py, not a test.
"""

import pytest

import simulate

CAMPAIGNS = 2000


@pytest.fixture(scope="module")
def blocked_null() -> dict:
    return simulate.analyse(simulate.campaigns(CAMPAIGNS, 1.0, design="blocked", seed=11), 1.0)


def test_blocked_pairs_keep_the_stated_coverage(blocked_null):
    effect = simulate.analyse(simulate.campaigns(CAMPAIGNS, 0.9, design="blocked", seed=12), 0.9)
    for got in (blocked_null, effect):
        assert got["campaigns"] == CAMPAIGNS
        assert abs(got["coverage"] - got["stated"]) <= 0.015, got


def test_blocked_pairs_call_a_null_difference_different_rarely(blocked_null):
    assert blocked_null["different"] <= 0.05, blocked_null
    assert blocked_null["median_gap_s"] <= 3 * simulate.RUN_S


def test_a_10_percent_difference_is_never_called_costlier_or_equivalent():
    got = simulate.analyse(simulate.campaigns(CAMPAIGNS, 0.9, design="blocked", seed=13), 0.9)
    assert got["different"] == got["cheaper"] > 0.3 and got["equivalent"] == 0.0, got


def test_borrowed_baselines_are_caught_losing_coverage_and_calling_noise_a_difference():
    got = simulate.analyse(simulate.campaigns(CAMPAIGNS, 1.0, design="borrowed", seed=14), 1.0)
    assert got["coverage"] < got["stated"] - 0.1, got
    assert got["different"] > 0.05, got

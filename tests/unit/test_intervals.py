"""The order-statistic interval of a median: its ranks, its stated coverage, and the coverage it really has."""

import numpy as np
import pytest
from scipy import stats

from nodebench.analysis import intervals


def test_ranks_and_coverage_at_small_n():
    assert intervals.rank(1) == 0 and intervals.describe(1) == "n=1: no interval"
    assert intervals.coverage(3, 1) == pytest.approx(0.75)
    assert intervals.coverage(5, 1) == pytest.approx(1 - 2 / 32)
    assert intervals.describe(3) == "n=3: min-max, 75 %"
    assert intervals.describe(5) == "n=5: min-max, 93.75 %"
    assert intervals.rank(10) == 2 and intervals.coverage(10, 2) == pytest.approx(1 - 2 * 11 / 1024)
    assert intervals.describe(10) == "n=10: 2nd-9th of 10, 97.85 %"
    # The narrowest that still covers 95 %: at n=20, 6th-15th covers 95.9 %, 7th-14th only 88.5 %.
    assert intervals.rank(20) == 6 and intervals.coverage(20, 7) < 0.95 <= intervals.coverage(20, 6)


def test_the_lookup_tables_are_rank_and_coverage_at_every_n():
    # The tables are built one binomial call per n; each entry must be what rank() finds step by step.
    ranks, coverages = intervals._tables()
    for n in [*range(0, 130), 500, 999, 1000]:
        k = intervals.rank(n)
        assert ranks[n] == k, n
        if n >= 2:
            assert coverages[n] == pytest.approx(intervals.coverage(n, k), abs=1e-12), n


def test_bounds_are_the_order_statistics_of_each_row_with_its_own_n():
    values = np.array(
        [
            [5.0, 1.0, 3.0, 2.0, 4.0, np.nan, np.nan, np.nan, np.nan, np.nan],
            [10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
            [7.0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
        ]
    )
    median, lo, hi, n, cover = intervals.median_interval(values)
    assert list(n) == [5, 10, 1]
    assert median.tolist() == [3.0, 5.5, 7.0]
    assert lo[:2].tolist() == [1.0, 2.0] and hi[:2].tolist() == [5.0, 9.0]
    assert np.isnan(lo[2]) and np.isnan(hi[2]) and np.isnan(cover[2])
    assert cover[:2] == pytest.approx([1 - 2 / 32, 1 - 2 * 11 / 1024])


@pytest.mark.parametrize("n", [5, 10])
@pytest.mark.parametrize(
    "dist",
    [stats.lognorm(0.3, scale=200.0), stats.expon(scale=50.0), stats.uniform(100.0, 20.0)],
    ids=["lognormal", "exponential", "uniform"],
)
def test_observed_coverage_matches_the_stated_coverage(n, dist):
    # 2,000 simulated experiments of n runs each, from distributions whose median is known.
    experiments = 2_000
    values = dist.rvs(size=(experiments, n), random_state=np.random.default_rng(n))
    _, lo, hi, _, cover = intervals.median_interval(values)
    true_median = dist.median()
    observed = np.mean((lo <= true_median) & (true_median <= hi))
    assert abs(observed - cover[0]) <= 0.02, f"n={n}: observed {observed:.3f}, stated {cover[0]:.3f}"


def test_a_bootstrap_of_three_runs_would_have_claimed_95_percent():
    # What the issue found: min-max of 3 runs, which a percentile bootstrap calls a 95 % interval, covers 75 %.
    values = stats.norm(0, 1).rvs(size=(4_000, 3), random_state=np.random.default_rng(9))
    _, lo, hi, _, cover = intervals.median_interval(values)
    assert np.array_equal(lo, values.min(axis=1)) and np.array_equal(hi, values.max(axis=1))
    assert abs(np.mean((lo <= 0) & (0 <= hi)) - 0.75) < 0.02 and cover[0] == pytest.approx(0.75)

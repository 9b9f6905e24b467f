"""The ledger's verdicts on many synthetic campaigns whose truth is known: their error rates, a Monte Carlo check
of the statistics rather than of the code (the code's every branch is tests/unit/test_claim_verdicts.py's)."""

import numpy as np
import pandas as pd
import pytest

from claim_data import claim, ratio_runs
from nodebench.analysis import claims as C


def verdict(c, data):
    return C.evaluate_claim(c, data)["verdict"]


@pytest.mark.parametrize(("truth", "allowed"), [(4.37, {C.REPRODUCED, C.INCONCLUSIVE}), (2.0, {C.NOT_REPRODUCED})])
def test_campaigns_with_a_known_truth_rarely_get_the_wrong_verdict(truth, allowed):
    # 400 campaigns of 5 rounds with 3 % lognormal noise per round: a true claim is reproduced or inconclusive
    # (never refuted more often than its interval misses, 6.25 % at n=5), a false one is refuted.
    rng = np.random.default_rng(7)
    got = [verdict(claim(), ratio_runs(list(truth * np.exp(rng.normal(0, 0.03, 5))))) for _ in range(400)]
    wrong = sum(v not in allowed for v in got) / len(got)
    assert wrong <= 0.0625, pd.Series(got).value_counts()
    if truth == 4.37:
        assert got.count(C.REPRODUCED) / len(got) > 0.5

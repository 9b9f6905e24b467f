"""Rounds per claim (issue 36, item 3): a claim block measured up to looks 6/10/14/20, stopping once every claim's
interval is narrow against its own tolerance (claims.stopping_widths). The rule reads the interval's width, never
its side, so it must keep the coverage a report states for adaptive intervals (looks.stated_coverage, a floor), and
so the verdicts' error rates; stopping as soon as the verdict is decided must be caught losing it, or this test could
not tell the two rules apart.

A claim of 4.37x (the tolerance rule's band, 3.97x to 4.81x), on 8,000 simulated campaigns per case: normal and
heavy-tailed (t with 2 degrees of freedom) per-round noise of 3 % and 8 % on a log scale, with the truth at the
published figure, on the band's upper edge, and 20 % above the figure. The verdicts come from claims.decide.
"""

import numpy as np
import pytest

from claim_data import claim, runs
from nodebench.analysis import claims as C
from nodebench.analysis import intervals, looks

LOOKS = [6, 10, 14, 20]
CAMPAIGNS = 8000
FIGURE = 4.37
CLAIM = claim(figure=FIGURE)
BAND = (FIGURE / 1.1, FIGURE * 1.1)


def campaigns(truth: float, sd: float, tails: str, rule: str, seed: int) -> dict:
    """(lo, hi, n) of each campaign's interval where the rule stopped it."""
    rng = np.random.default_rng(seed)
    shape = (CAMPAIGNS, max(LOOKS))
    noise = rng.normal(0, sd, shape) if tails == "normal" else rng.standard_t(2, shape) * sd
    values = truth * np.exp(noise)
    target, scale = C.width_target(CLAIM)
    assert scale == "log"
    done = np.zeros(CAMPAIGNS, bool)
    lo_, hi_, n_ = np.full(CAMPAIGNS, np.nan), np.full(CAMPAIGNS, np.nan), np.zeros(CAMPAIGNS, int)
    for n in LOOKS:
        _, lo, hi, _, _ = intervals.median_interval(values[:, :n])
        if rule == "width":
            stop = (np.log(hi) - np.log(lo)) / 2 <= target
        else:  # the invalid rule: stop once the interval is wholly inside or wholly outside the band
            stop = ((BAND[0] <= lo) & (hi <= BAND[1])) | (hi < BAND[0]) | (lo > BAND[1])
        stop |= n == max(LOOKS)
        now = stop & ~done
        lo_[now], hi_[now], n_[now] = lo[now], hi[now], n
        done |= stop
    return {"lo": lo_, "hi": hi_, "n": n_, "values": values}


def coverage(found: dict, truth: float) -> float:
    return float(np.mean((found["lo"] <= truth) & (truth <= found["hi"])))


def verdicts(found: dict, truth: float) -> dict:
    got = [
        C.decide("equal", FIGURE, truth, lo, hi, n, unit="x", band=BAND, null=1)[0]
        for lo, hi, n in zip(found["lo"], found["hi"], found["n"], strict=True)
    ]
    return {v: got.count(v) / len(got) for v in (C.REPRODUCED, C.NOT_REPRODUCED, C.INCONCLUSIVE)}


FLOOR = looks.stated_coverage(LOOKS)
CASES = [(truth, sd, tails) for truth in (FIGURE, BAND[1]) for sd in (0.03, 0.08) for tails in ("normal", "t2")]


@pytest.mark.parametrize(("truth", "sd", "tails"), CASES)
def test_stopping_on_each_claims_width_keeps_the_stated_coverage(truth, sd, tails):
    found = campaigns(truth, sd, tails, "width", seed=int(sd * 100) + (tails == "t2"))
    assert coverage(found, truth) >= FLOOR, coverage(found, truth)


@pytest.mark.parametrize(("sd", "tails"), [(0.03, "normal"), (0.08, "t2")])
def test_stopping_on_the_verdict_is_caught_losing_coverage_on_the_bands_edge(sd, tails):
    found = campaigns(BAND[1], sd, tails, "verdict", seed=5)
    assert coverage(found, BAND[1]) < FLOOR, coverage(found, BAND[1])


@pytest.mark.parametrize(("truth", "wrong"), [(FIGURE, C.NOT_REPRODUCED), (FIGURE * 1.2, C.REPRODUCED)])
def test_a_true_claim_is_rarely_refuted_and_a_false_one_rarely_reproduced(truth, wrong):
    found = campaigns(truth, 0.08, "t2", "width", seed=9)
    got = verdicts(found, truth)
    assert got[wrong] <= 1 - FLOOR, got
    right = C.REPRODUCED if wrong == C.NOT_REPRODUCED else C.NOT_REPRODUCED
    assert got[right] > 0.5, got


def test_the_simulated_rule_is_the_looks_own():
    # For 40 campaigns, the block's look through the real path (a runs table, stopping_widths, looks.decide) stops
    # at the same look as the vectorised rule above.
    found = campaigns(FIGURE, 0.05, "normal", "width", seed=3)
    for i in range(40):
        per_round = found["values"][i]
        for n in LOOKS:
            table = runs(
                {("empty", "fastify"): [1000.0 * x for x in per_round[:n]], ("empty", "express"): [1000.0] * n}
            )
            look = looks.decide(C.stopping_widths([CLAIM], table), n, LOOKS, None)
            if look["stop"]:
                break
        assert n == found["n"][i]

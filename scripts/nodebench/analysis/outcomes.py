"""What a paired comparison says, decided from its interval on a log scale: one of four words.

A ratio r of two servers' figures is compared on log(r), where a ratio and its inverse
are the same distance from 1 (0.80 and 1.25). For a comparison's interval [lo, hi]:

- **cheaper** / **costlier**: the whole interval is below / above 1;
- **equivalent within +-m**: the whole interval lies inside [1/(1+m), 1+m], m declared in
  config before the data (`equivalence_margin`). Both one-sided tests of TOST at once: an
  interval of coverage c gives each side at least (1+c)/2;
- **inconclusive**: anything else. The data could not decide; that is not "the same".

No interval (one round) decides nothing: the outcome is missing, not inconclusive.

The A/A control's twin is no margin here. Its median offset, used as a floor until
2026-12-04, was itself a random draw (2.7 % on average at 5 rounds, sd 2.4 %) that halved
the power at a true 5 % difference while removing no bias, and it was applied to
comparisons against express, about which the node-http twin says nothing. The twin is a
check of the design instead: its own ratio and interval are reported per cell, and a cell
whose twin interval excludes 1 is flagged (metrics.add_noise_floor, `twin_off`).
"""

import numpy as np

from nodebench.analysis import intervals

CHEAPER, COSTLIER, EQUIVALENT, INCONCLUSIVE = "cheaper", "costlier", "equivalent", "inconclusive"
OUTCOMES = (CHEAPER, COSTLIER, EQUIVALENT, INCONCLUSIVE)
#: config's equivalence_margin when a caller does not pass one.
DEFAULT_MARGIN = 0.05


def log_floor(median) -> np.ndarray:
    """The A/A floor on a log scale: |log| of the A/A ratio's median over its rounds."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.log(np.asarray(median, dtype=float)))


def relative(log_value) -> np.ndarray:
    """A log-scale floor as the relative difference it allows: exp(f) - 1 (0.223 -> 0.25)."""
    return np.expm1(np.asarray(log_value, dtype=float))


def decide(lo, hi, margin: float = DEFAULT_MARGIN) -> np.ndarray:
    """Per comparison, its outcome (OUTCOMES) from its interval [lo, hi] of a ratio; None where there is no interval."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    bound = np.log1p(margin)
    out = np.full(lo.shape, None, dtype=object)
    known = ~(np.isnan(lo) | np.isnan(hi))
    with np.errstate(divide="ignore", invalid="ignore"):
        llo, lhi = np.log(lo), np.log(hi)
    out[known] = INCONCLUSIVE
    out[known & (llo >= -bound) & (lhi <= bound)] = EQUIVALENT
    out[known & (lhi < 0)] = CHEAPER
    out[known & (llo > 0)] = COSTLIER
    return out


def phrase(outcome, margin: float = DEFAULT_MARGIN) -> str:
    """The outcome in the words a report prints: 'equivalent within ±5 %', 'inconclusive'."""
    if outcome == EQUIVALENT:
        return f"equivalent within ±{margin * 100:.0f} %"
    return "no interval" if outcome is None else str(outcome)


def family(coverages) -> str:
    """What a report's intervals say together: each one's coverage, and none corrected for multiplicity."""
    c = np.asarray([x for x in coverages if x == x], dtype=float)
    if not len(c):
        return "no comparison has an interval"
    k, miss = len(c), float((1 - c).sum())
    lowest = intervals.percent(c.min())
    together = max(0.0, 1 - miss)
    return (
        f"{k} comparisons, each interval covering its own median ratio with at least {lowest} %; "
        f"not corrected for multiplicity: about {miss:.1f} of the {k} are expected to miss, and all {k} "
        f"cover together with at least {together * 100:.0f} % (Bonferroni)"
    )

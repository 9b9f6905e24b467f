"""What a paired comparison says, decided from its interval on a log scale: one of four words.

A ratio r of two servers' figures is compared on log(r), where a ratio and its inverse
are the same distance from 1 (0.80 and 1.25). The A/A control's own ratio says how far
two identical servers measured side by side came apart on this machine, in this run: the
*floor* is |log| of its median over rounds, the offset that the design itself puts
between two names of one server. Not the reach of its interval: the noise of one round is
already inside every comparison's own interval, and counting it twice left a 10 %
difference found in 8 % of simulated campaigns of 5 rounds instead of 51 %, while the
median floor keeps false "different" calls at 1.3 % (tests/simulate.py,
tests/unit/test_simulation.py). Then, for a comparison's interval [lo, hi]:

- **cheaper** / **costlier**: the whole interval is below / above 1 and beyond the
  floor (log hi < -floor, or log lo > floor);
- **equivalent within +-m**: the whole interval lies inside [1/(1+m), 1+m], m declared in
  config before the data (`equivalence_margin`). Both one-sided tests of TOST at once: an
  interval of coverage c gives each side at least (1+c)/2;
- **inconclusive**: anything else. The data could not decide; that is not "the same".

No interval (one round) decides nothing: the outcome is missing, not inconclusive.
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


def decide(lo, hi, floor, margin: float = DEFAULT_MARGIN) -> np.ndarray:
    """Per comparison, its outcome (OUTCOMES) from its interval [lo, hi] of a ratio and the log floor (NaN: no
    A/A control, so only 1 itself is the line); None where there is no interval."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    floor = np.nan_to_num(np.asarray(floor, dtype=float), nan=0.0) * np.ones_like(lo)
    bound = np.log1p(margin)
    out = np.full(lo.shape, None, dtype=object)
    known = ~(np.isnan(lo) | np.isnan(hi))
    with np.errstate(divide="ignore", invalid="ignore"):
        llo, lhi = np.log(lo), np.log(hi)
    out[known] = INCONCLUSIVE
    out[known & (llo >= -bound) & (lhi <= bound)] = EQUIVALENT
    out[known & (lhi < 0) & (lhi < -floor)] = CHEAPER
    out[known & (llo > 0) & (llo > floor)] = COSTLIER
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

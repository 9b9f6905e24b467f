"""Distribution-free intervals for a median, with the coverage they actually have at their n.

For n independent values from any continuous distribution, the number below the true
median is Binomial(n, 1/2), so the interval between the k-th smallest and the k-th
largest value, [x(k), x(n+1-k)], covers the median with probability

    1 - 2 * P(Binomial(n, 1/2) <= k - 1)

exactly, whatever the distribution. We take the narrowest such interval whose coverage
is at least CONFIDENCE; when even min-max falls short (n <= 5), min-max is used and its
own, lower coverage is the one printed: n=3 covers 75 %, n=5 93.75 %, n=10 (2nd to
9th) 97.85 %. n=1 has no interval. Nothing is resampled, so the same values always give the
same interval, and a table of a million cells costs one sort.
"""

import functools
import warnings

import numpy as np
from scipy.special import bdtr

from nodebench.catalogue.thresholds import CONFIDENCE

#: Interval bounds are looked up for n up to this many values; more is unusual.
MAX_N = 1000


def coverage(n: int, k: int) -> float:
    """Exact coverage of [x(k), x(n+1-k)] for the median of n continuous values."""
    if n < 2 or not 1 <= k <= n // 2:
        return float("nan")
    return float(1 - 2 * bdtr(k - 1, n, 0.5))


def rank(n: int, confidence: float = CONFIDENCE) -> int:
    """k of the narrowest [x(k), x(n+1-k)] covering at least `confidence` (1, min-max, when none does); 0 for n < 2."""
    if n < 2:
        return 0
    k = 1
    while k + 1 <= n // 2 and coverage(n, k + 1) >= confidence:
        k += 1
    return k


@functools.cache
def _tables(confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """rank(n) and its coverage for every n up to MAX_N, one binomial call per n, made on first use.

    The same as calling rank() and coverage() for each n (coverage falls as k grows), which
    costs a scipy call per k and took 10 s at every import, in every analysis job. The binomial
    CDF is scipy.special's bdtr (scipy.stats, the same CDF, took 1.1 s to import in every job).
    """
    ranks, cover = np.zeros(MAX_N + 1, dtype=int), np.full(MAX_N + 1, np.nan)
    for n in range(2, MAX_N + 1):
        ks = np.arange(1, n // 2 + 1)
        cov = 1 - 2 * bdtr(ks - 1, n, 0.5)
        good = np.flatnonzero(cov >= confidence)
        k = int(good[-1]) + 1 if good.size else 1
        ranks[n], cover[n] = k, cov[k - 1]
    return ranks, cover


def _ordinal(i: int) -> str:
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def percent(coverage_: float) -> str:
    """A coverage in per cent to two places, trailing zeros dropped: 0.9375 -> '93.75', 0.75 -> '75'.

    Rounded to whole per cent, min-max of five (93.75 %) read as 94 %, more than it covers.
    """
    return f"{coverage_ * 100:.2f}".rstrip("0").rstrip(".")


@functools.lru_cache(maxsize=None, typed=True)  # a table of a million cells names a handful of n
def describe(n: int, at_least: float | None = None) -> str:
    """What an interval over n values is, in words: 'n=5: min-max, 93.75 %', 'n=10: 2nd-9th of 10, 97.85 %'. With
    at_least (where adaptive looks chose n: looks.stated_coverage), that floor instead of n's fixed-n coverage:
    'n=10: 2nd-9th of 10, at least 95.38 % (rounds chosen by looks)'."""
    if n < 2:
        return f"n={n}: no interval"
    ranks, coverages = _tables()
    k = int(ranks[min(n, MAX_N)])
    cover = f"{percent(coverages[min(n, MAX_N)])} %"
    if at_least is not None:
        cover = f"at least {percent(at_least)} % (rounds chosen by looks)"
    if k == 1:
        return f"n={n}: min-max, {cover}"
    return f"n={n}: {_ordinal(k)}-{_ordinal(n + 1 - k)} of {n}, {cover}"


def median_interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a (cells x values) array, NaN marking a missing value: (median, lo, hi, n, coverage).

    Each row uses its own n (its non-NaN values). Rows with fewer than two values get
    NaN bounds and NaN coverage: one value has no interval.
    """
    values = np.atleast_2d(np.asarray(values, dtype=float))
    n = (~np.isnan(values)).sum(axis=1)
    if (n > MAX_N).any():
        raise ValueError(f"median_interval: a row has {n.max()} values; at most {MAX_N} are supported")
    ordered = np.sort(values, axis=1)  # NaN last
    median = np.full(len(values), np.nan)
    lo, hi = np.full(len(values), np.nan), np.full(len(values), np.nan)
    has = n > 0
    rows = np.flatnonzero(has)
    if len(rows):
        nn = n[rows]
        mid_lo = ordered[rows, (nn - 1) // 2]
        mid_hi = ordered[rows, nn // 2]
        median[rows] = (mid_lo + mid_hi) / 2
    ranks, coverages = _tables()
    two = np.flatnonzero(n >= 2)
    if len(two):
        k = ranks[n[two]]
        lo[two] = ordered[two, k - 1]
        hi[two] = ordered[two, n[two] - k]
    cover = np.where(n >= 2, coverages[np.minimum(n, MAX_N)], np.nan)
    return median, lo, hi, n, cover


def cv(values: np.ndarray) -> np.ndarray:
    """Coefficient of variation per row over its non-NaN values (sample SD / mean); 0 for one value."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    n = (~np.isnan(values)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no value at all (a figure older runs lack): NaN
        mean = np.nanmean(values, axis=1) if values.size else np.zeros(len(values))
        sd = np.sqrt(np.nansum((values - mean[:, None]) ** 2, axis=1) / np.maximum(n - 1, 1))
        return np.where(n > 1, sd / mean, np.where(n == 1, 0.0, np.nan))

"""Coverage of the order-statistic interval under adaptive rounds' stopping rule, on its own.

    .venv/bin/python tests/benchmarks/stopping_rule.py [campaigns]

Per-round values with a known median (0) from four noise shapes (normal, Student t with 2
degrees of freedom, skewed lognormal, a 15 % mixture shifted by 3 sd) at spreads of 1 % to
7 %; each campaign stops at the first look (6, 10, 14, 20 rounds) where its interval's
half-width is at most 3 %, else at 20. Prints the coverage under the stopping against the
floor a report states (nodebench.analysis.looks.stated_coverage) and the mean rounds.
About a minute for the default 20,000 campaigns a line. Pure arithmetic: nothing is measured.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from nodebench.analysis import intervals, looks  # noqa: E402

LOOKS = [6, 10, 14, 20]
TARGET = 0.03


def draw(rng, shape: str, size) -> tuple[np.ndarray, float]:
    """Unit-scale values of a noise shape and their true median."""
    if shape == "normal":
        return rng.normal(size=size), 0.0
    if shape == "t2":
        return rng.standard_t(2, size=size), 0.0
    if shape == "skewed":
        return rng.lognormal(0, 1, size=size) - 1.0, 0.0  # lognormal(0, 1)'s median is 1
    mixture = np.where(rng.random(size) < 0.15, rng.normal(3, 1, size), rng.normal(size=size))
    big = np.where(rng.random(10**6) < 0.15, rng.normal(3, 1, 10**6), rng.normal(size=10**6))
    return mixture, float(np.median(big))


def main(n: int) -> None:
    rng = np.random.default_rng(2)
    floor = looks.stated_coverage(LOOKS)
    print(f"looks {LOOKS}, target ±{TARGET:.0%}, stated floor {floor:.2%}; {n} campaigns a line")
    print("| noise | spread | coverage | mean rounds |")
    print("|---|---:|---:|---:|")
    worst = 1.0
    for shape in ("normal", "t2", "skewed", "mixture"):
        for sd in (0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.07):
            unit, median = draw(rng, shape, (n, LOOKS[-1]))
            x, m = unit * sd, median * sd
            stopped = np.zeros(n, dtype=bool)
            covered, used = np.zeros(n), np.zeros(n)
            for k in LOOKS:
                _, lo, hi, _, _ = intervals.median_interval(x[:, :k])
                take = ~stopped & (((hi - lo) / 2 <= TARGET) | (k == LOOKS[-1]))
                covered[take] = (lo[take] <= m) & (m <= hi[take])
                used[take] = k
                stopped |= take
            worst = min(worst, covered.mean())
            print(f"| {shape} | {sd:.1%} | {covered.mean():.2%} | {used.mean():.1f} |")
    print(f"worst coverage {worst:.2%} against the stated floor {floor:.2%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)

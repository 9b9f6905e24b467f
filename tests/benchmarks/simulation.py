"""The comparison's coverage, false "different" rate and power on synthetic campaigns (tests/simulate.py).

    .venv/bin/python tests/benchmarks/simulation.py [campaigns]

Prints, per design and number of rounds, the interval's observed coverage of the true ratio
against the coverage it states, how often a null difference (ratio 1) is called cheaper or
costlier, and how often a true 10 % difference is called cheaper (power); then adaptive rounds
(looks after 6, 10, 14 and 20 rounds) at several half-width targets, with the rounds they took.
A few minutes for the default 4,000 campaigns per line. Pure arithmetic: nothing is measured.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import simulate  # noqa: E402


def main(n: int) -> None:
    print(
        f"noise model: per-run {simulate.NOISE:.0%} (log sd), drift {simulate.DRIFT:.0%}/sqrt(min), "
        f"{simulate.PREEMPTED:.0%} preempted (slowed up to {simulate.PREEMPT_SLOWDOWN:.0%}); {n} campaigns a line"
    )
    print("| design | rounds | stated | coverage | false different | power at 10 % | median pair gap |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for design in ("blocked", "borrowed"):
        for rounds in (5, 8, 10, 12, 15):
            null = simulate.analyse(simulate.campaigns(n, 1.0, rounds, design, seed=rounds), 1.0)
            effect = simulate.analyse(simulate.campaigns(n, 0.9, rounds, design, seed=100 + rounds), 0.9)
            print(
                f"| {design} | {rounds} | {null['stated']:.2%} | {null['coverage']:.2%} | {null['different']:.2%} "
                f"| {effect['cheaper']:.1%} | {null['median_gap_s']:.0f} s |"
            )
    looks = [6, 10, 14, 20]
    print()
    print(f"adaptive rounds, looks {looks}, blocked design")
    print("| half-width target | stated (floor) | coverage | false different | power at 10 % | mean rounds | capped |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    null_runs = simulate.campaigns(n, 1.0, looks[-1], "blocked", seed=200)
    effect_runs = simulate.campaigns(n, 0.9, looks[-1], "blocked", seed=201)
    for target in (0.03, 0.05, 0.06, 0.08):
        null = simulate.adaptive(null_runs, 1.0, looks, target)
        effect = simulate.adaptive(effect_runs, 0.9, looks, target)
        print(
            f"| ±{target:.0%} | {null['stated']:.2%} | {null['coverage']:.2%} | {null['different']:.2%} "
            f"| {effect['cheaper']:.1%} | {null['mean_rounds']:.1f} | {null['capped']:.0%} |"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)

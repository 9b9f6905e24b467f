"""The comparison's coverage, false "different" rate and power on synthetic campaigns (tests/simulate.py).

    .venv/bin/python tests/benchmarks/simulation.py [campaigns]

Prints, per design and number of rounds, the interval's observed coverage of the true ratio
against the coverage it states, how often a null difference (ratio 1) is called cheaper or
costlier, and how often a true 10 % difference is called cheaper (power); then adaptive rounds
(looks after 6, 10, 14 and 20 rounds) at several half-width targets, with the rounds they took
and the share of blocks that stopped before the cap, for each measured noise class (a 5 s window
on `empty` and on `point-lookup`, a 15 s window on `empty`). Six-server blocks with bursts of
disturbance measured again, as tests/simulate.py describes. A few minutes for the default 2,000
campaigns per line. Pure arithmetic: nothing is measured.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import simulate  # noqa: E402


def main(n: int) -> None:
    s = simulate
    print(
        f"noise model: per-run {', '.join(f'{k} {v:.1%}' for k, v in s.NOISE.items())} (log sd); drift "
        f"{s.DRIFT:.0%}/sqrt(min); bursts {s.BURST_RATE:g}/min lasting {s.BURST_MIN:g} min taking "
        f"{s.BURST_SHARE[0]:.0%}-{s.BURST_SHARE[1]:.0%} of the CPU, flagged over the stolen-share threshold, measured "
        f"again up to {s.REMEASURE} times; {len(s.SERVERS)} servers a block; {n} campaigns a line"
    )
    print(
        "| noise | design | rounds | stated | coverage | false different | power at 10 % | twin holds 1 "
        "| runs measured again | still flagged |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for noise in s.NOISE:
        for design in ("back-to-back", "borrowed"):
            for rounds in (5, 6, 10) if design == "back-to-back" else (5,):
                null = s.analyse(s.campaigns(n, 1.0, rounds, design, seed=rounds, noise=noise), 1.0)
                effect = s.analyse(s.campaigns(n, 0.9, rounds, design, seed=100 + rounds, noise=noise), 0.9)
                print(
                    f"| {noise} | {design} | {rounds} | {null['stated']:.2%} | {null['coverage']:.2%} "
                    f"| {null['different']:.2%} | {effect['cheaper']:.1%} | {null['twin_coverage']:.1%} "
                    f"| {null['measured_again']:.1%} | {null['still_flagged']:.1%} |"
                )
    looks = [6, 10, 14, 20]
    print()
    print(f"adaptive rounds, looks {looks}, back-to-back design: every comparison of the block must be narrow to stop")
    print(
        "| noise | half-width target | stated (floor) | coverage | false different | power at 10 % | mean rounds "
        "| stopped before the cap |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for noise in s.NOISE:
        null_runs = s.campaigns(n, 1.0, looks[-1], "back-to-back", seed=200, noise=noise)
        effect_runs = s.campaigns(n, 0.9, looks[-1], "back-to-back", seed=201, noise=noise)
        for target in (0.03, 0.05):
            null = s.adaptive(null_runs, 1.0, looks, target)
            effect = s.adaptive(effect_runs, 0.9, looks, target)
            print(
                f"| {noise} | ±{target:.0%} | {null['stated']:.2%} | {null['coverage']:.2%} | {null['different']:.2%} "
                f"| {effect['cheaper']:.1%} | {null['mean_rounds']:.1f} | {1 - null['capped']:.0%} |"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)

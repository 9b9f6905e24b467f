"""The A/B target: did a change make a server cost more per request? B's runs over A's, paired round by round.

A and B (config's `compare`) are two builds of one server: two files, two package versions
(npm aliases) or two Node.js majors. Each round measures them back to back, A B in odd
rounds and B A in even ones (plan.abba), so the ratio of a round is taken between two
neighbouring runs and a drift of the machine that is linear over two rounds cancels from
the median. One row per peer group (workload, connections, client, stop):

- the median of the rounds' B / A ratios of the headline figure (config's `headline`, event-loop
  CPU per request by default; headline_figure names it) and its order-statistic interval
  (intervals.median_interval);
- its outcome (outcomes.decide): cheaper, costlier, equivalent within config's
  `equivalence_margin`, or inconclusive. An A/B has no A/A twin, so the line is 1 itself
  (floor 0): each side of a one-sided test, at the interval's coverage;
- the same ratio without the rounds in which either run was flagged as preempted, and a
  flag where the two medians differ by more than half the interval's width;
- the interval's half-width on a log scale, which the adaptive rounds stop on (looks.py).
"""

import numpy as np
import pandas as pd

from nodebench.analysis import intervals, outcomes
from nodebench.analysis.metrics import PEERS, Samples, paired_ratios, spoiled_pairs
from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINE_COLUMN

COLUMNS = [
    "workload", "connections", "client", "stop", "a", "b",
    "ratio", "ratio_lo", "ratio_hi", "half_width_log", "throughput_ratio", "pairs", "coverage", "interval",
    "us_per_req_a", "us_per_req_b", "outcome", "equivalence_margin",
    "ratio_unpreempted", "pairs_unpreempted", "preempted_rounds", "preemption_matters",
    "pair_gap_s", "pair_gap_max_s", "cross_session", "a_first_rounds", "b_first_rounds", HEADLINE_COLUMN,
]  # fmt: skip


def half_width(lo, hi) -> np.ndarray:
    """Half the width of an interval of a ratio on a log scale: (log hi - log lo) / 2 (0.03 is about +-3 %)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.log(np.asarray(hi, dtype=float)) - np.log(np.asarray(lo, dtype=float))) / 2


def table(
    runs: pd.DataFrame, a: str, b: str, margin: float = outcomes.DEFAULT_MARGIN, headline: str = DEFAULT_HEADLINE
) -> pd.DataFrame:
    """One row per peer group where both A and B were measured (COLUMNS)."""
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    samples = Samples(runs)
    keys = samples.keys.astype({c: str for c in ("workload", "server", "client", "stopping_rule", "stop")})
    index = {tuple(row): i for i, row in enumerate(keys[[*PEERS, "server"]].itertuples(index=False))}
    b_cells = np.flatnonzero(keys["server"].to_numpy() == b)
    partner = np.full(len(keys), -1, dtype=int)
    for i in b_cells:
        partner[i] = index.get((*keys.loc[i, PEERS], a), -1)
    has = np.flatnonzero(partner >= 0)
    if not len(has):
        return pd.DataFrame(columns=COLUMNS)
    ratios = paired_ratios(samples, partner, "ab", headline)
    cost = samples(headline)
    spoiled = spoiled_pairs(samples, has, partner[has])
    start = samples("_started_s") if "_started_s" in samples.runs else np.full(cost.shape, np.nan)
    rows = []
    for i in has:
        j = partner[i]
        both = ~np.isnan(cost[i]) & ~np.isnan(cost[j])
        rows.append(
            {
                **{c: keys.loc[i, c] for c in PEERS if c != "stopping_rule"},
                "a": a,
                "b": b,
                "ratio": ratios["cost_ab"][i],
                "ratio_lo": ratios["cost_ab_lo"][i],
                "ratio_hi": ratios["cost_ab_hi"][i],
                "throughput_ratio": ratios["throughput_ab"][i],
                "pairs": int(ratios["pairs_ab"][i]),
                "coverage": ratios["pair_coverage_ab"][i],
                "us_per_req_a": float(np.nanmedian(cost[j])) if (~np.isnan(cost[j])).any() else np.nan,
                "us_per_req_b": float(np.nanmedian(cost[i])) if (~np.isnan(cost[i])).any() else np.nan,
                "ratio_unpreempted": ratios["cost_ab_unpreempted"][i],
                "pairs_unpreempted": int((both & ~spoiled[i]).sum()),
                "preempted_rounds": int((both & spoiled[i]).sum()),
                "preemption_matters": bool(ratios["preemption_matters_ab"][i]),
                "pair_gap_s": ratios["gap_s_ab"][i],
                "pair_gap_max_s": ratios["gap_s_ab_max"][i],
                "cross_session": int(ratios["cross_session_ab"][i]),
                # Which of the two ran first in each paired round: ABBA keeps these within one of each other.
                "a_first_rounds": int((both & (start[j] < start[i])).sum()),
                "b_first_rounds": int((both & (start[i] < start[j])).sum()),
            }
        )
    out = pd.DataFrame(rows)
    out["half_width_log"] = half_width(out["ratio_lo"], out["ratio_hi"])
    out["interval"] = [intervals.describe(int(n)) for n in out["pairs"]]
    out["equivalence_margin"] = float(margin)
    out[HEADLINE_COLUMN] = headline
    out["outcome"] = pd.Series(outcomes.decide(out["ratio_lo"], out["ratio_hi"], margin), dtype=object)
    return out[COLUMNS].sort_values(["workload", "connections", "client", "stop"]).reset_index(drop=True)


#: The config key a user sets to fail the invocation (config's compare.fail_above), as the lines name it.
FAIL_ABOVE_KEY = "compare.fail_above"


def threshold_check(t: pd.DataFrame, fail_above: float | None) -> tuple[bool, list[str]]:
    """Whether the A/B fails config's compare.fail_above, and one line per comparison saying why.

    A comparison fails only where its whole interval lies above the threshold (ratio_lo > fail_above): B costlier
    beyond the threshold must be shown by the data. A median above it with an interval that reaches below it, or a
    ratio with no interval (one round), passes, and its line says so.
    """
    if fail_above is None:
        return False, [f"no threshold set ({FAIL_ABOVE_KEY}): the A/B does not fail the run"]
    if t.empty:
        return False, [f"no comparison of A and B was measured: nothing above {FAIL_ABOVE_KEY} {fail_above:g}"]
    failed, lines = False, []
    for r in t.itertuples():
        where = f"{r.b} (B) over {r.a} (A) on {r.workload} c{r.connections} {r.client} {r.stop}"
        if pd.isna(r.ratio_lo) or pd.isna(r.ratio_hi):
            verdict = f"passed: {where}: {r.ratio:.3f}x with no interval ({r.interval}), so nothing shows it above"
        elif r.ratio_lo > fail_above:
            failed = True
            verdict = (
                f"FAILED: {where} costs {r.ratio:.3f}x, interval {r.ratio_lo:.3f}-{r.ratio_hi:.3f} ({r.interval}), "
                "wholly above"
            )
        else:
            side = "reaches down to or below" if r.ratio_hi > fail_above else "lies at or below"
            verdict = (
                f"passed: {where} costs {r.ratio:.3f}x, interval {r.ratio_lo:.3f}-{r.ratio_hi:.3f} ({r.interval}), "
                f"{side}"
            )
        lines.append(f"A/B check {verdict} the threshold {fail_above:g} ({FAIL_ABOVE_KEY})")
    return failed, lines

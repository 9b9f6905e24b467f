"""Adaptive rounds: after each pre-declared look, stop once every headline interval is narrow enough.

A block with `adaptive: {half_width: h, looks: [n1, n2, ...]}` is measured n1 rounds, then
looked at: if every headline interval's half-width on a log scale is at most h, its
reports are written from those rounds; else it is measured up to n2 rounds and looked at
again, and so on; the last look is the cap, where it stops whatever it finds and the
report names the comparisons still wider than h. The headline intervals are a block's
paired cost ratios: every cell's against each baseline (node-http, express) in the main
matrix and an experiment, B over A in the A/B target.

The rule stops on the intervals' *width*, never on where they lie, and only at the
declared looks. Stopping on width still selects: an interval that came out narrow is a
little more often one that misses. Simulated over 20,000 campaigns per case (normal,
heavy-tailed t2, skewed and mixed per-round noise, 1 % to 7 % spread, looks 6/10/14/20,
h = 3 %), the coverage under the stopping was at least 94.7 %, where the looks' fixed-n
intervals state 95.9 % (n = 20) to 96.9 % (n = 6): up to 1.2 points lost. So a report
states an adaptive interval's coverage as a floor, the lowest fixed-n coverage among the
looks less ALLOWANCE (1.5 points): at least 94.36 % for looks 6/10/14/20, never the
fixed-n figure of the look it stopped at; tests/calibration/test_simulation.py checks that floor
through the whole analysis.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import ab as ab_analysis
from nodebench.analysis import intervals
from nodebench.analysis.metrics import compute_metrics
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINE_COLUMN
from nodebench.runs import is_twin

#: What stopping on width may cost an interval's coverage, below the looks' lowest fixed-n coverage (see above).
ALLOWANCE = 0.015


def stated_coverage(looks: list[int]) -> float:
    """The coverage a report states for an interval that adaptive rounds stopped on: at least this. One look
    selects nothing: its fixed-n coverage, exactly."""
    fixed = min(intervals.coverage(n, intervals.rank(n)) for n in looks)
    return fixed if len(looks) == 1 else fixed - ALLOWANCE


def comparisons(runs: pd.DataFrame, ab: list[str] | None = None, headline: str = DEFAULT_HEADLINE) -> pd.DataFrame:
    """A block's headline intervals after some rounds, of the headline figure (config's headline): (comparison,
    ratio, lo, hi, half_width_log, pairs)."""
    columns = ["comparison", "ratio", "lo", "hi", "half_width_log", "pairs"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    if ab:
        t = ab_analysis.table(runs, *ab, headline=headline)
        label = t["b"] + " / " + t["a"] + " on " + t["workload"] + " c" + t["connections"].astype(str)
        return pd.DataFrame(
            {"comparison": label, "ratio": t["ratio"], "lo": t["ratio_lo"], "hi": t["ratio_hi"],
             "half_width_log": t["half_width_log"], "pairs": t["pairs"]}
        )[columns]  # fmt: skip
    m = compute_metrics(runs, headline=headline)
    parts = []
    for baseline, name in BASELINES.items():
        col = f"cost_{name}"
        if col not in m:
            continue
        # The report's own comparisons: not a baseline against itself, nor the A/A twin (its ratio is the floor).
        servers = m["server"].astype(str)
        rows = m[m[col].notna() & m[f"{col}_lo"].notna() & (servers != baseline) & ~servers.map(is_twin)]
        label = rows["server"].astype(str) + f" / {baseline} on " + rows["workload"].astype(str)
        label += " c" + rows["connections"].astype(str) + " " + rows["client"].astype(str) + "-"
        label += rows["stop"].astype(str)
        parts.append(
            pd.DataFrame(
                {"comparison": label, "ratio": rows[col], "lo": rows[f"{col}_lo"], "hi": rows[f"{col}_hi"],
                 "half_width_log": ab_analysis.half_width(rows[f"{col}_lo"], rows[f"{col}_hi"]),
                 "pairs": rows[f"pairs_{name}"]}
            )
        )  # fmt: skip
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def decide(
    found: pd.DataFrame,
    rounds: int,
    looks: list[int],
    target: float | None,
    headline: str = DEFAULT_HEADLINE,
    stop_if_none: bool = False,
) -> dict:
    """The look's verdict: stop when every comparison is within target, or at the cap (the last look); with the
    figure its intervals read (a look made for another is stale: recovery.drop_stale_looks). A claim block's look
    (claims.stopping_widths) gives each comparison its own target: target None, and a `target` column; with
    stop_if_none, a look with nothing to wait for (a block no claim reads) stops."""
    widths = found["half_width_log" if "half_width_log" in found else "half_width"].to_numpy(dtype=float)
    targets = found["target"].to_numpy(dtype=float) if target is None else target
    wide = found[~(widths <= targets)]  # NaN (no interval yet) is not narrow enough
    cap = rounds >= max(looks)
    return {
        "rounds": int(rounds),
        "looks": [int(n) for n in looks],
        "half_width_target": None if target is None else float(target),
        HEADLINE_COLUMN: headline,
        "comparisons": int(len(found)),
        "widest": float(widths[np.isfinite(widths)].max()) if np.isfinite(widths).any() else None,
        "stop": bool(cap or ((len(found) > 0 or stop_if_none) and wide.empty)),
        "coverage_under_stopping": stated_coverage(looks),
        "capped": bool(cap and not wide.empty),
        "wider_than_target": [
            {"comparison": c, "half_width_log": None if not np.isfinite(w) else float(w)}
            for c, w in zip(wide["comparison"], widths[~(widths <= targets)], strict=True)
        ],
    }


def projected_width(half_width, n, rounds: int, cap: int) -> np.ndarray:
    """Each claim's half-width at the cap, at the spread observed, by the square-root law: a median's interval narrows
    as 1/sqrt(n) (for normal rounds the order-statistic interval's expected half-width is 1.27 sd at 6 rounds and 1.00
    sd at 10, 0.79 x, against sqrt(6/10) = 0.77 x). A claim resting on n of the rounds gets the rounds still to come
    (cap - rounds) too. Infinite where it has no interval yet (fewer than two rounds)."""
    h, n = np.asarray(half_width, dtype=float), np.asarray(n, dtype=float)
    later = np.maximum(n + max(cap - rounds, 0), 1.0)
    with np.errstate(invalid="ignore"):
        return np.where((n >= 2) & np.isfinite(h), h * np.sqrt(n / later), np.inf)


#: How far above its target a claim's half-width projected to the cap must be for a look not to wait for it. Six
#: rounds' min-max overstates the spread by more than 1.6 times in only 5 % of campaigns (normal rounds; 50 % to
#: 159 % of its mean in 90 %), so a claim projected at twice its target is in 19 of 20 such still above 1.26 times it
#: at the cap. At 1.0 the simulated power fell from 94 % to 71 % (a true 4.37x claim under 5 % normal noise, looks
#: 6/10); at 2.0 it is 93 % (tests/calibration/test_claim_stopping.py, docs/claims.md).
REACH_FACTOR = 2.0


def beyond_reach(half_width, n, rounds: int, cap: int, target) -> np.ndarray:
    """Before the cap: whether each claim's half-width projected to the cap (projected_width) is still more than
    REACH_FACTOR times its target. It reads the width and the rounds only, never where the interval lies. A claim
    with no band to narrow to (target 0: claims.width_target) is never beyond reach: its block measures to the cap."""
    at_cap = projected_width(half_width, n, rounds, cap)
    target = np.asarray(target, dtype=float)
    return (rounds < cap) & np.isfinite(at_cap) & (target > 0) & (at_cap > REACH_FACTOR * target)


def decide_claims(found: pd.DataFrame, rounds: int, looks_: list[int], headline: str = DEFAULT_HEADLINE) -> dict:
    """A claim block's look (found: claims.stopping_widths). It does not wait for an invalid claim (more rounds of a
    cell that cannot reach its ceiling do not make it), nor, before the cap, for one whose half-width projected to
    the cap (projected_width) is still more than REACH_FACTOR times its target (beyond_reach): at the spread
    observed, the rounds left cannot narrow it enough, and waiting would spend them for nothing. Both read the
    width and the rounds only, never where the interval lies, so the rule stays a width rule
    (tests/calibration/test_claim_stopping.py). A look that waits for no claim stops."""
    cap = max(looks_)
    invalid = found["invalid"].astype(bool).to_numpy()
    at_cap = projected_width(found["half_width"], found["n"], rounds, cap)
    targets = found["target"].to_numpy(dtype=float)
    beyond = ~invalid & beyond_reach(found["half_width"], found["n"], rounds, cap, targets)
    look = decide(found[~invalid & ~beyond], rounds, looks_, None, headline, stop_if_none=True)
    look["invalid"] = list(found["comparison"][invalid])
    look["beyond_reach"] = [
        {"comparison": c, "half_width": float(h), "at_cap": float(a), "target": float(t)}
        for c, h, a, t in zip(
            found["comparison"][beyond], found["half_width"][beyond], at_cap[beyond], targets[beyond], strict=True
        )
    ]
    return look


def sentence(look: dict) -> str:
    """What the rounds were, in the words of a report: where the looks stopped and why, and the coverage stated."""
    if not look["stop"]:
        raise ValueError(f"a report is written from a look that stops, not from the look after {look['rounds']} rounds")
    looks, n, h = look["looks"], look["rounds"], look["half_width_target"]
    coverage = intervals.percent(look["coverage_under_stopping"])
    if len(looks) == 1:
        covered = f"One look selects nothing: each interval covers {coverage} %, as at any fixed {n} rounds"
    else:
        covered = f"Coverage under the stopping rule: at least {coverage} % each (simulated)"
    if look.get("stop_on") == "claims":
        return _claims_sentence(look, looks, n, covered)
    plan = f"Adaptive rounds: looks after {', '.join(map(str, looks))} rounds, stopping once every headline interval's "
    plan += f"half-width is at most {h * 100:.1f} % on a log scale (docs/statistics.md#adaptive-rounds)"
    widest = look["widest"]
    widest = f"; the widest is ±{widest * 100:.1f} %" if widest is not None else ""
    if look["comparisons"] == 0:
        return f"{plan}. No comparison had an interval, so nothing could stop it before the cap of {n} rounds."
    if look["capped"]:
        return f"{plan}. It reached the cap of {n} rounds with {_still_wide(look, 'comparisons')}{widest}. {covered}."
    within = f"every one of {look['comparisons']} comparisons within it{widest}"
    return f"{plan}. It stopped after {n} rounds, {within}. {covered}."


def _still_wide(look: dict, what: str) -> str:
    """'3 of 12 <what> still wider than that: a, b, c' for a look at its cap (the first 8 named)."""
    names = [w["comparison"] for w in look["wider_than_target"]]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f"{len(names)} of {look['comparisons']} {what} still wider than that: {shown}"


def _claims_sentence(look: dict, looks: list[int], n: int, covered: str) -> str:
    """sentence() for a block whose looks read the ledger's claims."""
    plan = (
        f"Rounds per claim: looks after {', '.join(map(str, looks))} rounds, stopping once every claim of the ledger "
        "that reads this block has an interval whose half-width is at most half its tolerance (docs/claims.md)"
    )
    invalid = look.get("invalid") or []
    aside = (
        f" {len(invalid)} invalid claim{'s' if len(invalid) > 1 else ''} ({', '.join(invalid[:8])}"
        f"{' and more' if len(invalid) > 8 else ''}) {'were' if len(invalid) > 1 else 'was'} not waited for."
        if invalid
        else ""
    )
    beyond = [b["comparison"] for b in look.get("beyond_reach") or []]
    if beyond:
        aside += (
            f" {len(beyond)} claim{'s' if len(beyond) > 1 else ''} ({', '.join(beyond[:8])}"
            f"{' and more' if len(beyond) > 8 else ''}) could not reach that by the cap of {max(looks)} rounds at the "
            f"spread observed (the half-width projected to the cap), so the look did not wait for "
            f"{'them' if len(beyond) > 1 else 'it'}."
        )
    if look["comparisons"] == 0:
        if beyond:
            return f"{plan}. It stopped after {n} rounds: no claim it could narrow was left to wait for.{aside}"
        return f"{plan}. No valid claim reads this block, so it stopped at its first look, after {n} rounds.{aside}"
    if look["capped"]:
        return f"{plan}. It reached the cap of {n} rounds with {_still_wide(look, 'claims')}. {covered}.{aside}"
    return (
        f"{plan}. It stopped after {n} rounds, "
        + ("its one claim" if look["comparisons"] == 1 else f"every one of {look['comparisons']} claims")
        + f" within it. {covered}.{aside}"
    )

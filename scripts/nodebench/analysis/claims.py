"""The claims ledger: each published claim of the seeds set beside our measurement of it, with a computed verdict.

The claims live in claims.yaml (one entry per claim; see docs/claims.md, "Adding a claim"). A
claim names the scope that measures it (the main matrix, `overall`, or an experiment), the
cells it reads, each under a short alias, and a statistic over them: an arithmetic
expression of the aliases, for example `f / e` (a ratio), `100 * (c / d - 1)` (a change in
percent) or `max(a, b, c) / min(a, b, c)` (a spread). The statistic is computed round by
round from runs of the same round, so the machine's drift between rounds cancels, and it
is read as its median over rounds with the order-statistic interval of
analysis.intervals (its coverage at that n is printed beside it). A claim about the
scenario score reads each server's round scores (analysis.scenarios) instead of runs.

Each measured claim ends in one of four verdicts, decided from the interval, never from the median alone:
**reproduced**, **not reproduced**, **inconclusive** (the interval holds both the claim and its negation, or
there is no interval) or **invalid** (the rounds it reads are mostly below the server-bound ELU where the claim
needs its cells at their ceiling, or without the figure it reads). Rounds with such a run are left out first,
and said; a claim is invalid when fewer than half of its rounds, or fewer than two, are left. A disturbed run is
never a reason to leave a round out: the measurement job measured it again and kept the least disturbed
(harness/remeasure.py); one still disturbed is kept, and the claim's conditions count it. No A/A floor moves a
limit: the control's twin is a check of the design, not a margin (analysis/outcomes.py).
How each comparison decides is in decide() and decide_order(); the band of an `equal` or `same` claim comes
from the tolerance rule in claimfile (±5 points for a figure in percent, ±10 % on a log scale otherwise). Each
row also says how far apart in time the claim's runs of one round started (median and largest over rounds).

A claim may instead say why it is **not testable here** (`untestable`) or that its
experiment does not exist yet (`pending`: **not yet measured**).
"""

import ast
import operator
import re
from collections.abc import Mapping
from itertools import pairwise

import numpy as np
import pandas as pd

from nodebench import claimfile
from nodebench.analysis import intervals, scenarios
from nodebench.analysis.metrics import CELL, PEERS, flagged, remeasured
from nodebench.analysis.outcomes import log_floor
from nodebench.catalogue.thresholds import SERVER_BOUND_ELU
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.claimfile import COMPARES, POINT_UNITS, SELECTOR_KEYS, describe_selector, names_in  # noqa: F401
from nodebench.runs import is_twin, twin_of

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
INVALID = "invalid"
UNTESTABLE = "not testable here"
PENDING = "not yet measured"
#: The four verdicts a measured claim can get, then the two reasons it got none.
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, INVALID, UNTESTABLE, PENDING)
#: A claim whose rounds are mostly unfit (not at the ceiling a claim about the framework needs) is
#: invalid: fewer than this share of its rounds, or fewer than two, are left to decide on.
MIN_KEPT_SHARE = 0.5


def closed_loop_latency(n, c, s, q):
    """The q-quantile of request latency when c clients each send one request at a time, n in all, to one
    thread that serves them in arrival order in s each (deterministic service, no other work).

    All c start at once, so the first wave waits s, 2s, ..., c s; every later request joins the
    back of a queue that always holds c, and waits c s. The quantile is taken as a load generator's
    histogram reads it (the smallest latency with at least a q share at or below it).
    """
    n, c = int(n), int(c)
    first = min(n, c)
    units = np.concatenate([np.arange(1, first + 1), np.full(n - first, first)]).astype(float)
    return s * float(np.quantile(units, q, method="inverted_cdf"))


#: The functions a statistic may call.
FUNCTIONS = {"max": max, "min": min, "abs": abs, "closed_loop_latency": closed_loop_latency}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


class ClaimError(ValueError):
    """A claim the ledger cannot evaluate as written (names the claim and what is wrong)."""


class NoRuns(ClaimError):
    """A planned cell of a claim has no runs: its measurement failed or was never made."""


# --- The statistic: a small arithmetic language over the aliases ------------------------------------------


def evaluate(expression: str, values: Mapping):
    """The expression's value with each alias bound to values[alias] (numbers or aligned pandas Series).

    Only numbers, aliases, + - * /, unary minus and FUNCTIONS are allowed; anything else is a
    ClaimError, so claims.yaml can never run code.
    """

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ClaimError(
                    f"the statistic names {node.id!r}, which is not one of its cells ({', '.join(values)})"
                )
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            if node.keywords or not node.args:
                raise ClaimError(f"{node.func.id}() takes values only")
            name, args = node.func.id, [ev(a) for a in node.args]
            if name == "closed_loop_latency":
                if len(args) != 4:
                    raise ClaimError("closed_loop_latency() takes n, c, s and q")
                return closed_loop_latency(*args)
            if name == "abs":
                if len(args) != 1:
                    raise ClaimError("abs() takes one value")
                return abs(args[0])
            series = [a for a in args if isinstance(a, pd.Series)]
            if not series:
                return FUNCTIONS[name](*args)
            frame = pd.concat(
                [a if isinstance(a, pd.Series) else pd.Series(a, index=series[0].index) for a in args], axis=1
            )
            return frame.max(axis=1) if name == "max" else frame.min(axis=1)
        allowed = f"numbers, its cells' names, + - * / and {', '.join(FUNCTIONS)}"
        raise ClaimError(f"a statistic may use {allowed}, not {ast.unparse(node)!r}")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as e:
        raise ClaimError(f"the statistic {expression!r} is not an expression: {e.msg}") from None
    return ev(tree)


# --- Reading a claim's cells ---------------------------------------------------------------------------------


def select(runs: pd.DataFrame, selector: Mapping) -> pd.DataFrame:
    """The runs of the cells a selector matches (each key compared as text, so 50 and "50" agree)."""
    keep = np.ones(len(runs), dtype=bool)
    for key in SELECTOR_KEYS:
        if key in selector:
            keep &= runs[key].astype(str).to_numpy() == str(selector[key])
    return runs[keep]


def _selected(runs: pd.DataFrame, alias: str, selector: Mapping, picked: dict | None) -> pd.DataFrame:
    """select(runs, selector), taken once per alias where the caller keeps the runs already picked (picked)."""
    if picked is None:
        return select(runs, selector)
    if alias not in picked:
        picked[alias] = select(runs, selector)
    return picked[alias]


def _cell_count(mine: pd.DataFrame) -> int:
    """How many cells the runs hold: mine.groupby(CELL, observed=True).ngroups, counted at once where every key
    column holds one value and no missing one (one cell: the common case, and a groupby costs milliseconds)."""
    if not len(mine):
        return 0
    if all(k in mine and not mine[k].hasnans and mine[k].nunique(dropna=False) == 1 for k in CELL):
        return 1
    return mine.groupby(CELL, observed=True).ngroups


def round_values(claim: Mapping, runs: pd.DataFrame, picked: dict | None = None) -> pd.DataFrame:
    """One column per alias: its cell's figure in each round (index: round), only rounds every cell has.

    A selector must match exactly one cell of the scope; none is a ClaimError that says it
    was not measured, several one that names what tells them apart. picked: a dict that keeps each alias's
    runs for the caller's later reads (run_rows, conditions), so each selector is applied once.
    """
    columns = {}
    for alias, selector in claim["cells"].items():
        figure = selector.get("figure", claim.get("figure_of", "req_per_s"))
        mine = _selected(runs, alias, selector, picked)
        cells = _cell_count(mine)
        if cells == 0:
            raise NoRuns(f"{claim['id']}: cell {alias} ({describe_selector(selector)}) has no runs in {claim['scope']}")
        if cells > 1:
            differ = [k for k in CELL if mine[k].astype(str).nunique() > 1]
            raise ClaimError(
                f"{claim['id']}: cell {alias} ({describe_selector(selector)}) matches {cells} cells of "
                f"{claim['scope']}; name its {' and '.join(differ)}"
            )
        if figure not in mine:
            raise ClaimError(f"{claim['id']}: cell {alias} reads {figure!r}, which the runs do not have")
        columns[alias] = mine[figure].set_axis(pd.Index(mine["round"], name="round")).astype(float)
    # Rounds every cell has a run in; a run without the figure (NaN) stays, for _unfit to leave out and say.
    rounds = sorted(set.intersection(*(set(c.index) for c in columns.values())))
    return pd.DataFrame(columns).loc[rounds].sort_index()


def score_values(claim: Mapping, runs: pd.DataFrame) -> pd.DataFrame:
    """One column per alias: its server's scenario score in each round (score set and basis from the claim)."""
    spec = claim["scores"]
    ratios = scenarios.cell_ratios(runs)
    per = scenarios.round_scores(ratios)
    per = per[(per["score_set"] == spec["score_set"]) & (per["basis"] == spec.get("basis", "rps"))]
    columns = {}
    for alias, selector in claim["cells"].items():
        server = selector["server"]
        if server == scenarios.BASELINE:
            rounds = per["round"].unique()
            columns[alias] = pd.Series(100.0, index=pd.Index(sorted(rounds), name="round"))
            continue
        mine = per[per["server"] == server]
        if mine.empty:
            raise ClaimError(f"{claim['id']}: no {spec['score_set']} score for {server} in {claim['scope']}")
        if mine["round"].duplicated().any():
            raise ClaimError(
                f"{claim['id']}: {claim['scope']} scores {server} under several load generators or stopping rules"
            )
        columns[alias] = mine.set_index("round")["score"].astype(float)
    return pd.DataFrame(columns).dropna().sort_index()


# --- The verdict ---------------------------------------------------------------------------------------------


def fmt(value: float, unit: str) -> str:
    """A figure in its unit: 4.37x, -7.0 %, 63 %, 1,234 req/s."""
    if value is None or not np.isfinite(value):
        return "n/a"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "%":
        return f"{value:+.1f} %" if value < 0 else f"{value:.1f} %"
    if unit == "score":
        return f"{value:.1f}"
    number = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{number} {unit}".strip()


def _side(lo: float, hi: float, null: float, published: float) -> str:
    """Where an interval lies against the no-effect value, as seen from the published figure's side."""
    if not (lo > null or hi < null):
        return f"the interval holds {'both sides of ' if lo < null < hi else ''}no effect"
    same = (lo > null) == (published > null)
    return "the same direction as published" if same else "the opposite direction to the published figure"


def decide(
    compare: str,
    published: float | None,
    median: float,
    lo: float,
    hi: float,
    n: int,
    *,
    unit: str = "",
    band: tuple[float, float] | None = None,
    null: float | None = None,
    limit: float | None = None,
) -> tuple[str, str]:
    """(verdict, one line of reason with the figures that decided it) from the statistic's interval.

    equal / same: **reproduced** when the whole interval lies inside the band (the tolerance rule around the
    published figure, or around no effect for a claim of no difference); **not reproduced** when the whole
    interval lies outside it; **inconclusive** when it holds values inside the band and outside it (an interval
    wider than the band always does). A not-reproduced figure says which side of no effect the interval lies on:
    opposite only when the whole interval is on the far side. Where the band holds no effect (a small published
    effect), "reproduced" also needs the whole interval on the published side of it: an interval inside the band
    but wholly on the far side is the opposite effect, not reproduced; one holding no effect is inconclusive.
    at_most / at_least / below: the whole interval on the claimed side of the limit; the whole interval on the
    other side: not reproduced; else inconclusive. (No A/A floor moves the limit since 2026-12-04: a random offset
    is no margin; the row still reports the control's offset as `floor` where the scope measured a twin.)
    """
    f = lambda v: fmt(v, unit)  # noqa: E731
    if n == 0 or not np.isfinite(median):
        return PENDING, "no round measured every cell of this claim"
    if n < 2 or not (np.isfinite(lo) and np.isfinite(hi)):
        return INCONCLUSIVE, f"ours {f(median)} from one round: no interval, so nothing can be decided"
    span = f"ours {f(median)}, interval {f(lo)} to {f(hi)}"
    if compare in ("equal", "same"):
        centre = published if compare == "equal" else null
        b_lo, b_hi = band
        what = f"{f(b_lo)} to {f(b_hi)}" + (f" (±{_tol(centre, b_lo, b_hi, unit)} of {f(centre)})")
        if b_lo <= lo and hi <= b_hi:
            if compare == "equal" and null is not None and b_lo <= null <= b_hi and lo <= null <= hi:
                return INCONCLUSIVE, (
                    f"{span}: inside {what}, but the band and the interval both hold no effect ({f(null)}), so the "
                    "claimed difference is not shown"
                )
            if compare == "equal" and null is not None and published != null and (lo > null) != (published > null):
                # Inside a band that holds no effect, but wholly on its far side: the opposite effect.
                return NOT_REPRODUCED, (
                    f"{span}: inside {what}, but wholly on the far side of no effect ({f(null)}): "
                    f"{_side(lo, hi, null, published)}"
                )
            return REPRODUCED, f"{span}: inside {what}"
        if hi < b_lo or lo > b_hi:
            where = "below" if hi < b_lo else "above"
            side = f"; {_side(lo, hi, null, published)}" if compare == "equal" and null is not None else ""
            return NOT_REPRODUCED, f"{span}: wholly {where} {what}{side}"
        width = "wider than" if (hi - lo) > (b_hi - b_lo) else "reaching beyond"
        return INCONCLUSIVE, f"{span}: {width} {what}, so it holds the claim and its negation"
    if compare in ("at_most", "at_least", "below"):
        if compare == "at_most":
            yes, no = hi <= limit, lo > limit
            said = (f"at most {f(limit)}", f"wholly above {f(limit)}")
        elif compare == "at_least":
            yes, no = lo >= limit, hi < limit
            said = (f"at least {f(limit)}", f"wholly below {f(limit)}")
        else:
            yes, no = hi < limit, lo >= limit
            said = (f"wholly below {f(limit)}", f"nowhere below {f(limit)}")
        if yes:
            return REPRODUCED, f"{span}: {said[0]}"
        if no:
            return NOT_REPRODUCED, f"{span}: {said[1]}"
        return INCONCLUSIVE, f"{span}: it straddles {f(limit)}"
    raise ClaimError(f"unknown comparison {compare!r}; one of {', '.join(COMPARES)}")


#: Beyond this many rounds a claim is called undecidable at the spread observed (a campaign of 3 s + 5 s runs
#: takes about 10 s per cell per round: 100 rounds of a 6-cell claim block is over an hour and a half).
PRACTICAL_ROUNDS = 100


def _edges(claim: Mapping, median: float) -> list[float]:
    """The values the statistic's interval must clear to decide: the band's edges (and no effect, where the band
    holds it and the claim has a direction), or the limit."""
    compare = claim["compare"]
    if compare in ("equal", "same"):
        centre = claim.get("figure") if compare == "equal" else claim.get("null")
        b_lo, b_hi = claimfile.band(claim, centre)
        edges = [b_lo, b_hi]
        null = claim.get("null")
        if compare == "equal" and null is not None and b_lo <= null <= b_hi and claim.get("figure") != null:
            edges.append(null)
        return edges
    return [claim["limit"]] if claim.get("limit") is not None else []


def rounds_to_decide(values: np.ndarray, claim: Mapping, median: float) -> int | None:
    """About how many rounds in all would decide the claim if its statistic kept the spread observed and its
    median stayed where it is: the n at which the median's 95 % interval, by the normal approximation
    (1.96 x 1.2533 x sd / sqrt(n)), no longer reaches the nearest value it must clear. On a log scale for a
    ratio (unit x, all values positive), else as measured. None: the median sits on such a value (no number of
    rounds decides it) or the rounds show no spread."""
    values = np.asarray(values, dtype=float)
    log = claim.get("unit", "") not in claimfile.POINT_UNITS and (values > 0).all() and median > 0
    edges = [e for e in _edges(claim, median) if e is not None and (not log or e > 0)]
    if len(values) < 2 or not edges:
        return None
    scale = np.log if log else (lambda v: v)
    sd = float(np.std(scale(values), ddof=1))
    gap = min(abs(float(scale(median)) - float(scale(e))) for e in edges)
    if sd <= 0 or gap <= 0:
        return None
    return max(len(values) + 1, int(np.ceil((1.96 * 1.2533 * sd / gap) ** 2)))


def more_rounds(values: np.ndarray, claim: Mapping, median: float) -> str:
    """The inconclusive row's estimate of what would decide it, as a phrase."""
    need = rounds_to_decide(values, claim, median)
    n = len(values)
    if need is None:
        return "no number of rounds decides it at this spread: its median sits on the value it must clear"
    if need > PRACTICAL_ROUNDS:
        return (
            f"at this spread about {need:,} rounds would decide it: no practical number (over {PRACTICAL_ROUNDS}); "
            "the statistic must be rebuilt or measured more precisely"
        )
    return f"at this spread about {need} rounds would decide it ({need - n} more)"


def _tol(centre: float, b_lo: float, b_hi: float, unit: str) -> str:
    if unit in POINT_UNITS:
        return f"{(b_hi - b_lo) / 2:g} points"
    return f"{b_hi / centre - 1:.0%}" if centre > 0 else f"{(b_hi - b_lo) / 2:g}"


def _order_pairs(claimed: list[str], values: pd.DataFrame):
    """Each neighbouring pair of a claimed ranking as (a, b, median, lo, hi, n) of its paired ratio a / b per round."""
    for a, b in pairwise(claimed):
        ratio = (values[a] / values[b]).to_numpy(dtype=float)
        ratio = ratio[np.isfinite(ratio)]
        m, lo, hi, n, _ = (float(x[0]) for x in intervals.median_interval(ratio[None, :]))
        yield a, b, m, lo, hi, int(n)


def decide_order(claimed: list[str], values: pd.DataFrame, labels: Mapping[str, str]) -> tuple[str, str, dict]:
    """(verdict, reason, medians) for a claimed ranking, highest first, of the aliases' per-round values.

    Each neighbouring pair is compared as a paired ratio per round (upper over lower), read as its median with
    the order-statistic interval: the pair is in the claimed order when the whole interval is above 1, reversed
    when it is below 1, undecided otherwise. Every pair in order: reproduced; any pair reversed: not reproduced;
    else inconclusive.
    """
    med = {a: float(values[a].median()) for a in claimed}
    said, states = [], []
    for a, b, m, lo, hi, n in _order_pairs(claimed, values):
        state = "in order" if n >= 2 and lo > 1 else "reversed" if n >= 2 and hi < 1 else "undecided"
        states.append(state)
        said.append(f"{labels[a]} / {labels[b]} {m:.2f} [{lo:.2f}, {hi:.2f}] {state}")
    text = " > ".join(f"{labels[a]} {med[a]:.1f}" for a in sorted(claimed, key=lambda a: -med[a]))
    reason = f"ours: {text}; paired per round: " + "; ".join(said)
    if "reversed" in states:
        return NOT_REPRODUCED, reason, med
    if "undecided" in states:
        return INCONCLUSIVE, reason, med
    return REPRODUCED, reason, med


# --- What makes a round's runs unfit to decide on, and how far apart they were measured -----------------------


def run_rows(claim: Mapping, runs: pd.DataFrame, picked: dict | None = None) -> dict[str, pd.DataFrame]:
    """Per alias, its cell's runs indexed by round (one cell per alias; round_values checked that)."""
    return {
        alias: _selected(runs, alias, selector, picked).set_index("round") for alias, selector in claim["cells"].items()
    }


def spoiled_rounds(claim: Mapping, rows: Mapping[str, pd.DataFrame], rounds) -> dict[str, set]:
    """Per reason, the rounds whose runs cannot decide the claim: a cell the claim needs at its ceiling
    (server_bound: true for every cell, or a list of aliases) below the server-bound ELU. A disturbed run is no
    reason: it was measured again, and one still disturbed is kept (conditions() counts it)."""
    out = {"not server-bound": set()}
    need = claim.get("server_bound") or []
    need = list(claim["cells"]) if need is True else list(need)
    for alias, mine in rows.items():
        if alias in need and "elu_utilization" in mine:
            elu = mine["elu_utilization"][mine.index.isin(list(rounds))]
            elu = pd.to_numeric(elu, errors="coerce")
            out["not server-bound"] |= set(elu.index[~(elu >= SERVER_BOUND_ELU)])
    return out


def pair_gaps(rows: Mapping[str, pd.DataFrame], rounds) -> tuple[float, float]:
    """(median, largest) over rounds of how far apart, in seconds, the first and last of the claim's runs of one
    round started; NaN for a claim that reads one cell."""
    if len(rows) < 2:
        return np.nan, np.nan
    started = pd.concat([r["started_at"][r.index.isin(list(rounds))] for r in rows.values()])
    starts = pd.to_datetime(started, utc=True, format="ISO8601").groupby(level=0)
    spread = (starts.max() - starts.min()).dt.total_seconds().dropna()
    return (float(spread.median()), float(spread.max())) if len(spread) else (np.nan, np.nan)


def score_rows(claim: Mapping, runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per server of a claim on the scenario score (node:http, the baseline, among them), its runs of the score
    set's cells indexed by round: every run a round's scores are made from."""
    wanted = claim["scores"]["score_set"]
    in_set = runs["workload"].map(lambda w: getattr(WORKLOADS.get(w), "score_set", None) == wanted)
    servers = {s["server"] for s in claim["cells"].values()} | {scenarios.BASELINE}
    return {s: runs[in_set & (runs["server"] == s)].set_index("round") for s in sorted(servers)}


def aa_floor(claim: Mapping, runs: pd.DataFrame, figure: str) -> float:
    """The A/A floor (|log| of the median per-round ratio of the control's twin to the control) for the claim's
    figure in the peer groups of its cells, the widest of them; 0 where the scope measured no twin there."""
    twins = {s for s in runs["server"].astype(str).unique() if is_twin(s)}
    widest = 0.0
    for selector in claim["cells"].values():
        mine = select(runs, selector)
        if mine.empty:
            continue
        peers = mine.iloc[0][[k for k in PEERS if k in mine]].astype(str)
        same = np.ones(len(runs), dtype=bool)
        for k, v in peers.items():
            same &= runs[k].astype(str).to_numpy() == v
        group = runs[same]
        for twin in twins:
            a = group[group["server"].astype(str) == twin].set_index("round")[figure]
            b = group[group["server"].astype(str) == twin_of(twin)].set_index("round")[figure]
            ratio = (a / b).dropna()
            if len(ratio):
                widest = max(widest, float(log_floor(ratio.median())))
    return widest


# --- One claim, and the ledger ---------------------------------------------------------------------------------


def conditions(claim: Mapping, runs: pd.DataFrame, rounds, picked: dict | None = None) -> str:
    """Our conditions, from the runs of the claim's cells: load, versions, machine, when."""
    if claim.get("scores"):
        mine = runs[runs["server"].isin([s["server"] for s in claim["cells"].values()])]
    else:
        mine = pd.concat([_selected(runs, a, s, picked) for a, s in claim["cells"].items()])
    mine = mine[mine["round"].isin(list(rounds))]
    if mine.empty:
        return ""
    uniq = lambda col: ", ".join(sorted(mine[col].dropna().astype(str).unique())) if col in mine else "?"  # noqa: E731
    frameworks = sorted(
        {f"{s} {v}" for s, v in zip(mine["framework"], mine["framework_version"], strict=True) if s and v}
    )
    when = pd.to_datetime(mine["started_at"], utc=True)
    disturbed = int(flagged(mine).sum())
    again = int(remeasured(mine).sum())
    return (
        f"{uniq('client')}, {uniq('connections')} connections, {uniq('stop')}; Node.js {uniq('node_version')}; "
        f"{', '.join(frameworks)}; {uniq('cpu_model')} ({uniq('cpu_count')} CPUs); "
        f"{when.min():%Y-%m-%d %H:%M}–{when.max():%H:%M} UTC; {again} of {len(mine)} runs measured again "
        f"for a disturbance, {disturbed} still disturbed (kept)"
    )


def decide_outcomes(claim: Mapping, outcomes: list[Mapping]) -> tuple[str, str, str]:
    """(verdict, reason, ours) for a claim on cells expected to fail: each alias's outcome against its expectation."""
    said, wrong, unsure = [], [], []
    for alias, selector in claim["cells"].items():
        found = [o for o in outcomes if all(str(o.get(k)) == str(v) for k, v in selector.items() if k in SELECTOR_KEYS)]
        if not found:
            return PENDING, f"cell {alias} ({describe_selector(selector)}) has no outcome yet", ""
        if len(found) > 1:
            raise ClaimError(
                f"{claim['id']}: cell {alias} ({describe_selector(selector)}) matches {len(found)} outcomes"
            )
        o, want = found[0], claim["expect"][alias]
        what = f"failed: {o['check']}" if o["outcome"] == "failed" else _answered(o)
        said.append(f"{o['server']} {o['workload']}: {what}")
        pattern = (claim.get("expect_check") or {}).get(alias)
        status = (claim.get("expect_status") or {}).get(alias)
        if o["outcome"] != want:
            wrong.append(f"{o['server']} was expected to have {want}")
        elif status is not None and o.get("status_counts") is None:
            unsure.append(f"{o['server']} answered, but its client does not say with which status")
        elif status is not None and set(map(str, o["status_counts"])) != {str(status)}:
            wrong.append(f"{o['server']} answered, but not only HTTP {status}")
        elif want == "failed" and pattern and not re.search(pattern, o["check"] or ""):
            wrong.append(f"{o['server']} failed, but not as expected (/{pattern}/)")
    ours = "; ".join(said)
    if wrong:
        return NOT_REPRODUCED, "; ".join(wrong) + f" ({ours})", ours
    if unsure:
        return INCONCLUSIVE, "; ".join(unsure) + f" ({ours})", ours
    return REPRODUCED, f"the harness reported, and did not hang: {ours}", ours


def _answered(o: Mapping) -> str:
    statuses = o.get("status_counts") or {}
    status = ", ".join(f"HTTP {k} x {v:,}" for k, v in statuses.items()) or f"{o.get('requests', 0):,} answers"
    return f"answered ({status}, {o.get('req_per_s') or 0:,.0f} req/s)"


def _blank(claim: Mapping) -> dict:
    """A ledger row with the claim's own fields and nothing measured yet."""
    return {
        "id": claim["id"],
        "seed": str(claim["seed"]),
        "source": claim.get("source", ""),
        "derived": bool(claim.get("derived", False)),
        "restates": claim.get("restates") or "",
        "check": claim.get("check") or "",
        "quote": claim["quote"],
        "published": claim.get("figure"),
        "published_text": claim.get("figure_text") or fmt(claim.get("figure"), claim.get("unit", "")),
        "unit": claim.get("unit", ""),
        "published_conditions": claim.get("conditions", ""),
        "scope": claim.get("scope", ""),
        "statistic": claim.get("statistic", ""),
        "median": np.nan,
        "lo": np.nan,
        "hi": np.nan,
        "n": 0,
        "interval": "",
        "ours_text": "",
        "ours_conditions": "",
        "rounds_left_out": 0,
        "floor": np.nan,
        "gap_median_s": np.nan,
        "gap_max_s": np.nan,
    }


def _unfit(claim: Mapping, values: pd.DataFrame, rows: Mapping[str, pd.DataFrame]):
    """(the rounds fit to decide on, what was left out and why, the reason the claim is invalid or None)."""
    spoiled = spoiled_rounds(claim, rows, values.index)
    spoiled["without the figure"] = set(values.index[values.isna().any(axis=1)])
    bad = set().union(*spoiled.values())
    if not bad:
        return values, "", None
    kept = values[~values.index.isin(sorted(bad))]
    why = "; ".join(f"{len(r)} of {len(values)} rounds {k} (rounds {', '.join(map(str, sorted(r)))})"
                    for k, r in spoiled.items() if r)  # fmt: skip
    if len(kept) < 2 or len(kept) < MIN_KEPT_SHARE * len(values):
        return kept, why, f"{len(kept)} of {len(values)} rounds fit to decide on: {why}"
    return kept, f"left out: {why}", None


def evaluate_claim(claim: Mapping, runs: pd.DataFrame | None, outcomes: list[Mapping] = ()) -> dict:
    """One row of the ledger for a claim, from its scope's runs (None when the claim needs none) or, for a
    claim about cells expected to fail, their outcomes."""
    row = _blank(claim)
    if claim.get("untestable"):
        return row | {"verdict": UNTESTABLE, "reason": claim["untestable"]}
    if claim.get("pending"):
        return row | {"verdict": PENDING, "reason": claim["pending"]}
    if claim["compare"] == "outcome":
        verdict, reason, ours = decide_outcomes(claim, outcomes)
        return row | {"verdict": verdict, "reason": reason, "ours_text": "see why" if ours else ""}
    picked = {}  # each alias's runs, selected once (round_values, run_rows, conditions)
    values = score_values(claim, runs) if claim.get("scores") else round_values(claim, runs, picked)
    labels = {a: s.get("label", s.get("server", a)) for a, s in claim["cells"].items()}
    left_out, measured = "", len(values)
    if len(values):
        rows = score_rows(claim, runs) if claim.get("scores") else run_rows(claim, runs, picked)
        values, left_out, invalid = _unfit(claim, values, rows)
        if invalid:
            ours = conditions(claim, runs, values.index, picked)
            return row | {"n": len(values), "rounds_left_out": measured - len(values), "verdict": INVALID,
                          "reason": invalid, "ours_conditions": ours}  # fmt: skip
        gaps = pair_gaps(rows, values.index)
        row |= {"gap_median_s": gaps[0], "gap_max_s": gaps[1], "rounds_left_out": measured - len(values)}
    if claim["compare"] == "order":
        if values.empty:
            return row | {"verdict": PENDING, "reason": "no round scored every server of this claim"}
        verdict, reason, med = decide_order(list(claim["order"]), values, labels)
        return row | {
            "n": len(values),
            "interval": intervals.describe(len(values)),
            "ours_text": " > ".join(labels[a] for a in sorted(med, key=lambda a: -med[a])),
            "ours_conditions": conditions(claim, runs, values.index, picked),
            "verdict": verdict,
            "reason": reason,
        }
    per_round = evaluate(claim["statistic"], {a: values[a] for a in values.columns})
    per_round = (
        pd.Series(per_round, index=values.index, dtype=float) if not isinstance(per_round, pd.Series) else per_round
    )
    # A round whose statistic is not a number (a zero denominator) is left out, and the reason says so.
    finite = per_round[np.isfinite(per_round.to_numpy(dtype=float))]
    dropped = len(per_round) - len(finite)
    if len(per_round) and not len(finite):
        return row | {"verdict": INVALID, "reason": f"the statistic is not a number in any of {len(per_round)} rounds"}
    median, lo, hi, n, _ = intervals.median_interval(finite.to_numpy(dtype=float)[None, :])
    median, lo, hi, n = float(median[0]), float(lo[0]), float(hi[0]), int(n[0])
    unit, compare = claim.get("unit", ""), claim["compare"]
    floor = aa_floor(claim, runs, claim.get("figure_of", "req_per_s")) if claimfile.uses_floor(claim) else np.nan
    centre = claim.get("figure") if compare == "equal" else claim.get("null")
    verdict, reason = decide(
        compare,
        claim.get("figure"),
        median,
        lo,
        hi,
        n,
        unit=unit,
        band=claimfile.band(claim, centre) if compare in ("equal", "same") else None,
        null=claim.get("null"),
        limit=claim.get("limit"),
    )
    if verdict == INCONCLUSIVE and n >= 2:
        reason += "; " + more_rounds(finite.to_numpy(dtype=float), claim, median)
    if dropped:
        reason += f"; {dropped} round{'s' if dropped > 1 else ''} left out, where the statistic is not a number"
    if left_out:
        reason += f"; {left_out}"
    ours = fmt(median, unit) + (f" [{fmt(lo, unit)}, {fmt(hi, unit)}]" if n >= 2 else "")
    return row | {
        "median": median,
        "lo": lo,
        "hi": hi,
        "n": n,
        "interval": intervals.describe(n),
        "ours_text": ours,
        "ours_conditions": conditions(claim, runs, values.index, picked) if n else "",
        "floor": floor,
        "verdict": verdict,
        "reason": reason,
    }


# --- When a claim block has rounds enough: its claims' intervals' width, never where they lie -------------------

#: A claim block stops adding rounds once every claim's interval has a half-width of at most this share of the
#: claim's tolerance: ±5 % against the rule's ±10 % band, ±2.5 points against ±5. Such an interval can lie wholly
#: inside the band, or wholly outside it, unless its median sits within a half-width of an edge.
WIDTH_SHARE = 0.5
#: The units whose statistic is a positive quantity read on a log scale (a ratio, a latency, a score); a figure in
#: points and a plain number (an ELU, a difference that can be negative) are read as they are.
LOG_UNITS = ("x", "ms", "score")


def width_target(claim: Mapping) -> tuple[float, str]:
    """(the half-width at which a claim's interval is narrow enough to stop measuring its block, the scale it is read
    on: "log" or "linear"). Set by the claim alone (its unit, tolerance, statistic and centre), never by its data.
    A ratio, a latency or a score whose statistic does not subtract is read on a log scale (its noise multiplies);
    any other statistic as it is, against a quarter of the tolerance rule's band around its centre (the figure, no
    effect, or the limit), so that where its data lie does not change its width. An order's pairs are ratios, read
    on a log scale. 0 where the claim has no band to measure a width against (a plain number whose centre is 0):
    its block then measures up to the cap."""
    compare = claim["compare"]
    if compare == "order":
        t = claim["tolerance"] if claim.get("tolerance") is not None else claimfile.RULE_RELATIVE
        return WIDTH_SHARE * float(np.log1p(t)), "log"
    t = claimfile.tolerance(claim)
    unit = claim.get("unit", "")
    if unit in POINT_UNITS:
        return WIDTH_SHARE * t, "linear"
    if unit in LOG_UNITS and not claimfile.has_difference(claim.get("statistic", "")):
        return WIDTH_SHARE * float(np.log1p(t)), "log"
    centre = {"equal": claim.get("figure"), "same": claim.get("null")}.get(compare, claim.get("limit"))
    if centre is None:
        return 0.0, "linear"
    b_lo, b_hi = claimfile.band(claim, float(centre))
    return WIDTH_SHARE * (b_hi - b_lo) / 2, "linear"


def half_width(lo: float, hi: float, scale: str) -> float:
    """An interval's half-width on its scale; infinite where it has none (fewer than two rounds) or a log scale
    cannot read it (a bound at or below 0)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("inf")
    if scale == "log":
        return float((np.log(hi) - np.log(lo)) / 2) if lo > 0 and hi > 0 else float("inf")
    return float((hi - lo) / 2)


def stopping_widths(claims: list[Mapping], runs: pd.DataFrame) -> pd.DataFrame:
    """A claim block's look: per claim that reads runs, (comparison (its id), half_width, target, scale, n, invalid),
    from the block's runs so far. The widest neighbouring pair stands for an order. A claim whose rounds cannot give
    an interval yet (no runs, fewer than two rounds) has an infinite half-width: never narrow enough. A claim that is
    invalid (most of its rounds not what it needs: not at the ceiling it asks for, without its figure) is marked so:
    its look does not wait for it, since more rounds of a cell that cannot reach its ceiling do not make it."""
    rows = []
    for c in filter(claimfile.reads_runs, claims):
        target, scale = width_target(c)
        invalid = False
        try:
            if c["compare"] == "order":
                values = score_values(c, runs) if c.get("scores") else round_values(c, runs)
                if len(values):
                    rows_ = score_rows(c, runs) if c.get("scores") else run_rows(c, runs)
                    values, _, why = _unfit(c, values, rows_)
                    invalid = why is not None
                    values = values.iloc[:0] if invalid else values
                pairs = list(_order_pairs(list(c["order"]), values))
                width = max((half_width(lo, hi, scale) for *_, lo, hi, _n in pairs), default=float("inf"))
                n = min((p[-1] for p in pairs), default=0)
            else:
                row = evaluate_claim(c, runs)
                width, n, invalid = half_width(row["lo"], row["hi"], scale), int(row["n"]), row["verdict"] == INVALID
        except (NoRuns, ClaimError):
            width, n = float("inf"), 0
        rows.append(
            {"comparison": c["id"], "half_width": width, "target": target, "scale": scale, "n": n, "invalid": invalid}
        )
    return pd.DataFrame(rows, columns=["comparison", "half_width", "target", "scale", "n", "invalid"])


def ledger(
    claims: list[Mapping], runs_by_scope: Mapping[str, pd.DataFrame], outcomes: list[Mapping] = ()
) -> pd.DataFrame:
    """The ledger: one row per claim, in claims.yaml's order. outcomes: the cells expected to fail's.

    A claim the runs cannot answer (a cell without runs, a server without a score) is not yet measured,
    with the reason; the others are still evaluated.
    """
    rows = []
    for c in claims:
        try:
            rows.append(evaluate_claim(c, runs_by_scope.get(c.get("scope")), outcomes))
        except NoRuns as e:
            rows.append(_blank(c) | {"verdict": INVALID, "reason": f"{e}: its measurement failed or was not made"})
        except ClaimError as e:
            rows.append(evaluate_claim({**c, "pending": f"the runs cannot answer it: {e}"}, None))
    return pd.DataFrame(rows)


def family(table: pd.DataFrame) -> tuple[int, float]:
    """(decided verdicts, how many of them the intervals' coverage leaves open to be wrong): each reproduced or
    not-reproduced verdict read an interval of coverage c at its n, which misses the truth with probability
    1 - c; the sum is the expected number of intervals in the family that miss (an upper bound on wrong
    verdicts, since a missing interval can still fall on the right side of the band). An order, decided pair by
    pair, is counted as one interval at its n: its share is a lower estimate there."""
    decided = table[table["verdict"].isin([REPRODUCED, NOT_REPRODUCED])]
    ns = pd.to_numeric(decided.get("n", pd.Series(dtype=float)), errors="coerce")
    # A row whose rounds adaptive looks chose states its floor (stated_coverage), not its n's fixed-n coverage.
    stated = pd.to_numeric(decided.get("coverage", pd.Series(np.nan, index=decided.index)), errors="coerce")
    miss = sum(
        1 - (c if np.isfinite(c) else intervals.coverage(int(n), intervals.rank(int(n))))
        for n, c in zip(ns, stated, strict=True)
        if np.isfinite(n) and n >= 2
    )
    return len(decided), float(miss)


def with_stated_coverage(table: pd.DataFrame, floors: Mapping[str, float]) -> pd.DataFrame:
    """The ledger with the coverage each interval can state: where its scope's rounds were chosen by adaptive looks
    (floors: scope -> looks.stated_coverage of its looks), that floor, said in its interval text, and no longer the
    fixed-n coverage of the look it stopped at; NaN elsewhere (the fixed-n figure, from n)."""
    table = table.copy()
    floor = table["scope"].map(dict(floors)).astype(float)
    n = pd.to_numeric(table["n"], errors="coerce").fillna(0)
    adaptive = floor.notna() & (n >= 2) & (table["interval"].astype(str) != "")
    table["coverage"] = floor.where(adaptive)
    table.loc[adaptive, "interval"] = [
        intervals.describe(int(k), at_least=c) for k, c in zip(n[adaptive], floor[adaptive], strict=True)
    ]
    return table

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

The verdict compares the median with the published figure:

- equal: **reproduced** when within the claim's tolerance (in the claim's unit) of the
  published figure; **reproduced in direction only** when not, but on the same side of the
  claim's null value (1 for a ratio, 0 for a change) with an interval that excludes it;
  else **not reproduced**.
- same (a claim of no difference): **reproduced** when the interval contains the null
  value or the median is within the tolerance of it; else **not reproduced**.
- at_most (a claim that something is flat or small): **reproduced** when the median is at
  most the claim's limit; else **not reproduced**.
- order (a ranking): **reproduced** when the medians rank the aliases in the claimed order;
  else **not reproduced**, naming the pairs that swapped and whether their intervals overlap.

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

from nodebench.analysis import intervals, scenarios
from nodebench.analysis.metrics import CELL
from nodebench.claimfile import COMPARES, SELECTOR_KEYS, describe_selector, names_in  # noqa: F401

REPRODUCED = "reproduced"
DIRECTION = "reproduced in direction only"
NOT_REPRODUCED = "not reproduced"
UNTESTABLE = "not testable here"
PENDING = "not yet measured"
VERDICTS = (REPRODUCED, DIRECTION, NOT_REPRODUCED, UNTESTABLE, PENDING)


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


def round_values(claim: Mapping, runs: pd.DataFrame) -> pd.DataFrame:
    """One column per alias: its cell's figure in each round (index: round), only rounds every cell has.

    A selector must match exactly one cell of the scope; none is a ClaimError that says it
    was not measured, several one that names what tells them apart.
    """
    columns = {}
    for alias, selector in claim["cells"].items():
        figure = selector.get("figure", claim.get("figure_of", "req_per_s"))
        mine = select(runs, selector)
        cells = mine.groupby(CELL, observed=True).ngroups if len(mine) else 0
        if cells == 0:
            raise ClaimError(
                f"{claim['id']}: cell {alias} ({describe_selector(selector)}) has no runs in {claim['scope']}"
            )
        if cells > 1:
            differ = [k for k in CELL if mine[k].astype(str).nunique() > 1]
            raise ClaimError(
                f"{claim['id']}: cell {alias} ({describe_selector(selector)}) matches {cells} cells of "
                f"{claim['scope']}; name its {' and '.join(differ)}"
            )
        if figure not in mine:
            raise ClaimError(f"{claim['id']}: cell {alias} reads {figure!r}, which the runs do not have")
        columns[alias] = mine.set_index("round")[figure].astype(float)
    return pd.DataFrame(columns).dropna().sort_index()


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


def _gap(median: float, published: float, unit: str) -> str:
    """How far ours is from the published figure: in points for a percentage, else relative."""
    gap = median - published
    side = "above" if gap > 0 else "below"
    if unit == "%" or not published:
        return f"{abs(gap):.1f} {'points' if unit == '%' else unit} {side}".replace("  ", " ")
    return f"{abs(gap / published) * 100:.0f} % {side}"


def decide(
    compare: str,
    published: float | None,
    median: float,
    lo: float,
    hi: float,
    n: int,
    *,
    unit: str = "",
    tolerance: float = 0.0,
    null: float | None = None,
    limit: float | None = None,
) -> tuple[str, str]:
    """(verdict, one line of reason) for a figure's median and interval against the published figure."""
    f = lambda v: fmt(v, unit)  # noqa: E731
    tol = fmt(tolerance, unit).lstrip("+")
    if n == 0 or not np.isfinite(median):
        return PENDING, "no round measured every cell of this claim"
    has_interval = n >= 2 and np.isfinite(lo) and np.isfinite(hi)
    span = f"interval {f(lo)} to {f(hi)}" if has_interval else "one round, no interval"
    # Whether the data shows any effect at all: the interval excludes the claim's no-effect value.
    shown = null is None or (has_interval and not lo <= null <= hi)
    if compare == "equal":
        if abs(median - published) <= tolerance:
            if not shown:
                return NOT_REPRODUCED, (
                    f"ours {f(median)} is within ±{tol} of {f(published)}, but {span} includes {f(null)}: "
                    "no difference is shown"
                )
            return REPRODUCED, f"ours {f(median)} is within ±{tol} of {f(published)} ({span})"
        size = _gap(median, published, unit)
        if null is not None and np.sign(median - null) != np.sign(published - null):
            return NOT_REPRODUCED, f"opposite direction: ours {f(median)} against the published {f(published)} ({span})"
        if null is not None and shown:
            return DIRECTION, (
                f"same side of {f(null)} as published ({span}, which excludes {f(null)}), but ours "
                f"{f(median)} is {size} the published {f(published)}, beyond ±{tol}"
            )
        if null is not None:
            return NOT_REPRODUCED, f"ours {f(median)}: {span} includes {f(null)}, so no difference is shown"
        return NOT_REPRODUCED, f"ours {f(median)} is {size} the published {f(published)}, beyond ±{tol} ({span})"
    if compare == "same":
        # No difference is a claim of equivalence: the whole interval within the tolerance, not merely an
        # interval wide enough to include no effect.
        if has_interval and null - tolerance <= lo and hi <= null + tolerance:
            return REPRODUCED, f"ours {f(median)}; {span} lies within ±{tol} of {f(null)}"
        if has_interval and not lo <= null <= hi:
            return NOT_REPRODUCED, f"a difference is shown: ours {f(median)}, {span} excludes {f(null)}"
        if not has_interval:
            return NOT_REPRODUCED, f"ours {f(median)}: one round cannot show that there is no difference"
        return NOT_REPRODUCED, (
            f"inconclusive: ours {f(median)}, {span} includes {f(null)} but reaches beyond ±{tol} of it, so "
            "equivalence is not shown either"
        )
    if compare == "at_most":
        if median <= limit:
            return REPRODUCED, f"ours {f(median)} is at most {f(limit)} ({span})"
        return NOT_REPRODUCED, f"ours {f(median)} is above the {f(limit)} the claim allows ({span})"
    if compare == "below":
        if has_interval and hi < limit:
            return REPRODUCED, f"ours {f(median)}; {span} lies below {f(limit)}"
        if median >= limit:
            return NOT_REPRODUCED, f"ours {f(median)} is not below {f(limit)} ({span})"
        return NOT_REPRODUCED, f"ours {f(median)}, but {span} reaches {f(limit)}: no difference is shown"
    raise ClaimError(f"unknown comparison {compare!r}; one of {', '.join(COMPARES)}")


def decide_order(claimed: list[str], values: pd.DataFrame, labels: Mapping[str, str]) -> tuple[str, str, dict]:
    """(verdict, reason, medians) for a claimed ranking, highest first, of the aliases' per-round values.

    The order of the medians decides; the reason names the neighbours whose intervals overlap (a rank a
    reader should read as a range) and, for swapped pairs, whether theirs do.
    """
    summary = {a: intervals.median_interval(values[a].to_numpy()[None, :]) for a in claimed}
    med = {a: float(s[0][0]) for a, s in summary.items()}
    bounds = {a: (float(s[1][0]), float(s[2][0])) for a, s in summary.items()}

    def overlap(a, b) -> str:
        (lo_a, hi_a), (lo_b, hi_b) = bounds[a], bounds[b]
        if not all(np.isfinite([lo_a, hi_a, lo_b, hi_b])):
            return "no intervals"
        return "overlapping intervals" if lo_a <= hi_b and lo_b <= hi_a else "separate intervals"

    ours = sorted(claimed, key=lambda a: -med[a])
    text = " > ".join(f"{labels[a]} {med[a]:.1f}" for a in ours)
    if ours == claimed:
        close = [f"{labels[a]} and {labels[b]}" for a, b in pairwise(ours) if overlap(a, b) != "separate intervals"]
        note = f"; {', '.join(close)} are not separated" if close else "; every neighbour is separated"
        return REPRODUCED, f"ours ranks the same: {text}{note}", med
    swapped = [
        f"{labels[b]} above {labels[a]} ({overlap(a, b)})"
        for i, a in enumerate(claimed)
        for b in claimed[i + 1 :]
        if med[a] < med[b]
    ]
    return NOT_REPRODUCED, f"ours: {text}; " + "; ".join(swapped), med


# --- One claim, and the ledger ---------------------------------------------------------------------------------


def conditions(claim: Mapping, runs: pd.DataFrame, rounds) -> str:
    """Our conditions, from the runs of the claim's cells: load, versions, machine, when."""
    if claim.get("scores"):
        mine = runs[runs["server"].isin([s["server"] for s in claim["cells"].values()])]
    else:
        mine = pd.concat([select(runs, s) for s in claim["cells"].values()])
    mine = mine[mine["round"].isin(list(rounds))]
    if mine.empty:
        return ""
    uniq = lambda col: ", ".join(sorted(mine[col].dropna().astype(str).unique())) if col in mine else "?"  # noqa: E731
    frameworks = sorted(
        {f"{s} {v}" for s, v in zip(mine["framework"], mine["framework_version"], strict=True) if s and v}
    )
    when = pd.to_datetime(mine["started_at"], utc=True)
    preempted = int(mine["preempted"].fillna(False).astype(bool).sum()) if "preempted" in mine else 0
    return (
        f"{uniq('client')}, {uniq('connections')} connections, {uniq('stop')}; Node.js {uniq('node_version')}; "
        f"{', '.join(frameworks)}; {uniq('cpu_model')} ({uniq('cpu_count')} CPUs); "
        f"{when.min():%Y-%m-%d %H:%M}–{when.max():%H:%M} UTC; {preempted} of {len(mine)} runs preempted"
    )


def decide_outcomes(claim: Mapping, outcomes: list[Mapping]) -> tuple[str, str, str]:
    """(verdict, reason, ours) for a claim on cells expected to fail: each alias's outcome against its expectation."""
    said, wrong = [], []
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
        if o["outcome"] != want:
            wrong.append(f"{o['server']} was expected to have {want}")
        elif want == "failed" and pattern and not re.search(pattern, o["check"] or ""):
            wrong.append(f"{o['server']} failed, but not as expected (/{pattern}/)")
    ours = "; ".join(said)
    if wrong:
        return NOT_REPRODUCED, "; ".join(wrong) + f" ({ours})", ours
    return REPRODUCED, f"the harness reported, and did not hang: {ours}", ours


def _answered(o: Mapping) -> str:
    statuses = o.get("status_counts") or {}
    status = ", ".join(f"HTTP {k} x {v:,}" for k, v in statuses.items()) or f"{o.get('requests', 0):,} answers"
    return f"answered ({status}, {o.get('req_per_s') or 0:,.0f} req/s)"


def evaluate_claim(claim: Mapping, runs: pd.DataFrame | None, outcomes: list[Mapping] = ()) -> dict:
    """One row of the ledger for a claim, from its scope's runs (None when the claim needs none) or, for a
    claim about cells expected to fail, their outcomes."""
    row = {
        "id": claim["id"],
        "seed": str(claim["seed"]),
        "source": claim.get("source", ""),
        "derived": bool(claim.get("derived", False)),
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
    }
    if claim.get("untestable"):
        return row | {"verdict": UNTESTABLE, "reason": claim["untestable"]}
    if claim.get("pending"):
        return row | {"verdict": PENDING, "reason": claim["pending"]}
    if claim["compare"] == "outcome":
        verdict, reason, ours = decide_outcomes(claim, outcomes)
        return row | {"verdict": verdict, "reason": reason, "ours_text": "see why" if ours else ""}
    values = score_values(claim, runs) if claim.get("scores") else round_values(claim, runs)
    labels = {a: s.get("label", s.get("server", a)) for a, s in claim["cells"].items()}
    if claim["compare"] == "order":
        if values.empty:
            return row | {"verdict": PENDING, "reason": "no round scored every server of this claim"}
        verdict, reason, med = decide_order(list(claim["order"]), values, labels)
        return row | {
            "n": len(values),
            "interval": intervals.describe(len(values)),
            "ours_text": " > ".join(labels[a] for a in sorted(med, key=lambda a: -med[a])),
            "ours_conditions": conditions(claim, runs, values.index),
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
    median, lo, hi, n, _ = intervals.median_interval(finite.to_numpy(dtype=float)[None, :])
    median, lo, hi, n = float(median[0]), float(lo[0]), float(hi[0]), int(n[0])
    unit = claim.get("unit", "")
    verdict, reason = decide(
        claim["compare"],
        claim.get("figure"),
        median,
        lo,
        hi,
        n,
        unit=unit,
        tolerance=float(claim.get("tolerance", 0.0)),
        null=claim.get("null"),
        limit=claim.get("limit"),
    )
    if dropped:
        reason += f"; {dropped} round{'s' if dropped > 1 else ''} left out, where the statistic is not a number"
    ours = fmt(median, unit) + (f" [{fmt(lo, unit)}, {fmt(hi, unit)}]" if n >= 2 else "")
    return row | {
        "median": median,
        "lo": lo,
        "hi": hi,
        "n": n,
        "interval": intervals.describe(n),
        "ours_text": ours,
        "ours_conditions": conditions(claim, runs, values.index) if n else "",
        "verdict": verdict,
        "reason": reason,
    }


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
        except ClaimError as e:
            rows.append(evaluate_claim({**c, "pending": f"the runs cannot answer it: {e}"}, None))
    return pd.DataFrame(rows)

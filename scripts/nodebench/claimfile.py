"""claims.yaml as data, without pandas: the checks the workflow runs when it plans (see analysis/claims.py).

Kept free of heavy imports because the Snakefile reads it on every invocation.
"""

import ast
import re
from collections.abc import Mapping

COMPARES = ("equal", "same", "at_most", "at_least", "below", "order", "outcome")
#: The tolerance rule, declared before the data (claims.yaml's header, docs/claims.md): a figure in percent is
#: matched within RULE_POINTS percentage points, any other figure (a ratio, a latency, a score) within
#: RULE_RELATIVE of it on a log scale, that is between F / (1 + t) and F * (1 + t). A claim's own `tolerance`
#: (points for %, a fraction for the others) overrides the rule only with a `tolerance_why`.
RULE_POINTS = 5.0
RULE_RELATIVE = 0.10
#: Units compared in points; every other unit is compared relative to the figure.
POINT_UNITS = ("%",)
#: What a cell selector may name: a cell's key columns.
SELECTOR_KEYS = ("workload", "server", "connections", "client", "stop")
#: The functions a statistic may call (analysis/claims.py defines them).
FUNCTION_NAMES = ("max", "min", "abs", "closed_loop_latency")
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.USub,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Name,
    ast.Load,
    ast.Call,
    ast.Constant,
)


def tolerance(claim: Mapping) -> float:
    """The claim's tolerance: its own where it gives one (with a reason), else the rule for its unit."""
    if claim.get("tolerance") is not None:
        return float(claim["tolerance"])
    return RULE_POINTS if claim.get("unit", "") in POINT_UNITS else RULE_RELATIVE


def band(claim: Mapping, centre: float) -> tuple[float, float]:
    """The values that count as the claim's figure (or its no-effect value) by the tolerance rule."""
    t = tolerance(claim)
    if claim.get("unit", "") in POINT_UNITS:
        return centre - t, centre + t
    lo, hi = centre / (1 + t), centre * (1 + t)
    return (lo, hi) if lo <= hi else (hi, lo)


def uses_floor(claim: Mapping) -> bool:
    """Whether a claim's limit moves by the A/A floor: a limit (at_most, at_least, below) on a plain ratio a / b
    (unit x) of one figure, whose control's twin over the control is the same kind of ratio (a ratio of ratios is
    noisier than one such offset). The floor is measured where the
    claim's scope measures the control in its cells' peer groups."""
    simple = re.fullmatch(r"\s*\w+\s*/\s*\w+\s*", str(claim.get("statistic", ""))) is not None
    return (
        claim.get("compare") in ("at_most", "at_least", "below")
        and claim.get("unit") == "x"
        and simple
        and not claim.get("scores")
        and not any("figure" in s for s in (claim.get("cells") or {}).values())
    )


def names_in(expression: str) -> set[str]:
    """The aliases an expression reads (its names other than the functions)."""
    return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)} - set(FUNCTION_NAMES)


def has_difference(expression: str) -> bool:
    """Whether a statistic subtracts (a - b, -a): its noise then adds rather than multiplies, so it is read on a
    linear scale, even where its unit is a ratio."""
    return any(isinstance(n, ast.Sub | ast.USub) for n in ast.walk(ast.parse(str(expression), mode="eval")))


def describe_selector(selector: Mapping) -> str:
    return ", ".join(f"{k} {selector[k]}" for k in SELECTOR_KEYS if k in selector)


def statistic_problem(expression: str, aliases) -> str | None:
    """What is wrong with a statistic as written (None when it is a well-formed expression of the aliases)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as e:
        return f"statistic {expression!r} is not an expression: {e.msg}"
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED) or (
            isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTION_NAMES)
        ):
            return (
                f"statistic {expression!r} may use numbers, its cells' names, + - * / and {', '.join(FUNCTION_NAMES)}"
            )
        if isinstance(node, ast.Constant) and (not isinstance(node.value, int | float) or isinstance(node.value, bool)):
            return f"statistic {expression!r} has a constant that is not a number"
    unknown = names_in(expression) - set(aliases)
    if unknown:
        return f"the statistic names {', '.join(sorted(unknown))}, not among its cells ({', '.join(aliases)})"
    return None


def check(claims: list[Mapping]) -> list[str]:
    """What is wrong with the claims as data (empty when nothing is): ids, comparisons, statistics."""
    problems, seen = [], set()
    for c in claims:
        cid = c.get("id", "?")
        if cid in seen:
            problems.append(f"claim id {cid!r} appears twice")
        seen.add(cid)
        if c.get("pending") or c.get("untestable"):
            continue
        if c.get("restates") is not None and c["restates"] not in {x.get("id") for x in claims}:
            problems.append(f"{cid}: restates {c['restates']!r}, which is no claim's id")
        compare = c.get("compare")
        if compare not in COMPARES:
            problems.append(f"{cid}: compare is {compare!r}; one of {', '.join(COMPARES)}")
            continue
        cells = c.get("cells") or {}
        if compare == "outcome":
            expect = c.get("expect") or {}
            if set(expect) != set(cells) or not set(expect.values()) <= {"failed", "answered"}:
                problems.append(f"{cid}: expect must give each cell failed or answered")
            continue
        if compare == "order":
            missing = [a for a in c.get("order") or [] if a not in cells]
            if missing or not c.get("order"):
                problems.append(
                    f"{cid}: order must list its cells' aliases (unknown: {', '.join(missing) or 'none given'})"
                )
            continue
        problem = statistic_problem(str(c.get("statistic", "")), cells)
        if problem:
            problems.append(f"{cid}: {problem}")
        need = {"equal": ["figure"], "same": ["null"], "at_most": ["limit"], "at_least": ["limit"], "below": ["limit"]}
        problems += [f"{cid}: compare {compare} needs {k!r}" for k in need[compare] if c.get(k) is None]
        if c.get("tolerance") is not None and not c.get("tolerance_why"):
            problems.append(
                f"{cid}: its own tolerance ({c['tolerance']}) departs from the rule (±{RULE_POINTS:g} points for %, "
                f"±{RULE_RELATIVE:.0%} otherwise) and needs a tolerance_why"
            )
        if compare == "equal" and c.get("unit", "") not in POINT_UNITS and not float(c.get("figure") or 0) > 0:
            problems.append(
                f"{cid}: a figure in {c.get('unit') or 'no unit'} is matched relative to it: it must be > 0"
            )
        for alias, selector in cells.items():
            unknown = set(selector) - {*SELECTOR_KEYS, "figure", "label"}
            if unknown:
                problems.append(
                    f"{cid}: cell {alias} names {', '.join(sorted(unknown))}; a cell is chosen by "
                    f"{', '.join(SELECTOR_KEYS)} (and figure)"
                )
        bound = c.get("server_bound")
        if bound and bound is not True and not set(bound) <= set(cells):
            problems.append(f"{cid}: server_bound names aliases that are not its cells")
    return problems


def resolve(claim: Mapping, cells: list[tuple] | None) -> str | None:
    """Why a measured claim cannot be answered by its scope's planned cells (None when each selector
    matches exactly one of them). cells: the scope's (workload, server, connections, load generator, stop);
    None when the scope does not exist."""
    if cells is None:
        return (
            f"its scope {claim['scope']!r} is neither the main matrix (overall) nor an experiment in experiments.yaml"
        )
    planned = [dict(zip(SELECTOR_KEYS, map(str, c), strict=True)) for c in cells]
    for alias, selector in claim["cells"].items():
        if claim.get("scores"):
            if not any(p["server"] == selector["server"] for p in planned):
                return f"{claim['scope']} does not measure {selector['server']}"
            continue
        want = {k: str(selector[k]) for k in SELECTOR_KEYS if k in selector}
        found = {tuple(p.values()) for p in planned if all(p[k] == v for k, v in want.items())}
        if not found:
            return f"{claim['scope']} does not measure cell {alias} ({describe_selector(selector)})"
        if len(found) > 1:
            differ = [k for i, k in enumerate(SELECTOR_KEYS) if len({f[i] for f in found}) > 1]
            many = f"{len(found)} cells of {claim['scope']}"
            return f"cell {alias} ({describe_selector(selector)}) is {many}: name its {' and '.join(differ)}"
    return None


def unresolved(claim: Mapping, reason: str) -> Mapping:
    """The claim as not testable with this configuration."""
    return {**claim, "untestable": f"not measured with this configuration: {reason}"}


def ledger_claims(claims: list[Mapping], scope_cells, failure_cells) -> list[Mapping]:
    """The claims as the ledger evaluates them: those this configuration cannot measure marked so.

    scope_cells(scope): a scope's planned cells, None for no such scope; failure_cells(scope): its cells
    expected to fail (what an `outcome` claim reads).
    """
    out = []
    for claim in claims:
        if not (claim.get("pending") or claim.get("untestable")):
            cells = scope_cells(claim["scope"])
            if cells is not None and claim["compare"] == "outcome":
                cells = failure_cells(claim["scope"])
            problem = resolve(claim, cells)
            if problem:
                claim = unresolved(claim, problem)
        out.append(claim)
    return out


def reads_runs(claim: Mapping) -> bool:
    """Whether a claim's verdict rests on runs measured in rounds: not an outcome (it reads failures), nor a claim
    this configuration cannot measure (untestable, pending)."""
    return not (claim.get("pending") or claim.get("untestable")) and claim["compare"] != "outcome"


def run_scopes(claims: list[Mapping]) -> list[str]:
    """The scopes whose runs the ledger's measured claims read (an outcome claim reads failures instead)."""
    return list(dict.fromkeys(c["scope"] for c in claims if reads_runs(c)))


def failure_scopes(claims: list[Mapping]) -> list[str]:
    """The scopes whose cells expected to fail the ledger's measured `outcome` claims read."""
    return list(dict.fromkeys(c["scope"] for c in claims if c.get("compare") == "outcome" and not c.get("untestable")))

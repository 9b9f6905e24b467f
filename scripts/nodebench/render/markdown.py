"""summary.md (and the tables of index.html): the answer first, then the machine, then every cell.

The document is a list of blocks (render/document.py): summary.md writes them as
Markdown, the index page as HTML with the charts between the opening and the tables.
"""

from datetime import datetime

import numpy as np
import pandas as pd

from nodebench.analysis import looks, outcomes
from nodebench.analysis.costcurve import SAME_LOAD_ELU
from nodebench.analysis.intervals import describe
from nodebench.analysis.metrics import CELL, PEERS, flagged, headline, remeasured
from nodebench.catalogue import figures
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.thresholds import (
    CLIENT_BOUND_CPU,
    CONFIDENCE,
    HEADLINE_CONNECTIONS,
    NOISY_CV,
    SERVER_BOUND_ELU,
    pct,
)
from nodebench.catalogue.workloads import FRAMEWORK_ONLY, WORKLOADS, ordered
from nodebench.render.document import Block, Heading, Items, Para, Table, to_markdown
from nodebench.render.latency_report import server_blocks
from nodebench.runs import SYSTEM_NODE, is_twin, on_node, runtime, twin_of

#: The runs' provenance columns machine_line() reads.
PROVENANCE = [
    "cpu_model",
    "cpu_count",
    "host",
    "kernel",
    "node_version",
    "framework",
    "framework_version",
    "pg_version",
    "postgres_version",
    "database_mode",
    "client",
    "client_version",
    "started_at",
    "finished_at",
    "pipeline_commit",
]
#: Every column of the runs the summary and the index page read: the provenance, and what
#: it takes to name the pairs of runs that different Snakemake sessions measured.
RUN_COLUMNS = [*PROVENANCE, *(c for c in CELL if c not in PROVENANCE), "round", "session", "server_startup_ms",
               "rss_peak_mb", "heap_used_peak_mb", "disturbed", "preempted", "measurement_count",
               "requests", "server_requests"]  # fmt: skip
#: A report leads with "this machine was too noisy" when more than this share of its runs were still disturbed
#: after being measured again (harness/remeasure.py).
TOO_NOISY_SHARE = 0.10
#: The baselines in the order the answer names them: the framework everyone knows, then bare node:http.
ANSWER_BASELINES = list(BASELINES)
#: What each saturation verdict means (metrics' saturation column). Verdicts not listed are shown as they are.
VERDICTS = {
    "server-bound": f"the server's event loop was busy at least {pct(SERVER_BOUND_ELU)} of the window: the cell "
    "measures the framework at its ceiling",
    "client-bound": f"the load generator used at least {pct(CLIENT_BOUND_CPU)} of the CPU it can use: its req/s "
    "measures the client more than the server",
    "io-bound": "neither the server's event loop nor the client was saturated: the server waited on I/O (the "
    "database), which set the pace",
    "database-bound": "the database set the pace",
    "client CPUs saturated (shared)": "the CPUs the load generator shares with the database were saturated, so "
    "neither can be told apart as the limit",
    "not saturated": "nothing was saturated: the load was too light to reach any ceiling",
}
#: A list of pairs longer than this is cut, with the number left out.
MAX_LISTED_PAIRS = 40


def ci(value: float, lo: float, hi: float, fmt: str = ",.0f", suffix: str = "") -> str:
    """A figure with its interval, e.g. '4,209 [3,754–4,310]'; without bounds (one run) the figure alone."""
    if pd.isna(value):
        return "n/a"
    if pd.isna(lo) or pd.isna(hi) or lo == hi:
        return f"{value:{fmt}}{suffix}"
    return f"{value:{fmt}}{suffix} [{lo:{fmt}}–{hi:{fmt}}]"


def _percent(x: float) -> str:
    """0.021 -> '2.1 %'."""
    return f"{x * 100:.1f} %"


def twins(metrics: pd.DataFrame) -> list[str]:
    """The A/A control's second names among the servers (node-http-aa, node-http-aa@node22), the pipeline's
    own Node.js first."""
    found = {s for s in metrics["server"].astype(str) if is_twin(s)}
    return sorted(found, key=lambda s: (runtime(s)[1] != SYSTEM_NODE, s))


def control_server(metrics: pd.DataFrame) -> str | None:
    """The A/A control (the server its twin repeats), or None without one."""
    servers = set(metrics["server"].astype(str))
    found = [twin_of(t) for t in twins(metrics) if twin_of(t) in servers]
    return found[0] if found else None


def workload_title(workload: str) -> str:
    """A workload in words: 'point-lookup: one indexed query, one ~270-byte row'."""
    spec = WORKLOADS.get(workload)
    return f"{workload}: {spec.description.split(':')[0]}" if spec else workload


# --- The answer ----------------------------------------------------------------------------


def _base(server: str) -> str:
    """The configuration a cell's server name runs, without its Node.js: express for express@node22."""
    return runtime(server)[0]


def _ratio(r, baseline: str, per_ratio_n: bool) -> str:
    """'0.42x express's (0.40–0.44, cheaper)' for one cell against one baseline (on the cell's own Node.js)."""
    name = BASELINES[baseline]
    baseline = on_node(baseline, runtime(str(r.server))[1])
    cost = getattr(r, f"cost_{name}")
    if pd.isna(cost):
        return f"n/a against {baseline} (no paired rounds)"
    lo, hi = getattr(r, f"cost_{name}_lo"), getattr(r, f"cost_{name}_hi")
    n = int(getattr(r, f"pairs_{name}"))
    notes = [f"{lo:.2f}–{hi:.2f}"] if pd.notna(lo) and pd.notna(hi) else []
    if per_ratio_n or not notes:
        notes.append(describe(n))
    decided = getattr(r, f"outcome_{name}", None)
    if isinstance(decided, str):
        notes.append(outcomes.phrase(decided, getattr(r, "equivalence_margin", outcomes.DEFAULT_MARGIN)))
    return f"{cost:.2f}x {baseline}'s ({', '.join(notes)})"


def workload_answer(label: str, cells: pd.DataFrame) -> str:
    """One sentence: each server's CPU per request (the headline figure) against express and node-http, with
    intervals."""
    servers = cells["server"].astype(str)
    present = [b for b in ANSWER_BASELINES if b in set(servers.map(_base))]
    if not present:
        return f"{label}: neither express nor node-http was measured, so there is no ratio to report."
    figure = figures.headline_of(cells)
    rows = cells[~servers.map(is_twin)].sort_values(figure, na_position="last")
    ns = {
        int(getattr(r, f"pairs_{BASELINES[b]}"))
        for r in rows.itertuples()
        for b in present
        if b != _base(r.server) and pd.notna(getattr(r, f"cost_{BASELINES[b]}"))
    }
    per_ratio_n = len(ns) > 1
    clauses = []
    for r in rows.itertuples():
        ratios = [_ratio(r, b, per_ratio_n) for b in present if b != _base(r.server)]
        if not ratios:
            continue
        first, *rest = ratios
        if not clauses:
            # The first clause says what the ratio is of; the others follow its pattern.
            first = "costs " + first.replace("'s (", f"'s {figures.noun(figure)} per request (", 1)
        clauses.append(f"{r.server} {first}" + "".join(f" and {x}" for x in rest))
    tail = []
    if len(ns) == 1:
        n = ns.pop()
        tail.append(
            f"intervals over paired rounds, {describe(n)}"
            if n >= 2
            else "one round each, so no interval and no outcome"
        )
    twin = cells.dropna(subset=["aa_cost"]) if "aa_cost" in cells else cells.iloc[0:0]
    if len(twin):
        t = twin.iloc[0]
        span = f" [{t.aa_cost_lo:.3f}x-{t.aa_cost_hi:.3f}x]" if pd.notna(t.aa_cost_lo) else ""
        off = (
            ": its interval excludes 1, so the design is off here (**twin off**)"
            if bool(getattr(t, "twin_off", False))
            else ""
        )
        tail.append(f"the A/A twin against its control {t.aa_cost:.3f}x{span}, a check of the design{off}")
    else:
        tail.append("no A/A control, so no check of the design")
    missing = [b for b in ANSWER_BASELINES if b not in present]
    tail += [f"{b} was not measured, so there are no ratios against it" for b in missing]
    tail += unequal_load(rows, present)
    return f"{label}: " + "; ".join([*clauses, *tail]) + "."


def unequal_load(rows: pd.DataFrame, baselines: list[str]) -> list[str]:
    """A clause per baseline whose event loop was busier or idler than a compared server's by more than
    SAME_LOAD_ELU: those ratios are not at the same load (below its ceiling a server's cost per request rises), and
    the cost curve compares them at the same rates."""
    out = []
    for b in baselines:
        base = rows[rows["server"].astype(str) == b]
        if base.empty or pd.isna(base["elu_utilization"].iloc[0]):
            continue
        elu = float(base["elu_utilization"].iloc[0])
        others = rows[(rows["server"].astype(str) != b) & ((rows["elu_utilization"] - elu).abs() > SAME_LOAD_ELU)]
        if others.empty:
            continue
        names = ", ".join(f"{r.server} {r.elu_utilization:.2f}" for r in others.itertuples())
        out.append(
            f"not at the same load as {b} (event loop busy {elu:.2f} of the window against {names}): ratios to {b} "
            "read at different loads; `reports/cost-curve/all` compares them at the same rates"
        )
    return out


def glance_line(label: str, cells: pd.DataFrame) -> str:
    """One short line: the cheapest server, and the costliest against it by how much and how sure (the paired
    ratio against the baseline both were compared with, its interval and outcome)."""
    figure = figures.headline_of(cells)
    rows = cells[~cells["server"].astype(str).map(is_twin)].dropna(subset=[figure])
    if rows.empty:
        return f"{label}: nothing measured."
    rows = rows.sort_values(figure)
    cheap, dear = rows.iloc[0], rows.iloc[-1]
    line = f"{label}: cheapest by median **{cheap.server}**, {cheap[figure]:.1f} µs of {figures.noun(figure)} a request"
    if len(rows) == 1:
        return line + "."
    # The costliest against the cheapest where the cheapest is a baseline; else against a baseline it was paired with.
    present = set(rows["server"].astype(str).map(_base))
    bases = [_base(str(cheap.server))] + [b for b in ("node-http", "express") if b in present]
    base = next((b for b in bases if b in BASELINES and b != _base(str(dear.server))), None)
    name = BASELINES[base] if base else None
    cost = getattr(dear, f"cost_{name}", np.nan) if name else np.nan
    if pd.isna(cost):
        return line + f"; costliest **{dear.server}**, {dear[figure]:.1f} µs (no paired ratio)."
    lo, hi = getattr(dear, f"cost_{name}_lo"), getattr(dear, f"cost_{name}_hi")
    n = int(getattr(dear, f"pairs_{name}"))
    decided = getattr(dear, f"outcome_{name}", None)
    if pd.notna(lo) and pd.notna(hi) and isinstance(decided, str):
        sure = f" [{lo:.2f}x-{hi:.2f}x], {outcomes.phrase(decided)} ({describe(n)})"
    else:
        sure = f" ({describe(n)})"
    of = on_node(base, runtime(str(dear.server))[1])
    return line + f"; costliest **{dear.server}** at {cost:.2f}x {of}'s{sure}."


def glance(metrics: pd.DataFrame) -> list[str]:
    """The report's first lines: one short line per workload at the headline connection count."""
    if metrics.empty:
        return ["No cell was measured."]
    head = headline(metrics)
    setups = head[["client", "stop"]].astype(str).drop_duplicates()
    out = []
    for workload in ordered(head["workload"].astype(str).unique()):
        cells = head[head["workload"].astype(str) == workload]
        for (client, stop), group in cells.groupby([cells["client"].astype(str), cells["stop"].astype(str)]):
            label = f"**{workload}** at {group['connections'].iloc[0]} connections"
            if len(setups) > 1:
                label += f" ({client}, {stop})"
            out.append(glance_line(label, group))
    return out


def answer(metrics: pd.DataFrame) -> list[str]:
    """One sentence per workload at the headline connection count (closest to HEADLINE_CONNECTIONS)."""
    if metrics.empty:
        return ["No cell was measured."]
    head = headline(metrics)
    setups = head[["client", "stop"]].astype(str).drop_duplicates()
    out = []
    for workload in ordered(head["workload"].astype(str).unique()):
        cells = head[head["workload"].astype(str) == workload]
        for (client, stop), group in cells.groupby([cells["client"].astype(str), cells["stop"].astype(str)]):
            label = f"**{workload}** at {group['connections'].iloc[0]} connections"
            if len(setups) > 1:
                label += f" ({client}, {stop})"
            out.append(workload_answer(label, group))
    return out


# --- The machine ---------------------------------------------------------------------------


def _when(stamps: pd.Series, how: str) -> str:
    t = pd.to_datetime(stamps.astype(str), utc=True, format="ISO8601")
    t = t.min() if how == "min" else t.max()
    return "unknown" if pd.isna(t) else t.strftime("%Y-%m-%d %H:%M UTC")


def machine_state(runs: pd.DataFrame, metrics: pd.DataFrame) -> str:
    """The state of the machine in one line, for setting two reports side by side: the control cell's CPU per
    request on each workload, the CPU model, when the runs were measured, in how many rounds and sessions."""
    control = control_server(metrics)
    reference = control or ("node-http" if "node-http" in set(metrics["server"].astype(str)) else None)
    parts = []
    if reference:
        head = headline(metrics)
        rows = head[head["server"].astype(str) == reference]
        rows = rows.set_index(rows["workload"].astype(str)).loc[ordered(rows["workload"].astype(str))]
        fig = figures.headline_of(metrics)
        values = [
            f"{ci(r[fig], r[f'{fig}_lo'], r[f'{fig}_hi'], '.1f', ' µs')} on {workload}"
            for workload, r in rows.iterrows()
        ]
        if values:
            values[0] = values[0].replace(" on ", f" of {figures.noun(fig)} per request on ", 1)
        methods = "; ".join(sorted(set(rows["interval"].astype(str))))
        who = f"the A/A control, {reference}," if control else f"{reference} (there is no A/A control in these runs)"
        parts.append(f"{who} at the headline connections: {', '.join(values)} ({methods})")
    else:
        parts.append("neither an A/A control nor node-http was measured, so no reference cell")
    models = sorted(runs["cpu_model"].astype(str).unique())
    cpus = ", ".join(sorted(runs["cpu_count"].astype(str).unique()))
    parts.append(f"CPU {'; '.join(models)} ({cpus} logical CPUs)")
    when = f"runs from {_when(runs['started_at'], 'min')} to {_when(runs['finished_at'], 'max')}"
    if "round" in runs:
        rounds = runs["round"].nunique()
        when += f", {rounds} round{'s' if rounds != 1 else ''}"
    if "session" in runs and runs["session"].notna().any():
        sessions = runs["session"].dropna().nunique()
        when += f" in {sessions} Snakemake session{'s' if sessions != 1 else ''}"
    parts.append(when)
    if disturbance := disturbance_line(runs):
        parts.append(disturbance)
    return "**Machine state**: " + "; ".join(parts) + "."


def disturbance_counts(runs: pd.DataFrame) -> tuple[int, int, int]:
    """(runs, runs measured again for a disturbance, runs still disturbed and kept)."""
    return len(runs), int(remeasured(runs).sum()), int(flagged(runs).sum())


def disturbance_line(runs: pd.DataFrame) -> str:
    """How many runs were measured again because another task took the server's CPU, and how many stayed disturbed."""
    n, again, still = disturbance_counts(runs)
    if "measurement_count" not in runs and "disturbed" not in runs:
        return ""
    return (
        f"{again} of {n} runs measured again because another task or the hypervisor took the server's CPU, "
        f"{still} still disturbed after that (kept and flagged, never dropped)"
    )


def too_noisy(runs: pd.DataFrame) -> str:
    """The warning a report leads with when too many runs stayed disturbed; empty otherwise."""
    n, again, still = disturbance_counts(runs)
    if not n or still <= TOO_NOISY_SHARE * n:
        return ""
    return (
        f"**This machine was too noisy for the stated precision**: {still} of {n} runs were still disturbed after "
        f"being measured again (more than {TOO_NOISY_SHARE:.0%}); their CPU per request includes time other tasks "
        "took. Rerun on a quieter machine, or read the on-CPU figures, which a disturbance moves far less."
    )


def instrument_line(runs: pd.DataFrame, calibration: dict | None = None) -> str:
    """What the instrument adds to each figure per request: the bound on the count (the load generator's count
    leaves at most one request per connection uncounted, so every figure per request is high by at most
    connections / requests), and, where tests/benchmarks/precision.py --calibrate measured this machine, each
    server's cost against no instrument at all."""
    if "requests" not in runs or "connections" not in runs or not len(runs):
        return ""
    requests = pd.to_numeric(runs["requests"], errors="coerce")
    share = pd.to_numeric(runs["connections"], errors="coerce") / requests
    hooked = int(pd.to_numeric(runs.get("server_requests"), errors="coerce").notna().sum()) if (
        "server_requests" in runs) else 0  # fmt: skip
    parts = [
        "no request is touched: each window's count is the load generator's, whose run lies inside it, so a figure "
        "per request is high by at most one uncounted request per connection: connections / requests, at most "
        f"{share.max():.3%} here (median {share.median():.3%})"
    ]
    if hooked:
        parts.append(f"{hooked} of {len(runs)} runs are older records, counted by the per-request hook, which cost the "
                     "cheapest server about 2 % per request")  # fmt: skip
    if calibration:
        per = calibration.get("servers", {})
        figures = ", ".join(
            f"{srv} {c['median'] - 1:+.1%} [{c['lo'] - 1:+.1%}, {c['hi'] - 1:+.1%}]" for srv, c in sorted(per.items())
        )
        parts.append(
            f"measured on {calibration.get('date', '?')} on {calibration.get('cpu_model', '?')} against no instrument "
            f"at all (main-thread CPU per request on `empty`, {calibration.get('rounds', '?')} rounds): {figures}"
        )
    else:
        parts.append(
            "its cost against no instrument at all has not been measured on this checkout "
            "(`.venv/bin/python tests/benchmarks/precision.py --calibrate` measures it and every later report shows it)"
        )
    return "**The instrument**: " + "; ".join(parts) + "."


def machine_line(runs: pd.DataFrame) -> str:
    """Where, with what and when the runs were measured, from their provenance columns.

    Every distinct value is named: after a partial rerun the runs can come from several
    commits or versions, and naming only one would misreport the others.
    """

    def every(column: str) -> str:
        return ", ".join(sorted(runs[column].astype(str).unique()))

    return (
        f"Measured on {every('cpu_model')} ({every('cpu_count')} logical CPUs, host {every('host')}, "
        f"Linux {every('kernel')}) with Node.js {every('node_version')}, {frameworks(runs)}, "
        f"pg {every('pg_version')}, PostgreSQL {every('postgres_version')} "
        f"({every('database_mode')}) and {clients(runs)}; runs from "
        f"{runs['started_at'].min()} to {runs['finished_at'].max()} (pipeline {every('pipeline_commit')})."
    )


def frameworks(runs: pd.DataFrame) -> str:
    """'express 5.3.0, fastify 5.12.8, hono 4.13.19': every framework the servers ran, with every version."""
    pairs = runs[["framework", "framework_version"]].astype(str).drop_duplicates()
    named = [f"{f} {v}" for f, v in sorted(pairs.itertuples(index=False)) if f != "node:http"]
    return ", ".join(named) or "node:http only"


def clients(runs: pd.DataFrame) -> str:
    """'autocannon 9.0.0, wrk debian/4.1.0-3+b2': every load generator with every version it ran."""
    pairs = runs[["client", "client_version"]].astype(str).drop_duplicates()
    return ", ".join(f"{c} {v}" for c, v in sorted(pairs.itertuples(index=False)))


def cpu_model_warning(metrics: pd.DataFrame) -> str:
    """A warning naming the cells whose ratios compare runs on different CPU models ('' if none)."""
    flags = [c for c in ("mixed_cpu_models_vs_express", "mixed_cpu_models_vs_node_http") if c in metrics]
    if not flags:
        return ""
    mixed = metrics[metrics[flags].fillna(False).any(axis=1)]
    if mixed.empty:
        return ""
    cells = ", ".join(f"{r.workload}/{r.server} c{r.connections}" for r in mixed.itertuples())
    models = sorted({m.strip() for v in metrics["cpu_model"].astype(str) for m in v.split(",")})
    return (
        f"**Warning: ratios compare runs measured on different CPU models** ({'; '.join(models)}). "
        f"They compare machines as well as frameworks for: {cells}. Pin one node type (see the cluster profiles)."
    )


def comparisons(metrics: pd.DataFrame, look: dict | None = None) -> str:
    """How the report's cost ratios were decided, all together: how many land in each outcome, what their
    intervals cover per comparison and as a family, and how far apart in time the two runs of their pairs were.
    With adaptive rounds (look), each interval's coverage is the one stated under the stopping rule."""
    names = {n: b for b, n in BASELINES.items() if f"outcome_{n}" in metrics}
    rows = metrics[~metrics["server"].astype(str).map(is_twin)]
    # A baseline against itself is 1 by construction: not a comparison.
    mine = {n: rows[rows["server"].astype(str).map(_base) != b] for n, b in names.items()}
    decided = pd.concat([mine[n][f"outcome_{n}"] for n in names], ignore_index=True).dropna() if names else pd.Series()
    if decided.empty:
        return "No cost ratio has an interval (one round), so none is decided: every outcome needs two rounds or more."
    margin = float(metrics["equivalence_margin"].dropna().iloc[0]) if "equivalence_margin" in metrics else 0.05
    counts = decided.value_counts()
    tally = ", ".join(f"{int(counts.get(o, 0))} {outcomes.phrase(o, margin)}" for o in outcomes.OUTCOMES)
    covers = pd.concat(
        [mine[n].loc[mine[n][f"outcome_{n}"].notna(), f"pair_coverage_{n}"] for n in names], ignore_index=True
    )
    parts = [
        f"Outcomes of the {len(decided)} cost ratios with an interval: {tally}. Cheaper or costlier means the whole "
        "interval lies beyond 1 (no A/A margin: the twin is a check of the design); equivalent means it lies inside "
        f"the margin of ±{margin * 100:.0f} % declared in config before the data; anything else is inconclusive, which "
        "means not shown either way, not the same",
        outcomes.family(covers if look is None else [look["coverage_under_stopping"]] * len(covers)),
    ]
    parts.append(_preemption(mine, names))
    gaps = [n for n in names if f"gap_s_{n}" in metrics]
    if gaps:
        median = pd.concat([mine[n][f"gap_s_{n}"] for n in gaps]).dropna()
        largest = pd.concat([mine[n][f"gap_s_{n}_max"] for n in gaps]).dropna()
        if len(median):
            parts.append(
                f"the two runs of a pair started a median of {median.median():.0f} s apart (per cell, over its "
                f"rounds), and at most {largest.max():.0f} s apart"
            )
    return "; ".join(parts) + "."


def _preemption(mine: dict, names: dict) -> str:
    """Whether leaving out the rounds with a disturbed run moves any headline ratio by more than half its interval,
    and which ratios cannot be checked because every one of their rounds had one."""
    moved, unchecked, decided = [], [], 0
    for n, b in names.items():
        col = f"preemption_matters_{n}"
        if col not in mine[n]:
            continue
        rows = mine[n][mine[n][f"outcome_{n}"].notna()]
        decided += len(rows)
        moved += [
            f"{r.workload}/{r.server} c{r.connections} against {b} ({getattr(r, f'cost_{n}'):.2f}x, "
            f"{getattr(r, f'cost_{n}_unpreempted'):.2f}x without)"
            for r in rows[rows[col].fillna(False).astype(bool)].itertuples()
        ]
        unchecked += [
            f"{r.workload}/{r.server} c{r.connections} against {b}"
            for r in rows[rows[f"cost_{n}_unpreempted"].isna()].itertuples()
        ]
    if not decided:
        return "no ratio could be checked without its disturbed runs"
    parts = []
    if unchecked:
        shown = ", ".join(unchecked[:6]) + (f" and {len(unchecked) - 6} more" if len(unchecked) > 6 else "")
        parts.append(f"**{len(unchecked)} of the {decided} ratios cannot be checked: no round without a disturbed "
                     f"run** ({shown})")  # fmt: skip
    if moved:
        shown = ", ".join(moved[:6]) + (f" and {len(moved) - 6} more" if len(moved) > 6 else "")
        parts.append(
            f"**leaving out the rounds with a disturbed run moves {len(moved)} of the {decided} ratios by more than "
            f"half their interval**: {shown}; read those with care"
        )
    elif len(unchecked) < decided:
        which = "these ratios" if not unchecked else "the others"
        parts.append(
            f"leaving out the rounds in which either run was still disturbed after it was measured again moves none "
            f"of {which} by more than half its interval"
        )
    return "; ".join(parts)


def opening(
    runs: pd.DataFrame, metrics: pd.DataFrame, look: dict | None = None, calibration: dict | None = None
) -> list[Block]:
    """What the report leads with: the answer per workload, the machine's state, what the instrument adds
    (calibration: tests/benchmarks/precision.py --calibrate's file, where it exists), its provenance, warnings;
    and with adaptive rounds (look), where they stopped."""
    noisy = too_noisy(runs)
    blocks: list[Block] = [
        *([Para(noisy, "warning")] if noisy else []),
        Items(glance(metrics)),
        Para("In full:"),
        Items(answer(metrics)),
        Para(comparisons(metrics, look)),
        *([Para(looks.sentence(look))] if look else []),
        Para(machine_state(runs, metrics)),
        *([Para(line)] if (line := instrument_line(runs, calibration)) else []),
        Para(machine_line(runs)),
    ]
    if warning := cpu_model_warning(metrics):
        blocks.append(Para(warning, "warning"))
    return blocks


# --- The cells -----------------------------------------------------------------------------


def _flags(r, cross: int) -> list[str]:
    out = []
    if r.noisy:
        out.append("noisy")
    preempted = getattr(r, "preempted_runs", 0)
    if pd.notna(preempted) and preempted > 0:
        out.append(f"disturbed ({int(preempted)} run{'s' if preempted > 1 else ''})")
    if bool(getattr(r, "twin_off", False)):
        out.append("twin off")
    if cross > 0:
        out.append("cross-session")
    mixed = (getattr(r, f"mixed_cpu_models_{n}", False) for n in BASELINES.values())
    if any(pd.notna(m) and bool(m) for m in mixed):
        out.append("mixed CPUs")
    return out


def _verdict(r) -> str:
    reason = getattr(r, "saturation_reason", None)
    return f"{r.saturation} ({reason})" if isinstance(reason, str) and reason else str(r.saturation)


def _server(r, control: str | None) -> str:
    server = str(r.server)
    return f"{server} (A/A twin)" if control and is_twin(server) else server


def _cross(metrics: pd.DataFrame) -> np.ndarray:
    cols = [f"cross_session_{n}" for n in BASELINES.values() if f"cross_session_{n}" in metrics]
    return metrics[cols].fillna(0).max(axis=1).to_numpy() if cols else np.zeros(len(metrics), dtype=int)


def cell_table(cells: pd.DataFrame, control: str | None, with_connections: bool = False) -> Table:
    """One row per cell, in the order given: CPU per request first (the headline figure), then the paired ratios,
    throughput, latency."""
    figure = figures.headline_of(cells)
    columns = [
        "server",
        *(["conn"] if with_connections else []),
        "flags",
        "runs",
        f"{figures.label(figure)} [interval]",
        "µs/req CPU",
        "cost vs express [interval]",
        "cost vs node-http [interval]",
        "req/s [interval]",
        "ELU",
        "p50 / p99 ms",
        "mean ms",
        "verdict",
    ]
    align = "l" + ("r" if with_connections else "") + "lrrrrrrrrrl"
    rows, classes = [], []
    for r, cross in zip(cells.itertuples(), _cross(cells), strict=True):
        rows.append(
            [
                _server(r, control),
                *([str(r.connections)] if with_connections else []),
                ", ".join(_flags(r, cross)),
                str(r.rounds),
                ci(getattr(r, figure), getattr(r, f"{figure}_lo"), getattr(r, f"{figure}_hi"), ".1f"),
                "n/a" if pd.isna(r.us_per_req_cpu) else f"{r.us_per_req_cpu:.1f}",
                ci(r.cost_vs_express, r.cost_vs_express_lo, r.cost_vs_express_hi, ".2f", "x"),
                ci(r.cost_vs_node_http, r.cost_vs_node_http_lo, r.cost_vs_node_http_hi, ".2f", "x"),
                ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi),
                f"{r.elu_utilization:.1%}",
                f"{_ms(r.latency_p50_ms)} / {_ms(r.latency_p99_ms)}",
                _ms(r.connections / r.req_per_s * 1000 if r.req_per_s else float("nan")),
                _verdict(r),
            ]
        )
        classes.append("" if str(r.saturation) == "server-bound" else "not-bound")
    return Table(columns, rows, align, classes)


def _ms(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.2f}"


def by_cost(cells: pd.DataFrame) -> pd.DataFrame:
    """Cells sorted by the headline figure, cheapest first (within each connection count)."""
    return cells.sort_values(["connections", figures.headline_of(cells)], na_position="last", kind="stable")


def key(metrics: pd.DataFrame) -> list[str]:
    """What every column, interval, flag and verdict in the tables means (only those that occur)."""
    ns = set(metrics["rounds"].astype(int))
    for name in BASELINES.values():
        if f"pairs_{name}" in metrics:
            ns |= {int(n) for n in metrics[f"pairs_{name}"] if n > 0}
    figure = figures.headline_of(metrics)
    items = [
        f"**{figures.label(figure)}**: {figures.noun(figure)} per request in microseconds "
        f"({figures.counted(figure)}), the headline figure (config's `headline`): lower is better; each table is "
        "sorted by it, cheapest first. **µs/req CPU**: process CPU (user + system) per request, which also counts "
        "GC and thread-pool work.",
        f"**cost vs express**, **cost vs node-http**: per round, this server's {figures.noun(figure)} per request "
        "over the baseline's in the same round, then the median over the rounds both were measured in; below 1.00x "
        "is cheaper than the baseline.",
        "**[lo–hi]**: a distribution-free interval for the median from order statistics, the narrowest "
        f"[x(k), x(n+1-k)] that covers at least {pct(CONFIDENCE)}, or min-max with its own lower coverage when "
        f"none does; n is **runs** for a figure, paired rounds for a ratio. Here: "
        f"{'; '.join(describe(n) for n in sorted(ns))}. A figure without brackets had one run (no interval) "
        "or identical bounds.",
        "**req/s**: requests the server received per second of its window (throughput: higher is better, but in a "
        "cell that is not server-bound it measures the client or the database more than the framework). "
        "**ELU**: the server's event-loop utilization over the window.",
    ]
    latency = "**p50 / p99 ms**: the load generator's latency percentiles, medians over the runs; lower is better. "
    if "autocannon" in set(metrics["client"].astype(str)):
        latency += (
            "autocannon reports them in whole milliseconds (its histogram records integer ms, rounding down), so "
            "0.00 means under 1 ms and a median of an even number of runs can end in .50. "
        )
    latency += (
        "**mean ms**: connections / req/s, the mean latency of a closed loop (Little's law), exact to the microsecond."
    )
    items.append(latency)
    cross = _cross(metrics)
    flags = {
        "noisy": (
            metrics["noisy"].fillna(False).any(),
            f"**noisy**: the runs' req/s or CPU per request varied by more than {pct(NOISY_CV)} "
            "(coefficient of variation).",
        ),
        "disturbed": (
            "preempted_runs" in metrics and (metrics["preempted_runs"].fillna(0) > 0).any(),
            "**disturbed (k runs)**: k of the cell's runs lost more of their window to other tasks on the server's "
            "CPU (or to the hypervisor) than the threshold, still after being measured again; they are kept.",
        ),
        "twin off": (
            "twin_off" in metrics and metrics["twin_off"].fillna(False).astype(bool).any(),
            "**twin off**: in this cell's peer group the A/A twin's interval excludes 1: two names of one server, "
            "measured side by side, came apart beyond their own noise, so the design (order, pairing, the machine) "
            "is off there; read its comparisons with care.",
        ),
        "cross-session": (
            (cross > 0).any(),
            "**cross-session**: in at least one round this cell and a baseline were measured by different "
            "Snakemake invocations, not back to back (listed under *Pairs not measured back to back*).",
        ),
        "mixed CPUs": (
            any(
                metrics[f"mixed_cpu_models_{n}"].fillna(False).astype(bool).any()
                for n in BASELINES.values()
                if f"mixed_cpu_models_{n}" in metrics
            ),
            "**mixed CPUs**: a ratio of this cell compares runs measured on different CPU models.",
        ),
    }
    items += [text for shown, text in flags.values() if shown]
    control = control_server(metrics)
    if control:
        items.append(
            f"**(A/A twin)**: {twins(metrics)[0]} is {control} measured a second time in every round, from the "
            f"same file under another name; its ratio to {control}, with its interval, checks the design (two names "
            "of one server, measured side by side, should not differ): a peer group whose twin interval excludes 1 "
            "is flagged **twin off**. It is a check, not a margin, and it is not ranked."
        )
    present = list(dict.fromkeys(metrics["saturation"].astype(str)))
    known = [v for v in VERDICTS if v in present] + [v for v in present if v not in VERDICTS]
    verdicts = "; ".join(f"**{v}**: {VERDICTS.get(v, 'see the cell’s saturation_reason')}" for v in known)
    items.append(
        f"**verdict**: {verdicts}. Cells that are not server-bound are greyed on the index page"
        + ("; the deciding figures follow each verdict in brackets." if "saturation_reason" in metrics else ".")
    )
    return items


def workload_tables(metrics: pd.DataFrame, workload: str, control: str | None, only_headline: bool) -> list[Block]:
    """A workload's tables: its headline connection count, then every other count (unless only_headline)."""
    cells = metrics[metrics["workload"].astype(str) == workload]
    top = headline(cells)
    blocks: list[Block] = [Heading(3, workload_title(workload))]
    for (client, stop), group in top.groupby([top["client"].astype(str), top["stop"].astype(str)]):
        conn = group["connections"].iloc[0]
        blocks += [
            Para(f"At {conn} connections (the headline, closest to {HEADLINE_CONNECTIONS}), {client} {stop}:"),
            cell_table(by_cost(group), control),
        ]
    rest = cells.drop(index=top.index)
    if len(rest) and not only_headline:
        blocks += [
            Para("Every other connection count, cheapest first within each:"),
            cell_table(by_cost(rest), control, with_connections=True),
        ]
    return blocks


def cross_session_pairs(runs: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Pairs of runs of one round (a cell and a baseline, or the A/A twin and its control) that different
    Snakemake sessions measured: one row per pair of cells, with the rounds."""
    columns = [*PEERS, "server", "baseline", "rounds"]
    if "session" not in runs or runs["session"].isna().all():
        return pd.DataFrame(columns=columns)
    r = runs[[*CELL, "round", "session"]].dropna(subset=["session"])
    r = r.astype({c: str for c in ["workload", "server", "client", "stopping_rule", "stop", "session"]})
    control = control_server(metrics)
    control = _base(control) if control else None
    baselines = [*BASELINES, *([control] if control and control not in BASELINES else [])]
    # Every server is paired with a baseline on its own Node.js.
    r = r.assign(_base=r["server"].map(_base), _node=r["server"].map(lambda s: runtime(s)[1]))
    found = []
    for baseline in baselines:
        base = r[r["_base"] == baseline].drop(columns="_base").rename(columns={"session": "base_session"})
        base = base.rename(columns={"server": "baseline"})
        pairs = r[r["_base"] != baseline].merge(base, on=[*PEERS, "round", "_node"])
        pairs = pairs[pairs["session"] != pairs["base_session"]]
        if baseline == control and baseline not in BASELINES:
            pairs = pairs[pairs["server"].map(is_twin)]
        found.append(pairs.drop(columns=["_base", "_node"]))
    pairs = pd.concat(found, ignore_index=True)
    # express against node-http and node-http against express are one pair of runs.
    first = np.where(pairs["server"] < pairs["baseline"], pairs["server"], pairs["baseline"])
    second = np.where(pairs["server"] < pairs["baseline"], pairs["baseline"], pairs["server"])
    pairs = pairs.assign(server=first, baseline=second).drop_duplicates([*PEERS, "server", "baseline", "round"])
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    rounds = (
        pairs.sort_values("round")
        .groupby([*PEERS, "server", "baseline"], sort=True)["round"]
        .agg(lambda s: ", ".join(map(str, s)))
        .rename("rounds")
        .reset_index()
    )
    # One line per cell and rounds: "express with fastify, node-http".
    order = {w: i for i, w in enumerate(ordered(rounds["workload"]))}
    return (
        rounds.groupby([*PEERS, "server", "rounds"], sort=True)["baseline"]
        .agg(", ".join)
        .reset_index()
        .sort_values(["workload", "connections", "server"], key=lambda c: c.map(order) if c.name == "workload" else c)
        .reset_index(drop=True)[columns]
    )


def cross_session_section(runs: pd.DataFrame, metrics: pd.DataFrame) -> list[Block]:
    pairs = cross_session_pairs(runs, metrics)
    if pairs.empty:
        return []
    setups = pairs[["client", "stop"]].drop_duplicates()
    lines = [
        f"{r.workload} at {r.connections} connections"
        + (f" ({r.client}, {r.stop})" if len(setups) > 1 else "")
        + f": {r.server} with {r.baseline} (round{'s' if ',' in r.rounds else ''} {r.rounds})"
        for r in pairs.itertuples()
    ]
    if len(lines) > MAX_LISTED_PAIRS:
        lines = [*lines[:MAX_LISTED_PAIRS], f"and {len(lines) - MAX_LISTED_PAIRS:,} more pairs of cells"]
    return [
        Heading(2, "Pairs not measured back to back"),
        Para(
            "In these rounds the two cells' runs were measured by different Snakemake invocations, so the "
            "machine may have changed between them and their ratio does not cancel that drift:"
        ),
        Items(lines),
    ]


def share_table(metrics: pd.DataFrame) -> Table:
    """The framework's share of each server's request CPU on every workload, both models."""
    m = headline(metrics)
    servers = m["server"].astype(str)
    base = servers.map(lambda s: runtime(s)[0])
    m = m[(base != "node-http") & ~servers.map(is_twin)]
    m = m.assign(_order=m["workload"].astype(str).map({w: i for i, w in enumerate(ordered(m["workload"]))}))
    m = m.sort_values(["_order", "us_per_req_elu"], kind="stable")

    def share(x: float) -> str:
        return "n/a" if pd.isna(x) else f"{x:.0%}"

    rows = [
        [
            str(r.server),
            str(r.workload),
            str(r.connections),
            f"{r.us_per_req_elu:.1f}",
            share(r.share_reference),
            share(r.share_baseline),
            ci(r.cost_vs_express, float("nan"), float("nan"), ".2f", "x"),
        ]
        for r in m.itertuples()
    ]
    columns = [
        "server",
        "workload",
        "conn",
        "µs/req ELU",
        "share (reference model)",
        "share (baseline model)",
        f"cost vs express ({figures.HEADLINES[figures.headline_of(metrics)][0]})",
    ]
    return Table(columns, rows, "llrrrrr")


def score_table(scores: pd.DataFrame) -> Table:
    def score(r) -> str:
        return ci(r.score, getattr(r, "score_lo", np.nan), getattr(r, "score_hi", np.nan), ".1f")

    def bound(r) -> str:
        if not hasattr(r, "server_bound_cells"):
            return ""
        return f"{int(r.server_bound_cells)} of {int(r.cells)}" + ("" if r.server_bound else " (not all)")

    def clean(r) -> str:
        if not hasattr(r, "score_unpreempted") or pd.isna(r.score_unpreempted):
            return ""
        return f"{r.score_unpreempted:.1f}" + (" **moved**" if r.preemption_matters else "")

    rows = [
        [str(r.server), score(r), str(getattr(r, "interval", "")), str(r.workloads), bound(r), clean(r)]
        for r in scores.itertuples()
    ]
    columns = ["server", "score (node-http = 100, higher is cheaper)", "interval", "workloads", "server-bound cells",
               "without disturbed runs"]  # fmt: skip
    return Table(columns, rows, "lrlrrr")


def body(
    runs: pd.DataFrame,
    metrics: pd.DataFrame,
    scores: pd.DataFrame,
    limit: int | None = None,
    metrics_href: str | None = None,
) -> list[Block]:
    """The tables after the opening: every cell by workload (only the headline cells past limit cells), the pairs
    measured apart, the framework share and the score."""
    present = set(metrics["workload"].astype(str))
    control = control_server(metrics)
    only_headline = limit is not None and len(metrics) > limit
    blocks: list[Block] = [Heading(2, "All cells"), Items(key(metrics))]
    if only_headline:
        where = f"[{metrics_href}]({metrics_href})" if metrics_href else "metrics.parquet"
        blocks.append(
            Para(
                f"{len(metrics):,} cells are too many for one page: listed are the headline cells (the connection "
                f"count closest to {HEADLINE_CONNECTIONS} on each workload). Every cell is in {where} and in "
                "summary.md."
            )
        )
    for workload in ordered(present):
        blocks += workload_tables(metrics, workload, control, only_headline)
    blocks += cross_session_section(runs, metrics)
    blocks += server_blocks(runs)
    if FRAMEWORK_ONLY in present:
        blocks += [
            Heading(2, "Framework share of the request's CPU"),
            Para(
                "Reference model: the framework's CPU per request on `empty`, held constant, over its CPU per request "
                "on the workload. Baseline model: (the framework's CPU per request on `empty` minus node-http's) over "
                "its CPU per request on the workload. Both are models, not measurements (see the data dictionary); "
                "a smaller framework share is better."
            ),
            share_table(metrics),
        ]
    if len(scores):
        blocks += [
            Heading(2, "Score"),
            Para(
                "Per server, 100 x the geometric mean over workloads of 1 / cost vs node-http (the paired ratio of "
                f"{figures.noun(figures.headline_of(metrics))} per request; connection counts averaged within a "
                "workload first): node-http = 100, "
                "higher is cheaper. It is taken per round, from each cell's ratio of that round, and given as the "
                "median over rounds with its order-statistic interval. A score over cells that are not all "
                "server-bound also measures the client or the database; *without disturbed runs* is the same score "
                "over the rounds in which none of the server's pairs had a disturbed run, **moved** where that lies "
                "more than half the interval away. The A/A twin is not ranked."
            ),
            score_table(scores),
        ]
    return blocks


def render(
    runs: pd.DataFrame,
    metrics: pd.DataFrame,
    scores: pd.DataFrame,
    generated_at: datetime,
    look: dict | None = None,
    calibration: dict | None = None,
) -> str:
    """The whole summary document, as Markdown; look is where adaptive rounds stopped (None: fixed rounds);
    calibration: the instrument's measured cost on this machine, where measured."""
    blocks = [
        Heading(1, "Summary"),
        *opening(runs, metrics, look, calibration),
        *body(runs, metrics, scores),
        Para(f"Generated {generated_at.isoformat(timespec='seconds')} from {len(runs)} runs."),
    ]
    return to_markdown(blocks)

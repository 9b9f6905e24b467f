"""The report's section on cost per request against load: each server at the fixed rates common to all and at its
own ceiling, and how each ratio moves from low load to saturation."""

import pandas as pd

from nodebench.analysis.costcurve import (
    CAPACITY_DRIFT,
    SAME_LOAD_ELU,
    SATURATION,
    SUSTAINED_SHARE,
    capacity_drift,
    cost_curve,
    movement,
)
from nodebench.analysis.intervals import describe
from nodebench.catalogue import figures
from nodebench.catalogue.baselines import BASELINES
from nodebench.render.document import Block, Heading, Items, Para, Table
from nodebench.render.latency_report import _ci, _num


def _ratio(r, column: str) -> str:
    """'0.41x [0.39, 0.44]' from a row's column and its _lo/_hi, or '-'."""
    value, lo, hi = (getattr(r, f"{column}{s}") for s in ("", "_lo", "_hi"))
    if pd.isna(value):
        return "-"
    return f"{value:.2f}x" + ("" if pd.isna(lo) or pd.isna(hi) else f" [{lo:.2f}, {hi:.2f}]")


def ratio_line(rows: pd.DataFrame, baseline: str, headline: str = figures.DEFAULT_HEADLINE) -> str:
    """'**empty**, fastify / express: 0.41x [0.39, 0.44] (cheaper) at 1,000 req/s; ...; 0.14x [...] (cheaper) at
    saturation (its ELU 0.07 below express's: not at the same load, ...).', one server's ratios in load order."""
    name = "vs_express" if baseline == "express" else "vs_node_http"
    parts = []
    for r in rows.itertuples():
        ratio = getattr(r, f"cost_{name}")
        if pd.isna(ratio):
            parts.append(f"no pair at {r.load}")
            continue
        text = _ratio(r, f"cost_{name}")
        outcome = getattr(r, f"outcome_{name}")
        text += f" ({outcome})" if isinstance(outcome, str) and outcome else ""
        text += f" at {r.load}"
        gap = getattr(r, f"elu_gap_{name}")
        if r.load == SATURATION and not pd.isna(gap) and abs(gap) > SAME_LOAD_ELU:
            side = "above" if gap > 0 else "below"
            text += f" (its ELU {abs(gap):.2f} {side} {baseline}'s: not at the same load, read the fixed rates)"
        elif not getattr(r, f"sustained_{name}"):
            text += " (not sustained: not the same load)"
        parts.append(text)
    first = rows.iloc[0]
    pairs = sorted({int(n) for n in rows[f"pairs_{name}"].dropna()})
    method = f" (intervals over paired rounds, {'; '.join(describe(n) for n in pairs)})" if pairs else ""
    head = f"**{first.workload}**, {first.server} / {baseline}: {figures.noun(headline)} per request "
    return head + "; ".join(parts) + method + "."


def instrument_p99(curve: pd.DataFrame, instrument: pd.DataFrame | None) -> tuple[list[str], list[str]]:
    """Per cost-curve row: the instrument's p99 at its rate ('-' at saturation or where not calibrated), and the
    row's p99 less Express's at the same load, said to be within the instrument where it is no larger than the
    instrument's p99 spread at that rate (how far the instrument alone moves a p99 between rounds): not a difference
    it can tell."""
    cal = {}
    if instrument is not None:
        cal = {(r.workload, int(r.connections), int(r.rate)): r for r in instrument.itertuples()}
    express = {
        (r.workload, int(r.connections), r.load): r.latency_p99_ms for r in curve.itertuples() if r.server == "express"
    }
    said, diffs = [], []
    for r in curve.itertuples():
        c = None if pd.isna(r.rate) else cal.get((r.workload, int(r.connections), int(r.rate)))
        said.append("-" if c is None else _ci(c.p99_ms, c.p99_ms_lo, c.p99_ms_hi, ".2f"))
        base = express.get((r.workload, int(r.connections), r.load))
        # At saturation the two are not at the same load (each at its own ceiling): no difference is read there.
        if r.server == "express" or pd.isna(r.rate) or base is None or pd.isna(base) or pd.isna(r.latency_p99_ms):
            diffs.append("-")
            continue
        diff = float(r.latency_p99_ms) - float(base)
        text = f"{diff:+.2f}"
        if c is not None and not pd.isna(c.spread_p99_ms) and abs(diff) <= c.spread_p99_ms:
            text += f" (within the instrument's {c.spread_p99_ms:.2f})"
        diffs.append(text)
    return said, diffs


def costcurve_blocks(metrics: pd.DataFrame, instrument: pd.DataFrame | None = None) -> list[Block]:
    """Per workload: each server's cost per request at each fixed rate and at saturation, and its ratios; with the
    instrument's p99 at each rate where it was calibrated (analysis/latency.instrument_table)."""
    curve = cost_curve(metrics)
    if curve.empty:
        return []
    cal_p99, p99_vs = instrument_p99(curve, instrument)
    headline = figures.headline_of(metrics)  # what the cost ratios (cost_vs_*) read
    short = figures.HEADLINES[headline][0]
    lines = []
    for baseline in BASELINES:
        if not (curve["server"] == baseline).any():
            continue
        moved = movement(curve, baseline)
        for _, rows in moved.groupby(["workload", "connections", "server"], sort=True):
            lines.append(ratio_line(rows, baseline, headline))
    table = [
        [r.workload, r.server, r.load, _num(r.req_per_s, ",.0f"), _num(r.delivered_share, ".1%"),
         _num(r.elu_utilization, ".2f"), _ci(r.us_per_req_elu, r.us_per_req_elu_lo, r.us_per_req_elu_hi, ".1f"),
         _ci(r.us_per_req_oncpu, r.us_per_req_oncpu_lo, r.us_per_req_oncpu_hi, ".1f"), _ratio(r, "cost_vs_express"),
         _ratio(r, "cost_oncpu_vs_express"), _ratio(r, "cost_vs_node_http"), _num(r.latency_p99_ms, ".2f"),
         p99_vs[i], cal_p99[i], str(int(r.rounds)), str(r.interval)]
        for i, r in enumerate(curve.itertuples())
    ]  # fmt: skip
    unsustained = curve[~curve["sustained"]]
    blocks: list[Block] = [
        Heading(2, "Cost per request against load"),
        Para(
            "The same servers at fixed arrival rates common to all of them (the open loop, servers/loadgen/"
            "openloop.js, sending on schedule) and at their own ceiling (*saturation*: wrk's closed loop, measured "
            "in the same rounds, just before). At a fixed rate two servers do the same work per second, so their "
            "ratio compares like with like; at saturation each does all it can, and a cheap server's cost per "
            "request falls more than an expensive one's (a saturated event loop serves many requests per turn and "
            "spreads its fixed costs over them). *Which to read*: choosing a framework for a service at a known "
            "request rate, read the ratio at the nearest fixed rate; asking how many requests one core can serve, "
            "read saturation, and only where both servers' ELUs were within "
            f"{SAME_LOAD_ELU:.2f} of each other. Ratios are this server's cost over the baseline's, paired round "
            "by round at the same load (below 1: cheaper), median over rounds [interval], with the four outcomes. "
            "*p99*: the open loop's, from each request's scheduled time (wrk's at saturation); *p99 - express's*: "
            "its difference from Express's at the same fixed rate, ms, *within the instrument* where no larger "
            "than how far the instrument alone moves a p99 between rounds at that rate; *instrument's p99*: the "
            "calibration server's (a fixed delay, *The instrument in every round*) at that rate, where the block "
            "measured it."
        ),
        Items(lines),
        Table(
            [
                "workload",
                "server",
                "load",
                "req/s",
                "delivered",
                "ELU",
                "ELU us/req",
                "on-CPU us/req",
                f"vs express ({short})",
                "vs express (on-CPU)",
                f"vs node:http ({short})",
                "p99 (ms)",
                "p99 - express's",
                "instrument's p99",
                "rounds",
                "interval",
            ],
            table,
            "lllrrrrrrrrrrrrl",
        ),  # fmt: skip
    ]
    if len(unsustained):
        which = ", ".join(f"{r.workload}/{r.server} at {r.load}" for r in unsustained.itertuples())
        blocks.append(
            Para(
                f"Not sustained (under {SUSTAINED_SHARE:.0%} of the rate delivered, so not at the offered load): "
                f"{which}. Lower the rates (experiments.yaml, rates_per_s) to below the slowest server's capacity."
            )
        )
    return blocks


def sweep_blocks(runs: pd.DataFrame) -> list[Block]:
    """Each open-loop sweep's capacity before and after it, per workload and server, with the sweeps whose two
    capacities differ by more than CAPACITY_DRIFT named (round and drift)."""
    drift = capacity_drift(runs)
    if drift.empty:
        return []
    lines = []
    for (workload, server, connections), g in drift.groupby(["workload", "server", "connections"], sort=True):
        flagged = g[g["flagged"]]
        said = (
            f"**{server}** on `{workload}` at {connections} connections: {len(g)} sweeps, capacity "
            f"{g['before_req_per_s'].median():,.0f} req/s before and {g['after_req_per_s'].median():,.0f} after "
            f"(medians), the change {g['drift'].median():+.1%} (median; {g['drift'].min():+.1%} to "
            f"{g['drift'].max():+.1%}); "
        )
        if len(flagged):
            rounds = ", ".join(f"round {int(r['round'])} ({r['drift']:+.1%})" for _, r in flagged.iterrows())
            said += f"**{len(flagged)} flagged**: {rounds}"
        else:
            said += "none flagged"
        lines.append(said)
    n, k = len(drift), int(drift["flagged"].sum())
    return [
        Heading(2, "Capacity before and after each sweep"),
        Para(
            "Each server's capacity (wrk's closed loop, the same workload, connections and window) is measured "
            "just before its open-loop runs of the round and again just after them. A sweep whose two capacities "
            f"differ by more than {CAPACITY_DRIFT:.0%} is flagged: the server's ceiling did not hold while the "
            "sweep was measured, so a share of capacity it sent at, or a cost compared with its ceiling, is not "
            f"what it says. {k} of {n} sweeps flagged ({k / n:.0%})."
        ),
        Items(lines),
    ]

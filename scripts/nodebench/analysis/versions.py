"""Versions as an axis: does upgrading Node.js, or a framework's major, change what a request costs?

Two comparisons, each paired round by round (a run against its partner's run of the same
cell and round, measured minutes apart in one shuffled order, so the machine's drift
between rounds cancels), each read as the median of the rounds' ratios with the
order-statistic interval of intervals.median_interval:

- **node**: a server on each Node.js major against the same server on the reference
  major (REFERENCE_NODE, Node.js 20): express@node26 / express@node20.
- **major**: a framework's current major against its previous one on the same Node.js,
  the configurations of MAJORS: express / express4, fastify / fastify4.

Each ratio is set against the A/A noise floor of its workload (metrics' noise_floor_log:
how far apart, on a log scale, the A/A control's two names came on this machine, in this
run) and ends in one of outcomes.OUTCOMES: cheaper, costlier, equivalent within the
declared margin, or inconclusive.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import intervals, outcomes
from nodebench.analysis.metrics import PEERS, Samples, paired_ratios
from nodebench.catalogue.figures import HEADLINE_COLUMN, headline_of
from nodebench.plan import MAJORS
from nodebench.runs import SYSTEM_NODE, is_twin, on_node, runtime

#: The Node.js major every other major is compared with.
REFERENCE_NODE = "20"
#: Pairs whose runs started further apart than this (median, minutes) are called out: not back to back.
FAR_APART_MIN = 5.0
#: What a framework configuration's major is, for the words of a report.
MAJOR_NAMES = {"express": "Express 5", "express4": "Express 4", "fastify": "Fastify 5", "fastify4": "Fastify 4"}
COLUMNS = [
    "kind", "server", "node", "compared_to", "workload", "connections", "client", "stop",
    "ratio", "ratio_lo", "ratio_hi", "throughput_ratio", "pairs", "coverage", "interval",
    "us_per_req", "us_per_req_compared", "noise_floor", "noise_floor_log", "outcome", "equivalence_margin",
    "preempted_runs", "preempted_runs_compared", "pair_gap_min", "pair_gap_max_min", HEADLINE_COLUMN,
]  # fmt: skip


def node_label(node: str) -> str:
    """'Node.js 22', or the pipeline's own."""
    return "the pipeline's Node.js" if node == SYSTEM_NODE else f"Node.js {node}"


def _partners(keys: pd.DataFrame, wanted: list[str | None]) -> np.ndarray:
    """Per cell, the index of the cell with the same peers and the wanted server (-1 where none is measured)."""
    index = {(*row[:-1], row[-1]): i for i, row in enumerate(keys[[*PEERS, "server"]].astype(str).itertuples(False))}
    peers = keys[PEERS].astype(str).itertuples(index=False)
    return np.array([index.get((*p, w), -1) if w else -1 for p, w in zip(peers, wanted, strict=True)], dtype=int)


def reference_node(names: list[tuple[str, str]], wanted: str = REFERENCE_NODE) -> str:
    """The major others are compared with: Node.js 20 when measured, else the oldest major measured."""
    majors = sorted({int(node) for _, node in names if node != SYSTEM_NODE})
    return wanted if not majors or int(wanted) in majors else str(majors[0])


def table(
    runs: pd.DataFrame, metrics: pd.DataFrame, reference: str = REFERENCE_NODE, margin: float = outcomes.DEFAULT_MARGIN
) -> pd.DataFrame:
    """Every node and major comparison the runs allow: one row per cell and comparison (COLUMNS)."""
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    samples = Samples(runs)
    keys = samples.keys
    names = [runtime(s) for s in keys["server"].astype(str)]
    reference = reference_node(names, reference)
    headline = headline_of(metrics)  # the figure the metrics' cost ratios (and their noise floors) read
    cost = samples(headline)
    median_cost = intervals.median_interval(cost)[0]
    preempted = _preempted(metrics, keys)
    comparisons = {
        # Another major of Node.js against the reference, the same server.
        # (An A/A twin is the noise floor's, not a server of its own.)
        "node": [
            on_node(base, reference) if node not in (reference, SYSTEM_NODE) and not is_twin(base) else None
            for base, node in names
        ],
        # A framework's current major against its previous one, the same Node.js.
        "major": [on_node(MAJORS[base], node) if base in MAJORS else None for base, node in names],
    }
    floors = _noise_floors(metrics)
    parts = []
    for kind, wanted in comparisons.items():
        partner = _partners(keys, wanted)
        has = partner >= 0
        if not has.any():
            continue
        ratios = paired_ratios(samples, partner, kind, headline)
        rows = keys[has].assign(
            kind=kind,
            server=[names[i][0] for i in np.flatnonzero(has)],
            node=[names[i][1] for i in np.flatnonzero(has)],
            compared_to=[
                runtime(wanted[i])[1] if kind == "node" else runtime(wanted[i])[0] for i in np.flatnonzero(has)
            ],
            ratio=ratios[f"cost_{kind}"][has],
            ratio_lo=ratios[f"cost_{kind}_lo"][has],
            ratio_hi=ratios[f"cost_{kind}_hi"][has],
            throughput_ratio=ratios[f"throughput_{kind}"][has],
            pairs=ratios[f"pairs_{kind}"][has],
            coverage=ratios[f"pair_coverage_{kind}"][has],
            us_per_req=median_cost[has],
            us_per_req_compared=median_cost[partner[has]],
            preempted_runs=preempted[has],
            preempted_runs_compared=preempted[partner[has]],
            pair_gap_min=ratios[f"gap_s_{kind}"][has] / 60,
            pair_gap_max_min=ratios[f"gap_s_{kind}_max"][has] / 60,
        )
        parts.append(rows)
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(parts, ignore_index=True).merge(floors, on=PEERS, how="left")
    out["interval"] = [intervals.describe(int(n)) for n in out["pairs"]]
    out["noise_floor"] = outcomes.relative(out["noise_floor_log"])
    out["equivalence_margin"] = float(margin)
    out[HEADLINE_COLUMN] = headline
    out["outcome"] = pd.Series(outcomes.decide(out["ratio_lo"], out["ratio_hi"], margin), index=out.index, dtype=object)
    out = out.astype({"workload": str, "client": str, "stop": str})
    return (
        out[COLUMNS]
        .sort_values(["kind", "server", "workload", "connections", "node"], kind="stable")
        .reset_index(drop=True)
    )


def _preempted(metrics: pd.DataFrame, keys: pd.DataFrame) -> np.ndarray:
    """Per cell of keys, how many of its runs the metrics flagged as preempted (0 where unknown)."""
    if "preempted_runs" not in metrics:
        return np.zeros(len(keys), dtype=int)
    cols = [c for c in keys.columns if c in metrics]
    found = keys.astype(str).merge(
        metrics[[*cols, "preempted_runs"]].astype({c: str for c in cols}), on=cols, how="left"
    )
    return found["preempted_runs"].fillna(0).to_numpy(dtype=int)


def _noise_floors(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per peer group (workload, connections, client, stop), the A/A noise floor the metrics found there."""
    if "noise_floor_log" not in metrics:
        return pd.DataFrame(columns=[*PEERS, "noise_floor_log"])
    floors = metrics[[*PEERS, "noise_floor_log"]].dropna(subset=["noise_floor_log"])
    floors = floors.astype(dict.fromkeys(["workload", "client", "stopping_rule", "stop"], str))
    return floors.drop_duplicates(subset=PEERS)


def _phrase(row) -> str:
    return f"{row.ratio:.2f}x [{row.ratio_lo:.2f}-{row.ratio_hi:.2f}] on {row.workload}"


def sentences(t: pd.DataFrame, margin: float = outcomes.DEFAULT_MARGIN) -> list[str]:
    """One generated sentence per server and comparison, giving each comparison's outcome (outcomes.OUTCOMES)."""
    out = []
    for (kind, server, _), rows in t.groupby(["kind", "server", t["node"].where(t["kind"] == "major", "")], sort=True):
        rows = rows.dropna(subset=["ratio"])
        if rows.empty:
            continue
        floor = rows["noise_floor"].dropna()
        floor_text = (
            f"against the A/A noise floor (up to {floor.max() * 100:.1f} %) and an equivalence margin of "
            f"±{margin * 100:.0f} %"
            if len(floor)
            else f"with no A/A noise floor measured, and an equivalence margin of ±{margin * 100:.0f} %"
        )

        def said(r) -> str:
            return f"{_phrase(r)}: {outcomes.phrase(r.outcome if isinstance(r.outcome, str) else None, margin)}"

        if kind == "node":
            lead = f"**{server}**, CPU per request against Node.js {rows['compared_to'].iloc[0]}: " + "; ".join(
                f"Node.js {node}: " + ", ".join(said(r) for r in grp.itertuples())
                for node, grp in rows.groupby("node", sort=False)
            )
        else:
            old = MAJOR_NAMES.get(rows["compared_to"].iloc[0], rows["compared_to"].iloc[0])
            new = MAJOR_NAMES.get(server, server)
            lead = f"**{old} to {new}** ({node_label(rows['node'].iloc[0])}), CPU per request: " + ", ".join(
                said(r) for r in rows.itertuples()
            )
        verdict = f"each outcome is decided from its interval {floor_text}."
        caveats = []
        spoiled = rows[(rows["preempted_runs"] > 0) | (rows["preempted_runs_compared"] > 0)]
        if len(spoiled):
            n = int(spoiled["preempted_runs"].sum() + spoiled["preempted_runs_compared"].sum())
            caveats.append(
                f"{len(spoiled)} of these {len(rows)} comparisons {'includes' if len(spoiled) == 1 else 'include'} "
                f"runs still disturbed after being measured again ({n} run{'' if n == 1 else 's'}): read them with care"
            )
        apart = rows[rows["pair_gap_min"] > FAR_APART_MIN]
        if len(apart):
            caveats.append(
                f"{len(apart)} of them {'pairs' if len(apart) == 1 else 'pair'} runs measured up to a median of "
                f"{apart['pair_gap_min'].max():.0f} min apart, not back to back"
            )
        tail = "".join(f" {c[0].upper()}{c[1:]}." for c in caveats)
        out.append(f"{lead}. {verdict[0].upper()}{verdict[1:]}{tail}")
    return out


__all__ = ["COLUMNS", "MAJORS", "REFERENCE_NODE", "sentences", "table"]

"""The scenario score: each server against bare node:http over a set of scenarios, round by round, as seed 004.

Seed 004 scores a server by "the geometric mean over all twelve scenarios against bare
node:http, so no single one can carry or sink a server", node:http = 100, from req/s.
Ours is the same geometric mean from CPU per request (node:http's us/req over the
server's, so higher is better, as in the seed), and beside it the seed's own req/s
definition, so a reader sees where the two disagree.

Every ratio pairs a server's run with node:http's run of the same cell in the same round
(measured minutes apart, in one shuffled order), so the machine's drift between rounds
cancels. A round's score needs every scenario of the set in that round for both; the
score is read as its median over rounds and its range (min to max over rounds), which
the seed also asks of its readers ("a range, not a rank").
"""

import numpy as np
import pandas as pd

from nodebench.catalogue.workloads import DATABASE_SET, SCORE_BASELINE, SEED_SET, WORKLOADS

BASELINE = SCORE_BASELINE
#: basis -> (run column, True when a higher value is better for the server).
BASES = {"cpu": ("us_per_req_elu", False), "rps": ("req_per_s", True)}
SET_NAMES = {SEED_SET: "the seed's twelve scenarios", DATABASE_SET: "the database set"}
#: The seed's published scores (seeds/004: req/s, one 4-core GitHub runner, median of three runs), to set beside
#: ours. Quoted, not measured here.
SEED_PUBLISHED = {"node-http": 100.0, "fastify": 89.9, "hono": 84.5, "express": 46.0}
CELL = ["client", "stop", "workload", "connections"]


def cell_label(workload: str, connections: int, levels: int) -> str:
    """'hello c512' where a scenario has several connection levels in the set, else its name."""
    return f"{workload} c{connections}" if levels > 1 else workload


def cell_ratios(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per scenario cell, server and round: 100 x the server's figure against the baseline's in that round.

    Columns: score_set, client, stop, workload, connections, cell, server, round, basis, pct.
    Runs of workloads in no score set, and the baseline itself, give no rows.
    """
    cols = [*CELL, "server", "round", *(c for c, _ in BASES.values())]
    df = runs[[c for c in cols if c in runs]].copy()
    df["score_set"] = df["workload"].map(lambda w: WORKLOADS[w].score_set if w in WORKLOADS else None)
    df = df[df["score_set"].notna()]
    base = df[df["server"] == baseline].drop(columns=["server"])
    others = df[df["server"] != baseline]
    keys = ["score_set", *CELL, "round"]
    paired = others.merge(base, on=keys, suffixes=("", "_base"))
    rows = []
    for basis, (col, higher_better) in BASES.items():
        ratio = paired[col] / paired[f"{col}_base"] if higher_better else paired[f"{col}_base"] / paired[col]
        rows.append(paired[[*keys, "server"]].assign(basis=basis, pct=100.0 * ratio))
    out = pd.concat(rows, ignore_index=True)
    levels = out.groupby(["score_set", "workload"])["connections"].transform("nunique")
    out["cell"] = [cell_label(w, c, n) for w, c, n in zip(out["workload"], out["connections"], levels, strict=True)]
    return out[["score_set", *CELL, "cell", "server", "round", "basis", "pct"]]


def round_scores(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per score set, client, server, basis and round: the geometric mean of the pcts over the set's cells.

    A round counts only where it has every cell of the set that any round has (for that server);
    cells is how many went into it.
    """
    group = ["score_set", "client", "stop", "server", "basis"]
    expected = ratios.groupby(group)["cell"].nunique().rename("expected")
    per = ratios.groupby([*group, "round"]).agg(
        score=("pct", lambda p: float(np.exp(np.log(p).mean()))), cells=("cell", "nunique")
    )
    per = per.join(expected, on=group).reset_index()
    return per[per["cells"] == per["expected"]].drop(columns=["expected"])


def summarise(values: pd.Series) -> dict:
    return {
        "median": float(values.median()),
        "lo": float(values.min()),
        "hi": float(values.max()),
        "rounds": int(values.size),
    }


def table(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """The scenario table: one row per round score (kind 'score') and per cell's median (kind 'cell').

    kind 'score': score_set, client, stop, server, basis, median, lo, hi (min and max over rounds),
    rounds, cells. kind 'cell': the same keys plus workload, connections and cell; median, lo, hi of the
    pct over rounds. The baseline appears with 100 everywhere its own runs exist.
    """
    ratios = cell_ratios(runs, baseline)
    if ratios.empty:
        return pd.DataFrame(columns=["kind", "score_set", "server", "basis", "median", "lo", "hi", "rounds"])
    scores = round_scores(ratios)
    group = ["score_set", "client", "stop", "server", "basis"]
    score_rows = [
        {**dict(zip(group, key, strict=True)), "kind": "score", **summarise(g["score"]), "cells": int(g["cells"].max())}
        for key, g in scores.groupby(group)
    ]
    cgroup = [*group, "workload", "connections", "cell"]
    cell_rows = [
        {**dict(zip(cgroup, key, strict=True)), "kind": "cell", **summarise(g["pct"])}
        for key, g in ratios.groupby(cgroup)
    ]
    out = pd.DataFrame(score_rows + cell_rows)
    # The baseline's own row: 100 by definition, shown so the table reads like the seed's.
    keys = ["kind", "score_set", "client", "stop", "basis", "workload", "connections", "cell"]
    base = out.groupby(keys, dropna=False).agg(rounds=("rounds", "max"), cells=("cells", "max")).reset_index()
    base = base.assign(server=baseline, median=100.0, lo=100.0, hi=100.0)
    return pd.concat([out, base], ignore_index=True)


def order(names) -> list[str]:
    """Cells in catalogue order (then by connections)."""
    rank = {w: i for i, w in enumerate(WORKLOADS)}
    return sorted(set(names), key=lambda c: (rank.get(c.split(" ")[0], len(rank)), c))


def furthest(t: pd.DataFrame, server: str, score_set: str, basis: str = "cpu") -> tuple[str, float, str, float] | None:
    """(cell furthest above the server's score, its pct, cell furthest below, its pct), relative to the score."""
    s = t[(t.kind == "score") & (t.server == server) & (t.score_set == score_set) & (t.basis == basis)]
    c = t[(t.kind == "cell") & (t.server == server) & (t.score_set == score_set) & (t.basis == basis)]
    if s.empty or len(c) < 2:
        return None
    rel = c.set_index("cell")["median"] / float(s["median"].iloc[0])
    return (
        rel.idxmax(),
        float(c.set_index("cell")["median"][rel.idxmax()]),
        rel.idxmin(),
        float(c.set_index("cell")["median"][rel.idxmin()]),
    )

"""Cost per request against load: each server at fixed rates common to every server (the open loop's rates_per_s,
stop label -r<rate>) and at its own ceiling (the closed loop's capacity cell beside them), with the paired ratios
at each. The instrument's calibration (catalogue/calibration.py), measured at the same rates, is left out: its cost
is its spin's; the report shows its latency beside the servers'.

"X costs N times Y per request" depends on the load it is read at: a saturated event loop serves many requests per
turn and spreads its fixed costs over them, so a cheap server's cost per request falls towards its ceiling more
than an expensive one's. At a fixed rate both servers do the same work per second; at saturation each does all it
can, and two servers whose ELUs differ are not at the same load either. The curve is read from the metrics table
(one row per cell, its paired ratios and outcomes already there): nothing here is measured again.
"""

import numpy as np
import pandas as pd

from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.calibration import is_calibration
from nodebench.catalogue.clients import CAPACITY_CLIENT, CLIENTS, Stop
from nodebench.catalogue.thresholds import SUSTAINED_SHARE

#: At saturation, two servers whose event loops were busier than each other by more than this are not at the
#: same load: their ratio says so and points to the ratios at fixed rates.
SAME_LOAD_ELU = 0.05
#: A fixed rate a server delivered less than SUSTAINED_SHARE of was beyond what it (or the client) sustained: that
#: point is not at the offered load, and its ratios are not same-load ratios.
#: An open-loop sweep whose capacity, measured again after it, moved by more than this share from the one before
#: it is flagged: the server's ceiling (and its shares of it) did not hold while the sweep was measured.
CAPACITY_DRIFT = 0.05
#: The label of a server's point at its own ceiling.
SATURATION = "saturation"
_FIGURES = ["us_per_req_elu", "us_per_req_oncpu"]
_RATIOS = ["cost", "cost_oncpu"]
#: The cost-curve table's columns.
COLUMNS = [
    "workload", "connections", "server", "load", "rate", "req_per_s", "delivered_share", "sustained",
    "elu_utilization", *(f"{f}{s}" for f in _FIGURES for s in ("", "_lo", "_hi")), "latency_p99_ms", "rounds",
    "interval",
    *(f"{r}_{b}{s}" for b in BASELINES.values() for r in _RATIOS for s in ("", "_lo", "_hi")),
    *(f"outcome_{b}" for b in BASELINES.values()), *(f"elu_gap_{b}" for b in BASELINES.values()),
    *(f"sustained_{b}" for b in BASELINES.values()), *(f"pairs_{b}" for b in BASELINES.values()),
]  # fmt: skip


def _rate(stop: str) -> int | None:
    try:
        return Stop.parse(str(stop)).rate
    except ValueError:
        return None


def cost_curve(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per server and load: each fixed rate (load '2,000 req/s', rate 2000) and the server's ceiling (load
    'saturation', rate NaN, from the capacity cell measured beside the rates in the same rounds), in load order.

    Each row has the cost per request (ELU and main-thread on-CPU) with intervals, the cost ratios to Express and
    to node:http paired round by round with the partner at the same load, and their outcomes; delivered_share is
    req/s over the rate (NaN at saturation) and `sustained` whether it reached SUSTAINED_SHARE (sustained_<baseline>:
    it and its baseline both did, so their ratio is at the same load); elu_gap_<baseline> is this server's ELU less
    its baseline's at the same load (what makes a saturation ratio not like with like).
    """
    if metrics.empty or "client" not in metrics:
        return pd.DataFrame(columns=COLUMNS)
    m = metrics.assign(
        workload=metrics["workload"].astype(str),
        server=metrics["server"].astype(str),
        client=metrics["client"].astype(str),
        stop=metrics["stop"].astype(str),
    )
    # The instrument's calibration (fixed-delay) spins its delay: its cost per request is not a server's.
    m = m[~m["server"].map(is_calibration)]
    open_loop = m["client"].map(lambda c: c in CLIENTS and CLIENTS[c].open_loop)
    rates = m["stop"].map(_rate)
    fixed = m[open_loop & rates.notna()].assign(rate=rates[open_loop & rates.notna()].astype(float))
    if fixed.empty:
        return pd.DataFrame(columns=COLUMNS)
    # The capacity cells of the fixed rates' cells: the same workload, server and connections, the closed loop's
    # client and the rate's stopping rule without its rate.
    wanted = {(r.workload, r.server, int(r.connections), Stop.parse(r.stop).closed.label) for r in fixed.itertuples()}
    closed = m[(m["client"] == CAPACITY_CLIENT)]
    columns = (closed["workload"], closed["server"], closed["connections"].astype(int), closed["stop"])
    keys = list(zip(*columns, strict=True))
    ceiling = closed[[k in wanted for k in keys]].assign(rate=np.nan)
    out = pd.concat([fixed, ceiling], ignore_index=True)
    out["load"] = [SATURATION if np.isnan(r) else f"{r:,.0f} req/s" for r in out["rate"]]
    out["delivered_share"] = out["req_per_s"] / out["rate"]
    out["sustained"] = out["rate"].isna() | (out["delivered_share"] >= SUSTAINED_SHARE)
    for baseline, name in BASELINES.items():
        base = out[out["server"] == baseline][["workload", "connections", "load", "elu_utilization", "sustained"]]
        merged = out[["workload", "connections", "load"]].merge(
            base.rename(columns={"elu_utilization": "_base_elu", "sustained": "_base_sustained"}),
            on=["workload", "connections", "load"],
            how="left",
        )
        out[f"elu_gap_{name}"] = out["elu_utilization"].to_numpy() - merged["_base_elu"].to_numpy()
        out[f"sustained_{name}"] = out["sustained"].to_numpy() & merged["_base_sustained"].fillna(True).to_numpy(bool)
    for column in COLUMNS:
        if column not in out:
            out[column] = np.nan
    out["_order"] = out["rate"].fillna(np.inf)
    out = out.sort_values(["workload", "connections", "server", "_order"], kind="stable")
    return out[COLUMNS].reset_index(drop=True)


def movement(curve: pd.DataFrame, baseline: str = "express") -> pd.DataFrame:
    """Per workload, connections and server (not the baseline): its cost ratio to the baseline at each load, in
    load order, as rows (load, ratio, lo, hi, outcome, both sustained, elu_gap); the lines a report reads from."""
    name = BASELINES[baseline]
    keep = curve[curve["server"] != baseline]
    columns = ["workload", "connections", "server", "load", "rate", f"cost_{name}", f"cost_{name}_lo",
               f"cost_{name}_hi", f"outcome_{name}", f"sustained_{name}", f"elu_gap_{name}",
               f"pairs_{name}"]  # fmt: skip
    return keep[columns].reset_index(drop=True)


def not_like_with_like(curve: pd.DataFrame, baseline: str = "express") -> pd.DataFrame:
    """The saturation rows whose ELU differs from the baseline's at saturation by more than SAME_LOAD_ELU."""
    name = BASELINES[baseline]
    sat = curve[(curve["load"] == SATURATION) & (curve["server"] != baseline)]
    return sat[sat[f"elu_gap_{name}"].abs() > SAME_LOAD_ELU]


#: The sweep table's columns.
SWEEP_COLUMNS = ["workload", "server", "connections", "round", "before_req_per_s", "after_req_per_s", "drift",
                 "flagged"]  # fmt: skip


def capacity_drift(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per open-loop sweep (workload, server, connections, round) that has both capacities: the closed
    loop's req/s before the sweep (stop '<d>s') and after it ('<d>s-end'), drift = after / before - 1, and
    flagged where |drift| > CAPACITY_DRIFT. Empty where no sweep measured its capacity again."""
    if runs.empty or "stop" not in runs:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    r = runs.assign(
        workload=runs["workload"].astype(str), server=runs["server"].astype(str), client=runs["client"].astype(str),
        stop=runs["stop"].astype(str), connections=runs["connections"].astype(int), round=runs["round"].astype(int),
    )  # fmt: skip
    r = r[r["client"] == CAPACITY_CLIENT]
    if r.empty:  # no capacity cell at all (a scope without an open loop); an empty mask would select columns
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    stops = r["stop"].map(Stop.parse)
    is_after = stops.map(lambda s: s.after).astype(bool)
    after = r.loc[is_after].assign(closed=stops[is_after].map(lambda s: s.closed.label))
    before = r.loc[~(is_after | stops.map(lambda s: s.open).astype(bool))]
    keys = ["workload", "server", "connections", "round"]
    pairs = after.merge(
        before[[*keys, "stop", "req_per_s"]].rename(columns={"stop": "closed", "req_per_s": "before_req_per_s"}),
        on=[*keys, "closed"],
    ).rename(columns={"req_per_s": "after_req_per_s"})
    if pairs.empty:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    pairs["drift"] = pairs["after_req_per_s"] / pairs["before_req_per_s"] - 1.0
    pairs["flagged"] = pairs["drift"].abs() > CAPACITY_DRIFT
    return pairs[SWEEP_COLUMNS].sort_values(keys).reset_index(drop=True)

"""Latency at a fixed arrival rate (the open loop), and each server's start-up time and memory.

The open loop's cells are (workload, server, connections, load %): its rate is that share of the req/s the
closed loop measured for the same cell in the same round, and its latencies count from each request's
scheduled time. A run the client refused (it fell behind its schedule: openloop_refused) was not measured: it
has no latencies and is counted, never read as a figure. A run whose rate the system did not sustain
(openloop_not_sustained: too few answers, requests queued for a connection, requests never sent) is a result, a
censored one: its latencies are at least what was measured, and a percentile's median over rounds counts it as
above any value (infinite), so a cell not sustained in most rounds reads as above every limit. Every figure is the
median over rounds with its order-statistic interval.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import intervals
from nodebench.catalogue.calibration import DELAY_MS, P50_WITHIN_MS, P99_WITHIN_MS, is_calibration

#: The p99 a user notices, milliseconds: the report says at what load each server's p99 crosses it.
P99_LIMIT_MS = 10.0
PERCENTILES = {"p50": "latency_p50_ms", "p90": "latency_p90_ms", "p99": "latency_p99_ms", "p99_9": "latency_p99_9_ms"}
LATENCY_KEY = ["workload", "server", "connections", "load_pct"]
#: The latency table's columns (workflow/schemas/metrics.dictionary.yaml, latency).
LATENCY_COLUMNS = [
    *LATENCY_KEY, "rounds", "refused", "refused_reason", "not_sustained", "not_sustained_reason",
    "capacity_req_per_s", "target_rate", "delivered_rate",
    "delivered_share", "lag_p99_ms", "capacity_gap_s_max",
    *(f"{p}{s}" for p in PERCENTILES for s in ("_ms", "_ms_lo", "_ms_hi")), "interval",
]  # fmt: skip


def _median_ci(groups, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: median, interval bounds and n of a column's non-missing values."""
    rows = [g[column].to_numpy(dtype=float) for _, g in groups]
    width = max((len(r) for r in rows), default=1)
    values = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        values[i, : len(r)] = r
    median, lo, hi, n, _ = intervals.median_interval(values)
    return median, lo, hi, n


def open_loop_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of open-loop cells (a load_pct), in a plain-typed copy."""
    if "load_pct" not in runs:
        return runs.iloc[0:0]
    found = runs[runs["load_pct"].notna()].copy()
    for c in ("workload", "server"):
        found[c] = found[c].astype(str)
    found["load_pct"] = found["load_pct"].astype(int)
    return found


def latency_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per open-loop cell: its rounds, how many the client refused, the rates, and p50/p90/p99/p99.9
    (median over the rounds it did not refuse, with the interval)."""
    ol = open_loop_runs(runs)
    if ol.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    out, groups = _percentiles(ol, LATENCY_KEY)
    for column, source in (("capacity_req_per_s", "capacity_req_per_s"), ("target_rate", "openloop_target_rate"),
                           ("delivered_rate", "delivered_rate"), ("delivered_share", "delivered_share"),
                           ("lag_p99_ms", "openloop_lag_p99_ms")):  # fmt: skip
        out[column] = [float(g[source].median()) for _, g in groups]
    out["capacity_gap_s_max"] = [float(g["capacity_gap_s"].max()) for _, g in groups]
    return out[LATENCY_COLUMNS]


def _percentiles(ol: pd.DataFrame, key: list[str]) -> tuple[pd.DataFrame, list]:
    """Per group of open-loop runs (key): rounds, refused and not sustained (counts and reasons), and each
    percentile's median over the rounds not refused, a round not sustained counted as above any value; with the
    groups themselves (their runs, with delivered_rate and delivered_share)."""
    censored = ol["openloop_not_sustained"] if "openloop_not_sustained" in ol else pd.Series(None, index=ol.index)
    ol = ol.assign(
        _refused=ol["openloop_refused"].notna(),
        _censored=censored.notna() & ol["openloop_refused"].isna(),
        _why_censored=censored,
        delivered_rate=ol["client_reported_req_per_s"],
        delivered_share=ol["client_reported_req_per_s"] / ol["openloop_target_rate"],
    )
    # A round not sustained is above any latency: infinite in the medians, so it is counted, not dropped.
    for column in PERCENTILES.values():
        ol[column] = ol[column].astype(float).where(~ol["_censored"], np.inf)
    groups = list(ol.groupby(key, observed=True, sort=True))
    kept = [(k, g[~g["_refused"]]) for k, g in groups]
    out = pd.DataFrame([k for k, _ in groups], columns=key)
    out["rounds"] = [len(g) for _, g in groups]
    out["refused"] = [int(g["_refused"].sum()) for _, g in groups]
    out["refused_reason"] = [
        "; ".join(sorted(set(g.loc[g["_refused"], "openloop_refused"].astype(str))))[:300] or None for _, g in groups
    ]
    out["not_sustained"] = [int(g["_censored"].sum()) for _, g in groups]
    out["not_sustained_reason"] = [
        "; ".join(sorted(set(g.loc[g["_censored"], "_why_censored"].astype(str))))[:300] or None for _, g in groups
    ]
    n = None
    for name, column in PERCENTILES.items():
        median, lo, hi, n = _median_ci(kept, column)
        out[f"{name}_ms"], out[f"{name}_ms_lo"], out[f"{name}_ms_hi"] = median, lo, hi
    out["interval"] = [intervals.describe(int(k)) for k in n]
    return out, groups


#: The instrument's table's key: the calibration server's cells (catalogue/calibration.py) at each fixed rate.
INSTRUMENT_KEY = ["workload", "connections", "rate"]
INSTRUMENT_COLUMNS = [
    *INSTRUMENT_KEY, "rounds", "refused", "refused_reason", "not_sustained", "not_sustained_reason",
    "delivered_share", "lag_p99_ms", *(f"{p}{s}" for p in PERCENTILES for s in ("_ms", "_ms_lo", "_ms_hi")),
    "interval", "spread_p99_ms", "off_rounds", "off_detail",
]  # fmt: skip


def instrument_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The instrument's own latency: one row per (workload, connections, rate) of the calibration server
    (servers/fixed-delay.js, whose every answer leaves DELAY_MS after its request arrived), with the same figures
    as the latency table, and:

    spread_p99_ms: the width of its p99's interval over rounds (min-max at up to 6 rounds), how far the instrument
    alone moves a p99 at that rate from round to round, its constant part (which adds to every server alike and
    cancels from a difference) left out: a difference of two servers' p99s no larger is not one the instrument can
    tell. NaN where there is no interval (one round) or a round kept was not sustained (its p99 unbounded);
    off_rounds: the rounds measured (not refused) whose p50 is more than P50_WITHIN_MS, or whose p99 more than
    P99_WITHIN_MS, from the delay, or that did not sustain the rate; off_detail names them. A refused round is
    counted as refused, not as off: the client could not measure it."""
    if runs.empty or "load_rate" not in runs:
        return pd.DataFrame(columns=INSTRUMENT_COLUMNS)
    mine = runs[runs["server"].astype(str).map(is_calibration) & runs["load_rate"].notna()].copy()
    if mine.empty:
        return pd.DataFrame(columns=INSTRUMENT_COLUMNS)
    mine["workload"] = mine["workload"].astype(str)
    mine["rate"] = mine["load_rate"].astype(int)
    out, groups = _percentiles(mine, INSTRUMENT_KEY)
    out["delivered_share"] = [float(g["delivered_share"].median()) for _, g in groups]
    out["lag_p99_ms"] = [float(g["openloop_lag_p99_ms"].median()) for _, g in groups]
    spread = out["p99_ms_hi"] - out["p99_ms_lo"]
    out["spread_p99_ms"] = spread.where(np.isfinite(spread))
    offs = [_off_rounds(g) for _, g in groups]
    out["off_rounds"] = [len(o) for o in offs]
    out["off_detail"] = ["; ".join(o) or None for o in offs]
    return out[INSTRUMENT_COLUMNS].sort_values(INSTRUMENT_KEY).reset_index(drop=True)


def _off_rounds(g: pd.DataFrame) -> list[str]:
    """The rounds of one calibration cell outside the calibration's bounds, each as 'round 3: p50 1.31 ms'."""
    out = []
    for _, r in g[~g["_refused"]].sort_values("round").iterrows():
        if r["_censored"]:
            out.append(f"round {int(r['round'])}: not sustained")
            continue
        said = [
            f"{name} {float(r[column]):.2f} ms"
            for name, column, within in (
                ("p50", "latency_p50_ms", P50_WITHIN_MS),
                ("p99", "latency_p99_ms", P99_WITHIN_MS),
            )
            if not abs(float(r[column]) - DELAY_MS) <= within
        ]
        if said:
            out.append(f"round {int(r['round'])}: {', '.join(said)}")
    return out


#: The crossing table's columns: per (workload, server, connections), where p99 crosses the limit, in % of capacity
#: and in req/s, each the median over rounds of the round's own crossing with its interval (-inf: already above
#: at the lowest load known; +inf: not crossed by the highest), and the loads (and rates asked) that "below" and
#: "above" name: the lowest and highest load where p99 was known (not refused) in the rounds that read so; and the
#: loads refused in every round (they say nothing).
CROSSING_COLUMNS = [
    "workload", "server", "connections", "rounds", "pct", "pct_lo", "pct_hi", "rate", "rate_lo", "rate_hi",
    "lowest_pct", "highest_pct", "lowest_rate", "highest_rate", "interval", "unknown_loads",
]  # fmt: skip


def round_crossing(loads: np.ndarray, rates: np.ndarray, p99: np.ndarray, limit_ms: float = P99_LIMIT_MS):
    """One round's crossing of limit_ms as (load %, req/s), from its loads in ascending order, the rate asked at
    each, and its p99 there (NaN: refused, says nothing; inf: not sustained, above any limit).

    The crossing lies between the highest load at or below the limit and the first above it, read off a line in
    log p99 between the two (p99 grows about exponentially towards capacity); where the load above was not
    sustained its p99 is not known, and the crossing is put at that load (the latest it can be). (-inf, -inf):
    already above at the lowest load known; (inf, inf): nowhere above; None: no load known. A load refused
    between the two only widens the bracket."""
    known = ~np.isnan(p99)
    if not known.any():
        return None
    x, r, y = loads[known], rates[known], p99[known]
    above = np.flatnonzero(y > limit_ms)
    if not len(above):
        return np.inf, np.inf
    j = int(above[0])
    if j == 0:
        return -np.inf, -np.inf
    i = j - 1
    if not np.isfinite(y[j]) or y[i] <= 0:
        return float(x[j]), float(r[j])
    share = (np.log(limit_ms) - np.log(y[i])) / (np.log(y[j]) - np.log(y[i]))
    return float(x[i] + share * (x[j] - x[i])), float(r[i] + share * (r[j] - r[i]))


def crossing_table(runs: pd.DataFrame, limit_ms: float = P99_LIMIT_MS) -> pd.DataFrame:
    """Per (workload, server, connections): where p99 crosses limit_ms, each round's own crossing (round_crossing)
    read as the median over rounds with its order-statistic interval, in % of capacity and in req/s. A round not
    sustained at a load counts as above the limit there; a refused one says nothing; a round with no load known
    is left out and not counted."""
    ol = open_loop_runs(runs)
    if ol.empty:
        return pd.DataFrame(columns=CROSSING_COLUMNS)
    censored = ol["openloop_not_sustained"].notna() if "openloop_not_sustained" in ol else ol["load_pct"].isna()
    p99 = ol["latency_p99_ms"].astype(float).where(~censored, np.inf)
    ol = ol.assign(_p99=p99.where(ol["openloop_refused"].isna(), np.nan))
    rows = []
    for (workload, server, connections), g in ol.groupby(["workload", "server", "connections"], sort=True):
        found = []
        # "below" / "above" name loads that were measured: the highest of the rounds' lowest known loads where a
        # round was already above there, the lowest of their highest known loads where one never crossed.
        below, above = [], []
        for _, one in g.groupby("round", sort=True):
            one = one.sort_values("load_pct")
            got = round_crossing(one["load_pct"].to_numpy(float), one["openloop_target_rate"].to_numpy(float),
                                 one["_p99"].to_numpy(float), limit_ms)  # fmt: skip
            if got is None:
                continue
            found.append(got)
            known = one[one["_p99"].notna()]
            if np.isneginf(got[0]):
                below.append(tuple(known[["load_pct", "openloop_target_rate"]].iloc[0]))
            elif np.isposinf(got[0]):
                above.append(tuple(known[["load_pct", "openloop_target_rate"]].iloc[-1]))
        pct = np.array([p for p, _ in found] or [np.nan])
        rate = np.array([r for _, r in found] or [np.nan])
        (pm, plo, phi, n, _), (rm, rlo, rhi, _, _) = (
            (float(v[0]) for v in intervals.median_interval(a[None, :])) for a in (pct, rate)
        )
        low, high = g["load_pct"].min(), g["load_pct"].max()
        low_rate = float(g.loc[g["load_pct"] == low, "openloop_target_rate"].median())
        high_rate = float(g.loc[g["load_pct"] == high, "openloop_target_rate"].median())
        if below:
            low, low_rate = max(below)
        if above:
            high, high_rate = min(above)
        rows.append({
            "workload": workload, "server": server, "connections": int(connections), "rounds": len(found),
            "pct": pm, "pct_lo": plo, "pct_hi": phi, "rate": rm, "rate_lo": rlo, "rate_hi": rhi,
            "lowest_pct": int(low), "highest_pct": int(high), "lowest_rate": float(low_rate),
            "highest_rate": float(high_rate),
            "interval": intervals.describe(int(n)),
            "unknown_loads": ", ".join(
                f"{int(x)} %" for x, p in g.groupby("load_pct", sort=True)["_p99"] if p.isna().all()
            ) or None,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=CROSSING_COLUMNS)


def crossing_value(value: float, low: float, high: float, fmt: str, unit: str) -> str:
    """One end of a crossing in words: '63 %', 'below 25 %' (already above at the lowest load), 'above 90 %'
    (not crossed by the highest), '-' where the rounds leave it undetermined."""
    if value is None or pd.isna(value):
        return "-"
    if np.isneginf(value):
        return f"below {format(low, fmt)}{unit}"
    if np.isposinf(value):
        return f"above {format(high, fmt)}{unit}"
    return f"{format(value, fmt)}{unit}"


def crossing_text(r, which: str) -> str:
    """A crossing-table row's crossing in % of capacity (which='pct') or req/s ('rate'), with its interval:
    '63 % [55 %, 71 %]'. An end beyond the loads measured says so."""
    fmt, unit = (".0f", " %") if which == "pct" else (",.0f", " req/s")
    low, high = getattr(r, f"lowest_{which}"), getattr(r, f"highest_{which}")
    value, lo, hi = (getattr(r, f"{which}{s}") for s in ("", "_lo", "_hi"))
    if r.rounds == 0:
        return "no load measured (all refused)"
    if value is None or pd.isna(value):
        return "undetermined: the rounds lie on both sides of the loads measured"
    text = crossing_value(value, low, high, fmt, unit)
    if pd.isna(lo) or pd.isna(hi):
        return text
    if lo == hi:
        return text
    return f"{text} [{crossing_value(lo, low, high, fmt, unit)}, {crossing_value(hi, low, high, fmt, unit)}]"


#: The server table's columns (workflow/schemas/metrics.dictionary.yaml, servers).
SERVER_COLUMNS = [
    "server", "rounds", "startup_ms", "startup_ms_lo", "startup_ms_hi", "rss_peak_mb", "rss_peak_mb_lo",
    "rss_peak_mb_hi", "heap_used_peak_mb", "heap_used_peak_mb_lo", "heap_used_peak_mb_hi", "interval",
]  # fmt: skip


def server_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per server: start-up time and the peak RSS and heap over the window, each the median over rounds (of the
    round's median over the server's runs) with its interval. Rows only where the runs have these figures; none for
    the instrument's calibration (fixed-delay), which is not a server to choose."""
    need = ["server_startup_ms", "rss_peak_mb", "heap_used_peak_mb"]
    if any(c not in runs for c in need):
        return pd.DataFrame(columns=SERVER_COLUMNS)
    r = runs.assign(server=runs["server"].astype(str))
    r = r[(r["server_startup_ms"].notna() | r["rss_peak_mb"].notna()) & ~r["server"].map(is_calibration)]
    if r.empty:
        return pd.DataFrame(columns=SERVER_COLUMNS)
    per_round = r.groupby(["server", "round"], observed=True)[need].median().reset_index()
    groups = list(per_round.groupby("server", sort=True))
    out = pd.DataFrame({"server": [k for k, _ in groups], "rounds": [len(g) for _, g in groups]})
    n = None
    for name, column in (("startup_ms", "server_startup_ms"), ("rss_peak_mb", "rss_peak_mb"),
                         ("heap_used_peak_mb", "heap_used_peak_mb")):  # fmt: skip
        median, lo, hi, n = _median_ci(groups, column)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = median, lo, hi
    out["interval"] = [intervals.describe(int(k)) for k in n]
    return out[SERVER_COLUMNS]

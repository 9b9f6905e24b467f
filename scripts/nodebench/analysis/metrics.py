"""Derived metrics per cell: medians with bootstrap intervals, ratios, framework share, saturation, score."""

import numpy as np
import pandas as pd
from scipy import stats

from nodebench.catalogue.thresholds import (
    CLIENT_BOUND_CPU,
    CONFIDENCE,
    HEADLINE_CONNECTIONS,
    NOISY_CV,
    RESAMPLES,
    SERVER_BOUND_ELU,
)

# A cell: what was measured and how the load was made. stop is the rule with its
# value ("10s", "100000req"); stopping_rule alone would merge a 2 s and a 20 s run.
CELL = ["workload", "server", "connections", "load_generator", "stopping_rule", "stop"]
# Cells that are compared with each other differ only in the server.
PEERS = [c for c in CELL if c != "server"]
FIGURES = ["req_per_s", "us_per_req_elu", "us_per_req_cpu", "latency_p50_ms", "latency_p99_ms"]
BASELINES = {"express": "vs_express", "node-http": "vs_node_http"}


def _median(x, axis=-1):
    """Median along the last axis by sorting: repetitions are few, and np.median's partition is slower here."""
    assert axis in (-1, x.ndim - 1)
    x = np.sort(x, axis=-1)
    n = x.shape[-1]
    return x[..., n // 2] if n % 2 else (x[..., n // 2 - 1] + x[..., n // 2]) / 2


def _percentile_ci(samples: tuple, statistic, point: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scipy's percentile bootstrap over the last axis of each (cells x repetitions) sample.

    A side with one repetition has nothing to resample, and rows whose repetitions are
    all equal give NaN: in both cases the interval is the point estimate itself.
    """
    if any(s.shape[1] < 2 for s in samples):
        return point.copy(), point.copy()
    res = stats.bootstrap(
        samples,
        statistic,
        axis=-1,
        vectorized=True,
        paired=False,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    lo, hi = res.confidence_interval
    return np.where(np.isnan(lo), point, lo), np.where(np.isnan(hi), point, hi)


def median_ci(samples: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the median for each row of a (cells x repetitions) array."""
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    return _percentile_ci((samples,), _median, np.median(samples, axis=-1), seed)


def ratio_ci(num: np.ndarray, den: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap CI of median(num) / median(den), resampling each side's repetitions independently."""
    num, den = np.atleast_2d(np.asarray(num, float)), np.atleast_2d(np.asarray(den, float))
    point = np.median(num, axis=-1) / np.median(den, axis=-1)
    return _percentile_ci((num, den), lambda a, b, axis=-1: _median(a, axis) / _median(b, axis), point, seed)


def _by_repetition_count(cells: pd.DataFrame):
    """Cells grouped by how many repetitions they have, so each group is one rectangular array."""
    return cells.groupby(cells["values"].map(len), sort=False)


def cell_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: repetitions, median and CI of each figure, CV and the noisy flag."""
    base = (
        runs.groupby(CELL, observed=True)
        .agg(
            repetitions=("repetition", "nunique"),
            elu_utilization=("elu_utilization", "median"),
            client_cpu_util=("client_cpu_util", "median"),
            client_cpu_capacity=("client_cpu_capacity", "median"),
            cpu_model=("cpu_model", lambda s: ", ".join(sorted(set(map(str, s))))),
        )
        .reset_index()
    )
    for fig in FIGURES:
        per_cell = runs.groupby(CELL, observed=True)[fig].agg(list).rename("values").reset_index()
        parts = []
        for _, group in _by_repetition_count(per_cell):
            arr = np.array(group["values"].tolist(), dtype=float)
            lo, hi = median_ci(arr)
            mean = arr.mean(axis=1)
            cv = arr.std(axis=1, ddof=1) / mean if arr.shape[1] > 1 else np.zeros(len(arr))
            parts.append(
                group[CELL].assign(**{fig: np.median(arr, axis=1), f"{fig}_lo": lo, f"{fig}_hi": hi, f"{fig}_cv": cv})
            )
        base = base.merge(pd.concat(parts), on=CELL, how="left")
    return base.assign(noisy=lambda d: (d["req_per_s_cv"] > NOISY_CV) | (d["us_per_req_elu_cv"] > NOISY_CV))


def saturation(elu: pd.Series, client_cpu: pd.Series, capacity: pd.Series | float = 1.0) -> pd.Series:
    """server-bound when ELU >= SERVER_BOUND_ELU; else client-bound when the load generator used at least
    CLIENT_BOUND_CPU of the CPU it can use (its threads, at most its CPUs: one core for autocannon and ab);
    else io-bound."""
    verdict = np.where(
        elu >= SERVER_BOUND_ELU,
        "server-bound",
        np.where(client_cpu >= CLIENT_BOUND_CPU * capacity, "client-bound", "io-bound"),
    )
    return pd.Series(verdict, index=elu.index)


def add_ratios(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Speed-up (req/s) and CPU advantage (baseline us/req over this server's) vs each baseline, with CIs."""
    samples = runs.groupby(CELL, observed=True).agg(rps=("req_per_s", list), us=("us_per_req_elu", list)).reset_index()
    key = PEERS
    out = cells
    for baseline, name in BASELINES.items():
        base = samples[samples["server"] == baseline].drop(columns="server")
        pairs = samples.merge(base.rename(columns={"rps": "b_rps", "us": "b_us"}), on=key, how="inner")
        if pairs.empty:
            names = [f"{label}_{name}{end}" for label in ("speedup", "cpu_ratio") for end in ("", "_lo", "_hi")]
            out = out.assign(**dict.fromkeys(names, np.nan))
            continue
        shapes = pairs["rps"].map(len).astype(str) + "x" + pairs["b_rps"].map(len).astype(str)
        parts = []
        for _, group in pairs.groupby(shapes, sort=False):
            cols = {}
            for label, num, den in (("speedup", "rps", "b_rps"), ("cpu_ratio", "b_us", "us")):
                a, b = np.array(group[num].tolist(), float), np.array(group[den].tolist(), float)
                lo, hi = ratio_ci(a, b)
                cols[f"{label}_{name}"] = np.median(a, axis=1) / np.median(b, axis=1)
                cols[f"{label}_{name}_lo"], cols[f"{label}_{name}_hi"] = lo, hi
            parts.append(group[CELL].assign(**cols))
        out = out.merge(pd.concat(parts), on=CELL, how="left")
    return out


def add_share(cells: pd.DataFrame) -> pd.DataFrame:
    """Framework share of the request's event-loop CPU, by the reference and the baseline model."""
    same = ["load_generator", "stopping_rule", "stop"]
    empty = cells[cells["workload"] == "empty"][["server", "connections", *same, "us_per_req_elu"]]
    if empty.empty:
        return cells.assign(empty_us_per_req=np.nan, share_reference=np.nan, share_baseline=np.nan)
    # The empty cell of the same server at the nearest connection count.
    empty = empty.rename(columns={"connections": "empty_connections", "us_per_req_elu": "empty_us_per_req"})
    merged = pd.merge_asof(
        cells.sort_values("connections"),
        empty.sort_values("empty_connections"),
        left_on="connections",
        right_on="empty_connections",
        by=["server", *same],
        direction="nearest",
    )
    node = empty[empty["server"] == "node-http"][["empty_connections", *same, "empty_us_per_req"]]
    node = node.rename(columns={"empty_us_per_req": "node_http_empty_us_per_req"})
    merged = merged.merge(node, on=["empty_connections", *same], how="left")
    return merged.assign(
        share_reference=lambda d: d["empty_us_per_req"] / d["us_per_req_elu"],
        share_baseline=lambda d: (d["empty_us_per_req"] - d["node_http_empty_us_per_req"]) / d["us_per_req_elu"],
    ).drop(columns=["empty_connections"])


def flag_mixed_cpu_models(cells: pd.DataFrame) -> pd.DataFrame:
    """Per baseline, True where a cell's ratio compares runs measured on different CPU models."""
    key = PEERS
    out = cells
    for baseline, name in BASELINES.items():
        base = cells[cells["server"] == baseline][[*key, "cpu_model"]].rename(columns={"cpu_model": "_base_model"})
        merged = cells[[*CELL, "cpu_model"]].merge(base, on=key, how="left")
        model = merged["cpu_model"].astype(str)
        base_model = merged["_base_model"].astype(object)
        known = base_model.notna()
        base_model = base_model.where(known, "").astype(str)
        mixed = known & (
            (model != base_model) | model.str.contains(",", regex=False) | base_model.str.contains(",", regex=False)
        )
        out = out.merge(merged[CELL].assign(**{f"mixed_cpu_models_{name}": mixed.to_numpy()}), on=CELL, how="left")
    return out


def compute_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """The whole per-cell metrics table, typed and sorted."""
    cells = cell_table(runs)
    cells = add_ratios(cells, runs)
    cells = flag_mixed_cpu_models(cells)
    cells = add_share(cells)
    cells = cells.assign(
        saturation=saturation(cells["elu_utilization"], cells["client_cpu_util"], cells["client_cpu_capacity"])
    )
    labels = ["workload", "server", "load_generator", "stopping_rule", "stop", "saturation", "cpu_model"]
    return (
        cells.astype({c: "category" for c in labels} | {"connections": "int64", "repetitions": "int64"})
        .sort_values(["workload", "connections", "server"], kind="stable")
        .reset_index(drop=True)
    )


def geomean_scores(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per server: 100 x geometric mean over workloads of node-http's us/req over the server's (node-http = 100).

    Within a workload the connection levels are averaged geometrically first, so a
    workload measured at four connection counts weighs no more than one measured at one.
    """
    node = metrics[metrics["server"] == "node-http"][[*PEERS, "us_per_req_elu"]]
    node = node.rename(columns={"us_per_req_elu": "node_us"})
    rel = metrics.merge(node, on=PEERS).assign(log_rel=lambda d: np.log(d["node_us"] / d["us_per_req_elu"]))
    per_workload = rel.groupby(["server", "workload"], observed=True)["log_rel"].mean().reset_index()
    return (
        per_workload.groupby("server", observed=True)
        .agg(score=("log_rel", lambda s: 100 * float(np.exp(s.mean()))), workloads=("workload", "nunique"))
        .reset_index()
        .sort_values("score", ascending=False)
        .reset_index(drop=True)
    )


def headline(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per workload, the cells at the connection count closest to 50 (the reference's headline)."""
    m = metrics.assign(_dist=(metrics["connections"] - HEADLINE_CONNECTIONS).abs())
    best = m.groupby("workload", observed=True)["_dist"].transform("min")
    return m[m["_dist"] == best].drop(columns="_dist")

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
#: The runs' columns the metrics read.
RUN_COLUMNS = [
    *CELL,
    "repetition",
    "elu_utilization",
    "client_cpu_util",
    "client_cpu_capacity",
    "cpu_model",
    *FIGURES,
]


def _median(x, axis=-1):
    """Median along the last axis, exactly as sorting each row would give it.

    The bootstrap asks for the median of every resample of every cell: millions of rows
    of a few values, where np.sort and np.partition spend their time per row. Up to four
    repetitions, the middle values are picked with np.minimum and np.maximum over whole
    columns instead (the same numbers sorting gives, added in either order: the same
    result); more repetitions, or any NaN (which sorting puts last), are sorted.
    """
    assert axis in (-1, x.ndim - 1)
    n = x.shape[-1]
    if n <= 4 and not np.isnan(x).any():
        col = [x[..., i] for i in range(n)]
        if n == 1:
            return col[0]
        if n == 2:
            return (col[0] + col[1]) / 2
        if n == 3:
            return np.maximum(np.minimum(col[0], col[1]), np.minimum(np.maximum(col[0], col[1]), col[2]))
        # Four: the two middle values are the larger of the pairs' minima and the smaller of their maxima.
        lo = np.maximum(np.minimum(col[0], col[1]), np.minimum(col[2], col[3]))
        hi = np.minimum(np.maximum(col[0], col[1]), np.maximum(col[2], col[3]))
        return (lo + hi) / 2
    x = np.sort(x, axis=-1)
    return x[..., n // 2] if n % 2 else (x[..., n // 2 - 1] + x[..., n // 2]) / 2


#: Resampled values one call of scipy's bootstrap may hold per sample (cells x resamples x repetitions):
#: 2**20 doubles, 8 MiB, which stay in the CPU's cache while the medians are taken (2**22 was 10 % slower,
#: 2**18 spends more on each call than it saves). Larger tables are bootstrapped a slice of cells at a time.
SLICE_VALUES = 2**20


def _percentile_ci(samples: tuple, statistic, point: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scipy's percentile bootstrap over the last axis of each (cells x repetitions) sample.

    scipy draws one matrix of resample indices (resamples x repetitions) per sample and
    applies it to every row, so a row's interval depends on the seed and its own values
    only: each slice of rows starts from the same seed and gets the interval the whole
    array would have given it, while memory stays bounded by SLICE_VALUES.
    A side with one repetition has nothing to resample, and rows whose repetitions are
    all equal give NaN: in both cases the interval is the point estimate itself.
    """
    if any(s.shape[1] < 2 for s in samples):
        return point.copy(), point.copy()
    step = max(1, SLICE_VALUES // (RESAMPLES * max(s.shape[1] for s in samples)))
    lo, hi = np.empty_like(point, dtype=float), np.empty_like(point, dtype=float)
    for start in range(0, len(point), step):
        rows = slice(start, start + step)
        res = stats.bootstrap(
            tuple(s[rows] for s in samples),
            statistic,
            axis=-1,
            vectorized=True,
            paired=False,
            confidence_level=CONFIDENCE,
            n_resamples=RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
        lo[rows], hi[rows] = res.confidence_interval
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


class Samples:
    """The runs' figures as one (cells x most repetitions) array per figure, NaN-padded.

    Cells are numbered in the order runs.groupby(CELL) lists them (keys), and each row
    holds its cell's runs in their order in runs, the order the bootstrap resamples.
    by_count() yields the rows of the cells with k repetitions and k, so that each group
    is one rectangular array: the statistics run once per group, not once per cell.
    """

    def __init__(self, runs: pd.DataFrame):
        grouped = runs.groupby(CELL, observed=True)
        self.keys = grouped.size().reset_index()[CELL]
        self.cell, self.place = grouped.ngroup().to_numpy(), grouped.cumcount().to_numpy()
        self.counts = np.bincount(self.cell, minlength=len(self.keys))
        self.runs = runs

    def __call__(self, figure: str) -> np.ndarray:
        out = np.full((len(self.keys), self.counts.max(initial=0)), np.nan)
        out[self.cell, self.place] = self.runs[figure].to_numpy(dtype=float)
        return out

    def by_count(self):
        for k in np.unique(self.counts):
            yield np.flatnonzero(self.counts == k), k

    def cpu_models(self) -> np.ndarray:
        """Per cell, its runs' CPU models sorted and comma-joined (a Python join only for a cell with several)."""
        pairs = pd.DataFrame({"cell": self.cell, "model": self.runs["cpu_model"].astype(str).to_numpy()})
        pairs = pairs.drop_duplicates().sort_values(["cell", "model"])
        several = pairs["cell"].duplicated(keep=False)
        joined = pairs[several].groupby("cell")["model"].agg(", ".join)
        return pd.concat([pairs[~several].set_index("cell")["model"], joined]).sort_index().to_numpy()


def cell_table(runs: pd.DataFrame, samples: Samples | None = None) -> pd.DataFrame:
    """One row per cell: repetitions, median and CI of each figure, CV and the noisy flag."""
    samples = Samples(runs) if samples is None else samples
    base = (
        runs.groupby(CELL, observed=True)
        .agg(
            repetitions=("repetition", "nunique"),
            elu_utilization=("elu_utilization", "median"),
            client_cpu_util=("client_cpu_util", "median"),
            client_cpu_capacity=("client_cpu_capacity", "median"),
        )
        .reset_index()
        .assign(cpu_model=samples.cpu_models())
    )
    columns = {}
    for fig in FIGURES:
        values = samples(fig)
        median, lo, hi, cv = (np.full(len(base), np.nan) for _ in range(4))
        for rows, k in samples.by_count():
            arr = values[rows, :k]
            lo[rows], hi[rows] = median_ci(arr)
            median[rows] = np.median(arr, axis=1)
            cv[rows] = arr.std(axis=1, ddof=1) / arr.mean(axis=1) if k > 1 else 0.0
        columns |= {fig: median, f"{fig}_lo": lo, f"{fig}_hi": hi, f"{fig}_cv": cv}
    base = base.assign(**columns)
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


def add_ratios(cells: pd.DataFrame, runs: pd.DataFrame, samples: Samples | None = None) -> pd.DataFrame:
    """Speed-up (req/s) and CPU advantage (baseline us/req over this server's) vs each baseline, with CIs."""
    samples = Samples(runs) if samples is None else samples
    rps, us = samples("req_per_s"), samples("us_per_req_elu")
    keys = samples.keys.assign(_cell=np.arange(len(samples.keys)))
    out = cells
    for baseline, name in BASELINES.items():
        base = keys.loc[keys["server"] == baseline, [*PEERS, "_cell"]].rename(columns={"_cell": "_base"})
        # Each cell's baseline cell: the same peers, the baseline's server (-1 where there is none).
        partner = keys.merge(base, on=PEERS, how="left")["_base"].fillna(-1).to_numpy(dtype=int)
        cols = {
            f"{label}_{name}{end}": np.full(len(keys), np.nan)
            for label in ("speedup", "cpu_ratio")
            for end in ("", "_lo", "_hi")
        }
        # One rectangular pair of arrays per (repetitions, baseline's repetitions).
        paired = np.flatnonzero(partner >= 0)
        shapes = np.stack([samples.counts[paired], samples.counts[partner[paired]]], axis=1)
        for k, kb in np.unique(shapes, axis=0):
            here = paired[(shapes == (k, kb)).all(axis=1)]
            for label, num, den in (
                ("speedup", rps[here, :k], rps[partner[here], :kb]),
                ("cpu_ratio", us[partner[here], :kb], us[here, :k]),
            ):
                lo, hi = ratio_ci(num, den)
                cols[f"{label}_{name}"][here] = np.median(num, axis=1) / np.median(den, axis=1)
                cols[f"{label}_{name}_lo"][here], cols[f"{label}_{name}_hi"][here] = lo, hi
        out = out.merge(samples.keys.assign(**cols), on=CELL, how="left")
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
    samples = Samples(runs)
    cells = cell_table(runs, samples)
    cells = add_ratios(cells, runs, samples)
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

"""Derived metrics per cell: medians with order-statistic intervals, paired ratios, the A/A noise floor, share."""

import numpy as np
import pandas as pd

from nodebench.analysis import intervals, outcomes
from nodebench.analysis.verdict import verdict
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.calibration import is_calibration
from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINE_COLUMN, headline_of
from nodebench.catalogue.thresholds import HEADLINE_CONNECTIONS, NOISY_CV
from nodebench.runs import SYSTEM_NODE, is_twin, on_node, runtime, twin_of

# A cell: what was measured and how the load was made. stop is the rule with its
# value ("10s", "100000req"); stopping_rule alone would merge a 2 s and a 20 s run.
CELL = ["workload", "server", "connections", "client", "stopping_rule", "stop"]
# Cells that are compared with each other differ only in the server.
PEERS = [c for c in CELL if c != "server"]
FIGURES = ["req_per_s", "us_per_req_elu", "us_per_req_oncpu", "us_per_req_threads", "us_per_req_cpu", "latency_p50_ms",
           "latency_p99_ms"]  # fmt: skip
#: Figures of the server itself, per cell too: its peak memory over the window and its start-up time.
SERVER_FIGURES = ["rss_peak_mb", "heap_used_peak_mb", "server_startup_ms"]
#: Run figures the verdict reads that records before 2026-11-30 do not have.
MEASURED_LATER = ["client_cpu_count", "client_cpus_busy", "db_cpu_util"]
#: The runs' columns the metrics read.
RUN_COLUMNS = [
    *CELL,
    "round",
    "session",
    "elu_utilization",
    "client_cpu_util",
    "client_cpu_capacity",
    "client_cpu_count",
    "client_cpus_busy",
    "db_cpu_util",
    "preempted",
    "disturbed",
    "measurement_count",
    "cpu_model",
    "started_at",
    *FIGURES,
    *SERVER_FIGURES,
]


class Samples:
    """The runs' figures as one (cells x rounds) array per figure, NaN where a cell lacks a round.

    Cells are numbered in the order runs.groupby(CELL) lists them (keys); column j of
    every array is the j-th round any run has (rounds sorted), so the same column of two
    cells holds runs of the same round: the pairs the ratios are taken over.
    """

    def __init__(self, runs: pd.DataFrame):
        grouped = runs.groupby(CELL, observed=True)
        self.keys = grouped.size().reset_index()[CELL]
        self.cell = grouped.ngroup().to_numpy()
        self.rounds, self.place = np.unique(runs["round"].to_numpy(), return_inverse=True)
        if "started_at" in runs and "_started_s" not in runs:
            # When each run started, in seconds from the first: how far apart a pair's two runs were measured.
            started = pd.to_datetime(runs["started_at"], utc=True, format="ISO8601", errors="coerce")
            runs = runs.assign(_started_s=(started - started.min()).dt.total_seconds())
        self.runs = runs

    def __call__(self, figure: str, dtype=float, fill=np.nan) -> np.ndarray:
        out = np.full((len(self.keys), len(self.rounds)), fill, dtype=dtype)
        if figure in self.runs:  # a figure older records (or hand-made tables) lack stays missing
            out[self.cell, self.place] = self.runs[figure].to_numpy(dtype=dtype)
        return out

    def sessions(self) -> np.ndarray:
        """(cells x rounds) codes of the Snakemake session that measured each run; -1 where none is known."""
        codes = pd.factorize(self.runs["session"].astype(object).to_numpy())[0]
        out = np.full((len(self.keys), len(self.rounds)), -1, dtype=int)
        out[self.cell, self.place] = codes
        return out

    def cpu_models(self) -> np.ndarray:
        """Per cell, its runs' CPU models sorted and comma-joined (a Python join only for a cell with several)."""
        pairs = pd.DataFrame({"cell": self.cell, "model": self.runs["cpu_model"].astype(str).to_numpy()})
        pairs = pairs.drop_duplicates().sort_values(["cell", "model"])
        several = pairs["cell"].duplicated(keep=False)
        joined = pairs[several].groupby("cell")["model"].agg(", ".join)
        return pd.concat([pairs[~several].set_index("cell")["model"], joined]).sort_index().to_numpy()


def flagged(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether it was disturbed: the measured flag (`disturbed`, from /proc: harness/hostsample.py) where
    the record has it, else the older proxy (`preempted`); False where neither is known."""
    none = pd.Series(pd.NA, index=runs.index, dtype="boolean")
    measured = runs["disturbed"].astype("boolean") if "disturbed" in runs else none
    proxy = runs["preempted"].astype("boolean") if "preempted" in runs else none
    return measured.fillna(proxy).fillna(False).astype(bool)


def remeasured(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether its job measured it more than once because a measurement was disturbed (harness/remeasure.py);
    False for records from before that."""
    count = runs["measurement_count"] if "measurement_count" in runs else pd.Series(1, index=runs.index)
    return count.fillna(1) > 1


def cell_table(runs: pd.DataFrame, samples: Samples | None = None, headline: str = DEFAULT_HEADLINE) -> pd.DataFrame:
    """One row per cell: rounds, median and order-statistic interval of each figure, CV and the noisy flag (req/s or
    the headline figure noisier than NOISY_CV)."""
    samples = Samples(runs) if samples is None else samples
    # Figures that runs of older records (or hand-made tables) lack are missing, not zero.
    runs = runs.assign(**{c: np.nan for c in MEASURED_LATER if c not in runs})
    runs = runs.assign(_preempted=flagged(runs).astype(int), _remeasured=remeasured(runs).astype(int))
    base = (
        runs.groupby(CELL, observed=True)
        .agg(
            rounds=("round", "nunique"),
            elu_utilization=("elu_utilization", "median"),
            client_cpu_util=("client_cpu_util", "median"),
            client_cpu_capacity=("client_cpu_capacity", "median"),
            client_cpu_count=("client_cpu_count", "median"),
            client_cpus_busy=("client_cpus_busy", "median"),
            db_cpu_util=("db_cpu_util", "median"),
            preempted_runs=("_preempted", "sum"),
            remeasured_runs=("_remeasured", "sum"),
        )
        .reset_index()
        .assign(cpu_model=samples.cpu_models())
    )
    columns = {}
    for fig in FIGURES:
        values = samples(fig)
        median, lo, hi, n, cover = intervals.median_interval(values)
        columns |= {fig: median, f"{fig}_lo": lo, f"{fig}_hi": hi, f"{fig}_cv": intervals.cv(values)}
        if fig == headline:
            # The headline figure's n, coverage and method; another figure's differ only where its value is missing.
            columns |= {"interval_coverage": cover, "interval": [intervals.describe(int(k)) for k in n]}
    for fig in SERVER_FIGURES:
        # Records from before these were measured lack them: NaN, not zero.
        values = samples(fig) if fig in samples.runs else np.full((len(samples.keys), len(samples.rounds)), np.nan)
        median, lo, hi, _, _ = intervals.median_interval(values)
        columns |= {fig: median, f"{fig}_lo": lo, f"{fig}_hi": hi}
    base = base.assign(**columns)
    return base.assign(noisy=lambda d: (d["req_per_s_cv"] > NOISY_CV) | (d[f"{headline}_cv"] > NOISY_CV))


#: Paired ratios of a server's figure over its baseline's, per round: (column prefix, figure).
RATIOS = {
    "cost": DEFAULT_HEADLINE,  # the headline (config's headline, ratio_figures()), server / baseline (< 1: cheaper)
    "cost_oncpu": "us_per_req_oncpu",  # the event loop's own on-CPU time per request, server / baseline
    "cost_cpu": "us_per_req_cpu",  # process CPU per request, server / baseline
    "throughput": "req_per_s",  # req/s, server / baseline (> 1: faster)
}


def ratio_figures(headline: str = DEFAULT_HEADLINE) -> dict[str, str]:
    """RATIOS with the cost ratio reading the given headline figure."""
    return RATIOS | {"cost": headline}


def _each(values, f) -> list:
    """[f(v) for v in values], f called once per distinct value: a table of thousands of cells names a handful of
    servers, and iterating a string column value by value is most of the cost."""
    done = {}
    return [done[v] if v in done else done.setdefault(v, f(v)) for v in np.asarray(values, dtype=object)]


def _partner(keys: pd.DataFrame, server: str) -> np.ndarray:
    """Each cell's partner: the cell with the same peers and the given server on the same Node.js (-1 where none).

    express@node22's partner for node-http is node-http@node22: a framework is compared with
    node:http on its own Node.js, never across versions.
    """
    names = keys["server"].astype(str)
    numbered = keys.assign(_cell=np.arange(len(keys)), _want=_each(names, lambda s: on_node(server, runtime(s)[1])))
    base = numbered[[*PEERS, "server", "_cell"]].rename(columns={"_cell": "_base", "server": "_want"})
    base = base.astype({"_want": str})
    merged = numbered.astype({"_want": str}).merge(base, on=[*PEERS, "_want"], how="left")
    return merged["_base"].fillna(-1).to_numpy(dtype=int)


def paired_ratios(
    samples: Samples, partner: np.ndarray, prefix: str, headline: str = DEFAULT_HEADLINE
) -> dict[str, np.ndarray]:
    """Per cell, each RATIOS figure's round-by-round ratio to its partner's (the cost ratio's of the headline
    figure), summarised over the rounds both have.

    The ratio of each round is taken from the two runs of that round, so drift of the
    machine between rounds cancels; the median over rounds and its order-statistic
    interval (intervals.median_interval) describe them. Also: how many rounds were
    paired, the interval's coverage, how many pairs were measured by different
    Snakemake sessions (not back to back), and how far apart in time the two runs of its
    pairs started (gap_s_<prefix>: the median over its pairs; gap_s_<prefix>_max: the largest).
    """
    has = partner >= 0
    rows, other = np.flatnonzero(has), partner[has]
    out = {}
    for label, figure in ratio_figures(headline).items():
        values = samples(figure)
        ratio = np.full(values.shape, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio[rows] = values[rows] / values[other]
        median, lo, hi, n, cover = intervals.median_interval(ratio)
        out |= {f"{label}_{prefix}": median, f"{label}_{prefix}_lo": lo, f"{label}_{prefix}_hi": hi}
        if label == "cost":
            out |= {f"pairs_{prefix}": np.where(has, n, 0), f"pair_coverage_{prefix}": cover}
            out |= _without_preempted(samples, rows, other, ratio, median, lo, hi, prefix)
    crossed = np.zeros(len(partner), dtype=int)
    if "session" in samples.runs:
        session = samples.sessions()
        a, b = session[rows], session[other]
        crossed[rows] = ((a >= 0) & (b >= 0) & (a != b)).sum(axis=1)
    out[f"cross_session_{prefix}"] = crossed
    gap = np.full(len(partner), np.nan)
    gap_max = np.full(len(partner), np.nan)
    if "_started_s" in samples.runs:
        start = samples("_started_s")
        apart = np.abs(start[rows] - start[other])
        some = ~np.isnan(apart).all(axis=1) if len(rows) else np.zeros(0, dtype=bool)
        gap[rows[some]] = np.nanmedian(apart[some], axis=1)
        gap_max[rows[some]] = np.nanmax(apart[some], axis=1)
    out[f"gap_s_{prefix}"], out[f"gap_s_{prefix}_max"] = gap, gap_max
    return out


def spoiled_pairs(samples: Samples, rows: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(cells x rounds): True where a pair's run or its partner's (rows[i] and other[i]) was disturbed (flagged())."""
    spoiled = np.zeros((len(samples.keys), len(samples.rounds)), dtype=bool)
    hit = np.zeros_like(spoiled)
    hit[samples.cell, samples.place] = flagged(samples.runs).to_numpy()
    spoiled[rows] = hit[rows] | hit[other]
    return spoiled


def _without_preempted(samples, rows, other, ratio, median, lo, hi, prefix) -> dict[str, np.ndarray]:
    """The cost ratio's median over the rounds in which neither run was flagged as preempted, and where it lies
    more than half the interval's width (log scale) from the median of all rounds."""
    clean = np.where(spoiled_pairs(samples, rows, other), np.nan, ratio)
    clean_median = intervals.median_interval(clean)[0] if len(clean) else np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = (np.log(hi) - np.log(lo)) / 2
        matters = np.abs(np.log(clean_median) - np.log(median)) > half
    return {f"cost_{prefix}_unpreempted": clean_median, f"preemption_matters_{prefix}": matters}


def add_ratios(
    cells: pd.DataFrame, runs: pd.DataFrame, samples: Samples | None = None, headline: str = DEFAULT_HEADLINE
) -> pd.DataFrame:
    """Paired per-round ratios of CPU per request and of throughput against each baseline, with intervals."""
    samples = Samples(runs) if samples is None else samples
    # The instrument's calibration (fixed-delay) spins its delay: its cost is no server's, and it is paired with none.
    calibration = samples.keys["server"].astype(str).map(is_calibration).to_numpy(bool)
    cols = {}
    for baseline, name in BASELINES.items():
        partner = np.where(calibration, -1, _partner(samples.keys, baseline))
        cols |= paired_ratios(samples, partner, name, headline)
    return cells.merge(samples.keys.assign(**cols), on=CELL, how="left")


def add_noise_floor(
    cells: pd.DataFrame,
    runs: pd.DataFrame,
    samples: Samples | None = None,
    margin: float = outcomes.DEFAULT_MARGIN,
    headline: str = DEFAULT_HEADLINE,
) -> pd.DataFrame:
    """The A/A control's paired cost ratio (its twin over itself) beside every cell with the same peers, as a check
    of the design, and each cost ratio's outcome.

    aa_cost [aa_cost_lo, aa_cost_hi] is the twin's ratio to its control with its interval; twin_off is True where
    that interval excludes 1: two names of one server, measured side by side, came apart beyond their own noise,
    which says the design (order, pairing, the machine) is off for that peer group. noise_floor_log is |log| of
    the A/A ratio's median (outcomes.log_floor) and noise_floor the same as a relative difference (exp - 1):
    reported, no longer a margin. outcome_vs_<baseline> is outcomes.decide() of the cost ratio's interval against
    1 and the declared equivalence margin: cheaper, costlier, equivalent or inconclusive.
    """
    samples = Samples(runs) if samples is None else samples
    # A twin on each Node.js the control runs on (node-http-aa@node22 repeats node-http@node22); the pipeline's
    # own Node.js last, so its A/A ratio is the one shown. The floor of a peer group is the widest of its twins'.
    names = {s for s in samples.keys["server"].astype(str) if is_twin(s)}
    twins = sorted(names, key=lambda s: (runtime(s)[1] == SYSTEM_NODE, s))
    floor = {"aa_cost": np.nan, "aa_cost_lo": np.nan, "aa_cost_hi": np.nan, "aa_pairs": 0, "noise_floor_log": np.nan}
    out = cells.assign(**floor)
    for twin in twins:
        control = runtime(twin_of(twin))[0]
        partner = _partner(samples.keys, control)
        ratios = paired_ratios(samples, partner, "aa", headline)
        twin_rows = (samples.keys["server"].astype(str) == twin).to_numpy() & (partner >= 0)
        aa = samples.keys[PEERS][twin_rows].assign(
            aa_cost=ratios["cost_aa"][twin_rows],
            aa_cost_lo=ratios["cost_aa_lo"][twin_rows],
            aa_cost_hi=ratios["cost_aa_hi"][twin_rows],
            aa_pairs=ratios["pairs_aa"][twin_rows],
        )
        aa = aa.assign(noise_floor_log=outcomes.log_floor(aa["aa_cost"]))
        merged = out[PEERS].merge(aa, on=PEERS, how="left")
        widest = np.fmax(merged["noise_floor_log"].to_numpy(dtype=float), out["noise_floor_log"].to_numpy(dtype=float))
        for col in floor:
            out[col] = np.where(merged[col].notna(), merged[col], out[col])
        out["noise_floor_log"] = widest
    out["noise_floor"] = outcomes.relative(out["noise_floor_log"])
    out["twin_off"] = ((out["aa_cost_lo"] > 1) | (out["aa_cost_hi"] < 1)).to_numpy(dtype=bool)
    out["equivalence_margin"] = float(margin)
    for name in BASELINES.values():
        decided = outcomes.decide(out[f"cost_{name}_lo"], out[f"cost_{name}_hi"], margin)
        out[f"outcome_{name}"] = pd.Series(decided, index=out.index, dtype=object)
    return out


def add_share(cells: pd.DataFrame) -> pd.DataFrame:
    """Framework share of the request's event-loop CPU, by the reference and the baseline model."""
    same = ["client", "stopping_rule", "stop", "_node"]
    cells = cells.assign(_node=_nodes(cells))
    empty = cells[cells["workload"] == "empty"][["server", "connections", *same, "us_per_req_elu"]]
    if empty.empty:
        return cells.assign(empty_us_per_req=np.nan, share_reference=np.nan, share_baseline=np.nan).drop(
            columns=["_node"]
        )
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
    # node:http on the same Node.js.
    is_node_http = empty["server"].astype(str) == empty["_node"].map(lambda n: on_node("node-http", n))
    node = empty[is_node_http][["empty_connections", *same, "empty_us_per_req"]]
    node = node.rename(columns={"empty_us_per_req": "node_http_empty_us_per_req"})
    merged = merged.merge(node, on=["empty_connections", *same], how="left")
    return merged.assign(
        share_reference=lambda d: d["empty_us_per_req"] / d["us_per_req_elu"],
        share_baseline=lambda d: (d["empty_us_per_req"] - d["node_http_empty_us_per_req"]) / d["us_per_req_elu"],
    ).drop(columns=["empty_connections", "_node"])


def _nodes(cells: pd.DataFrame) -> pd.Series:
    """The Node.js of each row's server ("system", or a major), from its name."""
    names = cells["server"].astype(str)
    return pd.Series(_each(names, lambda s: runtime(s)[1]), index=names.index, name=names.name, dtype=names.dtype)


def flag_mixed_cpu_models(cells: pd.DataFrame) -> pd.DataFrame:
    """Per baseline, True where a cell's ratio compares runs measured on different CPU models."""
    key = [*PEERS, "_node"]
    out = cells
    noded = cells.assign(_node=_nodes(cells))
    for baseline, name in BASELINES.items():
        wanted = _each(noded["_node"], lambda n, b=baseline: on_node(b, n))
        base = noded[noded["server"].astype(str).to_numpy() == np.array(wanted, dtype=object)]
        base = base[[*key, "cpu_model"]].rename(columns={"cpu_model": "_base_model"})
        merged = noded[[*CELL, "_node", "cpu_model"]].merge(base, on=key, how="left")
        model = merged["cpu_model"].astype(str)
        base_model = merged["_base_model"].astype(object)
        known = base_model.notna()
        base_model = base_model.where(known, "").astype(str)
        mixed = known & (
            (model != base_model) | model.str.contains(",", regex=False) | base_model.str.contains(",", regex=False)
        )
        out = out.merge(merged[CELL].assign(**{f"mixed_cpu_models_{name}": mixed.to_numpy()}), on=CELL, how="left")
    return out


def compute_metrics(
    runs: pd.DataFrame, margin: float = outcomes.DEFAULT_MARGIN, headline: str = DEFAULT_HEADLINE
) -> pd.DataFrame:
    """The whole per-cell metrics table, typed and sorted; margin is config's equivalence_margin, headline its
    headline (the figure the cost ratios read, named in every row's headline_figure)."""
    samples = Samples(runs)
    cells = cell_table(runs, samples, headline)
    cells = add_ratios(cells, runs, samples, headline)
    cells = add_noise_floor(cells, runs, samples, margin, headline)
    cells = cells.assign(**{HEADLINE_COLUMN: headline}).copy()  # one block again after the columns added one by one
    cells = flag_mixed_cpu_models(cells)
    cells = add_share(cells)
    cells = pd.concat([cells, verdict(cells)], axis=1)
    labels = ["workload", "server", "client", "stopping_rule", "stop", "saturation", "cpu_model"]
    return (
        cells.astype({c: "category" for c in labels} | {"connections": "int64", "rounds": "int64"})
        .sort_values(["workload", "connections", "server"], kind="stable")
        .reset_index(drop=True)
        .copy()  # consolidated: the columns were added a few at a time
    )


#: The scores table's columns (workflow/schemas/metrics.dictionary.yaml, scores).
SCORE_COLUMNS = [
    "server", "score", "score_lo", "score_hi", "rounds", "interval", "workloads", "cells", "server_bound_cells",
    "server_bound", "score_unpreempted", "preemption_matters",
]  # fmt: skip


def geomean_scores(metrics: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per server: 100 x geometric mean over workloads of 1 / cost vs node-http (node-http = 100; higher is cheaper).

    Within a workload the connection levels are averaged geometrically first, so a workload
    measured at four connection counts weighs no more than one measured at one. The A/A
    control's twin is not ranked. With the runs, the score is taken **per round**, from each
    cell's paired ratio of that round (a round counts where every cell of the server has one),
    and reported as the median over rounds with its order-statistic interval and n; without
    them (older callers), from the cells' median ratios, with no interval.

    Also: how many of the server's cells are server-bound (server_bound: all of them; a score
    over cells limited by the client or the database says less about the framework), and the
    same score over only the rounds in which none of its pairs had a preempted run (the same
    estimator), flagged where it lies more than half the interval's width (log scale) from the score.
    """
    rel = metrics[~metrics["server"].astype(str).map(is_twin)].dropna(subset=["cost_vs_node_http"])
    if rel.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    rel = rel.assign(log_rel=lambda d: -np.log(d["cost_vs_node_http"]))
    if "cost_vs_node_http_unpreempted" in rel:
        rel = rel.assign(log_clean=-np.log(rel["cost_vs_node_http_unpreempted"]))
    else:
        rel = rel.assign(log_clean=rel["log_rel"])
    bound = rel["saturation"].astype(str) == "server-bound" if "saturation" in rel else pd.Series(False, rel.index)
    rel = rel.assign(_bound=bound.to_numpy())
    per_workload = rel.groupby(["server", "workload"], observed=True)[["log_rel", "log_clean"]].mean().reset_index()
    out = (
        per_workload.groupby("server", observed=True)
        .agg(
            score=("log_rel", lambda s: 100 * float(np.exp(s.mean()))),
            score_unpreempted=("log_clean", lambda s: 100 * float(np.exp(s.mean()))),
            workloads=("workload", "nunique"),
        )
        .reset_index()
        .merge(
            rel.groupby("server", observed=True)
            .agg(cells=("workload", "size"), server_bound_cells=("_bound", "sum"))
            .reset_index(),
            on="server",
        )
    )
    out["server_bound"] = out["cells"] == out["server_bound_cells"]
    out["score_lo"], out["score_hi"], out["rounds"] = np.nan, np.nan, 0
    if runs is not None:
        per_round, clean = _round_scores(runs, rel, headline_of(metrics))
        for k, server in enumerate(out["server"].astype(str)):
            values = per_round.get(server)
            if values is None:
                continue
            median, lo, hi, n, _ = intervals.median_interval(values[None, :])
            out.loc[k, ["score", "score_lo", "score_hi", "rounds"]] = [median[0], lo[0], hi[0], int(n[0])]
            # The same estimator over the rounds in which none of the server's pairs had a preempted run.
            out.loc[k, "score_unpreempted"] = intervals.median_interval(clean[server][None, :])[0][0]
    out["rounds"] = out["rounds"].astype(int)
    out["interval"] = [intervals.describe(int(n)) for n in out["rounds"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        half = (np.log(out["score_hi"]) - np.log(out["score_lo"])) / 2
        shift = np.abs(np.log(out["score_unpreempted"]) - np.log(out["score"]))
    out["preemption_matters"] = (shift > half).fillna(False).astype(bool)
    return out[SCORE_COLUMNS].sort_values("score", ascending=False).reset_index(drop=True)


def _round_scores(
    runs: pd.DataFrame, rel: pd.DataFrame, headline: str = DEFAULT_HEADLINE
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per server, its score in each round (NaN where a cell lacks that round's ratio), from the paired ratios; and
    the same with NaN where any of its pairs that round had a run flagged as preempted."""
    samples = Samples(runs)
    keys = samples.keys.astype({c: str for c in ("workload", "server", "client", "stopping_rule", "stop")})
    partner = _partner(samples.keys, "node-http")
    cost = samples(headline)
    ratio = np.full(cost.shape, np.nan)
    has = partner >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio[has] = cost[has] / cost[partner[has]]
    spoiled = spoiled_pairs(samples, np.flatnonzero(has), partner[has])
    wanted = rel[CELL].astype({c: str for c in ("workload", "server", "client", "stopping_rule", "stop")})
    index = {tuple(r): i for i, r in enumerate(keys[CELL].itertuples(index=False))}
    out, clean = {}, {}
    for server, cells in wanted.groupby("server", observed=True):
        found = [(index[tuple(r)], r.workload) for r in cells[CELL].itertuples(index=False) if tuple(r) in index]
        if not found:
            continue
        rows, workloads = [i for i, _ in found], np.array([w for _, w in found])
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = -np.log(ratio[rows])  # (cells x rounds)
        per_workload = np.vstack([logs[workloads == w].mean(axis=0) for w in dict.fromkeys(workloads)])
        out[str(server)] = 100 * np.exp(per_workload.mean(axis=0))  # NaN where any cell lacks the round
        clean[str(server)] = np.where(spoiled[rows].any(axis=0), np.nan, out[str(server)])
    return out, clean


def headline(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per workload, the cells at the connection count closest to 50 (the reference's headline)."""
    m = metrics.assign(_dist=(metrics["connections"] - HEADLINE_CONNECTIONS).abs())
    best = m.groupby("workload", observed=True)["_dist"].transform("min")
    return m[m["_dist"] == best].drop(columns="_dist")

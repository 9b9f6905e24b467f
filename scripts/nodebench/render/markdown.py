"""summary.md: the reference benchmark's tables, regenerated from the metrics (and the runs' provenance)."""

from datetime import datetime

import pandas as pd

from nodebench.analysis.metrics import headline
from nodebench.catalogue.thresholds import CONFIDENCE, NOISY_CV, SERVER_BOUND_ELU, pct
from nodebench.catalogue.workloads import FRAMEWORK_ONLY, ordered

#: The runs' columns machine_line() reads: all the summary and the index page need of the runs.
PROVENANCE = [
    "cpu_model",
    "cpu_count",
    "host",
    "kernel",
    "node_version",
    "express_version",
    "fastify_version",
    "pg_version",
    "postgres_version",
    "database_mode",
    "load_generator",
    "load_generator_version",
    "started_at",
    "finished_at",
    "pipeline_commit",
]
MARK_NOT_BOUND = "†"
MARK_NOISY = "~"


def ci(value: float, lo: float, hi: float, fmt: str = ",.0f", suffix: str = "") -> str:
    """A figure with its interval, e.g. '4,209 [3,754–4,310]'."""
    if pd.isna(value):
        return "n/a"
    if pd.isna(lo) or pd.isna(hi) or lo == hi:
        return f"{value:{fmt}}{suffix}"
    return f"{value:{fmt}}{suffix} [{lo:{fmt}}–{hi:{fmt}}]"


def marks(row) -> str:
    """† when the cell was not server-bound, ~ when its repetitions varied by more than NOISY_CV."""
    return ("" if row.saturation == "server-bound" else MARK_NOT_BOUND) + (MARK_NOISY if row.noisy else "")


def cell_table(cells: pd.DataFrame) -> str:
    """One row per server and connection count: throughput, ELU, CPU per request, latency, ratios."""
    head = (
        f"| server | conn | req/s [{pct(CONFIDENCE)} CI] | ELU | us/req ELU [CI] | us/req CPU | p50 ms | p99 ms "
        "| vs express [CI] | vs node-http | verdict |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    rows = [
        f"| {r.server}{marks(r)} | {r.connections} | {ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi)} "
        f"| {r.elu_utilization:.1%} | {ci(r.us_per_req_elu, r.us_per_req_elu_lo, r.us_per_req_elu_hi, '.1f')} "
        f"| {r.us_per_req_cpu:.1f} | {r.latency_p50_ms:.3g} | {r.latency_p99_ms:.3g} "
        f"| {ci(r.speedup_vs_express, r.speedup_vs_express_lo, r.speedup_vs_express_hi, '.2f', 'x')} "
        f"| {ci(r.speedup_vs_node_http, float('nan'), float('nan'), '.2f', 'x')} | {r.saturation} |"
        for r in cells.itertuples()
    ]
    return "\n".join([head, *rows])


def share_table(metrics: pd.DataFrame) -> str:
    """The framework's share of each server's request CPU on every workload, both models."""
    m = headline(metrics)
    m = m[m["server"] != "node-http"].sort_values(["server", "workload"])
    head = (
        "| server | workload | conn | us/req ELU | share (reference model) | share (baseline model) | vs express |\n"
        "|---|---|---:|---:|---:|---:|---:|"
    )
    rows = [
        f"| {r.server}{marks(r)} | {r.workload} | {r.connections} | {r.us_per_req_elu:.1f} | {r.share_reference:.0%} "
        f"| {r.share_baseline:.0%} | {ci(r.speedup_vs_express, float('nan'), float('nan'), '.2f', 'x')} |"
        for r in m.itertuples()
    ]
    return "\n".join([head, *rows]).replace("nan%", "n/a")


def score_table(scores: pd.DataFrame) -> str:
    head = "| server | score (node-http = 100) | workloads |\n|---|---:|---:|"
    return "\n".join([head, *(f"| {r.server} | {r.score:.1f} | {r.workloads} |" for r in scores.itertuples())])


def machine_line(runs: pd.DataFrame) -> str:
    """Where, with what and when the runs were measured, from their provenance columns.

    Every distinct value is named: after a partial rerun the runs can come from several
    commits or versions, and naming only one would misreport the others.
    """

    def every(column: str) -> str:
        return ", ".join(sorted(runs[column].astype(str).unique()))

    return (
        f"Measured on {every('cpu_model')} ({every('cpu_count')} logical CPUs, host {every('host')}, "
        f"Linux {every('kernel')}) with Node.js {every('node_version')}, express {every('express_version')}, "
        f"fastify {every('fastify_version')}, pg {every('pg_version')}, PostgreSQL {every('postgres_version')} "
        f"({every('database_mode')}) and {clients(runs)}; runs from "
        f"{runs['started_at'].min()} to {runs['finished_at'].max()} (pipeline {every('pipeline_commit')})."
    )


def clients(runs: pd.DataFrame) -> str:
    """'autocannon 9.0.0, wrk debian/4.1.0-3+b2': every load generator with every version it ran."""
    pairs = runs[["load_generator", "load_generator_version"]].astype(str).drop_duplicates()
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


def render(runs: pd.DataFrame, metrics: pd.DataFrame, scores: pd.DataFrame, generated_at: datetime) -> str:
    """The whole summary document."""
    present = set(metrics["workload"].astype(str))
    order = ordered(present)
    parts = [
        "# Summary",
        "",
        machine_line(runs),
        "",
        *([cpu_model_warning(metrics), ""] if cpu_model_warning(metrics) else []),
        f"Medians over repetitions with {pct(CONFIDENCE)} bootstrap intervals. "
        "us/req ELU = ELU x 1e6 / req/s, the event-loop "
        "CPU each request cost; us/req CPU is process CPU (also GC and thread-pool work). vs express and vs "
        "node-http = req/s relative to that server in the same workload and connection count. "
        f"{MARK_NOT_BOUND} = not server-bound (ELU below {pct(SERVER_BOUND_ELU)}): "
        "that req/s says more about the client or the "
        f"database than about the framework. {MARK_NOISY} = noisy (coefficient of variation over {pct(NOISY_CV)}).",
    ]
    for workload in order:
        cells = metrics[metrics["workload"] == workload].sort_values(
            ["connections", "req_per_s"], ascending=[True, False]
        )
        parts += ["", f"## {workload}", "", cell_table(cells)]
    if FRAMEWORK_ONLY in present:
        parts += [
            "",
            "## Framework share of the request's CPU",
            "",
            "Reference model: the framework's us/req on `empty`, held constant, over its us/req on the workload. "
            "Baseline model: (framework us/req on `empty` minus node-http's) over its us/req on the workload. "
            "Both are models, not measurements (see the data dictionary).",
            "",
            share_table(metrics),
        ]
    if len(scores):
        parts += ["", "## Score", "", "Geometric mean over workloads of node-http's us/req over the server's.", ""]
        parts += [score_table(scores)]
    parts += ["", f"Generated {generated_at.isoformat(timespec='seconds')} from {len(runs)} runs.", ""]
    return "\n".join(parts)

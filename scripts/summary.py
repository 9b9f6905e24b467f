"""reports/summary.md: per-workload tables of medians over repetitions, regenerated from the Parquet."""

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

CELL = ["workload", "connections", "server"]
MEDIANS = ["req_per_s", "elu_utilization", "us_per_req_elu", "us_per_req_cpu", "latency_p50_ms", "latency_p99_ms"]
WORKLOAD_ORDER = ["empty", "point-lookup", "list"]


def cell_medians(runs: pd.DataFrame) -> pd.DataFrame:
    """Median of each figure over repetitions, one row per cell, with the run count."""
    return (
        runs.groupby(CELL, observed=True)
        .agg(**{m: (m, "median") for m in MEDIANS}, runs=("repetition", "nunique"))
        .reset_index()
    )


def with_ratio(cells: pd.DataFrame, baseline: str = "express") -> pd.DataFrame:
    """Add req/s relative to the baseline server in the same workload and connections (NaN if absent)."""
    base = cells[cells["server"] == baseline][["workload", "connections", "req_per_s"]].rename(
        columns={"req_per_s": "baseline_req_per_s"}
    )
    return (
        cells.merge(base, on=["workload", "connections"], how="left")
        .assign(ratio_vs_express=lambda d: d["req_per_s"] / d["baseline_req_per_s"])
        .drop(columns="baseline_req_per_s")
    )


def fmt_ratio(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{x:.2f}x"


def workload_table(cells: pd.DataFrame) -> str:
    """A Markdown table for one workload's cells."""
    head = (
        "| server | conn | req/s | ELU | us/req (ELU) | us/req (process CPU) | p50 ms | p99 ms | vs express | runs |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = [
        f"| {r.server} | {r.connections} | {r.req_per_s:,.0f} | {r.elu_utilization:.1%} | {r.us_per_req_elu:.1f} | "
        f"{r.us_per_req_cpu:.1f} | {r.latency_p50_ms:g} | {r.latency_p99_ms:g} | "
        f"{fmt_ratio(r.ratio_vs_express)} | {r.runs} |"
        for r in cells.itertuples()
    ]
    return "\n".join([head, *rows])


def machine_line(runs: pd.DataFrame) -> str:
    """Where and when the runs were measured, from their provenance columns."""
    first = runs.iloc[0]
    models = ", ".join(sorted(runs["cpu_model"].astype(str).unique()))
    return (
        f"Measured on {models} ({first.cpu_count} logical CPUs, host {first.host}, Linux {first.kernel}), "
        f"Node.js {first.node_version}, PostgreSQL {first.postgres_version} ({first.database_mode}), "
        f"express {first.express_version}, fastify {first.fastify_version}, pg {first.pg_version}, "
        f"autocannon {first.autocannon_version}; runs from {runs['started_at'].min()} to {runs['finished_at'].max()} "
        f"(pipeline {first.pipeline_commit})."
    )


def render(runs: pd.DataFrame, generated_at: datetime) -> str:
    """The whole summary document."""
    cells = with_ratio(cell_medians(runs))
    order = [w for w in WORKLOAD_ORDER if w in set(cells["workload"])] + sorted(
        set(cells["workload"]) - set(WORKLOAD_ORDER)
    )
    parts = [
        "# Summary",
        "",
        machine_line(runs),
        "",
        "Medians over repetitions. us/req (ELU) = ELU x 1e6 / req/s, the event-loop CPU each request cost; "
        "us/req (process CPU) also counts GC and thread-pool work. vs express = req/s relative to express in "
        "the same workload and connection count.",
    ]
    for workload in order:
        sub = cells[cells["workload"] == workload].sort_values(["connections", "req_per_s"], ascending=[True, False])
        parts += ["", f"## {workload}", "", workload_table(sub)]
    parts += [
        "",
        f"Generated {generated_at.isoformat(timespec='seconds')} from data/runs.parquet ({len(runs)} runs).",
        "",
    ]
    return "\n".join(parts)


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    frame = pd.read_parquet(sm.input.runs)
    Path(sm.output.summary).write_text(render(frame, datetime.now(UTC)))
    Path(sm.log[0]).write_text(f"summary of {len(frame)} runs -> {sm.output.summary}\n")

"""An experiment's report: its cells, the stopping-rule arithmetic, the duration sweep, the client comparison.

Every section is drawn from the data: a section appears when the experiment measured
what it needs (count runs next to duration runs of the same cell; one cell at several
durations; one cell under several load generators).
"""

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from summary import ci, machine_line

GROUP = ["workload", "server", "connections", "load_generator"]
# A share of unaccounted time within this many points of the throughput penalty "explains" it.
EXPLAINS_WITHIN = 0.02


def tail_arithmetic(completed: float, actual_s: float, sustained_req_per_s: float) -> dict:
    """How long `completed` requests take at the sustained rate, and what is left of the actual time.

    The reference's arithmetic: Fastify sustained 30,541 req/s over 10 s, so 100,000
    requests take 3.27 s, but the fixed-count run took 4.00 s: 0.73 s, 18 % of it, is
    unaccounted for by the sustained rate.
    """
    expected_s = completed / sustained_req_per_s
    unaccounted_s = actual_s - expected_s
    return {"expected_s": expected_s, "unaccounted_s": unaccounted_s, "unaccounted_share": unaccounted_s / actual_s}


def penalty(count_req_per_s: float, duration_req_per_s: float) -> float:
    """How much lower a fixed-count run's req/s is than a fixed-duration run's, as a fraction."""
    return 1.0 - count_req_per_s / duration_req_per_s


def _str(df: pd.DataFrame) -> pd.DataFrame:
    cats = [c for c in ("workload", "server", "load_generator", "stopping_rule", "stop") if c in df]
    return df.astype({c: str for c in cats})


def reference_durations(runs: pd.DataFrame) -> dict:
    """Per cell group with count runs, the fixed duration to compare them with.

    The longest duration that every such group measured (the reference: 10 s for both
    servers, though Fastify alone also ran 20 s), else each group's own longest.
    """
    runs = _str(runs)
    counted = runs[runs["stopping_rule"] == "count"][GROUP].drop_duplicates()
    timed = runs[runs["stopping_rule"] == "duration"]
    per_group = {
        tuple(k): set(timed.merge(pd.DataFrame([dict(zip(GROUP, k, strict=True))]), on=GROUP)["duration_s"])
        for k in counted.itertuples(index=False)
    }
    per_group = {k: v for k, v in per_group.items() if v}
    common = set.intersection(*per_group.values()) if per_group else set()
    return {k: (max(common) if common else max(v)) for k, v in per_group.items()}


def stopping_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per fixed-count cell: its penalty against the matching fixed-duration cell, and the tail arithmetic."""
    runs = _str(runs)
    rows = []
    for key, duration in reference_durations(runs).items():
        mine = runs.merge(pd.DataFrame([dict(zip(GROUP, key, strict=True))]), on=GROUP)
        timed = mine[(mine["stopping_rule"] == "duration") & (mine["duration_s"] == duration)]
        for stop, counted in mine[mine["stopping_rule"] == "count"].groupby("stop"):
            sustained = float(timed["client_req_per_s"].median())
            completed = float(counted["requests"].median())
            actual = float(counted["window_s"].median())
            last = counted["last_response_s"].astype(float)
            first = counted["first_connection_done_s"].astype(float)
            row = dict(zip(GROUP, key, strict=True)) | {
                "count_stop": stop,
                "duration_stop": f"{duration:g}s",
                "repetitions_count": len(counted),
                "repetitions_duration": len(timed),
                "requests_target": int(counted["requests_target"].iloc[0]),
                "requests_completed": completed,
                "overshoot": float((counted["requests"] - counted["requests_target"]).median()),
                "duration_req_per_s_reported": float(timed["client_reported_req_per_s"].median()),
                "count_req_per_s_reported": float(counted["client_reported_req_per_s"].median()),
                "duration_req_per_s": sustained,
                "count_req_per_s": float(counted["client_req_per_s"].median()),
                "actual_s": actual,
                "last_response_s": float(last.median()) if last.notna().any() else np.nan,
                "first_connection_done_s": float(first.median()) if first.notna().any() else np.nan,
                "us_per_req_elu_duration": float(timed["us_per_req_elu"].median()),
                "us_per_req_elu_count": float(counted["us_per_req_elu"].median()),
                "elu_duration": float(timed["elu_utilization"].median()),
                "elu_count": float(counted["elu_utilization"].median()),
            }
            row |= tail_arithmetic(completed, actual, sustained)
            row["penalty_reported"] = penalty(row["count_req_per_s_reported"], row["duration_req_per_s_reported"])
            row["penalty_measured"] = penalty(row["count_req_per_s"], sustained)
            row["idle_after_last_s"] = actual - row["last_response_s"]
            # The penalty had the run been timed to its last response: what the tail itself costs.
            row["penalty_to_last_response"] = penalty(completed / row["last_response_s"], sustained)
            row["tail_s"] = row["last_response_s"] - row["first_connection_done_s"]
            row["explains"] = abs(row["unaccounted_share"] - row["penalty_reported"]) <= EXPLAINS_WITHIN
            rows.append(row)
    return pd.DataFrame(rows)


def stopping_markdown(table: pd.DataFrame) -> list[str]:
    head = (
        "| server | client | workload | conn | duration req/s | count req/s | penalty | requests done / asked "
        "| took s | at sustained rate s | unaccounted s | share | last response s | first conn. done s "
        "| us/req ELU duration / count |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = [
        f"| {r.server} | {r.load_generator} | {r.workload} | {r.connections} | {r.duration_req_per_s_reported:,.0f} "
        f"({r.duration_stop}) | {r.count_req_per_s_reported:,.0f} | {r.penalty_reported:.1%} "
        f"| {r.requests_completed:,.0f} / {r.requests_target:,} | {r.actual_s:.2f} | {r.expected_s:.2f} "
        f"| {r.unaccounted_s:.2f} | {r.unaccounted_share:.1%} | {_num(r.last_response_s)} "
        f"| {_num(r.first_connection_done_s)} | {r.us_per_req_elu_duration:.1f} / {r.us_per_req_elu_count:.1f} |"
        for r in table.itertuples()
    ]
    return [head, *rows]


def _num(value, fmt=".2f") -> str:
    return "n/a" if pd.isna(value) else f"{value:{fmt}}"


def stopping_paragraph(table: pd.DataFrame, cpu_model: str) -> str:
    """Plain words from the numbers: does the tail arithmetic explain the penalty here?"""
    sentences = []
    for r in table.itertuples():
        s = (
            f"{r.server} ({r.load_generator}, {r.workload}, {r.connections} connections) completed "
            f"{r.requests_completed:,.0f} of {r.requests_target:,} requests in {r.actual_s:.2f} s; at the "
            f"{r.duration_req_per_s:,.0f} req/s it sustained over {r.duration_stop} that is {r.expected_s:.2f} s, "
            f"so {r.unaccounted_s:.2f} s ({r.unaccounted_share:.1%} of the run) is unaccounted, against a throughput "
            f"penalty of {r.penalty_reported:.1%} in the req/s the client reported."
        )
        if not pd.isna(r.idle_after_last_s):
            s += (
                f" Of the {r.actual_s:.2f} s, the last response came at {r.last_response_s:.2f} s and the client "
                f"then waited {r.idle_after_last_s:.2f} s with nothing in flight"
            )
            if not pd.isna(r.tail_s):
                s += (
                    f"; before that, {r.tail_s:.2f} s passed between the first connection finishing its share "
                    f"({r.first_connection_done_s:.2f} s) and the last"
                )
            s += f". Timed to its last response, the run's penalty would be {r.penalty_to_last_response:.1%}."
        sentences.append(s)
    explained = table["explains"].all()
    gaps = (table["unaccounted_share"] - table["penalty_reported"]).abs()
    verdict = (
        f"**On this machine ({cpu_model}) the arithmetic explains the penalty**: each unaccounted share is within "
        f"{gaps.max():.1%} of its penalty (threshold {EXPLAINS_WITHIN:.0%})."
        if explained
        else f"**On this machine ({cpu_model}) the arithmetic does not explain the penalty** for "
        + ", ".join(f"{r.server} ({r.count_stop})" for r in table[~table["explains"]].itertuples())
        + f": the unaccounted share and the penalty differ by up to {gaps.max():.1%}."
    )
    idle = table["idle_after_last_s"].dropna()
    if len(idle):
        verdict += (
            f" autocannon ends a fixed-count run only at its next once-a-second sample after the last response, "
            f"and its req/s is the mean of those samples, a partial last second counting as a whole one: the idle "
            f"wait ({idle.min():.2f}–{idle.max():.2f} s here) is part of the 'tail' and of the penalty, while the "
            f"server did no work."
        )
    cost = table["us_per_req_elu_count"] / table["us_per_req_elu_duration"] - 1
    verdict += (
        f" Event-loop CPU per request, the headline figure, moved by {cost.min():+.1%} to {cost.max():+.1%} "
        f"between fixed-count and fixed-duration runs"
        + (" (within run-to-run noise)." if cost.abs().max() <= 0.05 else ".")
    )
    return " ".join([verdict, *sentences])


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Cells measured at three or more fixed durations: req/s per duration (median, min, max)."""
    runs = _str(runs)
    timed = runs[runs["stopping_rule"] == "duration"]
    swept = timed.groupby(GROUP)["duration_s"].transform("nunique") >= 3
    if not swept.any():
        return pd.DataFrame()
    return (
        timed[swept]
        .groupby([*GROUP, "duration_s"])
        .agg(
            repetitions=("repetition", "count"),
            req_per_s_reported=("client_reported_req_per_s", "median"),
            req_per_s_min=("client_reported_req_per_s", "min"),
            req_per_s_max=("client_reported_req_per_s", "max"),
            us_per_req_elu=("us_per_req_elu", "median"),
            elu=("elu_utilization", "median"),
        )
        .reset_index()
    )


def sweep_markdown(sweep: pd.DataFrame) -> list[str]:
    lines = []
    for key, group in sweep.groupby(GROUP):
        lo, hi = group["req_per_s_reported"].min(), group["req_per_s_reported"].max()
        lines += [
            f"{key[1]} ({key[3]}, {key[0]}, {key[2]} connections): median req/s from {lo:,.0f} to {hi:,.0f} "
            f"across {len(group)} durations ({hi / lo - 1:.1%} apart).",
            "",
            "| duration s | runs | req/s (median) | min–max | us/req ELU | ELU |",
            "|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {r.duration_s:g} | {r.repetitions} | {r.req_per_s_reported:,.0f} | {r.req_per_s_min:,.0f}–"
                f"{r.req_per_s_max:,.0f} | {r.us_per_req_elu:.1f} | {r.elu:.1%} |"
                for r in group.itertuples()
            ),
            "",
        ]
    return lines


def clients_markdown(metrics: pd.DataFrame) -> list[str]:
    """Per workload and server, each client's req/s, the server's ELU and the client's own CPU."""
    m = _str(metrics).sort_values(["workload", "server", "load_generator"])
    head = (
        "| workload | server | client | stop | req/s [95 % CI] | ELU | us/req ELU [CI] | client CPU (of cores) "
        "| p99 ms | verdict |\n|---|---|---|---|---:|---:|---:|---:|---:|---|"
    )
    rows = [
        f"| {r.workload} | {r.server} | {r.load_generator} | {r.stop} "
        f"| {ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi)} "
        f"| {r.elu_utilization:.1%} | {ci(r.us_per_req_elu, r.us_per_req_elu_lo, r.us_per_req_elu_hi, '.1f')} "
        f"| {r.client_cpu_util:.2f} (of {r.client_cpu_capacity:g}) | {r.latency_p99_ms:.3g} | {r.saturation} |"
        for r in m.itertuples()
    ]
    return [head, *rows]


def bottleneck_paragraph(metrics: pd.DataFrame) -> str:
    """Which client, if any, limited each server; node-http on empty named first."""
    m = _str(metrics)
    bound = m[m["saturation"] == "client-bound"]
    node_empty = m[(m["server"] == "node-http") & (m["workload"] == "empty")]
    parts = []
    if len(node_empty):
        limited = node_empty[node_empty["saturation"] == "client-bound"]
        fastest = node_empty.sort_values("req_per_s", ascending=False).iloc[0]
        if len(limited):
            parts.append(
                "For node-http on `empty`, the bottleneck was the client: "
                + "; ".join(
                    f"{r.load_generator} used {r.client_cpu_util:.2f} of its {r.client_cpu_capacity:g} core(s) "
                    f"while the server's event loop was busy {r.elu_utilization:.0%} ({r.req_per_s:,.0f} req/s)"
                    for r in limited.itertuples()
                )
                + "."
            )
        else:
            parts.append(
                "For node-http on `empty`, no client was the bottleneck by the verdict's rule (client CPU at 90 % "
                "of what it can use)."
            )
        parts.append(
            f"The most node-http served on `empty` was {fastest.req_per_s:,.0f} req/s, with {fastest.load_generator} "
            f"(ELU {fastest.elu_utilization:.0%})."
        )
    others = bound[~((bound["server"] == "node-http") & (bound["workload"] == "empty"))]
    if len(others):
        parts.append(
            "Other client-bound cells: "
            + ", ".join(f"{r.workload}/{r.server} with {r.load_generator}" for r in others.itertuples())
            + "."
        )
    io = m[m["saturation"] == "io-bound"]
    if len(io):
        parts.append(
            "Neither the server's event loop nor the client was saturated in: "
            + ", ".join(
                f"{r.workload}/{r.server} with {r.load_generator} (ELU {r.elu_utilization:.0%}, client "
                f"{r.client_cpu_util:.2f})"
                for r in io.itertuples()
            )
            + "; there the database, or the client and database sharing CPUs, set the pace."
        )
    return " ".join(parts)


def cells_markdown(metrics: pd.DataFrame) -> list[str]:
    m = _str(metrics).sort_values(["workload", "server", "load_generator", "stopping_rule", "stop"])
    head = (
        "| workload | server | conn | client | stop | runs | req/s [95 % CI] | ELU | us/req ELU | client CPU "
        "| verdict |\n"
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---|"
    )
    rows = [
        f"| {r.workload} | {r.server} | {r.connections} | {r.load_generator} | {r.stop} | {r.repetitions} "
        f"| {ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi)} | {r.elu_utilization:.1%} | {r.us_per_req_elu:.1f} "
        f"| {r.client_cpu_util:.2f} | {r.saturation} |"
        for r in m.itertuples()
    ]
    return [head, *rows]


def render(name: str, description: str, runs: pd.DataFrame, metrics: pd.DataFrame, stopping: pd.DataFrame,
           generated_at: datetime) -> str:  # fmt: skip
    cpu_model = ", ".join(sorted(runs["cpu_model"].astype(str).unique()))
    parts = [f"# Experiment: {name}", ""]
    if description:
        parts += [description, ""]
    parts += [
        machine_line(runs),
        "",
        "req/s in the tables below is the server's own (requests it received over its ELU window) unless a column "
        "says *reported*, which is the figure the load generator itself prints. Medians over repetitions.",
        "",
        "## Cells",
        "",
        *cells_markdown(metrics),
    ]
    if len(stopping):
        parts += [
            "",
            "## Fixed duration against fixed count",
            "",
            "*duration req/s* and *count req/s* are what the load generator reported; *penalty* = 1 - count / "
            "duration. *At sustained rate* = requests done / the fixed-duration runs' measured rate (requests over "
            "the run's time); *unaccounted* = took - that; *share* = unaccounted / took.",
            "",
            *stopping_markdown(stopping),
            "",
            stopping_paragraph(stopping, cpu_model),
        ]
    sweep = sweep_table(runs)
    if len(sweep):
        parts += ["", "## Duration sweep", "", "req/s as the load generator reported it.", "", *sweep_markdown(sweep)]
    if metrics["load_generator"].nunique() > 1:
        parts += [
            "",
            "## Load generators",
            "",
            "The same cells under each client. *client CPU* is the load generator's own CPU over the run, in cores, "
            "of the cores it can use (its threads, at most its CPUs); at 90 % of those the verdict is client-bound.",
            "",
            *clients_markdown(metrics),
            "",
            bottleneck_paragraph(metrics),
        ]
    parts += ["", f"Generated {generated_at.isoformat(timespec='seconds')} from {len(runs)} runs.", ""]
    return "\n".join(parts)


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    runs = pd.read_parquet(sm.input.runs)
    metrics = pd.read_parquet(sm.input.metrics)
    stopping = stopping_table(runs)
    stopping.to_parquet(sm.output.stopping, index=False)
    text = render(sm.wildcards.experiment, sm.params.description, runs, metrics, stopping, datetime.now(UTC))
    Path(sm.output.summary).write_text(text)
    Path(sm.log[0]).write_text(f"{len(runs)} runs, {len(stopping)} fixed-count cells -> {sm.output.summary}\n")

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
# A share of unaccounted time within this many points of the throughput penalty matches it.
MATCHES_WITHIN = 0.02
# Seconds below which a part of the unaccounted time is too small to call.
NEGLIGIBLE_S = 0.05
VERDICTS = {
    "tail": "explained by the tail",
    "noise": "no penalty beyond noise",
    "partly": "partly the tail",
    "unsplit": "the client cannot split it",
    "mismatch": "share and penalty disagree",
}


def tail_arithmetic(completed: float, actual_s: float, sustained_req_per_s: float) -> dict:
    """How long `completed` requests take at the sustained rate, and what is left of the actual time.

    The reference's arithmetic: Fastify sustained 30,541 req/s over 10 s, so 100,000
    requests take 3.27 s, but the fixed-count run took 4.00 s: 0.73 s, 18 % of it, is
    unaccounted for by the sustained rate.
    """
    expected_s = completed / sustained_req_per_s
    unaccounted_s = actual_s - expected_s
    return {"expected_s": expected_s, "unaccounted_s": unaccounted_s, "unaccounted_share": unaccounted_s / actual_s}


def split_unaccounted(run: dict, sustained: float) -> dict:
    """Where one fixed-count run's unaccounted time went; the three parts add up to it exactly.

    - full_load_s: the phase while every connection still had requests left, against
      the sustained rate (positive: slower than the fixed-duration runs);
    - connection_tail_s: from the first connection finishing its share to the last
      response, against the sustained rate (fewer connections loading the server);
    - idle_s: after the last response, with nothing in flight, until the client ended.
    A client that cannot tell when its connections finished (ab) gives only idle_s.
    """
    t1, n1 = run["first_connection_done_s"], run["responses_at_first_done"]
    t2, n, total = run["last_response_s"], run["requests"], run["window_s"]
    idle = total - t2 if pd.notna(t2) else np.nan
    if pd.isna(t1) or pd.isna(n1):
        return {"full_load_s": np.nan, "connection_tail_s": np.nan, "idle_s": idle, "full_load_req_per_s": np.nan}
    return {
        "full_load_s": t1 - n1 / sustained,
        "connection_tail_s": (t2 - t1) - (n - n1) / sustained,
        "idle_s": idle,
        "full_load_req_per_s": n1 / t1,
    }


def penalty(count_req_per_s: float, duration_req_per_s: float) -> float:
    """How much lower a fixed-count run's req/s is than a fixed-duration run's, as a fraction."""
    return 1.0 - count_req_per_s / duration_req_per_s


def as_strings(df: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as plain strings, so they compare and concatenate like strings."""
    cats = [c for c in ("workload", "server", "load_generator", "stopping_rule", "stop", "saturation") if c in df]
    return df.astype({c: str for c in cats})


def reference_durations(runs: pd.DataFrame) -> dict:
    """Per cell group with count runs, the fixed duration to compare them with.

    The longest duration that every such group measured (the reference: 10 s for both
    servers, though Fastify alone also ran 20 s), else each group's own longest.
    """
    runs = as_strings(runs)
    counted = runs[runs["stopping_rule"] == "count"][GROUP].drop_duplicates()
    timed = runs[runs["stopping_rule"] == "duration"]
    per_group = {
        tuple(k): set(timed.merge(pd.DataFrame([dict(zip(GROUP, k, strict=True))]), on=GROUP)["duration_s"])
        for k in counted.itertuples(index=False)
    }
    per_group = {k: v for k, v in per_group.items() if v}
    common = set.intersection(*per_group.values()) if per_group else set()
    return {k: (max(common) if common else max(v)) for k, v in per_group.items()}


def _median(values) -> float:
    values = pd.Series(values, dtype=float).dropna()
    return float(values.median()) if len(values) else np.nan


def stopping_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per fixed-count cell: its penalty against the matching fixed-duration cell, and the tail arithmetic.

    The arithmetic is done run by run against the fixed-duration runs' median rate,
    and each figure is the median over the count runs.
    """
    runs = as_strings(runs)
    rows = []
    for key, duration in reference_durations(runs).items():
        mine = runs.merge(pd.DataFrame([dict(zip(GROUP, key, strict=True))]), on=GROUP)
        timed = mine[(mine["stopping_rule"] == "duration") & (mine["duration_s"] == duration)]
        rates = timed["client_req_per_s"]
        sustained = float(rates.median())
        spread = float((rates.max() - rates.min()) / sustained)
        for stop, counted in mine[mine["stopping_rule"] == "count"].groupby("stop"):
            per_run = [
                tail_arithmetic(r["requests"], r["window_s"], sustained) | split_unaccounted(r, sustained) | r
                for r in counted.to_dict("records")
            ]
            med = {k: _median([p[k] for p in per_run]) for k in per_run[0] if k in PER_RUN}
            row = dict(zip(GROUP, key, strict=True)) | {
                "count_stop": stop,
                "duration_stop": f"{duration:g}s",
                "repetitions_count": len(counted),
                "repetitions_duration": len(timed),
                "requests_target": int(counted["requests_target"].iloc[0]),
                "requests_completed": med["requests"],
                "overshoot": float((counted["requests"] - counted["requests_target"]).median()),
                "duration_req_per_s_reported": float(timed["client_reported_req_per_s"].median()),
                "count_req_per_s_reported": float(counted["client_reported_req_per_s"].median()),
                "duration_req_per_s": sustained,
                "count_req_per_s": float(counted["client_req_per_s"].median()),
                "rate_spread": spread,
                "actual_s": med["window_s"],
                "expected_s": med["expected_s"],
                "unaccounted_s": med["unaccounted_s"],
                "unaccounted_share": med["unaccounted_share"],
                "first_connection_done_s": med["first_connection_done_s"],
                "last_response_s": med["last_response_s"],
                "full_load_s": med["full_load_s"],
                "connection_tail_s": med["connection_tail_s"],
                "idle_s": med["idle_s"],
                "full_load_req_per_s": med["full_load_req_per_s"],
                "client_samples": _median(counted["client_samples"]),
                "reported_is_count_per_sample": _count_per_sample(counted),
                "us_per_req_elu_duration": float(timed["us_per_req_elu"].median()),
                "us_per_req_elu_count": float(counted["us_per_req_elu"].median()),
                "elu_duration": float(timed["elu_utilization"].median()),
                "elu_count": float(counted["elu_utilization"].median()),
            }
            row["penalty_reported"] = penalty(row["count_req_per_s_reported"], row["duration_req_per_s_reported"])
            row["penalty_measured"] = penalty(row["count_req_per_s"], sustained)
            row["verdict"] = verdict(row)
            rows.append(row)
    return pd.DataFrame(rows)


def _count_per_sample(counted: pd.DataFrame) -> bool | None:
    """True when every run's reported req/s is its count over its whole-second samples (autocannon's mean)."""
    known = counted.dropna(subset=["client_samples"])
    if known.empty:
        return None
    per_sample = known["requests"] / known["client_samples"].astype(float)
    return bool(((known["client_reported_req_per_s"] - per_sample).abs() <= 1e-3 * per_sample + 1).all())


# Per-run quantities whose medians the table reports.
PER_RUN = {
    "requests",
    "window_s",
    "expected_s",
    "unaccounted_s",
    "unaccounted_share",
    "first_connection_done_s",
    "last_response_s",
    "full_load_s",
    "connection_tail_s",
    "idle_s",
    "full_load_req_per_s",
}


def verdict(row: dict) -> str:
    """Does the tail arithmetic explain this cell's penalty? One of VERDICTS' keys.

    - mismatch: the unaccounted share and the reported penalty differ (the client's
      req/s is not its count over its time);
    - noise: the penalty is within the spread of the fixed-duration runs' own rates;
    - tail: what is left once the tail (connections finishing apart, and the idle wait)
      is taken out, the full-load phase, is within that spread (or under 0.05 s);
    - partly: the full-load phase itself ran slower than the sustained rate;
    - unsplit: a penalty beyond noise, from a client that cannot tell when its
      connections finished (ab).
    """
    if abs(row["unaccounted_share"] - row["penalty_reported"]) > MATCHES_WITHIN:
        return "mismatch"
    if row["penalty_reported"] <= row["rate_spread"]:
        return "noise"
    if pd.isna(row["full_load_s"]):
        return "unsplit"
    allowance = max(row["rate_spread"] * row["first_connection_done_s"], NEGLIGIBLE_S)
    return "tail" if abs(row["full_load_s"]) <= allowance else "partly"


def stopping_markdown(table: pd.DataFrame) -> list[str]:
    head = (
        "| server | client | workload | conn | duration req/s | count req/s | penalty | requests done / asked "
        "| took s | at sustained rate s | unaccounted s (share) | of which: full load / connection tail / idle s "
        "| us/req ELU duration / count | verdict |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    rows = [
        f"| {r.server} | {r.load_generator} | {r.workload} | {r.connections} | {r.duration_req_per_s_reported:,.0f} "
        f"({r.duration_stop}) | {r.count_req_per_s_reported:,.0f} | {r.penalty_reported:.1%} "
        f"| {r.requests_completed:,.0f} / {r.requests_target:,} | {r.actual_s:.2f} | {r.expected_s:.2f} "
        f"| {r.unaccounted_s:.2f} ({r.unaccounted_share:.1%}) "
        f"| {_num(r.full_load_s)} / {_num(r.connection_tail_s)} / {_num(r.idle_s)} "
        f"| {r.us_per_req_elu_duration:.1f} / {r.us_per_req_elu_count:.1f} | {VERDICTS[r.verdict]} |"
        for r in table.itertuples()
    ]
    return [head, *rows]


def _num(value, fmt=".2f") -> str:
    return "n/a" if pd.isna(value) else f"{value:{fmt}}"


def _row_sentence(r) -> str:
    s = (
        f"{r.server} {r.count_stop} ({r.load_generator}, {r.workload}, {r.connections} connections): "
        f"{r.requests_completed:,.0f} of {r.requests_target:,} requests in {r.actual_s:.2f} s; at the "
        f"{r.duration_req_per_s:,.0f} req/s of its {r.duration_stop} runs that is {r.expected_s:.2f} s, so "
        f"{r.unaccounted_s:.2f} s ({r.unaccounted_share:.1%}) is unaccounted, against a {r.penalty_reported:.1%} "
        f"penalty in the req/s the client reported"
    )
    if pd.notna(r.full_load_s):
        s += (
            f". Of it, {r.idle_s:.2f} s came after the last response with nothing in flight, "
            f"{r.connection_tail_s:.2f} s while the connections finished their shares one by one (from "
            f"{r.first_connection_done_s:.2f} s to {r.last_response_s:.2f} s), and {r.full_load_s:.2f} s in the "
            f"full-load phase, which ran at {r.full_load_req_per_s:,.0f} req/s"
        )
    elif pd.notna(r.idle_s):
        s += f"; {r.idle_s:.2f} s of the run came after its last response"
    return s + f" ({VERDICTS[r.verdict]})."


def stopping_paragraph(table: pd.DataFrame, cpu_model: str) -> str:
    """Plain words from the numbers: does the tail arithmetic explain the penalty here?"""
    kinds = set(table["verdict"])
    where = f"On this machine ({cpu_model})"
    real = table[table["verdict"] != "noise"]
    if kinds == {"noise"}:
        head = (
            f"**{where} there is no fixed-count penalty to explain**: the penalties "
            f"({', '.join(f'{p:+.1%}' for p in table['penalty_reported'])}) are within the spread of the "
            f"fixed-duration runs' own rates (up to {table['rate_spread'].max():.1%})."
        )
    elif kinds <= {"tail", "noise"}:
        head = (
            f"**{where} the arithmetic explains the penalty**"
            + (
                f" where there is one ({', '.join(f'{r.server} {r.count_stop}' for r in real.itertuples())})"
                if "noise" in kinds
                else ""
            )
            + ": the unaccounted share equals the penalty, and the unaccounted time is the tail (connections "
            "finishing apart, then the wait for the client to stop); the full-load phase ran at the sustained rate, "
            "within the fixed-duration runs' spread."
        )
    else:
        head = (
            f"**{where} the tail explains only part of the penalty**: "
            + "; ".join(f"{r.server} {r.count_stop}: {VERDICTS[r.verdict]}" for r in table.itertuples())
            + "."
        )
    parts = [head]
    split = real[real["full_load_s"].notna() & (real["unaccounted_s"] > 0)]
    if len(split):
        parts.append(
            "Where there is a penalty, the unaccounted time splits into "
            + "; ".join(
                f"{r.server} {r.count_stop} ({r.penalty_reported:.1%}): {r.idle_s / r.unaccounted_s:.0%} the client's "
                f"idle wait after the last response, {r.connection_tail_s / r.unaccounted_s:.0%} connections "
                f"finishing apart, {r.full_load_s / r.unaccounted_s:.0%} a slower full-load phase"
                for r in split.itertuples()
            )
            + " (medians of each part over the runs; per run the parts add up exactly)."
        )
    quantized = table[table["reported_is_count_per_sample"].fillna(False).astype(bool)]
    if len(quantized):
        parts.append(
            "In every fixed-count run of "
            + ", ".join(f"{r.server} {r.count_stop}" for r in quantized.itertuples())
            + " the reported req/s is exactly the count divided by the whole seconds autocannon sampled (e.g. "
            f"{quantized.iloc[-1]['requests_completed']:,.0f} / {quantized.iloc[-1]['client_samples']:.0f} = "
            f"{quantized.iloc[-1]['requests_completed'] / quantized.iloc[-1]['client_samples']:,.0f}), so a run "
            "that ends just past a whole second is charged the whole second. The reference's figures fit the same "
            "rule: 100,000 / 4 s = 25,000 (it reported 25,001 for Fastify) and 100,000 / 7 s = 14,286 (14,285 for "
            "Express)."
        )
    idle = table["idle_s"].dropna()
    if len(idle) and (table["load_generator"] == "autocannon").any():
        parts.append(
            f"autocannon ends a fixed-count run only at its next once-a-second sample after the last response, and "
            f"its req/s is the mean of those samples, a partial last second counting as a whole one; that idle wait "
            f"({idle.min():.2f}–{idle.max():.2f} s here) is part of the penalty while the server does no work."
        )
    tails = (table["actual_s"] - table["first_connection_done_s"]).dropna()
    if len(tails) > 1:
        share = tails / table["actual_s"]
        parts.append(
            f"The tail lasts {tails.min():.2f}–{tails.max():.2f} s whatever the count, so its weight is set by the "
            f"run's length: {share.min():.1%} to {share.max():.1%} of these runs ({table['actual_s'].min():.1f}–"
            f"{table['actual_s'].max():.1f} s); the reference's 100,000-request runs lasted 4 to 7 s."
        )
    cost = table["us_per_req_elu_count"] / table["us_per_req_elu_duration"] - 1
    parts.append(
        f"Event-loop CPU per request, the headline figure, differs by {cost.min():+.1%} to {cost.max():+.1%} "
        f"between the fixed-count and fixed-duration runs."
    )
    return " ".join([*parts, *(_row_sentence(r) for r in table.itertuples())])


def sweep_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Cells measured at three or more fixed durations: req/s per duration (median, min, max)."""
    runs = as_strings(runs)
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
    m = as_strings(metrics).sort_values(["workload", "server", "load_generator"])
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


# A cell this close to the verdict's lines is called out as being at the edge.
EDGE_ELU = 0.96
EDGE_CPU = 0.8


def held_back(metrics: pd.DataFrame) -> pd.DataFrame:
    """Cells where the client, not the server, set the pace, judged against the other clients.

    A cell is held back when its server was not saturated (ELU below 95 %) while another
    client drove the same server on the same workload and connections to more req/s,
    with the two 95 % intervals apart: the server had room, this client did not use it.
    The rule-based verdict (client CPU at 90 % of its cores) misses a client that limits
    below that, e.g. through its per-request latency on a CPU it shares.
    """
    m = as_strings(metrics)
    key = ["workload", "server", "connections"]
    best = (
        m.sort_values("req_per_s", ascending=False)
        .drop_duplicates(key)[[*key, "load_generator", "req_per_s", "req_per_s_lo", "elu_utilization"]]
        .rename(
            columns={
                "load_generator": "best_client",
                "req_per_s": "best_req_per_s",
                "req_per_s_lo": "best_req_per_s_lo",
                "elu_utilization": "best_elu",
            }
        )
    )
    pairs = m[m["saturation"] != "server-bound"].merge(best, on=key)
    return pairs[
        (pairs["best_client"] != pairs["load_generator"]) & (pairs["best_req_per_s_lo"] > pairs["req_per_s_hi"])
    ]


def bottleneck_paragraph(metrics: pd.DataFrame) -> str:
    """Which client, if any, limited each server; node-http on empty named first."""
    m = as_strings(metrics)
    back = held_back(m)

    def describe(r) -> str:
        return (
            f"{r.load_generator} {r.req_per_s:,.0f} req/s at ELU {r.elu_utilization:.0%}, its own CPU "
            f"{r.client_cpu_util:.2f} of {r.client_cpu_capacity:g} core(s) ({r.saturation})"
        )

    parts = []
    node_empty = m[(m["server"] == "node-http") & (m["workload"] == "empty")].sort_values("req_per_s")
    if len(node_empty):
        parts.append("node-http on `empty`: " + "; ".join(describe(r) for r in node_empty.itertuples()) + ".")
        ruled = node_empty[node_empty["saturation"] == "client-bound"]
        compared = back[(back["server"] == "node-http") & (back["workload"] == "empty")]
        limiting = sorted(set(ruled["load_generator"]) | set(compared["load_generator"]))
        if limiting:
            why = [
                f"{r.load_generator} left node-http's event loop at {r.elu_utilization:.0%} while {r.best_client} "
                f"drove it to {r.best_elu:.0%} and {r.best_req_per_s / r.req_per_s - 1:.0%} more req/s"
                for r in compared.itertuples()
            ] + [f"{r.load_generator} used {r.client_cpu_util:.2f} of its cores" for r in ruled.itertuples()]
            parts.append(
                f"**The bottleneck for node-http on `empty` was the client with {' and '.join(limiting)}**: "
                + "; ".join(why)
                + "."
            )
        else:
            parts.append(
                "**No client was the bottleneck for node-http on `empty`**: each drove its event loop to saturation "
                "or as far as the best client did."
            )
        edge = node_empty[
            (node_empty["saturation"] != "client-bound")
            & (
                (node_empty["elu_utilization"] < EDGE_ELU)
                | (node_empty["client_cpu_util"] >= EDGE_CPU * node_empty["client_cpu_capacity"])
            )
        ]
        if len(edge):
            parts.append(
                "Close to the edge: "
                + "; ".join(
                    f"{r.load_generator} (server ELU {r.elu_utilization:.1%}, client {r.client_cpu_util:.2f} of "
                    f"{r.client_cpu_capacity:g} core(s))"
                    for r in edge.itertuples()
                )
                + f", within a point of the 95 % ELU line or at {EDGE_CPU:.0%} of its cores: a noisier run could "
                "tip it to client-limited."
            )
    others = back[~((back["server"] == "node-http") & (back["workload"] == "empty"))]
    if len(others):
        parts.append(
            "Elsewhere a client held the server back (another client drove it further, intervals apart) in: "
            + ", ".join(
                f"{r.workload}/{r.server} with {r.load_generator} ({r.req_per_s:,.0f} req/s against "
                f"{r.best_req_per_s:,.0f} with {r.best_client})"
                for r in others.itertuples()
            )
            + "."
        )
    ruled_others = m[(m["saturation"] == "client-bound") & ~((m["server"] == "node-http") & (m["workload"] == "empty"))]
    if len(ruled_others):
        parts.append(
            "Client-bound by CPU: "
            + ", ".join(f"{r.workload}/{r.server} with {r.load_generator}" for r in ruled_others.itertuples())
            + "."
        )
    io = m[(m["saturation"] == "io-bound")]
    io = io[
        ~io.set_index(["workload", "server", "load_generator"]).index.isin(
            back.set_index(["workload", "server", "load_generator"]).index
        )
    ]
    if len(io):
        parts.append(
            "Neither the server's event loop nor a client was the limit (io-bound) in: "
            + ", ".join(f"{r.workload}/{r.server} with {r.load_generator}" for r in io.itertuples())
            + "; there the database, sharing CPUs with the client, set the pace."
        )
    return " ".join(parts)


def cells_markdown(metrics: pd.DataFrame) -> list[str]:
    m = as_strings(metrics).sort_values(["workload", "server", "load_generator", "stopping_rule", "stop"])
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

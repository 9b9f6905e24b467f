"""The experiments' arithmetic: the stopping-rule split, the duration sweep, which client held a server back.

Pure functions over the runs and metrics tables; the prose that words them is in
nodebench.render.experiment_report.
"""

import numpy as np
import pandas as pd

from nodebench.catalogue.thresholds import MATCHES_WITHIN, NEGLIGIBLE_S

GROUP = ["workload", "server", "connections", "client"]

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
    cats = [c for c in ("workload", "server", "client", "stopping_rule", "stop", "saturation") if c in df]
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
                "rounds_count": len(counted),
                "rounds_duration": len(timed),
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
      is taken out, the full-load phase, is within that spread (or under NEGLIGIBLE_S);
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
            rounds=("round", "count"),
            req_per_s_reported=("client_reported_req_per_s", "median"),
            req_per_s_min=("client_reported_req_per_s", "min"),
            req_per_s_max=("client_reported_req_per_s", "max"),
            us_per_req_elu=("us_per_req_elu", "median"),
            elu=("elu_utilization", "median"),
        )
        .reset_index()
    )


# A cell this close to the verdict's lines is called out as being at the edge.
EDGE_ELU = 0.96


EDGE_CPU = 0.8


def held_back(metrics: pd.DataFrame) -> pd.DataFrame:
    """Cells where the client, not the server, set the pace, judged against the other clients.

    A cell is held back when its server was not saturated (ELU below SERVER_BOUND_ELU) while another
    client drove the same server on the same workload and connections to more req/s,
    with the two intervals (CONFIDENCE) apart: the server had room, this client did not use it.
    The rule-based verdict (client CPU at CLIENT_BOUND_CPU of its cores) misses a client that limits
    below that, e.g. through its per-request latency on a CPU it shares.
    """
    m = as_strings(metrics)
    key = ["workload", "server", "connections"]
    best = (
        m.sort_values("req_per_s", ascending=False)
        .drop_duplicates(key)[[*key, "client", "req_per_s", "req_per_s_lo", "elu_utilization"]]
        .rename(
            columns={
                "client": "best_client",
                "req_per_s": "best_req_per_s",
                "req_per_s_lo": "best_req_per_s_lo",
                "elu_utilization": "best_elu",
            }
        )
    )
    pairs = m[m["saturation"] != "server-bound"].merge(best, on=key)
    return pairs[(pairs["best_client"] != pairs["client"]) & (pairs["best_req_per_s_lo"] > pairs["req_per_s_hi"])]

"""Synthetic campaigns with known ratios, run through the real analysis (nodebench.analysis.metrics).

Each campaign is one peer group measured in `rounds` rounds: node-http (the baseline), its A/A
twin node-http-aa, and fastify at a true cost ratio `effect` to node-http. A run's CPU per
request is

    true cost x machine speed at the moment it started x per-run noise (x a preemption slowdown)

where the machine's speed is a random walk in log space (DRIFT per sqrt(minute): the machine
moving by the hour, as it does here), per-run noise is lognormal (NOISE), and a share of runs
(PREEMPTED) is slowed by a uniform factor up to PREEMPT_SLOWDOWN and flagged, as the harness
flags them. How the runs are laid out in time is the design under test:

- "blocked": the plan's design. Each round's peer group runs back to back, in a shuffled order,
  RUN_S apart; rounds are ROUND_MIN apart.
- "borrowed": the baseline and its twin measured in another scope's round, BORROWED_MIN
  earlier than fastify (what the scenarios score and the ledger did before blocks).

The campaigns are the workloads of one runs table (campaign i is workload "w<i>"), so one call
of compute_metrics analyses them all, exactly as it analyses a report.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import looks as looks_
from nodebench.analysis import metrics

NOISE = 0.03
DRIFT = 0.03
PREEMPTED = 0.15
PREEMPT_SLOWDOWN = 0.30
RUN_S = 8.0
ROUND_MIN = 5.0
BORROWED_MIN = 40.0
SERVERS = ["node-http", "node-http-aa", "fastify"]
BASE_US = 100.0


def _walk(rng: np.random.Generator, times_min: np.ndarray) -> np.ndarray:
    """Per campaign (row), the log speed of the machine at each time (columns, any order): a Brownian motion."""
    order = np.argsort(times_min, axis=1)
    t = np.take_along_axis(times_min, order, axis=1)
    steps = rng.normal(0.0, DRIFT * np.sqrt(np.diff(t, axis=1, prepend=0.0)))
    walk = np.cumsum(steps, axis=1)
    out = np.empty_like(walk)
    np.put_along_axis(out, order, walk, axis=1)
    return out


def campaigns(n: int, effect: float, rounds: int = 5, design: str = "blocked", seed: int = 1) -> pd.DataFrame:
    """n campaigns' runs (one row per run), laid out by `design`, fastify at `effect` times node-http's cost."""
    rng = np.random.default_rng(seed)
    s = len(SERVERS)
    # Start times in minutes, (campaign, round, server).
    position = np.argsort(rng.random((n, rounds, s)), axis=2)  # each round's shuffled order
    start = np.arange(rounds)[None, :, None] * ROUND_MIN + position * RUN_S / 60
    if design == "borrowed":
        # fastify's block is another scope's, BORROWED_MIN later; the baseline and twin keep theirs.
        start = start + np.array([0.0, 0.0, BORROWED_MIN])[None, None, :]
    elif design != "blocked":
        raise ValueError(f"unknown design {design!r}")
    flat = start.reshape(n, rounds * s)
    speed = _walk(rng, flat).reshape(n, rounds, s)
    true = np.log(np.array([1.0, 1.0, effect]))[None, None, :]
    noise = rng.normal(0.0, NOISE, (n, rounds, s))
    preempted = rng.random((n, rounds, s)) < PREEMPTED
    slowdown = np.where(preempted, np.log1p(rng.uniform(0.0, PREEMPT_SLOWDOWN, (n, rounds, s))), 0.0)
    cost = BASE_US * np.exp(true + speed + noise + slowdown)
    c, r, k = np.meshgrid(np.arange(n), np.arange(rounds), np.arange(s), indexing="ij")
    base = pd.Timestamp("2026-01-01", tz="UTC")
    runs = pd.DataFrame(
        {
            "workload": [f"w{i:05d}" for i in c.ravel()],
            "server": np.array(SERVERS)[k.ravel()],
            "round": r.ravel() + 1,
            "us_per_req_elu": cost.ravel(),
            "started_at": [(base + pd.Timedelta(minutes=float(m))).isoformat() for m in start.ravel()],
            "preempted": preempted.ravel(),
        }
    )
    return runs.assign(
        connections=50, client="wrk", stopping_rule="duration", stop="5s", session="sim",
        req_per_s=0.99e6 / runs["us_per_req_elu"], us_per_req_cpu=runs["us_per_req_elu"],
        latency_p50_ms=1.0, latency_p99_ms=2.0, elu_utilization=0.99, client_cpu_util=0.5,
        client_cpu_capacity=1.0, cpu_model="simulated",
    )  # fmt: skip


def analyse(runs: pd.DataFrame, effect: float) -> dict:
    """What the analysis made of the campaigns: fastify's interval coverage of the true ratio, how often it called
    fastify different (cheaper or costlier) and equivalent, and the stated coverage."""
    m = metrics.compute_metrics(runs)
    f = m[m["server"].astype(str) == "fastify"]
    lo, hi = f["cost_vs_node_http_lo"], f["cost_vs_node_http_hi"]
    outcome = f["outcome_vs_node_http"].astype(object)
    return {
        "campaigns": len(f),
        "coverage": float(((lo <= effect) & (effect <= hi)).mean()),
        "stated": float(f["pair_coverage_vs_node_http"].iloc[0]),
        "different": float(outcome.isin(["cheaper", "costlier"]).mean()),
        "cheaper": float((outcome == "cheaper").mean()),
        "equivalent": float((outcome == "equivalent").mean()),
        "median_gap_s": float(f["gap_s_vs_node_http"].median()),
    }


def adaptive(runs: pd.DataFrame, effect: float, looks: list[int], half_width: float, stop_on: str = "width") -> dict:
    """The campaigns under adaptive rounds: each stops at its first look where every headline interval's
    half-width is at most half_width (nodebench.analysis.looks, as the workflow's look checkpoint decides),
    else at the last; fastify's interval and outcome are then taken at the rounds it stopped at.

    stop_on="excludes-one" is the rule the workflow must not use, for the test to show it is caught: stop as
    soon as fastify's interval excludes 1 (optional stopping on the answer)."""
    stopped: dict[str, int] = {}
    final = []
    for n in looks:
        part = runs[(runs["round"] <= n) & ~runs["workload"].isin(stopped)]
        if part.empty:
            break
        found = looks_.comparisons(part)
        found["campaign"] = found["comparison"].str.extract(r" on (w\d+) ")[0]
        if stop_on == "width":
            narrow = found.groupby("campaign")["half_width_log"].agg(lambda h: bool((h <= half_width).all()))
        elif stop_on == "excludes-one":
            f = found[found["comparison"].str.startswith("fastify / node-http")]
            narrow = pd.Series(((f["lo"] > 1) | (f["hi"] < 1)).to_numpy(), index=f["campaign"].to_numpy())
        else:
            raise ValueError(f"unknown stopping rule {stop_on!r}")
        done = narrow.index[narrow | (n == looks[-1])]
        if done.empty:
            continue
        m = metrics.compute_metrics(part[part["workload"].isin(done)])
        final.append(m[m["server"].astype(str) == "fastify"].assign(stopped_at=n))
        stopped |= dict.fromkeys(done, n)
    f = pd.concat(final, ignore_index=True)
    lo, hi = f["cost_vs_node_http_lo"], f["cost_vs_node_http_hi"]
    outcome = f["outcome_vs_node_http"].astype(object)
    return {
        "campaigns": len(f),
        "coverage": float(((lo <= effect) & (effect <= hi)).mean()),
        "stated": looks_.stated_coverage(looks),
        "different": float(outcome.isin(["cheaper", "costlier"]).mean()),
        "cheaper": float((outcome == "cheaper").mean()),
        "equivalent": float((outcome == "equivalent").mean()),
        "mean_rounds": float(f["stopped_at"].mean()),
        "capped": float((f["stopped_at"] == looks[-1]).mean()),
    }

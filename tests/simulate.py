"""Synthetic campaigns with known ratios, run through the real analysis (nodebench.analysis.metrics).

Each campaign is one block of the default matrix's peer group measured in `rounds` rounds: node-http
(the baseline), its A/A twin node-http-aa, fastify at a true cost ratio `effect` to node-http, and
fastify-schema, express and express-lean at fixed ratios. A run's cost per request is

    true cost x machine speed when it started x per-run noise x (1 + the disturbance it met)

with every term drawn from what this machine measured (docs/performance.md, 2026-12-04):

- the machine's speed is a random walk in log space, DRIFT per sqrt(minute) (the rounds' common factor
  moved by 3-5 % between rounds about three minutes apart: 0.03/sqrt(min));
- per-run noise is lognormal with the spread of the workload class and window length (NOISE: a 5 s
  window on `empty` 3.5 %, on `point-lookup` 2.5 %, a 15 s window on `empty` 2.4 %);
- disturbance comes in bursts, as a neighbour's job does (the bursts' rate, length and size are assumptions:
  the precision runs of 2026-12-04 met none; the flag's noise and threshold are measured): bursts arrive at
  BURST_RATE per minute, last
  an exponential BURST_MIN on average, and take a share of the server's CPU drawn between 1 % and 30 %;
  a run that starts inside one is slowed by that share (ELU counts the waiting). Its flag is imperfect,
  as the harness's is: the stolen share the harness reads is the burst's share times lognormal noise
  (FLAG_NOISE), undisturbed runs read up to about 0.024, and the run is flagged over
  DISTURBED_STOLEN_SHARE (0.03). A flagged run is measured again RUN_S later, up to REMEASURE more
  times (harness/remeasure.py), and the attempt with the smallest stolen share is kept; one still over
  the threshold is kept and flagged. remeasure=0 turns that off.

How the runs are laid out in time is the design under test:

- "back-to-back": the plan's design. Each round's peer group runs back to back, in a shuffled order,
  RUN_S apart; rounds are ROUND_MIN apart.
- "borrowed": the baseline and its twin measured in another scope's round, BORROWED_MIN
  earlier than the rest (what the scenarios score and the ledger did before peer groups ran back to back).

The campaigns are the workloads of one runs table (campaign i is workload "w<i>"), so one call
of compute_metrics analyses them all, exactly as it analyses a report.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import looks as looks_
from nodebench.analysis import metrics
from nodebench.catalogue.preemption import DISTURBED_STOLEN_SHARE

#: Per-run noise (log sd) by workload class and window, from the 2026-12-04 measurements (docs/performance.md):
#: the residual of each server's runs around their round's common factor in the pipeline's precision runs, 5 s
#: windows (cheap servers on `empty` 3.4-4.8 %, Express 3.3 %, `point-lookup` 0.6-3.7 %) and 15 s (2.4 %).
#: The machine's noise changes from hour to hour: a quiet hour read 0.7 % a run at 15 s, the next 3 %.
NOISE = {"empty-5s": 0.035, "point-lookup-5s": 0.025, "empty-15s": 0.024}
DEFAULT_NOISE = "empty-5s"
DRIFT = 0.03
BURST_RATE = 0.1
BURST_MIN = 1.0
BURST_SHARE = (0.01, 0.30)
FLAG_NOISE = 0.3
#: What an undisturbed run's stolen share reads (0-0.024 measured): the absolute value of N(0, this).
QUIET_STOLEN = 0.008
REMEASURE = 2
RUN_S = 12.0
ROUND_MIN = 5.0
BORROWED_MIN = 40.0
#: The default matrix's peer group on one workload, with the control's twin, and each one's true cost
#: relative to node-http (fastify's is the campaign's `effect`; the others as measured on `empty`).
SERVERS = ["node-http", "node-http-aa", "fastify", "fastify-schema", "express", "express-lean"]
RELATIVE = {"node-http": 1.0, "node-http-aa": 1.0, "fastify-schema": 1.0, "express": 7.0, "express-lean": 6.3}
BASE_US = 15.0


def _walk(rng: np.random.Generator, times_min: np.ndarray) -> np.ndarray:
    """Per campaign (row), the log speed of the machine at each time (columns, any order): a Brownian motion."""
    order = np.argsort(times_min, axis=1)
    t = np.take_along_axis(times_min, order, axis=1)
    steps = rng.normal(0.0, DRIFT * np.sqrt(np.diff(t, axis=1, prepend=0.0)))
    walk = np.cumsum(steps, axis=1)
    out = np.empty_like(walk)
    np.put_along_axis(out, order, walk, axis=1)
    return out


def _bursts(rng: np.random.Generator, n: int, span_min: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per campaign, the bursts of disturbance over span_min minutes: (starts, ends, shares), each (n, k), with
    unused slots ending before they start."""
    k = int(rng.poisson(BURST_RATE * span_min, n).max(initial=0)) + 1
    count = rng.poisson(BURST_RATE * span_min, n)
    starts = rng.uniform(-BURST_MIN, span_min, (n, k))
    ends = starts + rng.exponential(BURST_MIN, (n, k))
    ends = np.where(np.arange(k)[None, :] < count[:, None], ends, -np.inf)
    return starts, ends, rng.uniform(*BURST_SHARE, (n, k))


def _share_at(bursts, times_min: np.ndarray) -> np.ndarray:
    """The CPU share the bursts take at each time (n, ...): the largest of those under way, 0 outside any."""
    starts, ends, shares = bursts
    extra = (slice(None),) + (None,) * (times_min.ndim - 1) + (slice(None),)
    inside = (starts[extra] <= times_min[..., None]) & (times_min[..., None] < ends[extra])
    return np.where(inside, shares[extra], 0.0).max(axis=-1)


def campaigns(
    n: int, effect: float, rounds: int = 5, design: str = "back-to-back", seed: int = 1, noise: str = DEFAULT_NOISE,
    remeasure: int = REMEASURE,
) -> pd.DataFrame:  # fmt: skip
    """n campaigns' runs (one row per run), laid out by `design`, fastify at `effect` times node-http's cost."""
    rng = np.random.default_rng(seed)
    s = len(SERVERS)
    # Start times in minutes, (campaign, round, server).
    position = np.argsort(rng.random((n, rounds, s)), axis=2)  # each round's shuffled order
    start = np.arange(rounds)[None, :, None] * ROUND_MIN + position * RUN_S / 60
    if design == "borrowed":
        # The baseline and twin are another scope's, BORROWED_MIN earlier than the rest of the block.
        start = start + np.array([0.0 if x in ("node-http", "node-http-aa") else BORROWED_MIN for x in SERVERS])
    elif design != "back-to-back":
        raise ValueError(f"unknown design {design!r}")
    speed = _walk(rng, start.reshape(n, rounds * s)).reshape(n, rounds, s)
    true = np.log(np.array([effect if x == "fastify" else RELATIVE[x] for x in SERVERS]))[None, None, :]
    bursts = _bursts(rng, n, float(start.max()) + 1.0)
    # Every attempt a run may take (the first and up to `remeasure` more, RUN_S apart), then the ones it took.
    tries = 1 + remeasure
    at = start[..., None] + np.arange(tries) * RUN_S / 60
    share = _share_at(bursts, at)
    read = share * np.exp(rng.normal(0.0, FLAG_NOISE, share.shape))
    stolen = np.where(share > 0, read, np.abs(rng.normal(0, QUIET_STOLEN, share.shape)))
    over = stolen > DISTURBED_STOLEN_SHARE
    # Attempt a is made when every attempt before it was over the threshold.
    made = np.concatenate([np.ones(over.shape[:-1] + (1,), bool), np.cumprod(over, axis=-1)[..., :-1].astype(bool)], -1)
    kept = np.argmin(np.where(made, stolen, np.inf), axis=-1)
    pick = lambda a: np.take_along_axis(a, kept[..., None], axis=-1)[..., 0]  # noqa: E731
    run_noise = rng.normal(0.0, NOISE[noise], share.shape)
    cost = BASE_US * np.exp(true + speed + pick(run_noise)) * (1.0 + pick(share))
    stolen_kept = pick(stolen)
    c, r, k = np.meshgrid(np.arange(n), np.arange(rounds), np.arange(s), indexing="ij")
    base = pd.Timestamp("2026-01-01", tz="UTC")
    # A start time takes one of few values (round x place in it x design): each is formatted once.
    times, which = np.unique(start.ravel(), return_inverse=True)
    stamps = np.array([(base + pd.Timedelta(minutes=float(m))).isoformat() for m in times], dtype=object)
    runs = pd.DataFrame(
        {
            "workload": np.array([f"w{i:05d}" for i in range(n)], dtype=object)[c.ravel()],
            "server": np.array(SERVERS)[k.ravel()],
            "round": r.ravel() + 1,
            "us_per_req_elu": cost.ravel(),
            "started_at": stamps[which.ravel()],
            "stolen_share": stolen_kept.ravel(),
            "disturbed": (stolen_kept > DISTURBED_STOLEN_SHARE).ravel(),
            "measurement_count": made.sum(axis=-1).ravel(),
            # What the run really met, for the tests: the harness cannot know it.
            "true_share": pick(share).ravel(),
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
    fastify different (cheaper or costlier) and equivalent, and the stated coverage; the twin's coverage of 1;
    how many runs were disturbed, measured again and still flagged."""
    m = metrics.compute_metrics(runs)
    f = m[m["server"].astype(str) == "fastify"]
    lo, hi = f["cost_vs_node_http_lo"], f["cost_vs_node_http_hi"]
    outcome = f["outcome_vs_node_http"].astype(object)
    twin = m[m["server"].astype(str) == "node-http-aa"]
    return {
        "campaigns": len(f),
        "coverage": float(((lo <= effect) & (effect <= hi)).mean()),
        "stated": float(f["pair_coverage_vs_node_http"].iloc[0]),
        "different": float(outcome.isin(["cheaper", "costlier"]).mean()),
        "cheaper": float((outcome == "cheaper").mean()),
        "costlier": float((outcome == "costlier").mean()),
        "equivalent": float((outcome == "equivalent").mean()),
        "twin_coverage": float(((twin["cost_vs_node_http_lo"] <= 1) & (1 <= twin["cost_vs_node_http_hi"])).mean()),
        "median_gap_s": float(f["gap_s_vs_node_http"].median()),
        "in_a_burst": float((runs["true_share"] > 0).mean()),
        "measured_again": float((runs["measurement_count"] > 1).mean()),
        "still_flagged": float(runs["disturbed"].mean()),
        "median_half_width": float(((np.log(hi) - np.log(lo)) / 2).median()),
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
            narrow = (found["half_width_log"] <= half_width).groupby(found["campaign"]).all()
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

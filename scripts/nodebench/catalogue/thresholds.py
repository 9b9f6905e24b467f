"""Every threshold a verdict, a flag or a sentence uses, in one place.

Code that words a threshold formats it from here (f"{SERVER_BOUND_ELU:.0%}"), so a
change here changes every table, chart and sentence that mentions it.
"""

#: Confidence level of every interval.
CONFIDENCE = 0.95
#: A cell whose rounds vary by more than this coefficient of variation is flagged noisy.
NOISY_CV = 0.05
#: A cell is server-bound when the server's event loop was at least this busy.
SERVER_BOUND_ELU = 0.95
#: An open loop's window delivered at least this share of the rate it was asked for, or the system did not
#: sustain that rate: its latencies are a censored result (at or above what was measured), and a cost per
#: request there is not at the offered load.
SUSTAINED_SHARE = 0.95
#: ... else client-bound when the load generator used at least this share of the CPU it can use.
CLIENT_BOUND_CPU = 0.90
#: ... else database-bound when PostgreSQL used at least this share of the client CPU set's capacity
#: that the load generator left (they share those CPUs: client_cpu_count - client_cpu_util cores).
#: Measured (2-CPU VM, 5 s windows, c50, docs/measurement.md): point-lookup runs whose server was not
#: bound (ELU 0.70-0.77) had PostgreSQL at 0.85-0.97 of what autocannon left, with the client CPU at
#: 92-98 % busy; server-bound express point-lookup runs had it at 0.39-0.64. 0.80 separates the two.
DB_BOUND_SHARE = 0.80
#: ... else "client CPUs saturated (shared)" when the client CPU set was at least this busy
#: (client_cpus_busy, /proc/stat) though neither the client nor PostgreSQL alone reached its threshold.
#: Measured: a CPU hog on the client CPU gave 1.00 (and a run disturbed by some other process 0.97),
#: database-limited runs 0.93-0.98, runs limited by the server alone 0.27-0.92.
CLIENT_CPUS_BUSY = 0.90
#: When a run is flagged preempted: decided by the harness as it writes the record, so these
#: live in their own module (catalogue/preemption.py), and editing a report threshold here
#: never re-measures anything.
from nodebench.catalogue.preemption import PREEMPT_ACTIVE_OVER_CPU, PREEMPT_INVOL_CSW_PER_S  # noqa: E402, F401

#: Charts and tables headline the connection count closest to this (the reference's).
HEADLINE_CONNECTIONS = 50
#: Stopping-rule study: a fixed count "matches" a fixed duration within this relative difference.
MATCHES_WITHIN = 0.02
#: Stopping-rule study: seconds too small to call a part of a run's time.
NEGLIGIBLE_S = 0.05
#: Load-generator study: a held-back cell within a point of the ELU line ...
EDGE_ELU = 0.96
#: ... or whose client used at least this share of its cores is "at the edge".
EDGE_CPU = 0.8


def pct(x: float) -> str:
    """0.95 -> '95 %', the way the reports write a share."""
    return f"{x * 100:g} %"


#: The open-loop client's refusal threshold: a run in which the client's own lateness (each request's dispatch
#: minus its scheduled time) moved a reported percentile (p50, p90, p99, p99.9) by more than this share of it
#: (and 0.1 ms) has its latencies refused (docs/openloop.md). Measured against the same percentile of the
#: latencies net of that lateness. Its lag p99 alone would refuse nearly every run here: this machine's CPUs pause
#: for 1-4 ms several times a second, which puts the lag p99 at 0.3-3 ms at any rate, while moving the p99 by
#: 0-0.35 ms (Express, 1,000-11,000 req/s, 2026-12-03).
OPENLOOP_MAX_CLIENT_EFFECT = 0.1
#: Seconds at the start of an open-loop window whose requests are sent, answered and counted (req/s, ELU) but
#: not timed (at most a fifth of the window). The harness idles between warm-up and window while it settles the
#: query counter, and after such a pause this machine ran at about half speed for 100-600 ms (against a server
#: that answers at once too), which showed as 20-180 ms of latency at 26,000 req/s: an artifact of the protocol,
#: not of the server. wrk2 leaves its first 10 s out of its latencies for the same reason.
OPENLOOP_LEAD_IN_S = 1.0
#: The highest rate, req/s, at which the open-loop client naps between sends where it shares its CPUs with the
#: database its workload queries (servers/loadgen/openloop.js --nap); above it, it spins as before. Measured
#: through the pipeline, napping against spinning paired by round (tests/benchmarks/client_wait.py, 2026-12-06, 3
#: rounds): at 1,240-3,180 req/s it took 0.37-0.61x the CPU and left the server's cost per request and
#: PostgreSQL's CPU within the comparison's own A/A spread (0.89-1.06x); at 4,370-5,250 req/s (Fastify at 90 % of
#: its point-lookup capacity, the client's CPU shared and saturated) the gaps are near its 0.15 ms lead, it saved
#: little (0.87x) and its wake-ups made the latency p50 2.0-5.4x worse in all three rounds.
OPENLOOP_NAP_MAX_RATE = 3000

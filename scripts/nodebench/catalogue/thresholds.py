"""Every threshold a verdict, a flag or a sentence uses, in one place.

Code that words a threshold formats it from here (f"{SERVER_BOUND_ELU:.0%}"), so a
change here changes every table, chart and sentence that mentions it.
"""

#: Confidence level of every interval.
CONFIDENCE = 0.95
#: Bootstrap resamples per interval.
RESAMPLES = 2000
#: A cell whose repetitions vary by more than this coefficient of variation is flagged noisy.
NOISY_CV = 0.05
#: A cell is server-bound when the server's event loop was at least this busy.
SERVER_BOUND_ELU = 0.95
#: ... else client-bound when the load generator used at least this share of the CPU it can use.
CLIENT_BOUND_CPU = 0.90
#: ... else database-bound when PostgreSQL used at least this share of the client CPU set's capacity
#: that the load generator left (they share those CPUs: client_cpu_count - client_cpu_util cores).
DB_BOUND_SHARE = 0.90
#: ... else "client CPUs saturated (shared)" when the client CPU set was at least this busy
#: (client_cpus_busy, /proc/stat) though neither the client nor PostgreSQL alone reached its threshold.
CLIENT_CPUS_BUSY = 0.95
#: A run is flagged preempted when the server's event loop was busy for more than this multiple of
#: its process CPU time over the window (busy wall time without CPU: the thread was not running) ...
PREEMPT_ACTIVE_OVER_CPU = 1.10
#: ... or when it took more involuntary context switches per second than this.
PREEMPT_INVOL_CSW_PER_S = 200.0
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

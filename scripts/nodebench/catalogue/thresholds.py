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

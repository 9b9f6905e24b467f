"""The instrument's calibration: a server whose latency is known, measured beside the servers at the same rates.

servers/fixed-delay.js answers each request FIXED_DELAY_MS after it arrived (spun, not a timer), doing the
workload's work meanwhile, so an open loop's latency above that delay is the instrument's own error at that rate:
the client, the kernel, the loopback and the machine. An open-loop matrix that lists it among its servers measures
it at its fixed rates (rates_per_s) in the same rounds and peer groups as the servers, with the same pinning; it has
no capacity of its own to measure (its cells skip the sweep's capacity runs), and its cost per request is its spin's,
so the cost tables leave it out and the latency tables show it beside the servers (docs/openloop.md).
"""

#: The calibration server's name (servers/<name>.js).
CALIBRATION_SERVER = "fixed-delay"
#: Its delay, in ms; servers/fixed-delay.js's FIXED_DELAY_MS is the same (tests/unit/test_calibration.py).
DELAY_MS = 1.0
#: The workloads it answers (the cost curve's and the latency experiment's).
CALIBRATION_WORKLOADS = ("empty", "point-lookup")
#: A round calibrates the instrument when its p50 is within this of the delay, and its p99 within P99_WITHIN_MS:
#: a round outside either is counted and named beside the servers' latencies of that rate.
P50_WITHIN_MS = 0.2
P99_WITHIN_MS = 1.0


def is_calibration(server: str) -> bool:
    """Whether a cell's server is the instrument's calibration (on any Node.js: fixed-delay@node22 too)."""
    return str(server).split("@", 1)[0] == CALIBRATION_SERVER

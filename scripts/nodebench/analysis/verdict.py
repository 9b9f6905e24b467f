"""What limited a cell's throughput, decided from what was measured over its window.

``verdict(cells)`` takes per-cell figures (medians over rounds) and names the
bottleneck, first rule that holds wins (thresholds in nodebench/catalogue/thresholds.py):

1. **server-bound**: the server's event loop was busy at least ``SERVER_BOUND_ELU`` of
   the window (``elu_utilization``). The server could not have answered faster.
2. **client-bound**: the load generator's own CPU (``client_cpu_util``, cores) reached
   ``CLIENT_BOUND_CPU`` of what it can use (``client_cpu_capacity``: its threads, at most
   its CPUs). The client could not have asked faster.
3. **database-bound**: PostgreSQL (``db_cpu_util``, cores) used at least
   ``DB_BOUND_SHARE`` of the client CPU set's capacity that the load generator left
   (``client_cpus - client_cpu_util`` cores): the embedded database shares those CPUs
   with the client, so that is all the CPU it could get.
4. **client CPUs saturated (shared)**: the client CPU set was at least
   ``CLIENT_CPUS_BUSY`` busy (``client_cpus_busy``, from /proc/stat, whatever ran there)
   though neither the client nor PostgreSQL alone reached its threshold: together
   (with the harness) they used up the CPUs, and which of them held the other back is
   not decidable from CPU time.
5. **not saturated**: none of these; the server waited on something that used no CPU we
   measure (latency, locks, an external database, too few connections).

A missing figure (NaN: a record written before the figure existed, or ``db_cpu_util``
for an external database whose processes are not ours) makes its rule not apply, and
the reason says the figure was not measured, so old records and DSN runs still get the
verdict their measured figures support.

``client_cpus`` is the number of CPUs in the client set; the record's CPU id list
(``"1,2,3"``) is accepted too and counted, and ``client_cpu_count`` is used when
``client_cpus`` is absent.
"""

import math

import numpy as np
import pandas as pd

from nodebench.catalogue.thresholds import (
    CLIENT_BOUND_CPU,
    CLIENT_CPUS_BUSY,
    DB_BOUND_SHARE,
    SERVER_BOUND_ELU,
)

VERDICTS = ("server-bound", "client-bound", "database-bound", "client CPUs saturated (shared)", "not saturated")
INPUTS = ("elu_utilization", "client_cpu_util", "client_cpu_capacity", "client_cpus_busy", "db_cpu_util")


def cpu_count(values: pd.Series) -> pd.Series:
    """CPUs in the client set: a number as it is, an id list like "1,2,3" counted, anything else NaN."""

    def one(v) -> float:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            return np.nan
        if isinstance(v, int | float | np.integer | np.floating):
            return float(v)
        ids = [x for x in str(v).split(",") if x.strip()]
        return float(len(ids)) if ids else np.nan

    return values.astype(object).map(one).astype("float64")


def _num(cells: pd.DataFrame, name: str) -> pd.Series:
    """A column as float64, NaN where missing (or the whole column when the frame lacks it)."""
    if name not in cells:
        return pd.Series(np.nan, index=cells.index, dtype="float64")
    return pd.to_numeric(cells[name], errors="coerce").astype("float64")


def _cores(x: float) -> str:
    return f"{x:.2f} core" + ("" if x == 1 else "s")


def _decide(elu, client, capacity, busy, db, cpus) -> tuple[str, str]:
    """The verdict and its reason for one cell's figures (floats, NaN where not measured)."""
    if elu >= SERVER_BOUND_ELU:
        return "server-bound", f"ELU {elu:.2f} >= {SERVER_BOUND_ELU:.2f}"
    if client >= CLIENT_BOUND_CPU * capacity:
        return "client-bound", f"client CPU {client:.2f} >= {CLIENT_BOUND_CPU:.2f} x {_cores(capacity)}"
    left = cpus - client if not (math.isnan(cpus) or math.isnan(client)) else np.nan
    if not math.isnan(db) and not math.isnan(left) and db >= DB_BOUND_SHARE * max(left, 0.0):
        return (
            "database-bound",
            f"PostgreSQL {_cores(db)} >= {DB_BOUND_SHARE:.2f} x the {_cores(max(left, 0.0))} "
            f"the client left of {cpus:g} CPU" + ("" if cpus == 1 else "s"),
        )
    if busy >= CLIENT_CPUS_BUSY:
        parts = [f"client {client:.2f}"] + ([f"PostgreSQL {db:.2f}"] if not math.isnan(db) else [])
        return (
            "client CPUs saturated (shared)",
            f"client CPUs {busy:.2f} busy >= {CLIENT_CPUS_BUSY:.2f} ({' + '.join(parts)} cores)",
        )
    below = [
        f"ELU {elu:.2f}" if not math.isnan(elu) else "ELU not measured",
        f"client CPU {client:.2f} of {capacity:g}" if not math.isnan(client) else "client CPU not measured",
        f"PostgreSQL {db:.2f} cores" if not math.isnan(db) else "PostgreSQL CPU not measured",
        f"client CPUs {busy:.2f} busy" if not math.isnan(busy) else "client CPUs' busy share not measured",
    ]
    return "not saturated", ", ".join(below)


def verdict(cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell: `saturation` (one of VERDICTS) and `saturation_reason` (the figures that decided it).

    Pure: reads the INPUTS columns and client_cpus (or client_cpu_count) of cells, any of
    which may be NaN or absent, and returns a frame with the same index.
    """
    cpus = cpu_count(cells["client_cpus"]) if "client_cpus" in cells else _num(cells, "client_cpu_count")
    figures = zip(*(_num(cells, name) for name in INPUTS), cpus, strict=True)
    # (elu, client, capacity, busy, db, cpus); the inputs' order is _decide's.
    decided = [_decide(e, c, cap, b, d, n) for e, c, cap, b, d, n in figures]
    return pd.DataFrame(
        {
            "saturation": pd.Categorical([v for v, _ in decided], categories=VERDICTS),
            "saturation_reason": pd.array([r for _, r in decided], dtype="string"),
        },
        index=cells.index,
    )

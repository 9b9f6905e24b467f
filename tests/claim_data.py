"""Runs tables and a claim with a known answer, for the ledger's tests (tests/unit/test_claim_verdicts.py and
tests/test_claims.py)."""

import pandas as pd

# The machine's speed in each round: every server in a round sees the same factor, so paired ratios cancel it.
DRIFT = [1.0, 1.6, 0.8, 1.2, 0.9, 1.1, 0.7, 1.3, 1.05, 0.95, 1.15, 0.85, 1.4, 0.75, 1.0, 1.25, 0.9, 1.1, 0.8, 1.2]


def runs(cells: dict[tuple, list[float]], figure: str = "req_per_s", extra: dict | None = None) -> pd.DataFrame:
    """A runs table: (workload, server) -> one value per round, times that round's drift; extra: per
    (workload, server) a dict of column -> per-round values (preempted, elu_utilization, started_at)."""
    rows = []
    for (workload, server), values in cells.items():
        for r, v in enumerate(values, start=1):
            row = {
                "workload": workload,
                "server": server,
                "connections": 50,
                "client": "wrk",
                "stopping_rule": "duration",
                "stop": "5s",
                "round": r,
                "framework": server,
                "framework_version": "1.0.0",
                "node_version": "v20.0.0",
                "cpu_model": "Test CPU",
                "cpu_count": 2,
                "started_at": f"2026-12-01T05:{r:02d}:{10 * list(cells).index((workload, server)):02d}+00:00",
                "preempted": False,
                "elu_utilization": 0.99,
            }
            row[figure] = v * DRIFT[r - 1]
            for column, per_round in ((extra or {}).get((workload, server)) or {}).items():
                row[column] = per_round[r - 1]
            rows.append(row)
    return pd.DataFrame(rows)


def ratio_runs(per_round, extra=None) -> pd.DataFrame:
    """fastify at per_round[r] x express's rate in round r (both drifting alike)."""
    cells = {("empty", "fastify"): [1000.0 * x for x in per_round], ("empty", "express"): [1000.0] * len(per_round)}
    return runs(cells, extra=extra)


def claim(**kw) -> dict:
    return {
        "id": "t-ratio",
        "seed": "000",
        "quote": "Fastify is 4.37x faster",
        "figure": 4.37,
        "unit": "x",
        "scope": "overall",
        "cells": {"f": {"workload": "empty", "server": "fastify"}, "e": {"workload": "empty", "server": "express"}},
        "statistic": "f / e",
        "compare": "equal",
        "null": 1,
    } | kw

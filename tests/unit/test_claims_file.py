"""claims.yaml against its own rules: every quote verbatim in its seed, every tolerance the declared rule's
unless the entry says why, and every measured claim's cells read from one block in each round."""

import re
from pathlib import Path

import pytest
import yaml

from nodebench import claimfile, plan, targets
from nodebench.runs import Run

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
CLAIMS = yaml.safe_load((REPO / "claims.yaml").read_text())["claims"]


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_every_quote_occurs_in_its_seed_whitespace_aside():
    if not SEEDS.is_dir():
        pytest.skip(f"the seeds are not beside the project ({SEEDS} is absent): quotes not checked")
    seeds = {p.name[:3]: normalised(p.read_text(encoding="utf-8")) for p in SEEDS.glob("0*.txt")}
    missing = [c["id"] for c in CLAIMS if normalised(c["quote"]) not in seeds[c["seed"]]]
    assert not missing, f"quotes not found verbatim in their seed: {missing}"


def test_a_rewritten_quote_is_caught():
    if not SEEDS.is_dir():
        pytest.skip(f"the seeds are not beside the project ({SEEDS} is absent)")
    seed = normalised(next(SEEDS.glob("000_*.txt")).read_text(encoding="utf-8"))
    assert normalised("Going to 500 adds no throughput at all") in seed
    assert normalised("its req/s flat from 10 to 200 connections") not in seed


def test_every_tolerance_is_the_rule_unless_the_entry_says_why():
    assert claimfile.check(CLAIMS) == []
    own = {c["id"]: c.get("tolerance_why") for c in CLAIMS if c.get("tolerance") is not None}
    assert all(own.values()), own
    # The rule, as the header of claims.yaml states it.
    header = (REPO / "claims.yaml").read_text().split("\nseeds:")[0]
    assert (
        f"±{claimfile.RULE_POINTS:g} percentage points" in header
        and f"±{claimfile.RULE_RELATIVE * 100:g} % of it" in header
    )
    for c in CLAIMS:
        if c.get("compare") in ("equal", "same") and c.get("tolerance") is None:
            centre = c["figure"] if c["compare"] == "equal" else c["null"]
            lo, hi = claimfile.band(c, centre)
            if c.get("unit") == "%":
                assert (lo, hi) == pytest.approx((centre - 5, centre + 5)), c["id"]
            else:
                assert (lo, hi) == pytest.approx((centre / 1.1, centre * 1.1)), c["id"]


def test_each_measured_claim_reads_one_block_in_every_round():
    config = yaml.safe_load((REPO / "config.yaml").read_text()) | yaml.safe_load(
        (REPO / "experiments.yaml").read_text()
    )
    t = targets.Targets(config)
    ledger = claimfile.ledger_claims(CLAIMS, t.scope_cells, t.failure_cells)
    problems = []
    for c in ledger:
        if c.get("untestable") or c.get("pending") or c["compare"] == "outcome":
            continue
        cells = t.claim_cells(c)
        assert cells, c["id"]
        block = t.block_of(c["scope"])
        for r in range(1, t.rounds(block) + 1):
            blocks = {t.plan.as_measured(Run(block, *cell, r)).block for cell in cells}
            if len(blocks) > 1:
                problems.append(f"{c['id']} round {r}: {sorted(blocks)}")
    assert not problems, problems


def test_a_block_that_cannot_lend_every_peer_group_lends_none():
    # The naive-settimeout case: its empty cells were the versions experiment's, measured in versions' rounds.
    config = {
        "servers": ["express"],
        "workloads": {"list": {"connections": [50]}},
        "warmup_s": 1,
        "duration_s": 4,
        "rounds": 1,
        "client": "wrk",
        "experiments": {
            "lender": {"matrices": [{"servers": ["express", "fastify"], "workloads": ["empty"], "connections": [50],
                                     "clients": ["wrk"], "durations_s": [4]}]},
            "reader": {"matrices": [{"servers": ["express", "fastify"], "workloads": ["empty", "delay-20ms"],
                                     "connections": [50], "clients": ["wrk"], "durations_s": [4]}]},
            "subset": {"matrices": [{"servers": ["express", "fastify"], "workloads": ["empty"], "connections": [50],
                                     "clients": ["wrk"], "durations_s": [4]}]},
        },
    }  # fmt: skip
    p = plan.Plan(config)
    assert p.as_measured(Run("reader", "empty", "express", 50, "wrk", "4s", 1)).block == "reader"
    assert p.as_measured(Run("subset", "empty", "express", 50, "wrk", "4s", 1)).block == "lender"


def test_the_ledger_measures_the_cells_its_claims_read_and_no_others():
    config = yaml.safe_load((REPO / "config.yaml").read_text()) | yaml.safe_load(
        (REPO / "experiments.yaml").read_text()
    )
    t = targets.Targets(config)
    records = t.claim_records(claimfile.ledger_claims(CLAIMS, t.scope_cells, t.failure_cells))
    every = [r for paths in records.values() for r in paths]
    assert len(every) == len(set(every))
    # Cells no claim reads are not measured: koa in the scenarios, the naive experiment's 5 ms wait, node-http's list.
    assert not [r for r in every if "/koa/" in r or "/delay-5ms/" in r or "list/node-http" in r]
    # A limit on a ratio brings the A/A control of its peer group, whose offset is its floor; no shipped claim has
    # one in the main matrix, so no control run is measured for the ledger.
    assert not [r for r in records["overall"] if "/node-http" in r]
    flat = {
        "id": "t-flat",
        "scope": "overall",
        "unit": "x",
        "compare": "at_most",
        "limit": 1.1,
        "statistic": "a / b",
        "cells": {
            "a": {"workload": "point-lookup", "server": "express", "connections": 200},
            "b": {"workload": "point-lookup", "server": "express", "connections": 10},
        },
    }
    assert ("point-lookup", "node-http-aa", 10, "wrk", "5s") in t.claim_cells(flat)
    assert ("point-lookup", "node-http", 200, "wrk", "5s") in t.claim_cells(flat)
    # Per-cell figures or a ratio of ratios take no floor, and so no control.
    per_cell = flat | {"cells": {k: v | {"figure": "latency_p99_ms"} for k, v in flat["cells"].items()}}
    assert len(t.claim_cells(per_cell)) == 2 and len(t.claim_cells(flat | {"statistic": "a / b / a"})) == 2
    # A claim over several peer groups of the naive experiment reads its own block's runs, never another's.
    assert all(r.startswith("data/runs/naive-settimeout/") for r in records["naive-settimeout"])

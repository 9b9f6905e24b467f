"""The A/B target and adaptive rounds: ABBA order, B over A with an outcome that can come out every way, looks."""

import copy
import json
import os
import time

import numpy as np
import pandas as pd
import pytest
from test_configcheck import SERVERS, shipped

from nodebench import configcheck, plan, targets
from nodebench.analysis import ab, intervals, looks
from nodebench.runs import Run


def ab_config(**ab_overrides) -> dict:
    config = copy.deepcopy(shipped())
    config["compare"] = {**config["compare"], **ab_overrides}
    return config


def test_a_and_b_alternate_which_runs_first_round_by_round():
    config = plan.with_ab(ab_config(a="express4", b="express", workloads=["point-lookup", "list"]))
    p = plan.Plan(config)
    for r in range(1, 21):
        runs = sorted(
            (v[0], k[2], k[1]) for k, v in p.runs.items() if k[0] == "compare/express4/express" and k[-1] == r
        )
        order = [(workload, server) for _, server, workload in runs]
        # Each workload's pair back to back: A then B in odd rounds, B then A in even ones.
        for i in (0, 2):
            assert order[i][0] == order[i + 1][0], order
            assert [s for _, s in order[i : i + 2]] == (["express4", "express"] if r % 2 else ["express", "express4"])


def test_an_ab_measures_its_own_pairs_even_where_another_block_measures_the_same_cells():
    config = plan.with_ab(ab_config(a="express4", b="express"))
    assert any(
        "express4" in m["servers"] and "express" in m["servers"] for m in config["experiments"]["versions"]["matrices"]
    )
    p = plan.Plan(config)
    block = plan.block_name(config, plan.AB)
    assert block == "compare/express4/express"
    cells = plan.experiment_cells(config, plan.AB)
    assert {p.as_measured(Run(block, *c, r)).block for c in cells for r in range(1, 21)} == {block}


def test_another_pair_never_takes_this_pairs_records():
    """express measured beside express4 is not express measured beside express-lean: each pair has its own folder."""
    one = targets.Targets(plan.with_ab(ab_config(a="express4", b="express")))
    other = targets.Targets(plan.with_ab(ab_config(a="express", b="express-lean")))
    express = [p for p in one.scope_records(plan.AB) if p.split("/")[6] == "express"]
    assert express and not set(express) & set(other.scope_records(plan.AB))
    assert express[0].startswith("data/runs/compare/express4/express/point-lookup/express/")


def test_an_ab_on_two_nodejs_majors_is_one_peer_group():
    config = plan.with_ab(ab_config(a="express@node22", b="express@node24"))
    cells = plan.experiment_cells(config, plan.AB)
    assert [c[1] for c in cells] == ["express@node22", "express@node24"]
    assert len({plan.peer_key(c) for c in cells}) == 1


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"a": "expres"}, "config key 'compare.a' names 'expres', which has no file servers/<name>.js"),
        ({"b": "express"}, "config keys 'compare.a' and 'compare.b' are both 'express'"),
        ({"workloads": ["point-lokup"]}, "config key 'compare.workloads' names workload 'point-lokup'"),
        ({"b": "express@node19"}, "config key 'compare.b' is 'express@node19': Node.js majors are 20 to 99"),
    ],
)
def test_a_wrong_ab_is_named(change, phrase):
    config = ab_config(**({"a": "express"} if "b" in change and change["b"] == "express" else {}) | change)
    found = configcheck.problems(config, SERVERS)
    assert any(phrase in p for p in found), found


def test_numbers_from_the_command_line_are_read_as_numbers():
    config = {"compare": {"a": "express", "duration_s": "2", "looks": ["2", "3"], "half_width": "0.5"}, "rounds": 1}
    configcheck.typed_from_command_line(config)
    assert config["compare"] == {"a": "express", "duration_s": 2, "looks": [2, 3], "half_width": 0.5}


def runs_ab(ratio: float, rounds: int, noise: float, seed: int = 1, preempted_slow: dict | None = None):
    """A/B runs of one peer group: A at 100 us, B at ratio x that, lognormal noise per run."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, rounds + 1):
        for k, (server, true) in enumerate((("a", 100.0), ("b", 100.0 * ratio))):
            slow = (preempted_slow or {}).get((server, r), 1.0)
            us = true * np.exp(rng.normal(0, noise)) * slow
            started = pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(
                minutes=r, seconds=8 * (k if r % 2 else 1 - k)
            )
            rows.append({"workload": "point-lookup", "server": server, "connections": 50, "client": "wrk",
                         "stopping_rule": "duration", "stop": "4s", "round": r, "us_per_req_elu": us,
                         "us_per_req_cpu": us, "req_per_s": 0.99e6 / us, "started_at": started.isoformat(),
                         "preempted": slow != 1.0, "session": "s"})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("ratio", "noise", "outcome"),
    [(1.10, 0.01, "costlier"), (0.90, 0.01, "cheaper"), (1.0, 0.005, "equivalent"), (1.02, 0.15, "inconclusive")],
)
def test_every_outcome_can_come_out(ratio, noise, outcome):
    t = ab.table(runs_ab(ratio, 10, noise), "a", "b")
    assert len(t) == 1 and t["outcome"].iloc[0] == outcome, t.T
    row = t.iloc[0]
    assert row["ratio_lo"] <= row["ratio"] <= row["ratio_hi"] and row["pairs"] == 10
    assert row["a_first_rounds"] == 5 and row["b_first_rounds"] == 5
    assert row["half_width_log"] == pytest.approx((np.log(row["ratio_hi"]) - np.log(row["ratio_lo"])) / 2)


def test_preempted_rounds_are_taken_out_and_a_changed_answer_is_flagged():
    # B slowed 40 % in five of ten rounds, flagged: the median moves more than half the interval.
    slow = {("b", r): 1.4 for r in (2, 3, 5, 8, 9)}
    t = ab.table(runs_ab(1.0, 10, 0.01, preempted_slow=slow), "a", "b")
    row = t.iloc[0]
    assert row["preempted_rounds"] == 5 and row["pairs_unpreempted"] == 5
    assert row["ratio_unpreempted"] == pytest.approx(1.0, abs=0.02)
    assert bool(row["preemption_matters"]), row
    quiet = ab.table(runs_ab(1.0, 10, 0.01), "a", "b").iloc[0]
    assert quiet["preempted_rounds"] == 0 and not bool(quiet["preemption_matters"])


def test_a_look_stops_only_when_every_interval_is_narrow_or_at_the_cap():
    found = pd.DataFrame({"comparison": ["x", "y"], "half_width_log": [0.01, 0.05]})
    assert looks.decide(found, 6, [6, 10], 0.03)["stop"] is False
    assert looks.decide(found, 6, [6, 10], 0.06)["stop"] is True
    capped = looks.decide(found, 10, [6, 10], 0.03)
    assert capped["stop"] and capped["capped"] and [w["comparison"] for w in capped["wider_than_target"]] == ["y"]
    assert "reached the cap of 10 rounds with 1 of 2 comparisons still wider" in looks.sentence(capped)
    # No interval yet (NaN) is not narrow; no comparison at all never stops before the cap.
    assert looks.decide(found.assign(half_width_log=np.nan), 6, [6, 10], 0.5)["stop"] is False
    assert looks.decide(found.iloc[:0], 6, [6, 10], 0.5)["stop"] is False


def test_the_coverage_stated_under_stopping_is_below_every_looks_fixed_n_coverage():
    assert looks.stated_coverage([6, 10, 14, 20]) == pytest.approx(0.95858 - 0.015, abs=1e-4)
    assert looks.stated_coverage([5, 10]) == pytest.approx(0.9375 - 0.015)


def test_an_adaptive_block_reports_the_rounds_it_stopped_at_and_lends_only_its_first_look():
    config = copy.deepcopy(shipped())
    config["adaptive"] = {"half_width": 0.03, "looks": [3, 6]}
    t = targets.Targets(config)
    assert t.rounds(plan.MAIN_BLOCK) == 6  # planned at its cap until the workflow says where it stopped
    t.stopped_at = lambda block: 3
    assert {int(p.rsplit("/r", 1)[1][:-5]) for p in t.scope_records(targets.OVERALL)} == {1, 2, 3}
    assert t.summary_inputs(targets.OVERALL)["look"] == "data/looks/main/n3.json"
    # An experiment that could borrow main's runs borrows rounds up to main's first look only.
    lent = {k[-1] for k in t.plan.groups if k[0] == plan.MAIN_BLOCK}
    assert lent == {1, 2, 3}


def test_a_stale_look_and_what_was_made_before_the_looks_decided_are_removed(tmp_path):
    from nodebench import recovery

    record, product = tmp_path / "r1.json", tmp_path / "summary.md"
    record.write_text("{}")

    def look(n, stop, half_width=0.03):
        (tmp_path / f"n{n}.json").write_text(json.dumps({"looks": [2, 3], "half_width_target": half_width,
                                                          "stop": stop}))  # fmt: skip

    def blocks(half_width=0.03):
        declared = {"half_width_target": half_width, "headline_figure": "us_per_req_elu"}
        return {"b": ([2, 3], declared, lambda n: tmp_path / f"n{n}.json", lambda n: [record], [product])}

    said = []
    # Decided at the first look: nothing is touched.
    look(2, True)
    product.write_text("x")
    assert recovery.drop_stale_looks(blocks(), said.append) == [] and product.exists()
    # Another target: the look is stale; with it gone nothing is decided, so the product goes too.
    assert recovery.drop_stale_looks(blocks(0.05), said.append) == [tmp_path / "n2.json", product]
    assert "made for looks [2, 3] and half_width_target 0.03" in said[0]
    # A record newer than the look makes it stale; a dry run only says so.
    look(2, False)
    look(3, True)
    product.write_text("x")
    os.utime(record, (time.time() + 10, time.time() + 10))
    assert recovery.drop_stale_looks(blocks(), said.append, dry_run=True) == [
        tmp_path / "n2.json", tmp_path / "n3.json", product
    ]  # fmt: skip
    assert (tmp_path / "n2.json").exists() and product.exists() and "would remove" in said[-1]
    assert recovery.drop_stale_looks(blocks(), said.append) == [tmp_path / "n2.json", tmp_path / "n3.json", product]
    # A look made for another headline figure is stale; one from before the headline existed was made for ELU.
    os.utime(record, (time.time() - 10, time.time() - 10))
    look(2, True)
    product.write_text("x")
    on_cpu = {"b": ([2, 3], {"half_width_target": 0.03, "headline_figure": "us_per_req_oncpu"},
                    lambda n: tmp_path / f"n{n}.json", lambda n: [record], [product])}  # fmt: skip
    assert recovery.drop_stale_looks(on_cpu, said.append) == [tmp_path / "n2.json", product]
    assert "and headline_figure us_per_req_elu" in said[-2]


def test_every_column_of_the_ab_table_is_in_the_data_dictionary():
    import yaml

    from conftest import REPO

    dictionary = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())["ab"]
    assert list(dictionary) == ab.COLUMNS


def test_an_ab_record_depends_on_both_builds_so_a_change_to_either_remeasures_both():
    config = plan.with_ab(ab_config(a="express4", b="express"))
    t = targets.Targets(config)
    block = plan.block_name(config, plan.AB)
    run = Run(block, "point-lookup", "express4", 50, "wrk", "5s", 1)
    a = t.measure_inputs(run)
    assert "servers/express.js" in a["partner_files"] and "servers/express.js" != a["server"]
    assert "servers/express4.js" in t.measure_inputs(run._replace(server="express"))["partner_files"]
    assert "partner_files" not in t.measure_inputs(run._replace(block=plan.MAIN_BLOCK, server="express"))


def test_cross_session_pairs_of_an_ab_are_counted_and_the_report_says_to_remeasure():
    from nodebench.render import experiment_report
    from nodebench.render.document import to_markdown

    runs = runs_ab(1.05, 6, 0.01)
    runs.loc[runs["server"] == "b", "session"] = "later"
    t = ab.table(runs, "a", "b")
    assert t["cross_session"].iloc[0] == 6
    assert "6 of 6 rounds pair runs measured by different Snakemake invocations" in to_markdown(
        experiment_report.ab_sections(t, None)
    )


def test_the_score_without_preempted_runs_is_the_same_estimator_so_no_preemption_moves_nothing():
    from nodebench.analysis import metrics
    from synthetic import runs_from

    rows = []
    for r, (e, p) in enumerate([(1.0, 2.0), (1.0, 1.0), (2.0, 1.0)], start=1):  # the reviewer's case
        rows += [
            ("empty", "fastify", 50, r, 100.0, 50.0 * e, 1.0, 0.3),
            ("empty", "node-http", 50, r, 100.0, 50.0, 1.0, 0.3),
            ("list", "fastify", 50, r, 100.0, 500.0 * p, 1.0, 0.3),
            ("list", "node-http", 50, r, 100.0, 500.0, 1.0, 0.3),
        ]
    runs = runs_from(rows).assign(preempted=False)
    got = metrics.geomean_scores(metrics.compute_metrics(runs), runs).set_index("server")
    assert got.loc["fastify", "score_unpreempted"] == pytest.approx(got.loc["fastify", "score"])
    assert not got.loc["fastify", "preemption_matters"]


def test_bad_ab_and_adaptive_values_are_named_by_their_key():
    import yaml

    from conftest import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config = {"compare": {"a": "express", "b": "express@node020", "half_width": 0}, "adaptive": {"looks": [1]}}
    found = [p for p in configcheck.schema_problems(config, schema) if "compare" in p or "adaptive" in p]
    assert any(line.startswith("config key 'compare.b' is 'express@node020': must be text matching") for line in found)
    assert "config key 'compare.half_width' is 0: must be above 0" in found
    assert "config key 'adaptive' lacks 'half_width', which it needs" in found
    assert "config key 'adaptive.looks[0]' is 1: must be at least 2" in found
    off = {"compare": "null", "adaptive": "~"}
    configcheck.typed_from_command_line(off)
    assert off == {"compare": None, "adaptive": None}
    assert not [p for p in configcheck.schema_problems(off, schema) if "compare" in p or "adaptive" in p]


def test_a_look_sentence_says_what_the_look_found():
    found = pd.DataFrame({"comparison": ["x"], "half_width_log": [0.01]})
    one = looks.decide(found, 5, [5], 0.03)
    assert "One look selects nothing: each interval covers 93.75 %" in looks.sentence(one)
    none = looks.decide(found.iloc[:0], 20, [6, 20], 0.03)
    assert "No comparison had an interval, so nothing could stop it before the cap of 20 rounds" in looks.sentence(none)
    with pytest.raises(ValueError, match="not from the look after 6 rounds"):
        looks.sentence(looks.decide(found.assign(half_width_log=0.5), 6, [6, 20], 0.03))


def test_an_adaptive_summary_states_the_coverage_under_the_stopping_rule_for_the_family():
    from nodebench.analysis import metrics
    from nodebench.render import markdown

    runs = runs_ab(1.2, 6, 0.01).replace({"server": {"a": "node-http", "b": "fastify"}})
    runs = runs.assign(
        elu_utilization=0.99,
        client_cpu_util=0.5,
        client_cpu_capacity=1.0,
        latency_p50_ms=1.0,
        latency_p99_ms=2.0,
        cpu_model="Test CPU",
    )
    m = metrics.compute_metrics(runs)
    look = looks.decide(looks.comparisons(runs), 6, [6, 10], 0.5)
    assert look["comparisons"] == 1  # fastify against node-http; no baseline against itself
    text = markdown.comparisons(m, look)
    stated = intervals.percent(looks.stated_coverage([6, 10]))
    assert stated == "95.38" and f"at least {stated} %" in text and "96.88 %" not in text


def test_a_measured_calibration_is_an_input_of_the_main_reports_only(tmp_path, monkeypatch):
    t = targets.Targets(copy.deepcopy(shipped()))
    monkeypatch.chdir(tmp_path)
    assert "calibration" not in t.summary_inputs(targets.OVERALL)
    (tmp_path / targets.CALIBRATION).parent.mkdir(parents=True)
    (tmp_path / targets.CALIBRATION).write_text("{}")
    assert t.summary_inputs(targets.OVERALL)["calibration"] == targets.CALIBRATION
    experiment = next(s for s in t.scopes if "stopping" in t.tables(s))
    assert "calibration" not in t.summary_inputs(experiment)


def claims_block_config(experiment: str = "crud-endpoint", **adaptive) -> tuple[targets.Targets, str]:
    import yaml

    from conftest import REPO
    from nodebench import claimfile

    config = copy.deepcopy(shipped())
    config["experiments"][experiment]["adaptive"] = {"stop_on": "claims", "looks": [3, 6], **adaptive}
    t = targets.Targets(config)
    doc = yaml.safe_load((REPO / "claims.yaml").read_text())
    t.claims = claimfile.ledger_claims(doc["claims"], t.scope_cells, t.failure_cells)
    return t, t.block_of(experiment)


def test_a_block_whose_looks_read_the_claims_reads_only_the_cells_of_its_claims():
    t, block = claims_block_config()
    assert t.stops_on(block) == "claims" and t.stops_on(plan.MAIN_BLOCK) is None
    mine = t.block_claims(block)
    assert mine and {c["scope"] for c in mine} == {"crud-endpoint"} and all(c["compare"] != "outcome" for c in mine)
    records = t.look_records(block, 3)
    assert {int(p.rsplit("/r", 1)[1][:-5]) for p in records} == {1, 2, 3}
    assert set(records) <= set(t.scope_records("crud-endpoint"))
    # What the look was made for: the claims (as a digest), no half-width; another claim set makes it stale.
    declared = t.adaptive_blocks()[block][1]
    assert declared["half_width_target"] is None and declared["claims_digest"] == t.claims_digest(block)
    t.claims = [c for c in t.claims if c["id"] != mine[0]["id"]]
    assert t.claims_digest(block) != declared["claims_digest"]
    # Without the ledger's claims, a block that stops on them cannot be planned: said, not guessed.
    t.claims = None
    with pytest.raises(ValueError, match="read the ledger's claims"):
        t.look_records(block, 3)


def test_a_claim_blocks_look_reads_whole_peer_groups_so_its_rounds_stay_back_to_back():
    # connection-sweep's claims read Express at 10 and 500 connections and Fastify at 500, not Fastify at 10: the
    # look still reads Fastify at 10, which is Express's peer there, or the experiment's own Fastify / Express at 10
    # would pair runs measured minutes apart.
    t, block = claims_block_config("connection-sweep")
    read = {(c[1], c[2]) for claim in t.block_claims(block) for c in t.claim_cells(claim)}
    assert ("fastify", 10) not in read and {("express", 10), ("express", 500), ("fastify", 500)} <= read
    cells = {(p.split("/")[4], int(p.split("/")[5][1:])) for p in t.look_records(block, 3)}
    assert cells == {("express", 10), ("express", 500), ("fastify", 10), ("fastify", 500)}
    # What its looks decide is made again when they are: the ledger's runs of the scope and its manifest too.
    assert {targets.LEDGER_RUNS.format(scope="connection-sweep"), targets.LEDGER_MANIFEST} <= set(
        t.block_products(block)
    )


def test_a_block_stopping_on_its_claims_needs_no_half_width_and_one_on_its_headline_does():
    import yaml

    from conftest import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    claims = {"adaptive": {"stop_on": "claims", "looks": [6, 10]}}
    assert not [p for p in configcheck.schema_problems(claims, schema) if "adaptive" in p]
    headline = {"adaptive": {"stop_on": "headline", "looks": [6, 10]}}
    assert "config key 'adaptive' lacks 'half_width', which it needs" in configcheck.schema_problems(headline, schema)
    wrong = {"adaptive": {"stop_on": "verdict", "looks": [6, 10], "half_width": 0.03}}
    assert any(
        p.startswith("config key 'adaptive.stop_on' is 'verdict'") for p in configcheck.schema_problems(wrong, schema)
    )


def test_a_claim_looks_sentence_names_the_claims_still_too_wide_at_the_cap():
    found = pd.DataFrame({"comparison": ["a", "b"], "half_width": [0.01, np.inf], "target": [0.05, 0.05]})
    look = looks.decide(found, 20, [6, 20], None) | {"stop_on": "claims"}
    text = looks.sentence(look)
    assert "Rounds per claim" in text and "cap of 20 rounds with 1 of 2 claims still wider than that: b" in text
    none = looks.decide(found.iloc[:0], 6, [6, 20], None, stop_if_none=True) | {"stop_on": "claims", "invalid": ["c"]}
    text = looks.sentence(none)
    assert none["stop"] and "No valid claim reads this block, so it stopped at its first look, after 6 rounds" in text
    assert "1 invalid claim (c) was not waited for" in text
    assert not looks.decide(found.iloc[:0], 6, [6, 20], None)["stop"]

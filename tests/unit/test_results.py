"""Results to take away and CI's A/B gate: the exit-code decision on data where the answer is known, results.csv and
results.json from synthetic tables, and two result sets set side by side."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from test_adaptive import runs_ab

from conftest import REPO
from nodebench.analysis import ab, aggregate, metrics, results
from synthetic import synthetic_records

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())


def ab_row(ratio: float, lo: float, hi: float, pairs: int = 10) -> pd.DataFrame:
    """An A/B table of one peer group with the given ratio and interval."""
    return pd.DataFrame([{"workload": "point-lookup", "connections": 50, "client": "wrk", "stop": "4s", "a": "express4",
                          "b": "express", "ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "pairs": pairs,
                          "interval": f"n={pairs}: 2nd-9th of 10, 97.85 %"}])  # fmt: skip


# --- the exit-code decision ---------------------------------------------------------------------------------------


def test_a_whole_interval_above_the_threshold_fails_and_says_ratio_interval_and_threshold():
    failed, lines = ab.threshold_check(ab_row(1.12, 1.08, 1.17), 1.05)
    assert failed
    assert lines == [
        "A/B check FAILED: express (B) over express4 (A) on point-lookup c50 wrk 4s costs 1.120x, interval "
        "1.080-1.170 (n=10: 2nd-9th of 10, 97.85 %), wholly above the threshold 1.05 (compare.fail_above)"
    ]


@pytest.mark.parametrize(
    ("ratio", "lo", "hi", "why"),
    [
        (1.10, 1.02, 1.18, "reaches down to or below"),  # the median above, the interval straddling: not shown
        (1.06, 1.05, 1.07, "reaches down to or below"),  # the lower bound on the threshold is not above it
        (1.02, 1.00, 1.04, "lies at or below"),  # costlier than A, but within the threshold
        (0.80, 0.75, 0.85, "lies at or below"),  # B cheaper: never fails
        (0.50, 0.10, 2.00, "reaches down to or below"),  # no information at all
    ],
)
def test_anything_the_data_do_not_show_above_the_threshold_passes(ratio, lo, hi, why):
    failed, lines = ab.threshold_check(ab_row(ratio, lo, hi), 1.05)
    assert not failed
    assert lines[0].startswith("A/B check passed:") and f"{why} the threshold 1.05" in lines[0]


def test_b_cheaper_never_fails_whatever_threshold_the_schema_allows():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["$defs"]["compare"]["properties"]["fail_above"]["minimum"] == 1
    t = ab.table(runs_ab(0.90, 10, 0.01), "a", "b")
    assert t["outcome"].iloc[0] == "cheaper"
    assert not ab.threshold_check(t, 1.0)[0]


def test_measured_costlier_fails_at_a_threshold_below_it_and_passes_at_one_above():
    t = ab.table(runs_ab(1.10, 10, 0.01), "a", "b")
    lo, hi = t["ratio_lo"].iloc[0], t["ratio_hi"].iloc[0]
    assert 1.05 < lo < hi < 1.15, t.T
    assert ab.threshold_check(t, 1.05)[0]
    assert not ab.threshold_check(t, 1.15)[0]
    assert not ab.threshold_check(t, float(lo))[0]  # not above: equal


def test_no_interval_no_threshold_or_no_comparison_never_fails():
    failed, lines = ab.threshold_check(
        ab_row(1.50, float("nan"), float("nan"), pairs=1).assign(interval="n=1: no interval"), 1.05
    )
    assert not failed and "no interval (n=1: no interval), so nothing shows it above" in lines[0]
    assert ab.threshold_check(ab_row(1.50, 1.40, 1.60), None) == (
        False,
        ["no threshold set (compare.fail_above): the A/B does not fail the run"],
    )
    assert not ab.threshold_check(ab_row(1.5, 1.4, 1.6).iloc[:0], 1.05)[0]


def test_one_failing_peer_group_fails_the_check_and_each_group_has_its_line():
    t = pd.concat([ab_row(1.01, 0.99, 1.03), ab_row(1.20, 1.10, 1.30).assign(workload="list")], ignore_index=True)
    failed, lines = ab.threshold_check(t, 1.05)
    assert failed and len(lines) == 2
    assert lines[0].startswith("A/B check passed") and lines[1].startswith("A/B check FAILED") and " list " in lines[1]


# --- results.csv and results.json ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scope_tables():
    records = synthetic_records(["node-http", "express", "fastify"], ["empty", "point-lookup"], [10], 5)
    runs = aggregate.to_frame(records, RUN_SCHEMA)
    m = metrics.compute_metrics(runs)
    return runs, m, metrics.geomean_scores(m, runs)


def test_every_column_of_the_results_is_in_the_data_dictionary():
    dictionary = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())["results"]
    assert list(dictionary) == results.COLUMNS


def test_results_hold_each_comparison_each_cells_figures_and_the_scores(scope_tables):
    runs, m, scores = scope_tables
    t = results.table("overall", runs, m, scores=scores)
    assert list(t.columns) == results.COLUMNS
    assert not t.duplicated(results.KEY).any()
    assert not (t["server"] == t["against"]).any()  # no baseline against itself
    cost = t[(t["kind"] == "ratio") & (t["figure"] == "us_per_req_elu")].set_index(["workload", "server", "against"])
    row = cost.loc[("point-lookup", "express", "node-http")]
    cell = m[(m["workload"] == "point-lookup") & (m["server"] == "express")].iloc[0]
    assert row["value"] == cell["cost_vs_node_http"] and row["lo"] == cell["cost_vs_node_http_lo"]
    assert row["n"] == 5 and row["outcome"] == "costlier" and row["interval"] == "n=5: min-max, 93.75 %"
    # Throughput ratios have no outcome; medians carry their unit and the cell's saturation.
    assert t.loc[(t["kind"] == "ratio") & (t["figure"] == "req_per_s"), "outcome"].isna().all()
    median = t[(t["kind"] == "median") & (t["figure"] == "us_per_req_elu") & (t["server"] == "fastify")]
    assert len(median) == 2 and set(median["unit"]) == {"us"} and median["saturation"].notna().all()
    assert sorted(t.loc[t["kind"] == "score", "server"]) == ["express", "fastify"]
    # Every row says where and when its runs were measured.
    assert (t["cpu_model"] == "Synthetic CPU").all() and (t["pipeline_commit"] != "").all()
    assert (t["measured_from"] <= t["measured_to"]).all() and (t["measured_from"] != "").all()


def test_results_csv_and_json_read_back_the_same(scope_tables, tmp_path):
    runs, m, scores = scope_tables
    t = results.table("overall", runs, m, scores=scores)
    t.to_csv(tmp_path / "results.csv", index=False)
    doc = results.document("overall", t, runs)
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert doc["provenance"]["runs"] == len(runs) and doc["provenance"]["cpu_models"] == ["Synthetic CPU"]
    from_csv, from_json = results.read(tmp_path / "results.csv"), results.read(tmp_path / "results.json")
    assert len(from_csv) == len(from_json) == len(t)
    for column in ["value", "lo", "hi", "n"]:
        assert from_csv[column].tolist() == pytest.approx(t[column].tolist(), nan_ok=True)
        assert from_json[column].tolist() == pytest.approx(t[column].tolist(), nan_ok=True)


def test_the_ab_scope_answers_b_over_a_from_its_own_table_only():
    runs = runs_ab(1.10, 10, 0.01).assign(server=lambda d: d["server"].map({"a": "express4", "b": "express"}))
    full = aggregate.to_frame(synthetic_records(["express"], ["point-lookup"], [50], 1), RUN_SCHEMA)
    runs = runs.assign(**{c: full[c].iloc[0] for c in ["cpu_model", "cpu_count", "kernel", "node_version"]})
    runs = runs.assign(elu_utilization=1.0, client_cpu_util=0.5, client_cpu_capacity=1.0, latency_p50_ms=1.0,
                       latency_p99_ms=2.0)  # fmt: skip
    m = metrics.compute_metrics(runs)
    t = results.table("ab", runs, m, ab=ab.table(runs, "express4", "express"))
    ratios = t[t["kind"] == "ratio"]
    assert set(zip(ratios["server"], ratios["against"], ratios["figure"], strict=True)) == {
        ("express", "express4", "us_per_req_elu"),
        ("express", "express4", "req_per_s"),
    }
    assert ratios.loc[ratios["figure"] == "us_per_req_elu", "outcome"].iloc[0] == "costlier"
    assert (ratios["n"] == 10).all()


# --- two result sets side by side ---------------------------------------------------------------------------------


def two_sets(scope_tables, factor=1.2, cpu="Synthetic CPU"):
    runs, m, scores = scope_tables
    a = results.table("overall", runs, m, scores=scores)
    later = a.copy()
    faster = (later["server"] == "fastify") & (later["kind"] == "ratio")
    later.loc[faster, ["value", "lo", "hi"]] *= factor
    return a, later.assign(cpu_model=cpu)


def test_side_by_side_gives_each_comparison_in_both_and_its_change(scope_tables):
    a, b = two_sets(scope_tables)
    pairs = results.side_by_side(a, b)
    assert set(pairs["kind"]) == {"ratio", "score"} and set(pairs["figure"]) == {"us_per_req_elu", "score"}
    fastify = pairs[(pairs["server"] == "fastify") & (pairs["kind"] == "ratio")]
    assert fastify["change"].tolist() == pytest.approx([0.2] * len(fastify))
    assert pairs.loc[pairs["server"] == "express", "change"].abs().max() < 1e-12
    assert results.machine_warnings(a, b) == []
    text = results.render(pairs)
    assert "fastify / node-http" in text and "+20.0 % (intervals apart)" in text and "+0.0 %" in text


def test_side_by_side_warns_when_the_cpus_differ_and_lists_rows_found_in_one_only(scope_tables):
    a, b = two_sets(scope_tables, factor=1.0, cpu="Other CPU")
    b = b[b["workload"] != "empty"]
    warnings = results.machine_warnings(a, b)
    assert len(warnings) == 1 and warnings[0].startswith("WARNING: the two result sets were measured with different "
                                                         "CPU models (A: Synthetic CPU; B: Other CPU)")  # fmt: skip
    pairs = results.side_by_side(a, b)
    assert set(pairs.loc[pairs["workload"] == "empty", "found"]) == {"A only"}
    assert "A only" in results.render(pairs)


def test_two_sets_with_different_headlines_are_warned_about_and_not_set_against_each_other(scope_tables):
    a, b = two_sets(scope_tables, factor=1.0)
    # B's comparisons were read on the main thread's on-CPU time (config's headline): its outcomes are there, and
    # it has no ratio of ELU.
    b = b[~((b["kind"] == "ratio") & (b["figure"] == "us_per_req_oncpu"))]
    b = b.assign(figure=b["figure"].where(~((b["kind"] == "ratio") & (b["figure"] == "us_per_req_elu")),
                                          "us_per_req_oncpu"))  # fmt: skip
    assert results.headlines(a) == ["us_per_req_elu"] and results.headlines(b) == ["us_per_req_oncpu"]
    assert results.machine_warnings(a, b)[0].startswith(
        "WARNING: the two result sets head with different figures (config's headline; A: us_per_req_elu; "
        "B: us_per_req_oncpu)"
    )
    ratios = results.side_by_side(a, b)
    ratios = ratios[ratios["kind"] == "ratio"]
    # A's ELU ratios have nothing to be set against; ratios of one figure are, whichever set headed with it.
    assert set(ratios.loc[ratios["figure"] == "us_per_req_elu", "found"]) == {"A only"}
    assert (
        len(ratios[ratios["figure"] == "us_per_req_oncpu"])
        and ratios["figure"].isin(["us_per_req_elu", "us_per_req_oncpu"]).all()
    )


def test_the_compare_script_reads_two_files_and_prints_the_warning(scope_tables, tmp_path):
    a, b = two_sets(scope_tables, cpu="Other CPU")
    (tmp_path / "a").mkdir()
    a.to_csv(tmp_path / "a/results.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    res = subprocess.run([sys.executable, str(REPO / "scripts/compare_results.py"), str(tmp_path / "a"),
                          str(tmp_path / "b.csv")], capture_output=True, text=True, check=True)  # fmt: skip
    lines = res.stdout.splitlines()
    assert lines[0].startswith("A: ") and "Synthetic CPU (2 CPUs)" in lines[0] and "Other CPU" in lines[1]
    assert lines[2].startswith("WARNING: the two result sets were measured with different CPU models")
    assert any("fastify / express" in line and "+20.0 %" in line for line in lines)
    missing = subprocess.run([sys.executable, str(REPO / "scripts/compare_results.py"), str(tmp_path / "nowhere"),
                              str(tmp_path / "b.csv")], capture_output=True, text=True)  # fmt: skip
    assert missing.returncode == 2 and "no such results file" in missing.stderr

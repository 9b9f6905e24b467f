"""Every target the README and experiments.yaml name runs to its report.

The shipped config.yaml and experiments.yaml, unchanged: every run they plan is a record made
from a real one of the tiny run (tests/synthetic.py: records_like), so the whole report stage
(aggregation, metrics, scores, stopping, scenarios, versions, charts, summaries, pages, the
claims ledger) runs through Snakemake on every experiment's real shape. The measurements
themselves are not repeated here (about 570 runs, over 40 minutes at 1-second windows): the
end-to-end tests measure with each client and stopping rule.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, make_project, snakemake
from nodebench import claimfile, plan, targets
from nodebench.runs import Run
from synthetic import records_like

#: Rules that measure or provision: not run here, their outputs (the records) are made instead.
MEASURING = {
    "measure_run",
    "expect_failure",
    "install_node_packages",
    "probe_load_generator",
    "probe_node",
    "install_node",
    "build_database_template",
    "prepare_external_database",
}


def shipped_config() -> dict:
    """config.yaml and experiments.yaml as Snakemake reads them, with the schema's defaults."""
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config.yaml").read_text()) | yaml.safe_load(
        (REPO / "experiments.yaml").read_text()
    )
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return plan.with_ab(config)


def named_targets(config: dict) -> list[str]:
    """reports/all, each workload's, each experiment's (the A/B target's among them) and the claims ledger's."""
    return [
        "reports/all",
        *(f"reports/{w}/all" for w in config["workloads"]),
        *(f"reports/{e}/all" for e in config["experiments"]),
        "reports/claims/all",
    ]


def templates(project: Path) -> dict:
    """A real record of the tiny run for each (client, stopping rule): its experiment runs autocannon for a
    duration and a count, ab for a count, wrk for a duration (a no-op where test_e2e built it already)."""
    res = snakemake(project, "reports/tiny-study/all")
    assert res.returncode == 0, res.stdout[-4000:]
    found = {}
    for path in sorted((project / "data/runs").rglob("r1.json")):
        record = json.loads(path.read_text())
        found.setdefault((record["client"], record["stopping_rule"]), record)
    return found


def test_the_readme_names_these_targets():
    readme = (REPO / "README.md").read_text()
    for target in ("reports/all", "reports/claims/all"):
        assert target in readme
    for name in shipped_config()["experiments"]:
        assert f"reports/{name}/all" in readme, name


def test_every_named_target_plans_in_a_fresh_checkout(tmp_path: Path):
    """A dry run of every target at once, with the shipped configuration: each plans its measurements."""
    config = shipped_config()
    dest = make_project(tmp_path / "project", (REPO / "config.yaml").read_text())
    res = snakemake(dest, "--dry-run", *named_targets(config))
    assert res.returncode == 0, res.stdout[-4000:]
    counts = dict(re.findall(r"^(measure_run|expect_failure)\s+(\d+)$", res.stdout, re.M))
    t = targets.Targets(config)
    doc = yaml.safe_load((REPO / "claims.yaml").read_text())
    t.claims = claimfile.ledger_claims(doc["claims"], t.scope_cells, t.failure_cells)
    # An adaptive block plans up to its first look; the rounds after it wait for that look (a checkpoint). A block
    # whose looks read the claims plans only its claims' cells up to the first look: its other cells, and the cells
    # it expects to fail, wait for the look too.
    first = {b: (t.looks(b)[0] if t.looks(b) else None) for b in {r[0] for r in t.measured_runs()}}
    claimed = {p for b, n in first.items() if t.stops_on(b) == "claims" for p in t.look_records(b, n)}
    runs = [
        r
        for r in t.measured_runs()
        if first[r[0]] is None
        or (r[-1] <= first[r[0]] and (t.stops_on(r[0]) != "claims" or t.plan.as_measured(Run(*r)).path in claimed))
    ]
    assert len(runs) < len(t.measured_runs()) and claimed
    failures = [e for e in t.experiments if t.stops_on(t.block_of(e)) != "claims" for _ in t.failure_cells(e)]
    expected = {"measure_run": str(len(runs))} | ({"expect_failure": str(len(failures))} if failures else {})
    assert counts == expected


@pytest.fixture(scope="module")
def built(project: Path, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, dict]:
    config = shipped_config()
    dest = make_project(tmp_path_factory.mktemp("targets") / "project", (REPO / "config.yaml").read_text())
    records, failures = records_like(templates(project), targets.Targets(config))
    for path, content in [*records.items(), *failures.items()]:
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(json.dumps(content))
    rules = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-rules"], cwd=dest, capture_output=True, text=True, check=True
    ).stdout.split()
    assert MEASURING & set(rules) and "write_summary" in rules, rules
    allowed = [r for r in rules if r not in MEASURING]
    res = snakemake(dest, "--cores", "2", "--allowed-rules", *allowed, "--", *named_targets(config), timeout=1200)
    return dest, res, config


def test_every_named_target_runs_to_its_report(built):
    dest, res, config = built
    assert res.returncode == 0, res.stdout[-6000:]
    for target in named_targets(config):
        assert (dest / target).read_text().split(), target


def test_each_scope_has_its_summary_page_and_charts(built):
    dest, res, config = built
    t = targets.Targets(config)
    for scope in t.scopes:
        summary = (dest / targets.SUMMARY.format(scope=scope)).read_text()
        assert len(summary) > 500 and "Traceback" not in summary, scope
        page = (dest / targets.PAGE.format(scope=scope)).read_text()
        for chart in t.chart_names(scope):
            spec = json.loads((dest / targets.chart_path(scope, chart, "vl.json")).read_text())
            assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/"), (scope, chart)
            assert (dest / targets.chart_path(scope, chart, "png")).read_bytes()[:4] == b"\x89PNG", (scope, chart)
        assert page.count('class="chart"') == len(t.chart_names(scope)), scope


def test_the_ab_target_answers_with_an_outcome_and_its_rounds(built):
    """reports/compare/all on the shipped `compare`: B over A, one of the four outcomes, and where its looks stopped."""
    dest, res, config = built
    summary = (dest / targets.SUMMARY.format(scope=plan.AB)).read_text()
    a, b = config["compare"]["a"], config["compare"]["b"]
    assert f"## A/B: {b} (B) against {a} (A)" in summary
    answer = next(line for line in summary.splitlines() if line.startswith("- **point-lookup at 50 connections"))
    assert re.search(r"B costs \d\.\d{3}x A's event-loop CPU per request \(\d\.\d{3}–\d\.\d{3}, "
                     r"(cheaper|costlier|equivalent within ±5 %|inconclusive)\)", answer), answer  # fmt: skip
    look = json.loads(next((dest / "data/looks" / plan.AB / a / b).glob("n*.json")).read_text())
    assert look["looks"] == config["compare"]["looks"]
    assert "Adaptive rounds: looks after 6, 10, 14, 20 rounds" in summary


def test_the_load_generators_experiment_has_a_score_table_per_client(built):
    """The crash of reports/load-generators/all: a server's score was several rows, one per client."""
    dest, res, config = built
    summary = (dest / targets.SUMMARY.format(scope="load-generators")).read_text()
    clients = {c for m in config["experiments"]["load-generators"]["matrices"] for c in m["clients"]}
    headings = [line for line in summary.splitlines() if line.startswith("## Score: The database set")]
    assert {h.split(", ")[1] for h in headings} == clients, headings


def test_the_ledger_has_a_row_for_every_claim(built):
    dest, res, config = built
    ledger = (dest / targets.LEDGER_MARKDOWN).read_text()
    claims = yaml.safe_load((REPO / "claims.yaml").read_text())["claims"]
    missing = [c["id"] for c in claims if c["id"] not in ledger]
    assert not missing, missing

"""The A/B target and adaptive rounds, measured for real (tiny windows), as the README writes the command.

A copy of the tiny project (its packages, template and toolchain probes, none of its records),
so that the suite's shared project keeps exactly the records its own tests count.
"""

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import leftovers, snakemake
from nodebench import plan

#: The README's command with the tiny suite's windows and looks: wide enough to stop at the first look.
STOPS = "compare={a: express4, b: express, duration_s: 1, looks: [2, 3], half_width: 1.0}"
#: Narrower than any real interval: goes on to the cap.
CAPS = "compare={a: express4, b: express, duration_s: 1, looks: [2, 3], half_width: 0.0001}"


@pytest.fixture(scope="module")
def copy(project: Path, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("ab") / "project"
    shutil.copytree(project, dest, symlinks=True, ignore=shutil.ignore_patterns("runs", "reports", "looks"))
    return dest


def records(project: Path) -> dict[tuple[str, int], dict]:
    found = {}
    for path in (project / "data/runs" / plan.AB).rglob("r*.json"):
        r = json.loads(path.read_text())
        found[(r["server"], r["round"])] = r
    return found


def test_the_ab_target_stops_at_its_first_look_and_alternates_who_runs_first(copy: Path):
    res = snakemake(copy, "reports/compare/all", "--config", STOPS)
    assert res.returncode == 0, res.stdout[-4000:]
    assert "nodebench: look after 2 rounds of compare/express4/express: 1 comparisons" in res.stdout
    assert ": stop" in res.stdout
    found = records(copy)
    assert sorted(found) == [("express", 1), ("express", 2), ("express4", 1), ("express4", 2)]
    # A B in round 1, B A in round 2, each pair back to back.
    assert found[("express4", 1)]["started_at"] < found[("express", 1)]["started_at"]
    assert found[("express", 2)]["started_at"] < found[("express4", 2)]["started_at"]
    summary = (copy / "reports/compare/summary.md").read_text()
    assert "## A/B: express (B) against express4 (A)" in summary
    assert re.search(r"B costs \d\.\d{3}x A's event-loop CPU per request \(\d\.\d{3}–\d\.\d{3}, \w", summary)
    assert "It stopped after 2 rounds, every one of 1 comparisons within it" in summary
    assert "A ran first in 1 rounds and B in 1 on point-lookup c50." in summary
    # The run ends with the page and the answer, computed from the tables as the summary was (not read back from it).
    answer = next(line for line in summary.splitlines() if line.startswith("- **point-lookup at 50 connections"))
    closing = res.stdout[res.stdout.index("report: reports/compare/index.html") :].splitlines()
    assert closing[1].endswith(answer.removeprefix("- ").replace("**", "")), closing[:3]
    assert not leftovers(copy)


def test_a_narrower_target_measures_on_to_the_cap_and_says_so(copy: Path):
    res = snakemake(copy, "reports/compare/all", "--config", CAPS)
    assert res.returncode == 0, res.stdout[-4000:]
    # Only the third round is new: the first two rounds' records stand.
    assert len(re.findall(r"^(?:local)?rule measure_run:", res.stdout, re.M)) == 2, res.stdout[-3000:]
    assert len(records(copy)) == 6
    assert "(cap reached)" in res.stdout
    summary = (copy / "reports/compare/summary.md").read_text()
    assert "It reached the cap of 3 rounds with 1 of 1 comparisons still wider than that" in summary
    assert "at least 48.5 % each" in summary  # looks 2 and 3: min-max of 3 covers 75 %, of 2 50 %; less 1.5
    assert not leftovers(copy)


def test_adaptive_rounds_of_the_main_matrix_stop_where_their_look_says(copy: Path):
    # fastify against node-http, without the A/A twin (its ratio is the floor, not a comparison): four runs.
    res = snakemake(
        copy,
        "reports/empty/all",
        "--config",
        "adaptive={half_width: 1.0, looks: [2, 4]}",
        "servers=[node-http,fastify]",
        "control=",
    )
    assert res.returncode == 0, res.stdout[-4000:]
    assert "nodebench: look after 2 rounds of main" in res.stdout
    rounds = {int(p.stem[1:]) for p in (copy / "data/runs" / plan.MAIN_BLOCK / "empty").rglob("r*.json")}
    assert rounds == {1, 2}
    summary = (copy / "reports/empty/summary.md").read_text()
    assert "Adaptive rounds: looks after 2, 4 rounds" in summary and "It stopped after 2 rounds" in summary
    assert "Adaptive rounds: looks after 2, 4 rounds" in (copy / "reports/empty/index.html").read_text()
    assert not leftovers(copy)

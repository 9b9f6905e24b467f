"""The real pipeline on a tiny config: real PostgreSQL, real servers, real autocannon."""

import os
from pathlib import Path

import pandas as pd

from conftest import planned_cells, snakemake


def test_every_run_is_a_clean_result(project: Path):
    runs = pd.read_parquet(project / "data" / "runs.parquet")
    assert len(runs) == 6
    assert set(runs["server"]) == {"node-http", "express", "fastify"}
    assert set(runs["workload"]) == {"empty", "point-lookup"}
    assert (runs[["errors", "timeouts", "non2xx"]] == 0).all().all()
    assert ((runs["elu_utilization"] > 0) & (runs["elu_utilization"] <= 1)).all()
    assert (runs["requests"] > 100).all()


def test_database_did_the_work(project: Path):
    runs = pd.read_parquet(project / "data" / "runs.parquet").set_index(["workload", "server"])
    empty, lookup = runs.loc["empty"], runs.loc["point-lookup"]
    assert (empty["db_queries"] == 0).all()
    # One query per request, plus at most one per connection cut off when the window closed.
    assert (lookup["db_queries"] >= lookup["requests"]).all()
    assert (lookup["db_queries"] <= lookup["requests"] + lookup["connections"]).all()


def test_records_carry_identity_and_provenance(project: Path):
    runs = pd.read_parquet(project / "data" / "runs.parquet")
    assert (runs["framework"].astype(str).replace({"node:http": "node-http"}) == runs["server"].astype(str)).all()
    assert runs["postgres_version"].astype(str).str.startswith("18").all()
    assert (runs["database_mode"] == "embedded").all()
    assert runs["node_version"].astype(str).str.startswith("v").all()
    assert runs["express_version"].astype(str).str.startswith("5.").all()
    assert (runs["server_cpus"] != "").all()
    assert str(runs["connections"].dtype) == "int64" and str(runs["server"].dtype) == "category"
    derived = runs["elu_utilization"] * 1e6 / runs["req_per_s"]
    assert (abs(derived - runs["us_per_req_elu"]) < 1e-6).all()


def test_summary_and_manifest(project: Path):
    summary = (project / "reports" / "summary.md").read_text()
    assert "## empty" in summary and "## point-lookup" in summary
    assert "Measured on" in summary and "1.00x" in summary
    manifest = (project / "reports" / "all").read_text().split()
    assert "data/runs.parquet" in manifest and "reports/summary.md" in manifest
    assert len([m for m in manifest if m.startswith("data/runs/")]) == 6
    assert all((project / m).exists() for m in manifest)


def test_rerun_with_nothing_changed_does_nothing(project: Path):
    res = snakemake(project, "--dry-run", "reports/all")
    assert res.returncode == 0, res.stdout[-3000:]
    assert "Nothing to be done" in res.stdout


def test_editing_one_server_replans_only_its_jobs(project: Path):
    server = project / "servers" / "express.js"
    original, stat = server.read_text(), server.stat()
    try:
        server.write_text(original + "// an edit\n")
        res = snakemake(project, "--dry-run", "reports/all")
        assert res.returncode == 0, res.stdout[-3000:]
        assert planned_cells(res.stdout) == {("empty", "express"), ("point-lookup", "express")}
        for rule in ("aggregate_runs", "write_summary", "list_outputs"):
            assert rule in res.stdout
        assert "build_database_template" not in res.stdout
    finally:
        server.write_text(original)
        os.utime(server, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "Nothing to be done" in snakemake(project, "--dry-run", "reports/all").stdout

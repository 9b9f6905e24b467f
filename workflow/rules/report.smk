rule write_summary:
    input:
        runs="data/runs.parquet",
    output:
        summary="reports/summary.md",
    log:
        "data/logs/write_summary.log",
    script:
        "../../scripts/summary.py"


rule list_outputs:
    input:
        records=run_records(),
        runs="data/runs.parquet",
        summary="reports/summary.md",
    output:
        manifest="reports/all",
    log:
        "data/logs/list_outputs.log",
    script:
        "../../scripts/manifest.py"

rule aggregate_runs:
    input:
        records=run_records(),
        schema="workflow/schemas/run-record.schema.yaml",
    output:
        runs="data/runs.parquet",
    log:
        "data/logs/aggregate_runs.log",
    script:
        "../../scripts/aggregate.py"

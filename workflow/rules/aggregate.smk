rule aggregate_runs:
    input:
        records=lambda wc: scope_records(wc.scope),
        schema="workflow/schemas/run-record.schema.yaml",
        code=code("aggregate_runs.py"),
    output:
        runs="data/{scope}/runs.parquet",
    log:
        "data/logs/aggregate_runs/{scope}.log",
    script:
        "../../scripts/aggregate_runs.py"

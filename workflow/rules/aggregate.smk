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


rule aggregate_workload_runs:
    input:
        records=lambda wc: workload_records(wc.workload),
        schema="workflow/schemas/run-record.schema.yaml",
    output:
        runs="data/by-workload/{workload}/runs.parquet",
    log:
        "data/logs/aggregate_workload_runs/{workload}.log",
    script:
        "../../scripts/aggregate.py"

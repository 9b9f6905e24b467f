rule aggregate_runs:
    input:
        records=scope_records,
        schema=targets.RUN_SCHEMA,
        code=code("aggregate_runs.py"),
    output:
        runs=targets.table_path("{scope}", "runs"),
    log:
        "data/logs/aggregate_runs/{scope}.log",
    script:
        "../../scripts/aggregate_runs.py"

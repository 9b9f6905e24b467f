rule aggregate_runs:
    input:
        # data/runs/<block>/.../r<round>.json: every planned run of the scope, in the block that measured it.
        records=lambda wc: T.scope_records(wc.scope),
        schema=targets.RUN_SCHEMA,
        code=code("aggregate_runs.py"),
    output:
        runs=targets.table_path("{scope}", "runs"),
    log:
        "data/logs/aggregate_runs/{scope}.log",
    localrule: True
    script:
        "../../scripts/aggregate_runs.py"

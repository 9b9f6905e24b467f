# Cells expected to fail (an experiment's `failures`, seed 003's failure modes): run once like a
# measurement, and what the harness reported is the outcome, written to data/failures/. The
# job fails only for a failure of the harness's own (database, port, storage, a server that
# never started).
rule expect_failure:
    input:
        unpack(failure_inputs),
    output:
        outcome="data/failures/{workload}/{server}/c{connections}/{loadgen}-{stop}.json",
    log:
        "data/logs/failures/{workload}/{server}/c{connections}/{loadgen}-{stop}.log",
    resources:
        bench=1,
    params:
        warmup_s=config["warmup_s"],
        pool_size=config["pool_size"],
        server_port=config["server_port"],
        node=config["node"],
        scratch_dir=config["scratch_dir"],
        allow_shared_cpu=config["allow_shared_cpu"],
        database=database_params(),
        workload=workload_entry,
    script:
        "../../scripts/expect_failure.py"

rule measure_run:
    input:
        unpack(measure_inputs),
    output:
        record="data/runs/{workload}/{server}/c{connections}/{loadgen}-{stop}/r{rep}.json",
    log:
        "data/logs/measure/{workload}/{server}/c{connections}/{loadgen}-{stop}/r{rep}.log",
    priority: measure_priority
    # A cell whose processes did not start is measured once more; a failed check is not
    # (the job fails at once on its second attempt; scripts/nodebench/harness/attempts.py).
    retries: 1
    resources:
        bench=1,
        # Not a limit: hands the job its attempt number, which goes into the record.
        attempt=attempt_number,
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
        "../../scripts/measure_run.py"

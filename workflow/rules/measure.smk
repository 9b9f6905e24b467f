rule measure_run:
    input:
        unpack(measure_inputs),
    output:
        record="data/runs/{workload}/{server}/c{connections}/{loadgen}-{stop}/r{rep}.json",
    log:
        "data/logs/measure/{workload}/{server}/c{connections}/{loadgen}-{stop}/r{rep}.log",
    priority: measure_priority
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
    script:
        "../../scripts/measure_run.py"

rule compute_metrics:
    input:
        runs="data/runs.parquet",
    output:
        metrics="data/metrics.parquet",
        scores="data/scores.parquet",
    log:
        "data/logs/compute_metrics.log",
    script:
        "../../scripts/metrics.py"


rule compute_workload_metrics:
    input:
        runs="data/by-workload/{workload}/runs.parquet",
    output:
        metrics="data/by-workload/{workload}/metrics.parquet",
        scores="data/by-workload/{workload}/scores.parquet",
    log:
        "data/logs/compute_workload_metrics/{workload}.log",
    script:
        "../../scripts/metrics.py"

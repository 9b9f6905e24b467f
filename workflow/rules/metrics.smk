rule compute_metrics:
    input:
        runs="data/{scope}/runs.parquet",
        reference=reference_runs,
        code=code("compute_metrics.py"),
    output:
        metrics="data/{scope}/metrics.parquet",
        scores="data/{scope}/scores.parquet",
    log:
        "data/logs/compute_metrics/{scope}.log",
    params:
        workloads=lambda wc: scope_workloads(wc.scope),
    script:
        "../../scripts/compute_metrics.py"


# Only experiments have fixed-count runs to set against fixed-duration ones.
rule compute_stopping:
    input:
        runs="data/{experiment}/runs.parquet",
        code=code("compute_stopping.py"),
    output:
        stopping="data/{experiment}/stopping.parquet",
    log:
        "data/logs/compute_stopping/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(map(re.escape, EXPERIMENTS)) or "(?!)",
    script:
        "../../scripts/compute_stopping.py"

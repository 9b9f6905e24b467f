rule compute_metrics:
    input:
        runs="data/{scope}/runs.parquet",
        reference=reference_runs,
        code=code("compute_metrics.py"),
    output:
        metrics="data/{scope}/metrics.parquet",
    log:
        "data/logs/compute_metrics/{scope}.log",
    params:
        workloads=lambda wc: scope_workloads(wc.scope),
    script:
        "../../scripts/compute_metrics.py"


# The score ranks servers over the matrix's workloads; an experiment has no such ranking.
rule compute_scores:
    input:
        metrics="data/{matrix}/metrics.parquet",
        code=code("compute_scores.py"),
    output:
        scores="data/{matrix}/scores.parquet",
    log:
        "data/logs/compute_scores/{matrix}.log",
    wildcard_constraints:
        matrix="|".join(map(re.escape, ["overall", *WORKLOADS])),
    script:
        "../../scripts/compute_scores.py"


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


# The scenario score (geometric mean against node:http), for experiments that measure a score set.
rule compute_scenarios:
    input:
        runs="data/{experiment}/runs.parquet",
        code=code("compute_scenarios.py"),
    output:
        scenarios="data/{experiment}/scenarios.parquet",
    log:
        "data/logs/compute_scenarios/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(map(re.escape, [e for e in EXPERIMENTS if scored(e)]))
        or "(?!)",
    script:
        "../../scripts/compute_scenarios.py"


# Node.js versions against Node.js 20 and framework majors against their previous one,
# for experiments that measure them.
rule compute_versions:
    input:
        runs="data/{experiment}/runs.parquet",
        metrics="data/{experiment}/metrics.parquet",
        code=code("compute_versions.py"),
    output:
        versions="data/{experiment}/versions.parquet",
    log:
        "data/logs/compute_versions/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(map(re.escape, [e for e in EXPERIMENTS if versioned(e)]))
        or "(?!)",
    script:
        "../../scripts/compute_versions.py"

rule compute_metrics:
    input:
        runs=targets.table_path("{scope}", "runs"),
        # A single workload's share models also read data/empty/runs.parquet (the framework alone).
        reference=lambda wc: T.reference_runs(wc.scope),
        code=code("compute_metrics.py"),
    output:
        metrics=targets.table_path("{scope}", "metrics"),
    log:
        "data/logs/compute_metrics/{scope}.log",
    localrule: True
    params:
        workloads=lambda wc: T.scope_workloads(wc.scope),
        margin=config["equivalence_margin"],
        headline=T.headline,
    script:
        "../../scripts/compute_metrics.py"


# The score ranks servers over the matrix's workloads; an experiment has no such ranking.
rule compute_scores:
    input:
        runs=targets.table_path("{scope}", "runs"),
        metrics=targets.table_path("{scope}", "metrics"),
        code=code("compute_scores.py"),
    output:
        scores=targets.table_path("{scope}", "scores"),
    log:
        "data/logs/compute_scores/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, ["overall", *WORKLOADS])),
    localrule: True
    script:
        "../../scripts/compute_scores.py"


# Only experiments have fixed-count runs to set against fixed-duration ones.
rule compute_stopping:
    input:
        runs=targets.table_path("{scope}", "runs"),
        code=code("compute_stopping.py"),
    output:
        stopping=targets.table_path("{scope}", "stopping"),
    log:
        "data/logs/compute_stopping/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, EXPERIMENTS)) or "(?!)",
    localrule: True
    script:
        "../../scripts/compute_stopping.py"


# The scenario score (geometric mean against node:http), for experiments that measure a score set.
rule compute_scenarios:
    input:
        runs=targets.table_path("{scope}", "runs"),
        code=code("compute_scenarios.py"),
    output:
        scenarios=targets.table_path("{scope}", "scenarios"),
    log:
        "data/logs/compute_scenarios/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, filter(T.scored, EXPERIMENTS))) or "(?!)",
    localrule: True
    script:
        "../../scripts/compute_scenarios.py"


# Node.js versions against Node.js 20 and framework majors against their previous one,
# for experiments that measure them.
rule compute_versions:
    input:
        runs=targets.table_path("{scope}", "runs"),
        metrics=targets.table_path("{scope}", "metrics"),
        code=code("compute_versions.py"),
    output:
        versions=targets.table_path("{scope}", "versions"),
    log:
        "data/logs/compute_versions/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, filter(T.versioned, EXPERIMENTS))) or "(?!)",
    localrule: True
    params:
        margin=config["equivalence_margin"],
    script:
        "../../scripts/compute_versions.py"


# Latency at a fixed arrival rate, for experiments with open-loop cells.
rule compute_latency:
    input:
        runs=targets.table_path("{scope}", "runs"),
        code=code("compute_latency.py"),
    output:
        latency=targets.table_path("{scope}", "latency"),
    log:
        "data/logs/compute_latency/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, filter(T.open_loop, EXPERIMENTS))) or "(?!)",
    localrule: True
    script:
        "../../scripts/compute_latency.py"

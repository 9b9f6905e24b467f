rule write_summary:
    input:
        runs="data/runs.parquet",
        metrics="data/metrics.parquet",
        scores="data/scores.parquet",
    output:
        summary="reports/summary.md",
    log:
        "data/logs/write_summary/overall.log",
    script:
        "../../scripts/summary.py"


rule write_workload_summary:
    input:
        runs="data/by-workload/{workload}/runs.parquet",
        metrics="data/by-workload/{workload}/metrics.parquet",
        scores="data/by-workload/{workload}/scores.parquet",
    output:
        summary="reports/{workload}/summary.md",
    log:
        "data/logs/write_summary/{workload}.log",
    script:
        "../../scripts/summary.py"


rule build_index_page:
    input:
        specs=scope_charts("overall", exts=["vl.json"]),
        metrics="data/metrics.parquet",
        summary="reports/summary.md",
    output:
        page="reports/index.html",
    log:
        "data/logs/build_index_page.log",
    script:
        "../../scripts/index_page.py"


rule list_outputs:
    input:
        lambda wc: scope_outputs("overall"),
    output:
        manifest="reports/all",
    log:
        "data/logs/list_outputs/overall.log",
    script:
        "../../scripts/manifest.py"


rule list_workload_outputs:
    input:
        lambda wc: scope_outputs(wc.workload),
    output:
        manifest="reports/{workload}/all",
    log:
        "data/logs/list_outputs/{workload}.log",
    script:
        "../../scripts/manifest.py"

# Experiments: named studies beside the main matrix (config key `experiments`), each
# with its own target reports/<experiment>/all. Their run records live with the main
# matrix's, so a cell both use is measured once.


def experiment_charts(name):
    """Charts an experiment gets, from what its matrices measure."""
    matrices = EXPERIMENTS[name]["matrices"]
    charts = []
    if any(m.get("counts") and m.get("durations_s") for m in matrices):
        charts.append("stopping-rule")
    if any(len(m.get("durations_s", [])) >= 3 for m in matrices):
        charts.append("duration-sweep")
    if len({c for m in matrices for c in m["load_generators"]}) > 1:
        charts.append("load-generators")
    return charts


def experiment_outputs(name):
    charts = [
        f"reports/{name}/charts/{c}.{e}"
        for c in experiment_charts(name)
        for e in CHART_EXTS
    ]
    return [
        *experiment_records(name),
        f"data/experiments/{name}/runs.parquet",
        f"data/experiments/{name}/metrics.parquet",
        f"data/experiments/{name}/stopping.parquet",
        f"reports/{name}/summary.md",
        *charts,
    ]


rule aggregate_experiment_runs:
    input:
        records=lambda wc: experiment_records(wc.experiment),
        schema="workflow/schemas/run-record.schema.yaml",
    output:
        runs="data/experiments/{experiment}/runs.parquet",
    log:
        "data/logs/aggregate_experiment_runs/{experiment}.log",
    script:
        "../../scripts/aggregate.py"


rule compute_experiment_metrics:
    input:
        runs="data/experiments/{experiment}/runs.parquet",
    output:
        metrics="data/experiments/{experiment}/metrics.parquet",
        scores="data/experiments/{experiment}/scores.parquet",
    log:
        "data/logs/compute_experiment_metrics/{experiment}.log",
    script:
        "../../scripts/metrics.py"


rule write_experiment_report:
    input:
        runs="data/experiments/{experiment}/runs.parquet",
        metrics="data/experiments/{experiment}/metrics.parquet",
    output:
        summary="reports/{experiment}/summary.md",
        stopping="data/experiments/{experiment}/stopping.parquet",
    log:
        "data/logs/write_experiment_report/{experiment}.log",
    params:
        description=lambda wc: EXPERIMENTS[wc.experiment].get("description", ""),
    script:
        "../../scripts/experiments.py"


rule plot_experiment:
    input:
        runs="data/experiments/{experiment}/runs.parquet",
        metrics="data/experiments/{experiment}/metrics.parquet",
        stopping="data/experiments/{experiment}/stopping.parquet",
    output:
        png=report(
            "reports/{experiment}/charts/{chart}.png",
            caption="../report/experiments.rst",
            category="{experiment}",
            labels={"chart": "{chart}", "scope": "{experiment}", "format": "PNG"},
        ),
        svg="reports/{experiment}/charts/{chart}.svg",
        html="reports/{experiment}/charts/{chart}.html",
        spec="reports/{experiment}/charts/{chart}.vl.json",
    log:
        "data/logs/plot_experiment/{experiment}/{chart}.log",
    wildcard_constraints:
        chart="stopping-rule|duration-sweep|load-generators",
    script:
        "../../scripts/experiment_charts.py"


rule list_experiment_outputs:
    input:
        lambda wc: experiment_outputs(wc.experiment),
    output:
        manifest="reports/{experiment}/all",
    log:
        "data/logs/list_outputs/{experiment}.log",
    script:
        "../../scripts/manifest.py"

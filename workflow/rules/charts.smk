rule plot_cpu_per_request:
    input:
        metrics=lambda wc: scope_metrics(wc.scope),
    output:
        png=report(
            "reports/{scope}/charts/cpu-per-request.png",
            caption="../report/cpu-per-request.rst",
            category="{scope}",
            labels={"chart": "CPU per request", "scope": "{scope}", "format": "PNG"},
        ),
        svg="reports/{scope}/charts/cpu-per-request.svg",
        html="reports/{scope}/charts/cpu-per-request.html",
        spec="reports/{scope}/charts/cpu-per-request.vl.json",
    log:
        "data/logs/plot_cpu_per_request/{scope}.log",
    params:
        chart="cpu-per-request",
        workload=lambda wc: None if wc.scope == "overall" else wc.scope,
    script:
        "../../scripts/charts.py"


rule plot_connection_sweep:
    input:
        metrics=lambda wc: scope_metrics(wc.scope),
    output:
        png=report(
            "reports/{scope}/charts/connection-sweep.png",
            caption="../report/connection-sweep.rst",
            category="{scope}",
            labels={"chart": "connection sweep", "scope": "{scope}", "format": "PNG"},
        ),
        svg="reports/{scope}/charts/connection-sweep.svg",
        html="reports/{scope}/charts/connection-sweep.html",
        spec="reports/{scope}/charts/connection-sweep.vl.json",
    log:
        "data/logs/plot_connection_sweep/{scope}.log",
    params:
        chart="connection-sweep",
        workload=lambda wc: None if wc.scope == "overall" else wc.scope,
    script:
        "../../scripts/charts.py"


rule plot_framework_share:
    input:
        metrics=lambda wc: scope_metrics(wc.scope),
    output:
        png=report(
            "reports/{scope}/charts/framework-share.png",
            caption="../report/framework-share.rst",
            category="{scope}",
            labels={"chart": "framework share", "scope": "{scope}", "format": "PNG"},
        ),
        svg="reports/{scope}/charts/framework-share.svg",
        html="reports/{scope}/charts/framework-share.html",
        spec="reports/{scope}/charts/framework-share.vl.json",
    log:
        "data/logs/plot_framework_share/{scope}.log",
    params:
        chart="framework-share",
        workload=lambda wc: None if wc.scope == "overall" else wc.scope,
    script:
        "../../scripts/charts.py"


rule plot_ratio_vs_express:
    input:
        metrics=lambda wc: scope_metrics(wc.scope),
    output:
        png=report(
            "reports/{scope}/charts/ratio-vs-express.png",
            caption="../report/ratio-vs-express.rst",
            category="{scope}",
            labels={"chart": "ratio vs express", "scope": "{scope}", "format": "PNG"},
        ),
        svg="reports/{scope}/charts/ratio-vs-express.svg",
        html="reports/{scope}/charts/ratio-vs-express.html",
        spec="reports/{scope}/charts/ratio-vs-express.vl.json",
    log:
        "data/logs/plot_ratio_vs_express/{scope}.log",
    params:
        chart="ratio-vs-express",
        workload=lambda wc: None if wc.scope == "overall" else wc.scope,
    script:
        "../../scripts/charts.py"

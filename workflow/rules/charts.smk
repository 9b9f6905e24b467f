rule plot_chart:
    input:
        unpack(chart_tables),
        code=code("plot_chart.py"),
    output:
        png=report(
            "reports/{scope}/charts/{chart}.png",
            caption="../report/charts.rst",
            category="{scope}",
            labels={"chart": "{chart}", "scope": "{scope}", "format": "PNG"},
        ),
        svg="reports/{scope}/charts/{chart}.svg",
        html="reports/{scope}/charts/{chart}.html",
        spec="reports/{scope}/charts/{chart}.vl.json",
    log:
        "data/logs/plot_chart/{scope}/{chart}.log",
    params:
        # For the captions (workflow/report/charts.rst), worded from the one place they are set.
        **CAPTION_THRESHOLDS,
    script:
        "../../scripts/plot_chart.py"

rule plot_chart:
    input:
        # data/<scope>/<table>.parquet for each table the chart lists (render/chart_list.py: CHART_LIST[chart].tables).
        unpack(lambda wc: T.chart_tables(wc.scope, wc.chart)),
        code=lambda wc: targets.chart_code(wc.chart),
    output:
        png=report(
            targets.chart_path("{scope}", "{chart}", "png"),
            caption="../report/charts.rst",
            category="{scope}",
            labels={"chart": "{chart}", "scope": "{scope}", "format": "PNG"},
        ),
        svg=targets.chart_path("{scope}", "{chart}", "svg"),
        html=targets.chart_path("{scope}", "{chart}", "html"),
        spec=targets.chart_path("{scope}", "{chart}", "vl.json"),
    log:
        "data/logs/plot_chart/{scope}/{chart}.log",
    localrule: True
    params:
        # The chart's caption for the report (workflow/report/charts/<chart>.rst, its figures filled in).
        caption=lambda wc: caption(wc.chart, workflow.basedir, T.headline),
    script:
        "../../scripts/plot_chart.py"

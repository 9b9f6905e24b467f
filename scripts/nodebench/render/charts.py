"""Altair charts drawn from the aggregated metrics tables only, one shared theme."""

import json
from pathlib import Path

import altair as alt
import pandas as pd
import vl_convert

from nodebench.analysis.metrics import headline
from nodebench.catalogue.thresholds import CONFIDENCE, SERVER_BOUND_ELU, pct
from nodebench.catalogue.workloads import ordered
from nodebench.render import experiment_charts
from nodebench.render.theme import BOUND_OPACITY, NOT_SERVER_BOUND, server_scale


def _marked(df: pd.DataFrame) -> pd.DataFrame:
    """Strings for the chart: the saturation mark and ordered workloads."""
    return df.assign(
        bound=lambda d: (
            d["saturation"].astype(str).map(lambda v: "server-bound" if v == "server-bound" else NOT_SERVER_BOUND)
        ),
        workload=lambda d: d["workload"].astype(str),
        server=lambda d: d["server"].astype(str),
    )


def _workloads(df: pd.DataFrame) -> list[str]:
    return ordered(df["workload"])


def cpu_per_request(metrics: pd.DataFrame) -> alt.Chart:
    """Bars of us/req per server (event loop and process CPU) with CI error bars, one row per workload."""
    m = _marked(headline(metrics))
    long = pd.concat(
        [
            m.assign(
                kind="event loop (ELU)", value=m["us_per_req_elu"], lo=m["us_per_req_elu_lo"], hi=m["us_per_req_elu_hi"]
            ),
            m.assign(
                kind="process CPU", value=m["us_per_req_cpu"], lo=m["us_per_req_cpu_lo"], hi=m["us_per_req_cpu_hi"]
            ),
        ]
    )[["workload", "server", "connections", "kind", "value", "lo", "hi", "bound", "repetitions"]]
    scale = server_scale(long["server"])
    base = alt.Chart(long).encode(alt.X("server:N").sort(scale.domain).title(None))
    bars = base.mark_bar().encode(
        alt.Y("value:Q").title("CPU per request (µs)"),
        alt.Color("server:N").scale(scale).legend(None),
        alt.Opacity("bound:N").scale(BOUND_OPACITY).title("saturation"),
        tooltip=[
            "server",
            "workload",
            "connections",
            "kind",
            alt.Tooltip("value:Q", format=".1f"),
            "bound",
            "repetitions",
        ],
    )
    err = base.mark_errorbar(ticks=True, color="black").encode(
        alt.Y("lo:Q").title("CPU per request (µs)"), alt.Y2("hi:Q")
    )
    return (
        alt.layer(bars, err, data=long)
        .properties(width=260, height=180)
        .facet(row=alt.Row("workload:N").sort(_workloads(long)).title(None), column=alt.Column("kind:N").title(None))
        .resolve_scale(y="independent")
        .properties(
            title=f"CPU per request, median and {pct(CONFIDENCE)} CI over repetitions (faded: not server-bound)"
        )
    )


def connection_sweep(metrics: pd.DataFrame) -> alt.VConcatChart:
    """req/s, p50/p99 latency and ELU against connections, for workloads measured at several."""
    swept = metrics.groupby("workload", observed=True)["connections"].transform("nunique") > 1
    m = _marked(metrics[swept])
    scale = server_scale(m["server"])
    x = alt.X("connections:Q").scale(type="log", nice=False).title("connections (log scale)")
    color = alt.Color("server:N").scale(scale).title("server")
    shape = alt.Shape("bound:N").scale(domain=["server-bound", NOT_SERVER_BOUND], range=["circle", "triangle"])
    shape = shape.title("saturation")
    base = alt.Chart(m).encode(x, color)
    rps = alt.layer(
        base.mark_line().encode(alt.Y("req_per_s:Q").title("throughput (req/s)")),
        base.mark_point(filled=True, size=60).encode(alt.Y("req_per_s:Q"), shape),
        base.mark_errorbar().encode(alt.Y("req_per_s_lo:Q").title("throughput (req/s)"), alt.Y2("req_per_s_hi:Q")),
    ).properties(width=360, height=200)
    lat_long = pd.concat(
        [
            m.assign(percentile="p50", latency=m["latency_p50_ms"]),
            m.assign(percentile="p99", latency=m["latency_p99_ms"]),
        ]
    )[["workload", "server", "connections", "percentile", "latency"]]
    lat = (
        alt.Chart(lat_long)
        .mark_line(point=True)
        .encode(
            x,
            color,
            alt.Y("latency:Q").title("latency (ms)"),
            alt.StrokeDash("percentile:N").title("latency"),
        )
        .properties(width=360, height=200)
    )
    elu = alt.layer(
        base.mark_line(point=True).encode(
            alt.Y("elu_utilization:Q").scale(domain=[0, 1]).axis(format="%").title("event-loop utilization (%)")
        ),
        alt.Chart(pd.DataFrame({"y": [SERVER_BOUND_ELU]}))
        .mark_rule(strokeDash=[4, 4], color="#888")
        .encode(alt.Y("y:Q")),
    ).properties(width=360, height=160)
    rows = []
    for workload in _workloads(m):
        sub = m[m["workload"] == workload]
        rows.append(
            alt.hconcat(
                alt.vconcat(
                    rps.transform_filter(alt.datum.workload == workload),
                    elu.transform_filter(alt.datum.workload == workload),
                ),
                lat.transform_filter(alt.datum.workload == workload),
            ).properties(title=f"{workload}: connection sweep ({sub['server'].nunique()} servers)")
        )
    return alt.vconcat(*rows).properties(
        title="Where the event loop pins at 100 % and more connections only add queueing"
    )


def framework_share(metrics: pd.DataFrame) -> alt.Chart:
    """Each server's request CPU split into framework and the rest, by both share models."""
    m = _marked(headline(metrics))
    m = m[m["server"] != "node-http"]
    long = pd.concat(
        [
            m.assign(model=model, framework=m[col].clip(0, 1))
            for model, col in (("reference model", "share_reference"), ("baseline model", "share_baseline"))
        ]
    )
    long = pd.concat(
        [
            long.assign(part="framework", share=long["framework"]),
            long.assign(part="rest of the request", share=1 - long["framework"]),
        ]
    )[["workload", "server", "model", "part", "share", "bound", "us_per_req_elu"]]
    scale = server_scale(long["server"])
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            alt.X("server:N").sort(scale.domain).title(None),
            alt.Y("share:Q").stack("zero").axis(format="%").title("share of CPU per request (%)"),
            alt.Color("part:N")
            .scale(domain=["framework", "rest of the request"], range=["#9467bd", "#c7c7c7"])
            .title(None),
            alt.Opacity("bound:N").scale(BOUND_OPACITY).title("saturation"),
            tooltip=["server", "workload", "model", "part", alt.Tooltip("share:Q", format=".0%"), "bound"],
        )
        .properties(width=200, height=160)
        .facet(
            row=alt.Row("model:N").title(None).header(labelAngle=0, labelAlign="left", labelOrient="right"),
            column=alt.Column("workload:N").sort(_workloads(long)).title(None),
        )
        .properties(title="Framework share of the request's CPU (two models; faded: not server-bound)")
    )


def ratio_vs_express(metrics: pd.DataFrame) -> alt.Chart:
    """Speed-up over Express per workload with bootstrap intervals."""
    m = _marked(headline(metrics)).dropna(subset=["speedup_vs_express"])
    m = m[
        [
            "workload",
            "server",
            "connections",
            "speedup_vs_express",
            "speedup_vs_express_lo",
            "speedup_vs_express_hi",
            "bound",
        ]
    ]
    scale = server_scale(m["server"])
    base = alt.Chart(m).encode(
        alt.X("workload:N").sort(_workloads(m)).axis(labelAngle=0).title(None),
        alt.XOffset("server:N").sort(scale.domain),
        alt.Color("server:N").scale(scale).title("server"),
    )
    points = base.mark_point(filled=True, size=70).encode(
        alt.Y("speedup_vs_express:Q")
        .scale(type="log", nice=False, padding=12)
        .title("req/s relative to express (x, log scale)"),
        alt.Shape("bound:N")
        .scale(domain=["server-bound", NOT_SERVER_BOUND], range=["circle", "triangle"])
        .title("saturation"),
        tooltip=["server", "workload", "connections", alt.Tooltip("speedup_vs_express:Q", format=".2f"), "bound"],
    )
    bars = base.mark_errorbar(ticks=True).encode(
        alt.Y("speedup_vs_express_lo:Q").title("req/s relative to express (x, log scale)"),
        alt.Y2("speedup_vs_express_hi:Q"),
    )
    one = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(color="#888", strokeDash=[4, 4]).encode(alt.Y("y:Q"))
    return alt.layer(bars, points, one).properties(
        width=420,
        height=260,
        title=f"Speed-up over Express, median and {pct(CONFIDENCE)} CI (triangles: not server-bound)",
    )


#: Every chart in chart_list.CHART_LIST by name: the function that draws it from its tables (by name).
CHARTS = {
    "cpu-per-request": lambda t: cpu_per_request(t["metrics"]),
    "connection-sweep": lambda t: connection_sweep(t["metrics"]),
    "framework-share": lambda t: framework_share(t["metrics"]),
    "ratio-vs-express": lambda t: ratio_vs_express(t["metrics"]),
    "stopping-rule": lambda t: experiment_charts.stopping_rule(t["stopping"]),
    "duration-sweep": lambda t: experiment_charts.duration_sweep(t["runs"], t["stopping"]),
    "load-generators": lambda t: experiment_charts.load_generators(t["metrics"]),
}


def save(chart, png: str, svg: str, page: str, spec: str) -> None:
    """SVG through vl-convert once, PNG from that SVG, an offline HTML page and the Vega-Lite spec."""
    spec_dict = chart.to_dict()
    text = vl_convert.vegalite_to_svg(spec_dict)
    Path(svg).write_text(text)
    Path(png).write_bytes(vl_convert.svg_to_png(text, scale=2))
    chart.save(page, inline=True)
    Path(spec).write_text(json.dumps(spec_dict))

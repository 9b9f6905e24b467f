"""Altair charts drawn from the aggregated metrics tables only, one shared theme."""

import functools
import html
import json
from pathlib import Path

import altair as alt
import pandas as pd
import vl_convert

# Fixed colours so a server looks the same in every chart; unknown servers get grey.
SERVER_COLORS = {
    "node-http": "#4c4c4c",
    "express": "#d62728",
    "express-lean": "#ff9896",
    "fastify": "#1f77b4",
    "fastify-schema": "#17becf",
}
WORKLOAD_ORDER = ["empty", "point-lookup", "list"]
HEADLINE_CONNECTIONS = 50
NOT_SERVER_BOUND = "not server-bound"


@alt.theme.register("nodebench", enable=True)
def nodebench_theme() -> alt.theme.ThemeConfig:
    """One look for every chart: readable fonts, no chart border, a white background."""
    return {
        "config": {
            "background": "white",
            "font": "DejaVu Sans, Helvetica, Arial, sans-serif",
            "view": {"stroke": None, "continuousWidth": 360, "continuousHeight": 240},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "gridColor": "#e6e6e6"},
            "header": {"labelFontSize": 12, "titleFontSize": 12},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "title": {"fontSize": 14, "anchor": "start"},
        }
    }


def server_scale(servers) -> alt.Scale:
    """The fixed server colour scale restricted to the servers present, in a stable order."""
    names = [s for s in SERVER_COLORS if s in set(servers)] + sorted(set(servers) - set(SERVER_COLORS))
    return alt.Scale(domain=names, range=[SERVER_COLORS.get(s, "#999999") for s in names])


def headline(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per workload, the cells at the connection count closest to 50 (the reference's headline)."""
    m = metrics.assign(_dist=(metrics["connections"] - HEADLINE_CONNECTIONS).abs())
    best = m.groupby("workload", observed=True)["_dist"].transform("min")
    return m[m["_dist"] == best].drop(columns="_dist")


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
    present = set(df["workload"])
    return [w for w in WORKLOAD_ORDER if w in present] + sorted(present - set(WORKLOAD_ORDER))


BOUND_OPACITY = alt.Scale(domain=["server-bound", NOT_SERVER_BOUND], range=[1.0, 0.35])


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
        .properties(title="CPU per request, median and 95 % CI over repetitions (faded: not server-bound)")
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
        alt.Chart(pd.DataFrame({"y": [0.95]})).mark_rule(strokeDash=[4, 4], color="#888").encode(alt.Y("y:Q")),
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
        width=420, height=260, title="Speed-up over Express, median and 95 % CI (triangles: not server-bound)"
    )


CHARTS = {
    "cpu-per-request": cpu_per_request,
    "connection-sweep": connection_sweep,
    "framework-share": framework_share,
    "ratio-vs-express": ratio_vs_express,
}


def has_sweep(metrics: pd.DataFrame) -> bool:
    """True when some workload was measured at more than one connection count."""
    return bool((metrics.groupby("workload", observed=True)["connections"].nunique() > 1).any())


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (vl-convert builds it; slow, so once per process)."""
    return vl_convert.javascript_bundle()


def offline_html(spec: dict, title: str = "chart") -> str:
    """A page that draws spec with the JavaScript inlined, so it works without a network."""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<script>{vega_bundle()}</script></head>\n<body><div id="vis"></div><script>'
        f'vegaEmbed("#vis", {json.dumps(spec)}, {{renderer: "svg", actions: false}});</script></body></html>\n'
    )


def save(chart, png: str, svg: str, page: str) -> None:
    """SVG through vl-convert once, PNG from that SVG, and an offline HTML page."""
    spec = chart.to_dict()
    text = vl_convert.vegalite_to_svg(spec)
    Path(svg).write_text(text)
    Path(png).write_bytes(vl_convert.svg_to_png(text, scale=2))
    Path(page).write_text(offline_html(spec, Path(page).stem))


if __name__ == "__main__" and "snakemake" in globals():
    sm = snakemake  # noqa: F821
    frame = pd.read_parquet(sm.input.metrics)
    if sm.params.workload:
        frame = frame[frame["workload"] == sm.params.workload]
    chart = CHARTS[sm.params.chart](frame)
    save(chart, sm.output.png, sm.output.svg, sm.output.html)
    Path(sm.output.spec).write_text(json.dumps(chart.to_dict()))
    with open(sm.log[0], "w") as log:
        print(f"{sm.params.chart}: {len(frame)} cells -> {sm.output.png}", file=log)

"""Altair charts drawn from the aggregated metrics tables only, one shared theme."""

import json
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import vl_convert
from altair.utils.html import INLINE_HTML_TEMPLATE, spec_to_html

from nodebench.analysis.metrics import headline
from nodebench.catalogue.thresholds import CONFIDENCE, SERVER_BOUND_ELU, pct
from nodebench.catalogue.workloads import ordered
from nodebench.render import experiment_charts
from nodebench.render.page import vega_bundle
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


#: A connection sweep draws at most this many points per server and workload. A workload
#: measured at more connection counts is drawn in this many log-spaced bins of them.
SWEEP_POINTS = 24
SWEEP_FIGURES = ["req_per_s", "req_per_s_lo", "req_per_s_hi", "latency_p50_ms", "latency_p99_ms", "elu_utilization"]
BIN_STATISTICS = {fig: "median" for fig in SWEEP_FIGURES} | {"req_per_s_lo": "min", "req_per_s_hi": "max"}


def sweep_points(metrics: pd.DataFrame) -> pd.DataFrame:
    """The points of the connection sweep: the cells of workloads measured at several connection counts.

    Where a workload has more than SWEEP_POINTS connection counts, its cells are binned
    per server into SWEEP_POINTS bins of equal width on the log scale the chart uses:
    a point is the bin's median connections and median of each figure, its interval
    spans the bin's intervals (lowest lower bound to highest upper bound), it is
    server-bound only if every cell in it is, and cells says how many cells it holds.
    """
    keys = ["workload", "server", "connections"]
    m = (
        metrics[[*keys, "saturation", *SWEEP_FIGURES]]
        .assign(
            workload=lambda d: d["workload"].astype(str),
            server=lambda d: d["server"].astype(str),
            server_bound=lambda d: d["saturation"].astype(str) == "server-bound",
            cells=1,
        )
        .reset_index(drop=True)
    )
    levels = m.groupby("workload")["connections"].transform("nunique")
    m = m[levels > 1]
    many = levels[levels > 1] > SWEEP_POINTS
    few, binned = m[~many], m[many]
    if len(binned):
        logc = np.log(binned["connections"].astype(float))
        lo, hi = (logc.groupby(binned["workload"]).transform(f) for f in ("min", "max"))
        bins = np.minimum((SWEEP_POINTS * (logc - lo) / (hi - lo)).astype(int), SWEEP_POINTS - 1)
        binned = (
            binned.groupby(["workload", "server", bins.rename("bin")])
            .agg(
                connections=("connections", "median"),
                **{fig: (fig, how) for fig, how in BIN_STATISTICS.items()},
                server_bound=("server_bound", "all"),
                cells=("cells", "sum"),
            )
            .reset_index()
        )
    parts = [part[[*keys, *SWEEP_FIGURES, "server_bound", "cells"]] for part in (few, binned) if len(part)]
    points = pd.concat(parts, ignore_index=True) if parts else few
    bound = np.where(points["server_bound"], "server-bound", NOT_SERVER_BOUND)
    return points.assign(bound=bound)[[*keys, *SWEEP_FIGURES, "bound", "cells"]]


def connection_sweep(metrics: pd.DataFrame) -> alt.VConcatChart:
    """req/s, p50/p99 latency and ELU against connections, for workloads measured at several (binned past
    SWEEP_POINTS connection counts, see sweep_points)."""
    # What the chart draws, once: the latency panel folds p50 and p99 out of the same rows.
    m = sweep_points(metrics).drop(columns="cells").rename(columns={"latency_p50_ms": "p50", "latency_p99_ms": "p99"})
    levels = metrics.groupby(metrics["workload"].astype(str))["connections"].nunique()
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
    lat = (
        base.transform_fold(["p50", "p99"], as_=["percentile", "latency"])
        .mark_line(point=True)
        .encode(alt.Y("latency:Q").title("latency (ms)"), alt.StrokeDash("percentile:N").title("latency"))
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
        binned = (
            f"; {levels[workload]:,} connection counts in {SWEEP_POINTS} log-spaced bins: medians, "
            "bars spanning the bin's intervals"
            if levels[workload] > SWEEP_POINTS
            else ""
        )
        rows.append(
            alt.hconcat(
                alt.vconcat(
                    rps.transform_filter(alt.datum.workload == workload),
                    elu.transform_filter(alt.datum.workload == workload),
                ),
                lat.transform_filter(alt.datum.workload == workload),
            ).properties(title=f"{workload}: connection sweep ({sub['server'].nunique()} servers{binned})")
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


class _InlineTemplate:
    """Altair's offline HTML template, given the Vega bundle this process built once (page.vega_bundle):
    Altair's own chart.save(inline=True) builds it again for every chart."""

    def render(self, **kwargs) -> str:
        return INLINE_HTML_TEMPLATE.render(**kwargs, vegaembed_script=vega_bundle())


def save(chart, png: str, svg: str, page: str, spec: str) -> None:
    """SVG through vl-convert once, PNG from that SVG, an offline HTML page and the Vega-Lite spec, all from one
    spec (to_dict validates it and raises MaxRowsError for a dataset past Altair's 5,000 rows)."""
    spec_dict = chart.to_dict()
    text = vl_convert.vegalite_to_svg(spec_dict)
    Path(svg).write_text(text)
    Path(png).write_bytes(vl_convert.svg_to_png(text, scale=2))
    html = spec_to_html(
        spec_dict,
        mode="vega-lite",
        vega_version=alt.VEGA_VERSION,
        vegaembed_version=alt.VEGAEMBED_VERSION,
        vegalite_version=alt.VEGALITE_VERSION,
        template=_InlineTemplate(),
    )
    Path(page).write_text(html)
    Path(spec).write_text(json.dumps(spec_dict))

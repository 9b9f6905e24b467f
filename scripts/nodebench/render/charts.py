"""Altair charts drawn from the aggregated tables only, one shared theme.

Every chart's title says what it shows and which way is better; whiskers are the
order-statistic intervals of the metrics (none where a cell had one run).
"""

import functools
import importlib
import json
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import vl_convert
from altair.utils.html import INLINE_HTML_TEMPLATE, spec_to_html

from nodebench.analysis.intervals import describe
from nodebench.analysis.metrics import headline
from nodebench.catalogue import figures
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.thresholds import SERVER_BOUND_ELU, pct
from nodebench.catalogue.workloads import ordered
from nodebench.render.chart_list import CHART_LIST
from nodebench.render.page import vega_bundle
from nodebench.render.theme import BOUND_OPACITY, NOT_SERVER_BOUND, server_scale
from nodebench.runs import SYSTEM_NODE, is_twin, runtime, twin_of

#: Vega-Lite filter that keeps rows with an interval: a cell measured once has none, and draws no whisker.
HAS_INTERVAL = "isValid(datum.lo) && isFinite(datum.lo) && isValid(datum.hi) && isFinite(datum.hi)"
BOUND_SHAPE = alt.Scale(domain=["server-bound", NOT_SERVER_BOUND], range=["circle", "triangle"])


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


def _no_twins(df: pd.DataFrame) -> pd.DataFrame:
    """Without the A/A control's twin, which repeats its control."""
    return df[~df["server"].astype(str).map(is_twin)]


def whiskers(methods) -> str:
    """What the whiskers are, from the intervals' methods ('n=5: min-max, 93.75 %')."""
    shown = sorted({m for m in map(str, methods) if not m.endswith("no interval")})
    if not shown:
        return "no whiskers: one run per cell, so no interval"
    listed = "; ".join(shown) if len(shown) <= 3 else "coverage per cell in the tooltip"
    return f"whiskers: order-statistic interval of the median ({listed}); none where a cell had one run"


def _title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=[s for s in subtitle if s])


def _nothing(text: str, title: alt.TitleParams) -> alt.Chart:
    """A chart that says why there is nothing to draw."""
    return (
        alt.Chart(pd.DataFrame({"text": [text]}))
        .mark_text(fontSize=13, align="left")
        .encode(alt.Text("text:N"))
        .properties(width=420, height=40, title=title)
    )


def cpu_per_request(metrics: pd.DataFrame) -> alt.Chart:
    """Bars of us/req per server (event loop and process CPU) with interval whiskers, one row per workload."""
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
    )[["workload", "server", "connections", "kind", "value", "lo", "hi", "bound", "rounds", "interval"]]
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
            alt.Tooltip("value:Q", format=".1f", title="median µs"),
            alt.Tooltip("lo:Q", format=".1f"),
            alt.Tooltip("hi:Q", format=".1f"),
            "interval",
            "bound",
        ],
    )
    err = (
        base.transform_filter(HAS_INTERVAL)
        .mark_errorbar(ticks=True, color="black")
        .encode(alt.Y("lo:Q").title("CPU per request (µs)"), alt.Y2("hi:Q"))
    )
    return (
        alt.layer(bars, err, data=long)
        .properties(width=260, height=180)
        .facet(row=alt.Row("workload:N").sort(_workloads(long)).title(None), column=alt.Column("kind:N").title(None))
        .resolve_scale(y="independent")
        .properties(
            title=_title(
                "CPU per request by server, at the headline connections (µs; lower is better)",
                f"Bars: medians over rounds; {whiskers(long['interval'])}.",
                "Faded: not server-bound (the event loop was not the limit).",
            )
        )
    )


def _cost_panel(head: pd.DataFrame, baseline: str, scale: alt.Scale) -> alt.LayerChart:
    """One baseline's cost ratios per workload and server, the A/A noise floor as a band around 1."""
    name = BASELINES[baseline]
    d = head[head["server"].astype(str).map(lambda s: runtime(s)[0]) != baseline].dropna(subset=[f"cost_{name}"])
    d = d.assign(
        ratio=d[f"cost_{name}"],
        lo=d[f"cost_{name}_lo"],
        hi=d[f"cost_{name}_hi"],
        pairs=d[f"pairs_{name}"],
        interval=[describe(int(n)) for n in d[f"pairs_{name}"]],
        outcome=d[f"outcome_{name}"].astype(object).map(lambda v: v if isinstance(v, str) else "no interval"),
    )[["workload", "server", "connections", "ratio", "lo", "hi", "pairs", "interval", "outcome", "bound"]]
    workloads = _workloads(head)
    x = alt.X("workload:N").sort(workloads).axis(labelAngle=0).title(None)
    y_title = f"CPU per request / {baseline}'s (x, log scale)"
    floor = head.groupby("workload")["noise_floor"].first().dropna()
    band = pd.DataFrame({"workload": floor.index, "lo": 1 / (1 + floor.to_numpy()), "hi": 1 + floor.to_numpy()})
    layers = []
    if len(band):
        layers.append(
            alt.Chart(band)
            .mark_rect(color="#bbbbbb", opacity=0.35)
            .encode(
                x,
                alt.Y("lo:Q").scale(type="log", nice=False, padding=12).title(y_title),
                alt.Y2("hi:Q"),
                tooltip=[
                    "workload",
                    alt.Tooltip("lo:Q", format=".3f", title="noise floor from"),
                    alt.Tooltip("hi:Q", format=".3f", title="to"),
                ],
            )
        )
    layers.append(alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(color="#888", strokeDash=[4, 4]).encode(alt.Y("y:Q")))
    base = alt.Chart(d).encode(x, alt.XOffset("server:N").sort(scale.domain), alt.Color("server:N").scale(scale))
    layers.append(
        base.transform_filter(HAS_INTERVAL)
        .mark_errorbar(ticks=True)
        .encode(alt.Y("lo:Q").scale(type="log", nice=False, padding=12).title(y_title), alt.Y2("hi:Q"))
    )
    layers.append(
        base.mark_point(filled=True, size=70).encode(
            alt.Y("ratio:Q").scale(type="log", nice=False, padding=12).title(y_title),
            alt.Shape("bound:N").scale(BOUND_SHAPE).title("saturation"),
            tooltip=[
                "server",
                "workload",
                "connections",
                alt.Tooltip("ratio:Q", format=".3f", title=f"cost vs {baseline}"),
                alt.Tooltip("lo:Q", format=".3f"),
                alt.Tooltip("hi:Q", format=".3f"),
                "interval",
                alt.Tooltip("outcome:N", title="outcome"),
                "bound",
            ],
        )
    )
    return alt.layer(*layers).properties(width=360, height=260, title=f"against {baseline} ({baseline} = 1)")


def cost_ratio(metrics: pd.DataFrame) -> alt.HConcatChart | alt.Chart:
    """The headline ratio: each server's CPU per request (the headline figure) over express's and over node-http's,
    paired per round, with its interval and the A/A noise floor."""
    head = _no_twins(_marked(headline(metrics)))
    bases = head["server"].astype(str).map(lambda s: runtime(s)[0])
    present = [b for b in BASELINES if b in set(bases)]
    methods = [describe(int(n)) for b in present for n in head.loc[bases != b, f"pairs_{BASELINES[b]}"] if n > 0]
    title = _title(
        f"{figures.noun_first(figures.headline_of(metrics))} per request relative to Express and to "
        "node:http (x, log scale; below 1 is cheaper: lower is better)",
        "Points: per round, this server's CPU per request over the baseline's in the same round, median over "
        f"the rounds; {whiskers(methods)}.",
        "Grey band: how far the A/A twin came from its control (a check of the design, not a margin); "
        "triangles: not server-bound.",
    )
    if not present:
        return _nothing("Neither express nor node-http was measured: no ratio to draw.", title)
    scale = server_scale(head["server"])
    panels = [_cost_panel(head, b, scale) for b in present]
    return alt.hconcat(*panels).resolve_scale(y="independent").properties(title=title)


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
    metrics = _no_twins(metrics)
    # What the chart draws, once: the latency panel folds p50 and p99 out of the same rows.
    m = sweep_points(metrics).drop(columns="cells").rename(columns={"latency_p50_ms": "p50", "latency_p99_ms": "p99"})
    levels = metrics.groupby(metrics["workload"].astype(str))["connections"].nunique()
    scale = server_scale(m["server"])
    x = alt.X("connections:Q").scale(type="log", nice=False).title("connections (log scale)")
    color = alt.Color("server:N").scale(scale).title("server")
    shape = alt.Shape("bound:N").scale(BOUND_SHAPE).title("saturation")
    base = alt.Chart(m).encode(x, color)
    has_interval = "isValid(datum.req_per_s_lo) && isFinite(datum.req_per_s_lo) && isValid(datum.req_per_s_hi)"
    rps = alt.layer(
        base.mark_line().encode(alt.Y("req_per_s:Q").title("throughput (req/s, higher is better)")),
        base.mark_point(filled=True, size=60).encode(alt.Y("req_per_s:Q"), shape),
        base.transform_filter(has_interval)
        .mark_errorbar()
        .encode(alt.Y("req_per_s_lo:Q").title("throughput (req/s, higher is better)"), alt.Y2("req_per_s_hi:Q")),
    ).properties(width=360, height=200)
    lat = (
        base.transform_fold(["p50", "p99"], as_=["percentile", "latency"])
        .mark_line(point=True)
        .encode(
            alt.Y("latency:Q").title("latency (ms, lower is better)"),
            # The legend draws the dashes (a line's symbol would otherwise be its point).
            alt.StrokeDash("percentile:N").title("latency percentile").legend(symbolType="stroke"),
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
        binned = (
            f"; {levels[workload]:,} connection counts in {SWEEP_POINTS} log-spaced bins: medians, "
            "whiskers spanning the bin's intervals"
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
    autocannon = "autocannon" in set(metrics["client"].astype(str))
    return alt.vconcat(*rows).properties(
        title=_title(
            "Throughput (higher is better) and latency (lower is better) as connections grow",
            "Where the event loop pins at 100 %, more connections only add queueing. Throughput: medians over "
            f"rounds, {whiskers(metrics['interval'] if 'interval' in metrics else [])}.",
            f"Dashed grey line: {pct(SERVER_BOUND_ELU)} event-loop utilization, server-bound above it; "
            "triangles: not server-bound."
            + (" Latency: autocannon's percentiles, whole milliseconds rounded down." if autocannon else ""),
        )
    )


def framework_share(metrics: pd.DataFrame) -> alt.Chart:
    """Each server's request CPU split into framework and the rest, by both share models."""
    m = _no_twins(_marked(headline(metrics)))
    # node:http is the share models' baseline, on every Node.js.
    m = m[[runtime(s)[0] != "node-http" for s in m["server"].astype(str)]]
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
        .properties(
            title=_title(
                "Framework share of each request's event-loop CPU, by two models (a smaller framework part is better)",
                "Reference model: the server's CPU per request on empty, held constant; baseline model: only what it "
                "adds over bare node:http. Models, not measurements. Faded: not server-bound.",
            )
        )
    )


def control_drift(runs: pd.DataFrame) -> alt.Chart:
    """The A/A control's and its twin's event-loop CPU per request in each round, per workload, at the headline
    connections: whether the machine drifted over the run."""
    servers = set(runs["server"].astype(str))
    twins = sorted(
        (s for s in servers if is_twin(s) and twin_of(s) in servers), key=lambda s: (runtime(s)[1] != SYSTEM_NODE, s)
    )
    title = "Drift: the A/A control's event-loop CPU per request in each round (µs; flat lines are better)"
    if not twins:
        return _nothing("No A/A control in these runs (config key control): nothing to follow.", _title(title))
    twin = twins[0]
    control = twin_of(twin)
    keep = [c for c in ("session", "started_at", "client", "stop") if c in runs]
    columns = ["workload", "server", "connections", "round", "us_per_req_elu", *keep]
    r = runs.loc[runs["server"].astype(str).isin([control, twin]), columns]
    r = headline(r).astype({c: str for c in ["workload", "server", *keep]})
    scale = server_scale([control, twin])
    rounds = r["round"].nunique()
    return (
        alt.Chart(r)
        .mark_line(point=True)
        .encode(
            alt.X("round:Q").axis(format="d", tickMinStep=1).title("round, in the order measured"),
            alt.Y("us_per_req_elu:Q").scale(zero=False).title("event-loop CPU per request (µs)"),
            alt.Color("server:N").scale(scale).title("server"),
            tooltip=[
                "workload",
                "server",
                "connections",
                "round",
                alt.Tooltip("us_per_req_elu:Q", format=".1f"),
                *keep,
            ],  # fmt: skip
        )
        .properties(width=260, height=180)
        .facet(column=alt.Column("workload:N").sort(_workloads(r)).title(None))
        .resolve_scale(y="independent")
        .properties(
            title=_title(
                title,
                f"{control} and its twin {twin} (the same server measured twice per round), at the headline "
                f"connections, over {rounds} round{'s' if rounds != 1 else ''}.",
                "Lines apart: noise between two identical servers; both moving together: the machine drifted.",
            )
        )
    )


def draw(name: str, tables: dict[str, pd.DataFrame]):
    """Chart `name` of the registry (chart_list.CHART_LIST), drawn by its function from its tables, in order."""
    spec = CHART_LIST[name]
    module, function = spec.draw.split(":")
    return getattr(importlib.import_module(module), function)(*(tables[t] for t in spec.tables))


#: Every chart of the registry by name: a function of its tables (by name).
CHARTS = {name: functools.partial(draw, name) for name in CHART_LIST}


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

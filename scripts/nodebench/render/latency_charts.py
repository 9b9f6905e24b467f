"""Latency against load (the open loop's hockey stick), and peak memory against connections."""

import altair as alt
import numpy as np
import pandas as pd

from nodebench.analysis.latency import P99_LIMIT_MS
from nodebench.render.charts import _no_twins, _nothing
from nodebench.render.theme import server_scale


def latency_load(latency: pd.DataFrame) -> alt.Chart:
    """p50 and p99 (median over rounds, whiskers its interval) against the rate as a share of each server's own
    capacity, one panel per workload, log latency axis, the 10 ms line drawn."""
    title = alt.TitleParams(
        "Latency at a fixed arrival rate, from each request's scheduled time (lower is better)",
        subtitle=f"p50 (dashed) and p99 against load; the grey rule is {P99_LIMIT_MS:g} ms; "
        "refused loads and loads not sustained (latency above any value) are not drawn",
    )
    if latency.empty or latency["p99_ms"].isna().all():
        return _nothing("No open-loop run kept its schedule: no latency to draw.", title)
    m = latency.assign(server=latency["server"].astype(str), workload=latency["workload"].astype(str))
    long = pd.concat(
        [
            m.assign(percentile=name, latency=m[f"{name}_ms"], lo=m[f"{name}_ms_lo"], hi=m[f"{name}_ms_hi"])
            for name in ("p50", "p99")
        ],
        ignore_index=True,
    )
    # A median that is infinite (not sustained in most rounds) has no place on a log axis, and an infinite bound
    # no whisker end; neither is valid JSON either.
    finite = np.isfinite(long["latency"].astype(float))
    long = long[long["latency"].notna() & finite].assign(
        lo=lambda d: d["lo"].where(np.isfinite(d["lo"].astype(float))),
        hi=lambda d: d["hi"].where(np.isfinite(d["hi"].astype(float))),
    )
    scale = server_scale(long["server"])
    base = alt.Chart(long).encode(
        alt.X("load_pct:Q").scale(domain=[0, 100]).title("load (% of the server's own closed-loop capacity)"),
        alt.Color("server:N").scale(scale).title("server"),
        alt.StrokeDash("percentile:N").scale(domain=["p99", "p50"], range=[[1, 0], [4, 3]]).title("percentile"),
    )
    y = alt.Y("latency:Q").scale(type="log").title("latency (ms, log scale, lower is better)")
    lines = base.mark_line(point=True).encode(
        y,
        tooltip=[
            "workload",
            "server",
            "load_pct",
            "percentile",
            alt.Tooltip("latency:Q", format=".2f"),
            alt.Tooltip("target_rate:Q", format=",.0f", title="rate (req/s)"),
            "interval",
        ],  # fmt: skip
    )
    bars = (
        base.transform_filter("isValid(datum.lo) && isValid(datum.hi)")
        .mark_errorbar()
        .encode(alt.Y("lo:Q").scale(type="log"), alt.Y2("hi:Q"))
    )
    limit = (
        alt.Chart(pd.DataFrame({"y": [P99_LIMIT_MS]})).mark_rule(color="#888", strokeDash=[2, 2]).encode(alt.Y("y:Q"))
    )
    return (
        alt.layer(lines, bars, limit, data=long)
        .properties(width=320, height=240)
        .facet(column=alt.Column("workload:N").title(None), data=long)
        .properties(title=title)
    )


def memory_connections(metrics: pd.DataFrame) -> alt.Chart:
    """Peak RSS over the window (median over rounds, whiskers its interval) against connections, per server, for
    the workloads measured at several connection counts."""
    title = alt.TitleParams(
        "Peak resident memory against connections (lower is better)",
        subtitle="the server's highest RSS over the measured window (sampled every 100 ms), median over rounds",
    )
    m = _no_twins(metrics)
    m = m.assign(workload=m["workload"].astype(str), server=m["server"].astype(str))
    if "rss_peak_mb" not in m or m["rss_peak_mb"].isna().all():
        return _nothing("No run recorded its peak RSS (records from before it was measured).", title)
    levels = m.groupby("workload")["connections"].transform("nunique")
    m = m[(levels > 1) & m["rss_peak_mb"].notna()]
    if m.empty:
        return _nothing("No workload was measured at more than one connection count.", title)
    base = alt.Chart(m).encode(
        alt.X("connections:Q").scale(type="log", nice=False).title("connections (log scale)"),
        alt.Color("server:N").scale(server_scale(m["server"])).title("server"),
    )
    lines = base.mark_line(point=True).encode(
        alt.Y("rss_peak_mb:Q").scale(zero=False).title("peak RSS (MiB)"),
        tooltip=[
            "workload",
            "server",
            "connections",
            alt.Tooltip("rss_peak_mb:Q", format=".1f"),
            alt.Tooltip("heap_used_peak_mb:Q", format=".1f", title="peak heap used (MiB)"),
        ],  # fmt: skip
    )
    bars = (
        base.transform_filter("isValid(datum.rss_peak_mb_lo)")
        .mark_errorbar()
        .encode(alt.Y("rss_peak_mb_lo:Q"), alt.Y2("rss_peak_mb_hi:Q"))
    )
    return (
        alt.layer(lines, bars, data=m)
        .properties(width=320, height=220)
        .facet(column=alt.Column("workload:N").title(None), data=m)
        .properties(title=title)
    )


def cost_load(metrics: pd.DataFrame) -> alt.Chart:
    """Cost per request (ELU, median over rounds, whiskers its interval) against the load it was measured at: the
    fixed rates common to every server, then each server's own ceiling (saturation, drawn at the req/s it reached,
    as a square), one line per server, one panel per workload."""
    from nodebench.analysis.costcurve import SATURATION, cost_curve

    title = alt.TitleParams(
        "CPU per request against offered load (lower is cheaper)",
        subtitle="circles: fixed rates common to every server; squares: each server at its own ceiling (wrk)",
    )
    curve = cost_curve(metrics)
    curve = curve[curve["us_per_req_elu"].notna()] if len(curve) else curve
    if curve.empty:
        return _nothing("No fixed-rate cell measured: no cost curve to draw.", title)
    curve = _no_twins(curve.assign(server=curve["server"].astype(str), workload=curve["workload"].astype(str)))
    curve = curve.assign(
        offered=curve["rate"].fillna(curve["req_per_s"]),
        point=["saturation" if x == SATURATION else "fixed rate" for x in curve["load"]],
    )
    scale = server_scale(curve["server"])
    base = alt.Chart(curve).encode(
        alt.X("offered:Q")
        .scale(type="log")
        .title("load (req/s, log scale: the fixed rate, or what the server reached at saturation)"),
        alt.Color("server:N").scale(scale).title("server"),
    )
    y_title = "event-loop CPU per request (us, log scale)"
    y = alt.Y("us_per_req_elu:Q").scale(type="log", nice=False).title(y_title)
    lines = base.mark_line().encode(y, alt.Order("offered:Q"))
    points = base.mark_point(filled=True, size=60).encode(
        y,
        alt.Shape("point:N").scale(domain=["fixed rate", "saturation"], range=["circle", "square"]).title("load"),
        tooltip=[
            "workload", "server", "load", alt.Tooltip("req_per_s:Q", format=",.0f", title="req/s"),
            alt.Tooltip("elu_utilization:Q", format=".2f", title="ELU"),
            alt.Tooltip("us_per_req_elu:Q", format=".1f", title="us/req (ELU)"),
            alt.Tooltip("us_per_req_oncpu:Q", format=".1f", title="us/req (on CPU)"), "interval",
        ],
    )  # fmt: skip
    bars = (
        base.transform_filter("isValid(datum.us_per_req_elu_lo) && isValid(datum.us_per_req_elu_hi)")
        .mark_errorbar()
        .encode(
            alt.Y("us_per_req_elu_lo:Q").scale(type="log", nice=False).title(y_title), alt.Y2("us_per_req_elu_hi:Q")
        )
    )
    return (
        alt.layer(lines, points, bars, data=curve)
        .properties(width=320, height=240)
        .facet(column=alt.Column("workload:N").title(None), data=curve)
        .properties(title=title)
    )

"""An experiment's charts: duration against count, the duration sweep, and the load-generator comparison."""

import altair as alt
import pandas as pd

from nodebench.analysis.experiments import as_strings
from nodebench.catalogue.clients import OPEN_LOOP
from nodebench.render.theme import CLIENT_COLORS, server_scale


def stopping_rule(stopping: pd.DataFrame) -> alt.HConcatChart:
    """Left: reported req/s, fixed duration against fixed count. Right: where a count run's time went."""
    s = as_strings(stopping)
    # One bar per rule: a duration row repeats for every count compared with it.
    rates = pd.concat(
        [
            s.assign(rule="fixed " + s["duration_stop"], value=s["duration_req_per_s_reported"]).drop_duplicates(
                ["server", "rule"]
            ),
            s.assign(rule="fixed " + s["count_stop"], value=s["count_req_per_s_reported"]),
        ]
    )
    bars = (
        alt.Chart(rates, title="req/s as the load generator reported it")
        .mark_bar()
        .encode(
            x=alt.X("server:N", title=None),
            xOffset=alt.XOffset("rule:N"),
            y=alt.Y("value:Q", title="req/s"),
            color=alt.Color("rule:N", title="stopping rule"),
            tooltip=["server", "rule", alt.Tooltip("value:Q", format=",.0f")],
        )
        .properties(width=260, height=240)
    )
    s = s.assign(run=s["server"] + " " + s["count_stop"])
    split = s["full_load_s"].notna()
    pieces = [
        ("at the sustained rate", s["expected_s"]),
        ("full-load phase beyond it", s["full_load_s"]),
        ("connections finishing apart", s["connection_tail_s"]),
        ("idle until the client stopped", s["idle_s"].where(split)),
        ("unaccounted, not split", s["unaccounted_s"].where(~split)),
    ]
    names = [name for name, _ in pieces]
    parts = pd.concat([s.assign(part=name, seconds=values, order=i) for i, (name, values) in enumerate(pieces)]).dropna(
        subset=["seconds"]
    )
    time = (
        alt.Chart(parts, title="where a fixed-count run's time went")
        .mark_bar()
        .encode(
            y=alt.Y("run:N", title=None),
            x=alt.X("seconds:Q", title="seconds", stack="zero"),
            color=alt.Color(
                "part:N",
                title="part of the run",
                scale=alt.Scale(domain=names, range=["#9ecae1", "#fdae6b", "#e6550d", "#7f2704", "#bdbdbd"]),
                sort=names,
            ),
            order=alt.Order("order:Q"),
            tooltip=["run", "part", alt.Tooltip("seconds:Q", format=".2f")],
        )
        .properties(width=320, height=alt.Step(22))
    )
    return (
        alt.hconcat(bars, time)
        .resolve_scale(color="independent")
        .properties(
            title=alt.TitleParams(
                "Fixed duration against fixed count (equal bars are better: the stopping rule does not change the "
                "answer)",
                subtitle=[
                    "Left: req/s as the load generator reported it. Right: a fixed-count run's time, at the sustained "
                    "rate and beyond it (less time beyond the sustained rate is better)."
                ],
            )
        )
    )


def duration_sweep(runs: pd.DataFrame, stopping: pd.DataFrame) -> alt.LayerChart:
    """Reported req/s of every run against its fixed duration, with the medians joined; count runs as rules."""
    r = as_strings(runs)
    timed = r[r["stopping_rule"] == "duration"]
    swept = timed.groupby(["workload", "server", "connections", "client"])["duration_s"].transform("nunique")
    timed = timed[swept >= 3]
    medians = timed.groupby(["server", "duration_s"], as_index=False)["client_reported_req_per_s"].median()
    scale = server_scale(timed["server"].unique())
    base = alt.Chart(timed).encode(
        x=alt.X("duration_s:Q", title="fixed duration (s)"),
        y=alt.Y("client_reported_req_per_s:Q", title="req/s (reported)", scale=alt.Scale(zero=False)),
        color=alt.Color("server:N", scale=scale, title="server"),
    )
    points = base.mark_point(opacity=0.6).encode(
        tooltip=["server", "duration_s", "round", alt.Tooltip("client_reported_req_per_s:Q", format=",.0f")]
    )
    line = (
        alt.Chart(medians)
        .mark_line(point=True)
        .encode(x="duration_s:Q", y="client_reported_req_per_s:Q", color=alt.Color("server:N", scale=scale))
    )
    layers = [points, line]
    s = as_strings(stopping)
    s = s[s["server"].isin(set(timed["server"]))]
    if len(s):
        counts = s.assign(label=s["server"] + " fixed " + s["count_stop"], x=timed["duration_s"].max())
        rule = (
            alt.Chart(counts)
            .mark_rule(strokeDash=[6, 4])
            .encode(
                y="count_req_per_s_reported:Q",
                color=alt.Color("server:N", scale=scale),
                tooltip=["server", "label", alt.Tooltip("count_req_per_s_reported:Q", format=",.0f")],
            )
        )
        text = (
            alt.Chart(counts)
            .mark_text(align="right", dy=-6, fontSize=10)
            .encode(x="x:Q", y="count_req_per_s_reported:Q", text="label:N", color=alt.Color("server:N", scale=scale))
        )
        layers += [rule, text]
    return alt.layer(*layers).properties(
        width=420,
        height=260,
        title=alt.TitleParams(
            "Reported req/s against the run's fixed duration (a flat line is better: the run's length does not "
            "change the answer)",
            subtitle=["Points: every run; line: medians; dashed: the same server's fixed-count runs."],
        ),
    )


def clients(metrics: pd.DataFrame) -> alt.VConcatChart:
    """Per workload and connection count: server req/s, its ELU and the client's own CPU, one bar per load generator
    and stop (ab-hello's 100 and 10,000 requests at 10 and 100 connections would otherwise share a bar's place)."""
    m = as_strings(metrics)
    # An open loop's cells run at a share of capacity, not at the ceiling: not a load generator to compare here.
    m = m[~m["client"].isin(OPEN_LOOP)]
    m = m.assign(variant=m["client"] + " " + m["stop"])
    clients = [c for c in CLIENT_COLORS if c in set(m["client"])]
    variants = sorted(set(m["variant"]), key=lambda v: (clients.index(v.split(" ")[0]), v))
    color = alt.Color(
        "client:N",
        title="load generator",
        scale=alt.Scale(domain=clients, range=[CLIENT_COLORS[c] for c in clients]),
    )
    base = alt.Chart(m).encode(
        x=alt.X("server:N", title=None), xOffset=alt.XOffset("variant:N", sort=variants), color=color
    )
    size = {"width": 220, "height": 180}
    # One row of three panels per workload (a facet cannot hold a concat).
    rows = []
    for workload, conn in sorted(set(zip(m["workload"], m["connections"].astype(int), strict=True))):
        sub = base.transform_filter((alt.datum.workload == workload) & (alt.datum.connections == conn))
        workload = f"{workload} c{conn}"  # the panels' titles
        rps = sub.mark_bar().encode(
            y=alt.Y("req_per_s:Q", title="req/s (server)"),
            opacity=alt.condition("datum.saturation == 'server-bound'", alt.value(1.0), alt.value(0.45)),
            tooltip=[
                "server",
                "client",
                "stop",
                "connections",
                "saturation",
                alt.Tooltip("req_per_s:Q", format=",.0f"),
            ],  # fmt: skip
        )
        # A cell measured once has no interval, and gets no whisker.
        errs = (
            sub.transform_filter("isValid(datum.req_per_s_lo) && isFinite(datum.req_per_s_lo)")
            .mark_rule()
            .encode(y="req_per_s_lo:Q", y2="req_per_s_hi:Q", color=alt.value("black"))
        )
        elu = sub.mark_bar().encode(
            y=alt.Y("elu_utilization:Q", title="server ELU", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
            tooltip=["server", "client", alt.Tooltip("elu_utilization:Q", format=".1%")],
        )
        cpu = sub.mark_bar().encode(
            y=alt.Y("client_cpu_util:Q", title="client CPU (cores)"),
            tooltip=["server", "client", alt.Tooltip("client_cpu_util:Q", format=".2f")],
        )
        rows.append(
            alt.hconcat(
                alt.layer(rps, errs).properties(**size, title=f"{workload}: req/s (faded: not server-bound)"),
                elu.properties(**size, title=f"{workload}: server event-loop utilization"),
                cpu.properties(**size, title=f"{workload}: load generator's own CPU"),
            )
        )
    return alt.vconcat(*rows).properties(
        title=alt.TitleParams(
            "The same cells under each load generator: server req/s (higher is better), the server's event-loop "
            "utilization and the client's own CPU",
            subtitle=[
                "A client that leaves the server below saturation while using most of its own cores is the "
                "bottleneck. Whiskers: the order-statistic interval of the median req/s (none for one run)."
            ],
        )
    )

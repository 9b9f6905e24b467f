"""The versions chart: each server's CPU per request on each Node.js against Node.js 20, and each
framework's current major against its previous one, with the intervals of the paired ratios."""

import altair as alt
import pandas as pd

from nodebench.analysis.versions import MAJOR_NAMES, node_label
from nodebench.catalogue import figures
from nodebench.render.theme import server_scale


def versions(t: pd.DataFrame) -> alt.VConcatChart:
    """Top: ratio to Node.js 20 by Node.js major, a line per server, a panel per workload. Below: new/old major."""
    t = t.dropna(subset=["ratio"]).copy()
    t["node_major"] = pd.to_numeric(t["node"], errors="coerce")
    nodes = t[t["kind"] == "node"]
    reference = nodes["compared_to"].iloc[0] if len(nodes) else "20"
    # Node.js 20 itself, at 1 by definition, so each line starts where it is compared from.
    anchors = nodes.drop_duplicates(["server", "workload", "connections"]).assign(
        node_major=float(reference), ratio=1.0, ratio_lo=1.0, ratio_hi=1.0
    )
    nodes = pd.concat([anchors, nodes], ignore_index=True)
    tooltip = [
        "server", "node", "workload", "connections",
        alt.Tooltip("ratio:Q", format=".3f"), alt.Tooltip("ratio_lo:Q", format=".3f"),
        alt.Tooltip("ratio_hi:Q", format=".3f"), alt.Tooltip("noise_floor:Q", format=".3f"), "interval",
    ]  # fmt: skip
    x = alt.X("node_major:O", title="Node.js major")
    y = alt.Y("ratio:Q", title=f"CPU per request / on Node.js {reference}", scale=alt.Scale(zero=False))
    color = alt.Color("server:N", title="server", scale=server_scale(nodes["server"].unique()))
    base = alt.Chart(nodes).encode(x=x, color=color)
    node_chart = (
        alt.layer(
            alt.Chart(nodes).mark_rule(color="#888", strokeDash=[4, 3]).encode(y=alt.datum(1.0)),
            base.mark_line(point=True).encode(y=y, tooltip=tooltip),
            base.mark_rule().encode(y="ratio_lo:Q", y2="ratio_hi:Q"),
        )
        .properties(width=180, height=200)
        .facet(column=alt.Column("workload:N", title=None))
        .properties(title=alt.TitleParams(f"Each server on each Node.js, against itself on Node.js {reference}"))
    )
    majors = t[t["kind"] == "major"].copy()
    if majors.empty:
        return alt.vconcat(node_chart)
    several = majors["node"].nunique() > 1
    majors["change"] = [
        f"{MAJOR_NAMES.get(o, o)} to {MAJOR_NAMES.get(n, n)}" + (f" ({node_label(node)})" if several else "")
        for o, n, node in zip(majors["compared_to"], majors["server"], majors["node"], strict=True)
    ]
    mb = alt.Chart(majors).encode(y=alt.Y("change:N", title=None), color=alt.Color("change:N", legend=None))
    major_chart = (
        alt.layer(
            alt.Chart(majors).mark_rule(color="#888", strokeDash=[4, 3]).encode(x=alt.datum(1.0)),
            mb.mark_rule(strokeWidth=2).encode(
                x=alt.X("ratio_lo:Q", title="CPU per request, new major / old", scale=alt.Scale(zero=False)),
                x2="ratio_hi:Q",
            ),
            mb.mark_point(filled=True, size=70).encode(x="ratio:Q", tooltip=["change", *tooltip[2:]]),
        )
        .properties(width=180, height=alt.Step(22))
        .facet(column=alt.Column("workload:N", title=None))
        .properties(title=alt.TitleParams("Each framework's current major against its previous one, same Node.js"))
    )
    coverage = "; ".join(sorted(set(t["interval"].astype(str))))
    return alt.vconcat(node_chart, major_chart).properties(
        title=alt.TitleParams(
            "Does upgrading change what a request costs?",
            subtitle=[
                f"{figures.noun_first(figures.headline_of(t))} per request; point: median over rounds of "
                "ratios paired within a round; "
                f"line: its order-statistic interval ({coverage}). Below 1: cheaper after the upgrade."
            ],
        )
    )

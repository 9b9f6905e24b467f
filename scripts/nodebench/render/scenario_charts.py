"""The scenario charts: servers x scenarios as a heat map against node:http, and each server's score with its range."""

import altair as alt
import pandas as pd

from nodebench.analysis.intervals import describe
from nodebench.analysis.scenarios import BASELINE, SET_NAMES, order


def _cells(t: pd.DataFrame, basis: str = "cpu") -> pd.DataFrame:
    c = t[(t["kind"] == "cell") & (t["basis"] == basis)].copy()
    c["set"] = c["score_set"].map(SET_NAMES)
    return c


def _server_order(t: pd.DataFrame) -> list[str]:
    """Servers by their CPU score over the seed's set (best first), the baseline wherever it falls."""
    s = t[(t["kind"] == "score") & (t["basis"] == "cpu")].sort_values("median", ascending=False)
    return list(dict.fromkeys(s["server"]))


def heatmap(t: pd.DataFrame) -> alt.VConcatChart:
    """One heat map per score set: each cell's median CPU-per-request percentage against node:http."""
    c = _cells(t)
    servers = _server_order(t)
    lo = min(50.0, float(c["median"].min()), 10_000 / float(c["median"].max())) if len(c) else 50.0
    panels = []
    for score_set, name in SET_NAMES.items():
        sub = c[c["score_set"] == score_set]
        if sub.empty:
            continue
        cells = order(sub["cell"])
        base = alt.Chart(sub).encode(
            x=alt.X("cell:N", sort=cells, title=None, axis=alt.Axis(labelAngle=-35)),
            y=alt.Y("server:N", sort=servers, title=None),
        )
        rect = base.mark_rect().encode(
            color=alt.Color(
                "median:Q",
                title=f"% of {BASELINE}",
                # Symmetric on a log scale: half and twice node:http's cost are equally far from 100.
                scale=alt.Scale(scheme="redyellowgreen", type="log", domain=[lo, 100, 10_000 / lo]),
            ),
            tooltip=[
                "server",
                "cell",
                alt.Tooltip("median:Q", title="median %", format=".0f"),
                alt.Tooltip("lo:Q", title="min over rounds %", format=".0f"),
                alt.Tooltip("hi:Q", title="max over rounds %", format=".0f"),
                "rounds",
            ],
        )
        text = base.mark_text(fontSize=10).encode(text=alt.Text("median:Q", format=".0f"))
        panels.append(alt.layer(rect, text).properties(width=max(60 * len(cells), 240), height=28 * len(servers),
                                                       title=name))  # fmt: skip
    return alt.vconcat(*panels).properties(
        title=alt.TitleParams(
            f"Each scenario: {BASELINE}'s CPU per request over the server's, in % (100 = as cheap as bare node:http; "
            "higher is better)",
            subtitle=["Median over rounds of ratios paired within a round; event-loop CPU (ELU) per request."],
        )
    )


def score(t: pd.DataFrame) -> alt.FacetChart:
    """Each server's score (geometric mean over the set), median and min-max over rounds, by CPU and by req/s."""
    s = t[t["kind"] == "score"].copy()
    s["set"] = s["score_set"].map(SET_NAMES)
    s["from"] = s["basis"].map({"cpu": "CPU per request", "rps": "req/s (the seed's definition)"})
    servers = _server_order(t)
    coverage = "; ".join(describe(int(n)) for n in sorted(set(s["rounds"])))
    base = alt.Chart(s).encode(
        y=alt.Y("server:N", sort=servers, title=None),
        color=alt.Color("from:N", title="score from"),
        yOffset=alt.YOffset("from:N"),
    )
    rule = base.mark_rule(strokeWidth=2).encode(x=alt.X("lo:Q", title=f"score ({BASELINE} = 100)"), x2="hi:Q")
    point = base.mark_point(filled=True, size=70).encode(
        x="median:Q",
        tooltip=[
            "server",
            "set",
            "from",
            alt.Tooltip("median:Q", format=".1f"),
            alt.Tooltip("lo:Q", title="min over rounds", format=".1f"),
            alt.Tooltip("hi:Q", title="max over rounds", format=".1f"),
            "rounds",
        ],
    )
    return (
        alt.layer(rule, point)
        .properties(width=420, height=alt.Step(14))
        .facet(row=alt.Row("set:N", title=None, sort=list(SET_NAMES.values())))
        .resolve_scale(y="independent")
        .properties(
            title=alt.TitleParams(
                f"Score: geometric mean over the set's scenarios against {BASELINE} (= 100; higher is better)",
                subtitle=[
                    "Point: median over rounds of the per-round score; line: min to max over rounds, not a confidence "
                    f"interval (as an interval for the median: {coverage})."
                ],
            )
        )
    )

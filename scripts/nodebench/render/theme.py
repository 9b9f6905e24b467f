"""One look for every chart: the Altair theme, fixed server colours, the saturation encodings."""

import altair as alt

# Fixed colours so a server looks the same in every chart; unknown servers get grey.
SERVER_COLORS = {
    "node-http": "#4c4c4c",
    # The A/A control's twin (runs.twin("node-http")): the same server, a lighter grey.
    "node-http-aa": "#a6a6a6",
    "express": "#d62728",
    "express-lean": "#ff9896",
    "fastify": "#1f77b4",
    "fastify-schema": "#17becf",
    # The previous majors: darker shades of their frameworks' colours.
    "express4": "#8c1c1c",
    "fastify4": "#0b3c6b",
    "hono": "#ff7f0e",
    "koa": "#2ca02c",
}
CLIENT_COLORS = {"autocannon": "#4c78a8", "wrk": "#f58518", "ab": "#54a24b", "ab_close": "#b279a2"}
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


BOUND_OPACITY = alt.Scale(domain=["server-bound", NOT_SERVER_BOUND], range=[1.0, 0.35])

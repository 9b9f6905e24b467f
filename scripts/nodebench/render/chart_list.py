"""Every chart by name, as data the workflow can read without importing Altair.

tables: the scope's tables a chart is drawn from (data/<scope>/<table>.parquet);
kind: "matrix" charts are drawn for the
whole matrix and each workload, "experiment" charts for the experiments that measure
what they show; heading: what the chart shows, in words, for the index page.
"""

from typing import NamedTuple


class ChartSpec(NamedTuple):
    tables: tuple[str, ...]
    kind: str
    heading: str


CHART_LIST = {
    "cpu-per-request": ChartSpec(("metrics",), "matrix", "What each request costs each server"),
    "cost-ratio": ChartSpec(("metrics",), "matrix", "CPU per request relative to Express and to bare node:http"),
    "connection-sweep": ChartSpec(
        ("metrics",), "matrix", "Throughput, latency and event-loop load as connections grow"
    ),
    "framework-share": ChartSpec(("metrics",), "matrix", "How much of each request's CPU is the framework"),
    "control-drift": ChartSpec(("runs",), "matrix", "Did the machine drift? The A/A control round by round"),
    "stopping-rule": ChartSpec(("stopping",), "experiment", "Fixed duration against fixed count"),
    "duration-sweep": ChartSpec(("runs", "stopping"), "experiment", "Reported throughput against the run's length"),
    "load-generators": ChartSpec(("metrics",), "experiment", "The same cells under each load generator"),
    "scenario-heatmap": ChartSpec(("scenarios",), "experiment", "Each scenario against bare node:http"),
    "scenario-score": ChartSpec(("scenarios",), "experiment", "Each server's score over the scenarios, with its range"),
    "versions": ChartSpec(
        ("versions",),
        "experiment",
        "CPU per request on each Node.js against Node.js 20, and each framework's new major against its old",
    ),
}
#: The files each chart is saved as.
EXTENSIONS = ("png", "svg", "html", "vl.json")

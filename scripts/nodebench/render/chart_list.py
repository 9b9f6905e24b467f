"""Every chart by name, as data the workflow can read without importing Altair.

tables: the scope's tables a chart is drawn from (data/<scope>/<table>.parquet);
kind: "matrix" charts are drawn for the
whole matrix and each workload, "experiment" charts for the experiments that measure
what they show.
"""

from typing import NamedTuple


class ChartSpec(NamedTuple):
    tables: tuple[str, ...]
    kind: str


CHART_LIST = {
    "cpu-per-request": ChartSpec(("metrics",), "matrix"),
    "connection-sweep": ChartSpec(("metrics",), "matrix"),
    "framework-share": ChartSpec(("metrics",), "matrix"),
    "ratio-vs-express": ChartSpec(("metrics",), "matrix"),
    "stopping-rule": ChartSpec(("stopping",), "experiment"),
    "duration-sweep": ChartSpec(("runs", "stopping"), "experiment"),
    "load-generators": ChartSpec(("metrics",), "experiment"),
}
#: The files each chart is saved as.
EXTENSIONS = ("png", "svg", "html", "vl.json")

"""The chart registry: every chart, once, with what it is drawn from, when, by what, and its caption.

The workflow (which scopes get which charts), the report captions, the index page's headings,
the scale benchmark and the tests all read this table; none restates it. It is data the
workflow can read without importing Altair: a chart's draw function is named, and imported
only where the chart is drawn (nodebench.render.charts.draw).

tables: the scope's tables the chart is drawn from (data/<scope>/<table>.parquet), passed to
the draw function in this order; kind: "matrix" charts are drawn for the whole matrix and
each workload, "experiment" charts for the experiments; when: which scopes of its kind get
it, from what the scope measured (ScopeFacts); heading: what it shows, in words, for the
index page; caption: its file under workflow/report/charts/ (str.format fields: CAPTION_FIELDS).
"""

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from nodebench.catalogue import figures, thresholds


class ScopeFacts(NamedTuple):
    """What a scope measured, as far as the choice of its charts goes."""

    experiment: bool
    #: Main matrix: a workload measured at several connection levels.
    swept: bool = False
    #: Main matrix: express or node-http measured, so cost ratios have a baseline.
    baseline: bool = False
    #: Main matrix: an A/A control measured.
    control: bool = False
    #: Experiment: servers scored against node:http over a score set.
    scored: bool = False
    #: Experiment: Node.js versions or framework majors compared.
    versioned: bool = False
    #: Experiment: a matrix with both fixed-duration and fixed-count runs.
    both_stops: bool = False
    #: Experiment: the most durations one matrix has.
    durations: int = 0
    #: Experiment: how many load generators it ran.
    clients: int = 0
    #: Experiment: open-loop cells (latency at a fixed rate).
    open_loop: bool = False
    #: Experiment: open-loop cells at fixed rates common to every server (the cost curve).
    cost_curve: bool = False


class ChartSpec(NamedTuple):
    tables: tuple[str, ...]
    kind: str
    when: Callable[[ScopeFacts], bool]
    draw: str
    heading: str

    def caption_file(self, name: str) -> str:
        return f"workflow/report/charts/{name}.rst"

    def draw_file(self) -> str:
        """The module that draws it, as a path under scripts/ (a code input of the chart's job)."""
        return "scripts/" + self.draw.split(":")[0].replace(".", "/") + ".py"


def _always(_: ScopeFacts) -> bool:
    return True


_CHARTS = "nodebench.render.charts"
_EXPERIMENT = "nodebench.render.experiment_charts"
_SCENARIO = "nodebench.render.scenario_charts"
_LATENCY = "nodebench.render.latency_charts"

#: Every chart by name, in the order a scope's page shows them.
CHART_LIST = {
    "cpu-per-request": ChartSpec(
        ("metrics",), "matrix", _always, f"{_CHARTS}:cpu_per_request", "What each request costs each server"
    ),
    "cost-ratio": ChartSpec(
        ("metrics",),
        "matrix",
        lambda s: s.baseline,
        f"{_CHARTS}:cost_ratio",
        "CPU per request relative to Express and to bare node:http",
    ),
    "connection-sweep": ChartSpec(
        ("metrics",),
        "matrix",
        lambda s: s.swept,
        f"{_CHARTS}:connection_sweep",
        "Throughput, latency and event-loop load as connections grow",
    ),
    "memory-connections": ChartSpec(
        ("metrics",),
        "matrix",
        lambda s: s.swept,
        f"{_LATENCY}:memory_connections",
        "Peak resident memory as connections grow",
    ),
    "framework-share": ChartSpec(
        ("metrics",), "matrix", _always, f"{_CHARTS}:framework_share", "How much of each request's CPU is the framework"
    ),
    "control-drift": ChartSpec(
        ("runs",),
        "matrix",
        lambda s: s.control,
        f"{_CHARTS}:control_drift",
        "Did the machine drift? The A/A control round by round",
    ),
    "scenario-heatmap": ChartSpec(
        ("scenarios",), "experiment", lambda s: s.scored, f"{_SCENARIO}:heatmap", "Each scenario against bare node:http"
    ),
    "scenario-score": ChartSpec(
        ("scenarios",),
        "experiment",
        lambda s: s.scored,
        f"{_SCENARIO}:score",
        "Each server's score over the scenarios, with its range",
    ),
    "versions": ChartSpec(
        ("versions",),
        "experiment",
        lambda s: s.versioned,
        "nodebench.render.version_charts:versions",
        "CPU per request on each Node.js against Node.js 20, and each framework's new major against its old",
    ),
    "stopping-rule": ChartSpec(
        ("stopping",),
        "experiment",
        lambda s: s.both_stops,
        f"{_EXPERIMENT}:stopping_rule",
        "Fixed duration against fixed count",
    ),
    "duration-sweep": ChartSpec(
        ("runs", "stopping"),
        "experiment",
        lambda s: s.durations >= 3,
        f"{_EXPERIMENT}:duration_sweep",
        "Reported throughput against the run's length",
    ),
    "latency-load": ChartSpec(
        ("latency",),
        "experiment",
        lambda s: s.open_loop,
        f"{_LATENCY}:latency_load",
        "Latency at a fixed arrival rate against load",
    ),
    "cost-load": ChartSpec(
        ("metrics",),
        "experiment",
        lambda s: s.cost_curve,
        f"{_LATENCY}:cost_load",
        "CPU per request against offered load, up to each server's ceiling",
    ),
    "load-generators": ChartSpec(
        ("metrics",),
        "experiment",
        lambda s: s.clients > 1,
        f"{_EXPERIMENT}:clients",
        "The same cells under each load generator",
    ),
}
#: The files each chart is saved as.
EXTENSIONS = ("png", "svg", "html", "vl.json")


def charts_for(scope: ScopeFacts) -> list[str]:
    """The charts a scope gets, in page order."""
    kind = "experiment" if scope.experiment else "matrix"
    return [name for name, spec in CHART_LIST.items() if spec.kind == kind and spec.when(scope)]


#: Every chart a matrix scope can get: one swept, with a baseline and an A/A control.
ALL_MATRIX = ScopeFacts(experiment=False, swept=True, baseline=True, control=True)

#: The figures a caption states, worded from the one place each is set.
CAPTION_FIELDS = {
    "confidence": thresholds.pct(thresholds.CONFIDENCE),
    "server_bound_elu": thresholds.pct(thresholds.SERVER_BOUND_ELU),
    "headline_connections": thresholds.HEADLINE_CONNECTIONS,
}
CAPTION_FIELDS["interval"] = (
    "the distribution-free order-statistic interval of the median over rounds (the narrowest [x(k), x(n+1-k)] "
    f"covering at least {CAPTION_FIELDS['confidence']}, or min-max with its own lower coverage: 75 % for 3 rounds, "
    "93.75 % for 5; none for one round)"
)


def caption(name: str, root: Path = Path("."), headline: str = figures.DEFAULT_HEADLINE) -> str:
    """A chart's caption for the Snakemake report, its figures filled in ({headline}: what config's headline
    figure is, in words)."""
    text = (Path(root) / CHART_LIST[name].caption_file(name)).read_text().strip()
    return text.format(**CAPTION_FIELDS, headline=figures.noun(headline))

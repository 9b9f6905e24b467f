"""The figures a report may head with: CPU per request, counted three ways (config's `headline`).

Every record carries all three; the headline is the one the paired cost ratios (cost_vs_express,
cost_vs_node_http, the A/A twin's, the A/B target's, the Node.js and major comparisons), their outcomes,
the score, the adaptive rounds' looks and the reports' sentences and sort order read. Changing it reruns
the analysis and the reports, not a measurement (an adaptive block's looks are made again on the new
figure). The precision benchmark (tests/benchmarks/precision.py) measured the three equally precise on
this machine (docs/performance.md), so the default is the seeds'.
"""

#: headline column -> (its label in a table's heading, what it is in a sentence, how it is counted).
HEADLINES = {
    "us_per_req_elu": (
        "ELU",
        "event-loop CPU",
        "ELU x 1e6 / req/s: the event loop's wall time busy per request, its waits for the CPU included",
    ),
    "us_per_req_oncpu": (
        "on-CPU",
        "main-thread on-CPU time",
        "the main thread's own on-CPU time per request (its schedstat, read from outside the server)",
    ),
    "us_per_req_threads": (
        "all threads",
        "all threads' CPU",
        "all the server's threads' CPU per request (their schedstat), GC and helper threads included",
    ),
}

#: The seeds' figure, which every report headed with before `headline` existed.
DEFAULT_HEADLINE = "us_per_req_elu"

#: The column of the metrics, A/B and versions tables that names the figure their cost ratios read.
HEADLINE_COLUMN = "headline_figure"


def headline_of(table) -> str:
    """The figure a table's cost ratios read (its HEADLINE_COLUMN); the default for a table from before it existed."""
    if HEADLINE_COLUMN in table and len(table):
        return str(table[HEADLINE_COLUMN].iloc[0])
    return DEFAULT_HEADLINE


def label(figure: str) -> str:
    """Its label in a table's heading: 'µs/req ELU'."""
    return f"µs/req {HEADLINES[figure][0]}"


def noun(figure: str) -> str:
    """What it is in a sentence: '4.1 µs of event-loop CPU a request'."""
    return HEADLINES[figure][1]


def noun_first(figure: str) -> str:
    """The same at the start of a sentence or a title: 'Event-loop CPU'."""
    words = noun(figure)
    return words[:1].upper() + words[1:]


def counted(figure: str) -> str:
    """How it is counted, in words."""
    return HEADLINES[figure][2]

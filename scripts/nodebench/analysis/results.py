"""Results to take away: a scope's answer as one long table (reports/<scope>/results.csv and results.json), and two
such tables set side by side (scripts/compare_results.py).

One row per figure the report gives (workflow/schemas/metrics.dictionary.yaml, results):

- kind `ratio`: a comparison, a cell's figure over a baseline's (express, node-http, A of the A/B target, the Node.js
  or framework major compared with), paired by round: its median, interval, n (paired rounds) and, for the headline
  figure (config's headline: event-loop CPU per request by default), its outcome;
- kind `median`: a cell's own figure (CPU per request, req/s, latency, memory, start-up): median over rounds,
  interval, n (rounds);
- kind `score`: a server's score against node-http (node-http = 100), over the scope's workloads.

Each row carries the provenance of its cell's runs (CPU model and count, kernel, Node.js, the pipeline's commit, when),
so that a file read alone says what it was measured on.
"""

import numpy as np
import pandas as pd

from nodebench.analysis import intervals
from nodebench.analysis.metrics import FIGURES, RATIOS, SERVER_FIGURES, ratio_figures
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.figures import headline_of
from nodebench.runs import on_node

#: What identifies a row, in one result set and across two.
KEY = ["scope", "kind", "workload", "server", "against", "connections", "client", "stop", "figure"]
#: Where the cell's runs were measured, and when: per row, from the cell's runs (several values comma-separated).
PROVENANCE = ["cpu_model", "cpu_count", "kernel", "node_version", "pipeline_commit", "measured_from", "measured_to"]
COLUMNS = [*KEY, "value", "lo", "hi", "n", "coverage", "interval", "outcome", "unit", "saturation", *PROVENANCE]
#: Provenance that makes two result sets measure different machines: compare_results warns when it differs.
MACHINE = ["cpu_model", "cpu_count", "kernel"]
#: Each cell figure's unit.
UNITS = {
    "req_per_s": "req/s",
    "latency_p50_ms": "ms",
    "latency_p99_ms": "ms",
    "rss_peak_mb": "MiB",
    "heap_used_peak_mb": "MiB",
    "server_startup_ms": "ms",
} | {f: "us" for f in FIGURES if f.startswith("us_per_req")}
_STRINGS = ["scope", "kind", "workload", "server", "against", "client", "stop", "figure"]


def _rows(frame: pd.DataFrame, **columns) -> pd.DataFrame:
    """frame's rows as result rows: each keyword a column name of frame, or a constant in a 1-tuple."""
    out = pd.DataFrame(index=frame.index)
    for name, source in columns.items():
        out[name] = source[0] if isinstance(source, tuple) else frame[source]
    return out


def _ratio_rows(metrics: pd.DataFrame) -> list[pd.DataFrame]:
    """Each cell's paired ratios against express and node-http, where it has any paired round: the cost ratio of
    the table's headline figure (the only ratio with an outcome), then each other figure's once."""
    headline = headline_of(metrics)
    found = []
    for baseline, name in BASELINES.items():
        if f"pairs_{name}" not in metrics:
            continue
        paired = metrics[metrics[f"pairs_{name}"].fillna(0) > 0]
        for label, figure in ratio_figures(headline).items():
            if f"{label}_{name}" not in paired or (label != "cost" and figure == headline):
                continue
            rows = _rows(
                paired, kind=("ratio",), workload="workload", server="server", against=(baseline,),
                connections="connections", client="client", stop="stop", figure=(figure,), value=f"{label}_{name}",
                lo=f"{label}_{name}_lo", hi=f"{label}_{name}_hi", n=f"pairs_{name}", coverage=f"pair_coverage_{name}",
                unit=("ratio",), saturation="saturation",
            )  # fmt: skip
            rows["outcome"] = paired[f"outcome_{name}"] if label == "cost" else None
            found.append(rows.dropna(subset=["value"]))
    return found


def _median_rows(metrics: pd.DataFrame) -> list[pd.DataFrame]:
    """Each cell's own figures: the median over rounds and its interval."""
    found = []
    for figure in [*FIGURES, *SERVER_FIGURES]:
        if figure not in metrics:
            continue
        rows = _rows(
            metrics, kind=("median",), workload="workload", server="server", against=("",), connections="connections",
            client="client", stop="stop", figure=(figure,), value=figure, lo=f"{figure}_lo", hi=f"{figure}_hi",
            n="rounds", coverage="interval_coverage", interval="interval", unit=(UNITS.get(figure, ""),),
            saturation="saturation",
        )  # fmt: skip
        found.append(rows.dropna(subset=["value"]))
    return found


def _score_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Each server's score against node-http over the scope's workloads."""
    return _rows(
        scores, kind=("score",), workload=("",), server="server", against=("node-http",), connections=(pd.NA,),
        client=("",), stop=("",), figure=("score",), value="score", lo="score_lo", hi="score_hi", n="rounds",
        interval="interval", unit=("score (node-http = 100)",),
    )  # fmt: skip


def _ab_rows(ab: pd.DataFrame) -> list[pd.DataFrame]:
    """The A/B target's comparisons: B's headline figure over A's (with its outcome), and its req/s."""
    common = dict(
        kind=("ratio",), workload="workload", server="b", against="a", connections="connections", client="client",
        stop="stop", n="pairs", coverage="coverage", interval="interval", unit=("ratio",),
    )  # fmt: skip
    cost = _rows(
        ab, **common, figure=(headline_of(ab),), value="ratio", lo="ratio_lo", hi="ratio_hi", outcome="outcome"
    )
    throughput = _rows(ab, **common, figure=(RATIOS["throughput"],), value="throughput_ratio")
    return [cost, throughput]


def _label(server: str, node: str) -> str:
    """A server on a Node.js as the runs name it: express@node22, or express on the pipeline's own."""
    return on_node(server, node)


def _version_rows(versions: pd.DataFrame) -> pd.DataFrame:
    """The versions experiment's comparisons: a Node.js major against the reference one, a framework major against
    its previous one."""
    v = versions.astype({"server": str, "node": str, "compared_to": str})
    server = [_label(s, n) for s, n in zip(v["server"], v["node"], strict=True)]
    against = [
        _label(s, c) if k == "node" else _label(c, n)
        for k, s, n, c in zip(v["kind"], v["server"], v["node"], v["compared_to"], strict=True)
    ]
    rows = _rows(
        v, kind=("ratio",), workload="workload", connections="connections", client="client", stop="stop",
        figure=(headline_of(versions),), value="ratio", lo="ratio_lo", hi="ratio_hi", n="pairs", coverage="coverage",
        interval="interval", outcome="outcome", unit=("ratio",),
    )  # fmt: skip
    return rows.assign(server=server, against=against)


def _joined(values: pd.Series) -> str:
    """The distinct values of a column, sorted and comma-separated ('' for none)."""
    return ", ".join(sorted({str(v) for v in values.dropna()}))


def cell_provenance(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell (workload, server, connections, client, stop): where and when its runs were measured."""
    keys = ["workload", "server", "connections", "client", "stop"]
    runs = runs.assign(**{c: runs[c].astype(str) for c in keys})
    for column in ("cpu_model", "cpu_count", "kernel", "node_version", "pipeline_commit", "started_at"):
        if column not in runs:
            runs = runs.assign(**{column: np.nan})
    grouped = runs.assign(started_at=runs["started_at"].astype("string")).groupby(keys, observed=True, sort=True)
    out = grouped[["cpu_model", "cpu_count", "kernel", "node_version", "pipeline_commit"]].agg(_joined)
    out["measured_from"] = grouped["started_at"].min().fillna("")
    out["measured_to"] = grouped["started_at"].max().fillna("")
    return out.reset_index()


def scope_provenance(runs: pd.DataFrame) -> dict:
    """Where and when a scope's runs were measured, for results.json's header."""

    def values(column):
        return sorted({str(v) for v in runs[column].dropna()}) if column in runs else []

    started = values("started_at")
    return {
        "runs": int(len(runs)),
        "cpu_models": values("cpu_model"),
        "cpu_counts": values("cpu_count"),
        "kernels": values("kernel"),
        "hosts": values("host"),
        "node_versions": values("node_version"),
        "pipeline_commits": values("pipeline_commit"),
        "sessions": values("session"),
        "measured_from": started[0] if started else None,
        "measured_to": started[-1] if started else None,
    }


def table(
    scope: str,
    runs: pd.DataFrame,
    metrics: pd.DataFrame,
    scores: pd.DataFrame | None = None,
    ab: pd.DataFrame | None = None,
    versions: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A scope's results, one row per figure (COLUMNS), sorted by KEY."""
    parts = [*_ratio_rows(metrics), *_median_rows(metrics)]
    if ab is not None and not ab.empty:
        pair = {str(ab["a"].iloc[0]), str(ab["b"].iloc[0])}
        # The A/B target's answer is B over A from its own table: the metrics' ratio between A and B, the other way
        # round or against express, would say it again.
        parts = [p[~(p["server"].astype(str).isin(pair) & p["against"].isin(pair))] for p in parts]
        parts += _ab_rows(ab)
    if versions is not None and not versions.empty:
        parts.append(_version_rows(versions))
    if scores is not None and not scores.empty:
        parts.append(_score_rows(scores))
    # A baseline against itself is 1 by construction (node-http's score 100): not a comparison.
    parts = [p[p["server"].astype(str) != p["against"].astype(str)] for p in parts]
    parts = [p for p in parts if not p.empty]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    for column in COLUMNS:
        if column not in out:
            out[column] = np.nan
    out = out.assign(scope=scope, **{c: out[c].fillna("").astype(str) for c in _STRINGS if c != "scope"})
    out["connections"] = pd.array(out["connections"], dtype="Int64")
    out["n"] = pd.array(out["n"].fillna(0), dtype="int64")
    out["saturation"] = out["saturation"].astype(object)
    out["outcome"] = out["outcome"].astype(object).where(out["outcome"].notna(), None)
    out["interval"] = [
        i if isinstance(i, str) and i else intervals.describe(int(n))
        for i, n in zip(out["interval"], out["n"], strict=True)
    ]
    out = out.drop(columns=PROVENANCE).merge(
        _provenance_for(out, runs), on=["workload", "server", "connections", "client", "stop"], how="left"
    )
    return out[COLUMNS].sort_values(KEY, na_position="first").reset_index(drop=True)


def _provenance_for(out: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Each row's cell's provenance; a score's is the whole scope's (its cell columns are empty)."""
    cells = cell_provenance(runs).assign(connections=lambda d: pd.array(pd.to_numeric(d["connections"]), dtype="Int64"))
    whole = {c: _joined(runs[c]) if c in runs else "" for c in PROVENANCE[:-2]}
    started = sorted(runs["started_at"].dropna().astype(str)) if "started_at" in runs else []
    whole |= {"measured_from": started[0] if started else "", "measured_to": started[-1] if started else ""}
    scope_row = pd.DataFrame([{"workload": "", "server": s, "connections": pd.NA, "client": "", "stop": "", **whole}
                              for s in sorted(set(out.loc[out["kind"] == "score", "server"]))])  # fmt: skip
    if not scope_row.empty:
        scope_row["connections"] = pd.array(scope_row["connections"], dtype="Int64")
        cells = pd.concat([cells, scope_row], ignore_index=True)
    return cells


def document(scope: str, results: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """results.json: the scope, where and when its runs were measured, its columns and its rows."""
    import json

    return {
        "scope": scope,
        "provenance": scope_provenance(runs),
        "columns": COLUMNS,
        "results": json.loads(results.to_json(orient="records")),
    }


# --- Two result sets side by side --------------------------------------------------------------------------------


def read(path) -> pd.DataFrame:
    """A results.csv or results.json, typed as table() writes it."""
    import json
    from pathlib import Path

    path = Path(path)
    if path.suffix == ".json":
        frame = pd.DataFrame(json.loads(path.read_text())["results"], columns=COLUMNS)
    else:
        text = {c: str for c in [*_STRINGS, *PROVENANCE, "outcome", "interval", "unit", "saturation"]}
        numbers = {c: [""] for c in ["value", "lo", "hi", "coverage"]}
        frame = pd.read_csv(path, dtype=text, keep_default_na=False, na_values=numbers)
    frame = frame.assign(**{c: frame[c].fillna("").astype(str) for c in [*_STRINGS, *PROVENANCE, "outcome"]})
    return frame.assign(connections=pd.array(pd.to_numeric(frame["connections"].replace("", np.nan)), dtype="Int64"))


def headlines(frame: pd.DataFrame) -> list[str]:
    """The figure(s) a result set's comparisons head with: its ratios with an outcome (only the headline's has one)."""
    ratios = frame[(frame["kind"] == "ratio") & (frame["outcome"].fillna("").astype(str) != "")]
    return sorted(set(ratios["figure"].astype(str)))


def side_by_side(a: pd.DataFrame, b: pd.DataFrame, kinds=("ratio", "score"), figures=None) -> pd.DataFrame:
    """Rows of both result sets with the same key, A's and B's figure beside each other, and the change B / A - 1.

    Only the kinds and figures asked for (None: the headline figures of either set and the score; with kinds None
    too, everything). `apart` is True where the two intervals do not overlap.
    """
    if figures is None and kinds is not None:
        figures = (*headlines(a), *headlines(b), "score")
    keep = [*KEY, "value", "lo", "hi", "n", "outcome"]
    both = a[keep].merge(b[keep], on=KEY, how="outer", suffixes=("_a", "_b"), indicator=True)
    if kinds is not None:
        both = both[both["kind"].isin(kinds)]
    if figures is not None:
        both = both[both["figure"].isin(figures)]
    with np.errstate(divide="ignore", invalid="ignore"):
        both = both.assign(
            change=both["value_b"] / both["value_a"] - 1,
            apart=(both["lo_b"] > both["hi_a"]) | (both["hi_b"] < both["lo_a"]),
            found=both["_merge"].map({"both": "both", "left_only": "A only", "right_only": "B only"}).astype(str),
        )
    return both.drop(columns="_merge").sort_values(KEY, na_position="first").reset_index(drop=True)


def _distinct(frame: pd.DataFrame, column: str) -> list[str]:
    """The distinct values of a provenance column over a result set's rows (each row's may list several)."""
    return sorted({v.strip() for cell in frame[column] for v in str(cell).split(",") if v.strip()})


def machine_warnings(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """A warning per machine property (CPU model, CPU count, kernel) in which the two result sets differ, and a
    note per software property (Node.js, commit) that differs, which is often the point of comparing them."""
    lines = []
    if headlines(a) and headlines(b) and headlines(a) != headlines(b):
        lines.append(
            f"WARNING: the two result sets head with different figures (config's headline; A: "
            f"{', '.join(headlines(a))}; B: {', '.join(headlines(b))}): only ratios of one figure are set side by "
            "side, and the outcomes and scores were decided on different figures"
        )
    words = {"cpu_model": "CPU models", "cpu_count": "CPU counts", "kernel": "kernels"}
    for column, word in words.items():
        va, vb = _distinct(a, column), _distinct(b, column)
        if va != vb:
            lines.append(
                f"WARNING: the two result sets were measured with different {word} (A: {'; '.join(va) or '?'}; "
                f"B: {'; '.join(vb) or '?'}): a change may be the machine's, not the code's"
            )
    for column, word in {"node_version": "Node.js versions", "pipeline_commit": "pipeline commits"}.items():
        va, vb = _distinct(a, column), _distinct(b, column)
        if va != vb:
            lines.append(f"note: different {word} (A: {'; '.join(va) or '?'}; B: {'; '.join(vb) or '?'})")
    return lines


def describe_set(frame: pd.DataFrame) -> str:
    """One line: what a result set was measured on, and when."""
    when = sorted(v for v in [*frame["measured_from"], *frame["measured_to"]] if v)
    span = f"{when[0][:16]} to {when[-1][:16]}" if when else "unknown dates"
    cpus = "; ".join(_distinct(frame, "cpu_model")) or "unknown CPU"
    count = "/".join(_distinct(frame, "cpu_count")) or "?"
    commit = "; ".join(_distinct(frame, "pipeline_commit")) or "?"
    node = "; ".join(_distinct(frame, "node_version")) or "?"
    return f"{cpus} ({count} CPUs), Node.js {node}, commit {commit}, {span}"


def _figure(value, lo, hi, outcome) -> str:
    if pd.isna(value):
        return "-"
    bounds = "" if pd.isna(lo) else f" [{lo:.3f}-{hi:.3f}]"
    return f"{value:.3f}{bounds}{f' {outcome}' if isinstance(outcome, str) and outcome else ''}"


def render(pairs: pd.DataFrame) -> str:
    """The side-by-side table as text: one line per comparison, A's figure, B's and the change."""
    if pairs.empty:
        return "no comparison in common"
    lines = pd.DataFrame(
        {
            "scope": pairs["scope"],
            "cell": [
                " ".join(str(x) for x in (w, f"c{c}" if not pd.isna(c) else "", cl, s) if x)
                for w, c, cl, s in zip(
                    pairs["workload"], pairs["connections"], pairs["client"], pairs["stop"], strict=True
                )
            ],
            "comparison": [f"{s} / {g}" if g else s for s, g in zip(pairs["server"], pairs["against"], strict=True)],
            "figure": pairs["figure"],
            "A": [
                _figure(*r)
                for r in zip(pairs["value_a"], pairs["lo_a"], pairs["hi_a"], pairs["outcome_a"], strict=True)
            ],
            "B": [
                _figure(*r)
                for r in zip(pairs["value_b"], pairs["lo_b"], pairs["hi_b"], pairs["outcome_b"], strict=True)
            ],
            "change": [
                "-" if pd.isna(c) else f"{c * 100:+.1f} %{' (intervals apart)' if apart else ''}"
                for c, apart in zip(pairs["change"], pairs["apart"], strict=True)
            ],
        }
    )
    lines.loc[pairs["found"].to_numpy() != "both", "change"] = pairs.loc[pairs["found"] != "both", "found"].to_numpy()
    return lines.to_string(index=False)

"""Charts, the summary and the index page, drawn from synthetic metrics."""

import json
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from nodebench.analysis import aggregate, metrics
from nodebench.render import charts, document, markdown, page, theme
from nodebench.render.chart_list import CHART_LIST
from synthetic import synthetic_records

RUN_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/run-record.schema.yaml").read_text())
#: The main matrix's five servers and the A/A twin.
SIX = ["node-http", "node-http-aa", "express", "express-lean", "fastify", "fastify-schema"]


@pytest.fixture(scope="module")
def synthetic_runs() -> pd.DataFrame:
    records = synthetic_records(SIX, ["empty", "point-lookup", "list"], [10, 50, 200], 3)
    return aggregate.to_frame(records, RUN_SCHEMA)


@pytest.fixture(scope="module")
def synthetic_metrics(synthetic_runs) -> pd.DataFrame:
    return metrics.compute_metrics(synthetic_runs)


MATRIX_CHARTS = [name for name, spec in CHART_LIST.items() if spec.kind == "matrix"]


def test_every_chart_in_the_list_has_a_drawing_function():
    assert set(charts.CHARTS) == set(CHART_LIST)


def tables_for(name: str, runs: pd.DataFrame, metrics_table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The tables a matrix chart is drawn from, as the workflow hands them over (CHART_LIST's tables)."""
    return {t: {"runs": runs, "metrics": metrics_table}[t] for t in CHART_LIST[name].tables}


@pytest.mark.parametrize("name", MATRIX_CHARTS)
def test_every_chart_renders_to_png_svg_and_offline_html(name, synthetic_runs, synthetic_metrics, tmp_path):
    chart = charts.CHARTS[name](tables_for(name, synthetic_runs, synthetic_metrics))
    png, svg, html, spec = (tmp_path / f"c.{e}" for e in ("png", "svg", "html", "vl.json"))
    charts.save(chart, str(png), str(svg), str(html), str(spec))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()
    text = html.read_text()
    assert "vegaEmbed" in text and "cdn.jsdelivr" not in text and "<script src=" not in text
    assert json.loads(spec.read_text())["$schema"].startswith("https://vega.github.io/schema/vega-lite/")


def test_charts_use_fixed_server_colours(synthetic_metrics):
    spec = charts.cost_ratio(synthetic_metrics).to_dict()
    points = spec["hconcat"][0]["layer"][-1]
    scale = points["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"], strict=True))["express"] == theme.SERVER_COLORS["express"]


def test_index_page_inlines_everything(synthetic_runs, synthetic_metrics):
    specs = {
        name: charts.CHARTS[name](tables_for(name, synthetic_runs, synthetic_metrics)).to_dict()
        for name in MATRIX_CHARTS
    }
    scores = metrics.geomean_scores(synthetic_metrics)
    html = page.render(specs, synthetic_runs, synthetic_metrics, "/* bundle */", scores=scores)
    assert html.count('class="chart"') == len(specs)
    assert "not-bound" in html and "<script src=" not in html and "<pre>" not in html
    # The page names the machine from the runs themselves, not from a line of summary.md.
    assert html_text(markdown.machine_line(synthetic_runs)) in html
    # Each chart under its heading in words, never its file name.
    for name in MATRIX_CHARTS:
        assert f"<h2>{html_text(CHART_LIST[name].heading)}</h2>" in html and f"<h2>{name}</h2>" not in html
    # The answer at a glance, then the ratio chart, then the full sentences and the machine (issue 38).
    ratio = html.index(f"<h2>{html_text(CHART_LIST['cost-ratio'].heading)}</h2>")
    assert html.index("<ul>") < ratio < html.index("In full:") < html.index("Machine state")
    assert ratio < min(
        html.index(f"<h2>{html_text(CHART_LIST[n].heading)}</h2>") for n in MATRIX_CHARTS if n != "cost-ratio"
    )


def test_sweep_bins_a_long_sweep_into_medians_with_spanning_intervals():
    conns = np.arange(1, 101)
    long = pd.DataFrame(
        {
            "workload": "point-lookup",
            "server": "fastify",
            "connections": conns,
            "saturation": np.where(conns == 50, "io-bound", "server-bound"),
            "req_per_s": 10.0 * conns,
            "req_per_s_lo": 10.0 * conns - 1,
            "req_per_s_hi": 10.0 * conns + 1,
            "latency_p50_ms": 1.0,
            "latency_p99_ms": 2.0,
            "elu_utilization": 1.0,
        }
    )
    short = long[long["connections"].isin([10, 50, 200])].assign(workload="list")
    points = charts.sweep_points(pd.concat([long, short], ignore_index=True))
    binned = points[points["workload"] == "point-lookup"]
    assert len(binned) <= charts.SWEEP_POINTS and binned["cells"].sum() == 100
    assert binned["connections"].is_monotonic_increasing
    # A point is its bin's medians: req/s is 10 x connections, so the median too.
    assert (binned["req_per_s"] == 10 * binned["connections"]).all()
    assert binned["req_per_s_lo"].min() == 9.0 and binned["req_per_s_hi"].max() == 1001.0
    assert (binned["req_per_s_lo"] < binned["req_per_s"] - 1).sum() >= len(binned) // 2
    # Equal widths on the log scale: the last bins hold more connection counts than the first.
    assert binned["cells"].iloc[0] == 1 and binned["cells"].iloc[-1] > 10
    assert list(binned.loc[binned["bound"] != "server-bound", "connections"].map(lambda c: 40 <= c <= 60)) == [True]
    # A workload measured at few connection counts is drawn cell by cell.
    kept = points[points["workload"] == "list"]
    assert list(kept["connections"]) == [10, 50] and (kept["cells"] == 1).all()


def campaign_metrics(synthetic_metrics: pd.DataFrame, levels: int = 1_250) -> pd.DataFrame:
    """A metrics table of levels connection counts per workload and server (18,750 cells), from the small one."""
    at_50 = synthetic_metrics[synthetic_metrics["connections"] == 50]
    return pd.concat([at_50.assign(connections=10 + 5 * i) for i in range(levels)], ignore_index=True)


@pytest.fixture(scope="module")
def large_campaign(synthetic_metrics) -> pd.DataFrame:
    """campaign_metrics(), made once for the tests that read it (charts and the page leave their tables as given)."""
    return campaign_metrics(synthetic_metrics)


@pytest.mark.parametrize("name", MATRIX_CHARTS)
def test_charts_of_a_large_campaign_embed_what_a_person_can_read(name, synthetic_runs, large_campaign):
    big = large_campaign
    # Altair's MaxRowsError (5,000 rows) stays on.
    spec = charts.CHARTS[name](tables_for(name, synthetic_runs, big)).to_dict()
    rows = max(len(v) for v in spec["datasets"].values())
    workloads, servers = big["workload"].nunique(), big["server"].nunique()
    assert rows <= 2 * workloads * servers * charts.SWEEP_POINTS, f"{name} embeds {rows} rows"


def test_index_page_of_a_large_campaign_lists_headline_cells_and_links_the_rest(synthetic_runs, large_campaign):
    big = large_campaign
    scores = metrics.geomean_scores(big)
    html = page.render(
        {}, synthetic_runs, big, "/* bundle */", scores=scores, metrics_href="../../data/s/metrics.parquet"
    )
    cells = html[html.index("<h2>All cells</h2>") : html.index("<h2>Framework share")]
    # Headline: the connection count closest to 50 on each of 3 workloads, 6 servers (the twin among them) each.
    tables = cell_tables(cells)
    assert len(tables) == 3 and [len(rows) for _, rows in tables] == [6, 6, 6]
    assert all("conn" not in header for header, _ in tables) and "At 50 connections" in cells
    assert '<a href="../../data/s/metrics.parquet">' in cells and f"{len(big):,} cells" in cells
    assert '<a href="summary.md">' in html


def test_the_runs_columns_it_names_are_all_the_summary_and_page_need(synthetic_runs, synthetic_metrics):
    assert markdown.machine_line(synthetic_runs[markdown.PROVENANCE]) == markdown.machine_line(synthetic_runs)
    scores = metrics.geomean_scores(synthetic_metrics)
    now = pd.Timestamp("2026-01-02", tz="UTC").to_pydatetime()
    full = markdown.render(synthetic_runs, synthetic_metrics, scores, now)
    assert markdown.render(synthetic_runs[markdown.RUN_COLUMNS], synthetic_metrics, scores, now) == full
    html = page.render({}, synthetic_runs, synthetic_metrics, "", scores=scores)
    assert page.render({}, synthetic_runs[markdown.RUN_COLUMNS], synthetic_metrics, "", scores=scores) == html
    cols = metrics.RUN_COLUMNS
    pd.testing.assert_frame_equal(metrics.compute_metrics(synthetic_runs[cols]), synthetic_metrics)


class _Tables(HTMLParser):
    """Every <table> of an HTML fragment as (header cells, rows of cells), text only."""

    def __init__(self):
        super().__init__()
        self.tables, self.row, self.cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.row.append(self.cell)
            self.cell = None
        elif tag == "tr":
            header, rows = self.tables[-1]
            if not header:
                header.extend(self.row)
            else:
                rows.append(self.row)

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def cell_tables(fragment: str) -> list[tuple[list[str], list[list[str]]]]:
    parser = _Tables()
    parser.feed(fragment)
    return [t for t in parser.tables if "µs/req ELU [interval]" in t[0]]


def html_text(text: str) -> str:
    return document.inline_html(text)


#: Per round: the machine's drift, and each server's CPU per request as a share of express's in the same round.
DRIFT = [1.0, 1.1, 0.9]
SHARE_OF_EXPRESS = {
    "express": [1.0, 1.0, 1.0],
    "express-lean": [0.99, 1.00, 1.01],
    "fastify": [0.40, 0.42, 0.44],
    "node-http": [0.48, 0.50, 0.52],
}
#: The A/A twin against node-http, per round: 1 % apart at the median, its interval holding 1.
TWIN_OF_NODE = [1.01, 0.98, 1.02]


def known_ratio_runs(servers=("node-http", "node-http-aa", "express", "express-lean", "fastify"), rounds=3):
    """point-lookup at 50 connections, each server's event-loop CPU per request a known share of express's in
    every round, on a machine that drifts by 10 % between rounds."""
    runs = aggregate.to_frame(synthetic_records(list(servers), ["point-lookup"], [50], rounds, noise=0), RUN_SCHEMA)
    twin = [n * t for n, t in zip(SHARE_OF_EXPRESS["node-http"], TWIN_OF_NODE, strict=True)]
    share = SHARE_OF_EXPRESS | {"node-http-aa": twin}
    pairs = zip(runs["server"].astype(str), runs["round"], strict=True)
    us = [370.0 * DRIFT[r - 1] * share[s][r - 1] for s, r in pairs]
    return runs.assign(us_per_req_elu=us)


def paras(text: str) -> list[str]:
    """The summary's paragraphs after the answer at a glance (its first list and "In full:"), which
    test_the_summary_opens_with_the_answer_at_a_glance reads."""
    out = text.split("\n\n")
    if "In full:" in out:
        at = out.index("In full:")
        return [*out[: at - 1], *out[at + 1 :]]
    return out


def summary_of(runs: pd.DataFrame) -> str:
    cells = metrics.compute_metrics(runs)
    return markdown.render(runs, cells, metrics.geomean_scores(cells), pd.Timestamp("2026-01-02", tz="UTC"))


def test_the_summary_opens_with_the_paired_cost_ratios_their_intervals_and_the_a_a_twin():
    text = summary_of(known_ratio_runs())
    title, first = paras(text)[:2]
    assert title == "# Summary"
    assert first == (
        "- **point-lookup** at 50 connections: fastify costs 0.42x express's event-loop CPU per request "
        "(0.40–0.44, cheaper) and 0.84x node-http's (0.83–0.85, cheaper); "
        "node-http 0.50x express's (0.48–0.52, cheaper); "
        "express-lean 1.00x express's (0.99–1.01, equivalent within ±5 %) and 2.00x node-http's (1.94–2.06, costlier); "
        "express 2.00x node-http's (1.92–2.08, costlier); "
        "intervals over paired rounds, n=3: min-max, 75 %; "
        "the A/A twin against its control 1.010x [0.980x-1.020x], a check of the design."
    )
    # Then how the comparisons were decided, all together.
    decided = paras(text)[2]
    assert decided.startswith(
        "Outcomes of the 6 cost ratios with an interval: 3 cheaper, 2 costlier, 1 equivalent within ±5 %, "
        "0 inconclusive."
    ), decided
    assert "6 comparisons, each interval covering its own median ratio with at least 75 %" in decided
    # Then the machine: the control's own CPU per request with its interval, the CPU model, the dates.
    state = paras(text)[3]
    assert state.startswith("**Machine state**: the A/A control, node-http, at the headline connections: 177.6 µs")
    assert "(n=3: min-max, 75 %)" in state and "CPU Synthetic CPU" in state and "3 rounds" in state


def test_the_summary_opens_with_the_answer_at_a_glance():
    """One short line per workload: the cheapest, the costliest against its baseline, the interval and outcome."""
    glance = summary_of(known_ratio_runs()).split("\n\n")[1]
    assert glance == (
        "- **point-lookup** at 50 connections: cheapest by median **fastify**, 148.0 µs of event-loop CPU a request; "
        "costliest **express** at 2.00x node-http's [1.92x-2.08x], costlier (n=3: min-max, 75 %)."
    ), glance


def test_one_round_prints_no_interval_and_says_so():
    runs = known_ratio_runs()
    text = summary_of(runs[runs["round"] == 1])
    first = paras(text)[1]
    assert first.startswith(
        "- **point-lookup** at 50 connections: fastify costs 0.40x express's event-loop CPU per request "
        "(n=1: no interval) and 0.83x node-http's (n=1: no interval);"
    )
    assert "one round each, so no interval and no outcome" in first
    assert "–" not in first and "beyond" not in first and "within" not in first
    fastify = next(line for line in text.splitlines() if line.startswith("| fastify |"))
    assert "[" not in fastify and "| 1 | 148.0 |" in fastify
    assert "n=1: no interval" in text  # the key says what a figure without brackets is


def test_a_matrix_without_express_or_node_http_says_what_is_missing():
    runs = known_ratio_runs()
    without_express = paras(summary_of(runs[runs["server"] != "express"]))[1]
    assert "fastify costs 0.84x node-http's event-loop CPU per request (0.83–0.85, cheaper)" in without_express
    assert "express was not measured, so there are no ratios against it" in without_express
    alone = runs[runs["server"].isin(["fastify", "express-lean"])]
    text = summary_of(alone)
    assert "neither express nor node-http was measured, so there is no ratio to report" in text
    assert "neither an A/A control nor node-http was measured" in text
    cells = metrics.compute_metrics(alone)
    chart = charts.cost_ratio(cells).to_dict()
    assert "Neither express nor node-http" in json.dumps(chart)
    page.render({}, alone, cells, "", scores=metrics.geomean_scores(cells))


def test_html_tables_are_sorted_by_cpu_per_request(synthetic_runs, synthetic_metrics):
    html = page.render({}, synthetic_runs, synthetic_metrics, "", scores=metrics.geomean_scores(synthetic_metrics))
    tables = cell_tables(html)
    assert len(tables) == 6  # each workload: its headline table and its other connection counts
    for header, rows in tables:
        us = header.index("µs/req ELU [interval]")
        by = header.index("conn") if "conn" in header else None
        groups = {}
        for row in rows:
            groups.setdefault(row[by] if by is not None else "", []).append(float(row[us].split()[0]))
        for values in groups.values():
            assert values == sorted(values) and len(values) == 6


def test_latency_is_shown_to_two_decimals_of_a_millisecond():
    text = summary_of(known_ratio_runs())
    rows = [line for line in text.splitlines() if line.startswith("| fastify |")]
    header = next(line for line in text.splitlines() if line.startswith("| server |")).split(" | ")
    latency = rows[0].split(" | ")[header.index("p50 / p99 ms")]
    assert re.fullmatch(r"\d+\.\d\d / \d+\.\d\d", latency)
    mean = rows[0].split(" | ")[header.index("mean ms")]
    assert re.fullmatch(r"\d+\.\d\d", mean)
    assert "autocannon reports them in whole milliseconds" in text


def title_text(spec: dict) -> str:
    title = spec.get("title", "")
    if isinstance(title, dict):
        parts = [title.get("text", ""), *(title.get("subtitle") or [])]
        return " ".join(" ".join(p) if isinstance(p, list) else p for p in parts)
    return title


@pytest.mark.parametrize("name", MATRIX_CHARTS)
def test_every_chart_says_what_it_shows_and_which_way_is_better(name, synthetic_runs, synthetic_metrics):
    spec = charts.CHARTS[name](tables_for(name, synthetic_runs, synthetic_metrics)).to_dict()
    assert "better" in title_text(spec).lower(), title_text(spec)


def errorbar_layers(spec) -> list[dict]:
    """Every layer of a spec (at any depth) that draws whiskers."""
    found = []
    if isinstance(spec, dict):
        mark = spec.get("mark")
        if (mark == "errorbar") or (isinstance(mark, dict) and mark.get("type") == "errorbar"):
            found.append(spec)
        for value in spec.values():
            found += errorbar_layers(value)
    elif isinstance(spec, list):
        for value in spec:
            found += errorbar_layers(value)
    return found


@pytest.mark.parametrize("name", ["cpu-per-request", "cost-ratio", "connection-sweep"])
def test_whiskers_are_the_intervals_and_a_single_run_draws_none(name):
    runs = aggregate.to_frame(synthetic_records(SIX, ["point-lookup"], [10, 50], 1), RUN_SCHEMA)
    one = metrics.compute_metrics(runs)
    assert one["us_per_req_elu_lo"].isna().all()
    spec = charts.CHARTS[name]({"metrics": one, "runs": runs}).to_dict()
    layers = errorbar_layers(spec)
    assert layers, f"{name} draws no whiskers at all"
    for layer in layers:
        filters = [t["filter"] for t in layer.get("transform", []) if "filter" in t]
        assert any("isValid(datum." in f for f in filters), f"{name}: a whisker without an interval filter"
    assert "one run per cell, so no interval" in title_text(spec) or "none where a cell had one run" in title_text(spec)


def test_pairs_measured_by_different_sessions_are_listed():
    runs = known_ratio_runs()
    session = np.where((runs["server"] == "express") & (runs["round"] == 2), "later", "first")
    text = summary_of(runs.assign(session=session))
    section = text[text.index("## Pairs not measured back to back") :]
    assert (
        "- point-lookup at 50 connections: express with express-lean, fastify, node-http, node-http-aa (round 2)"
        in (section)
    )
    fastify = next(line for line in text.splitlines() if line.startswith("| fastify |"))
    assert "cross-session |" in fastify and "**cross-session**" in text
    assert "## Pairs not measured back to back" not in summary_of(runs.assign(session="one"))


def test_the_drift_chart_follows_the_control_and_its_twin_round_by_round():
    runs = known_ratio_runs()
    spec = charts.control_drift(runs).to_dict()
    data = next(iter(spec["datasets"].values()))
    assert {(d["server"], d["round"]) for d in data} == {
        (s, r) for s in ("node-http", "node-http-aa") for r in (1, 2, 3)
    }
    assert "better" in title_text(spec)
    without = charts.control_drift(runs[runs["server"] != "node-http-aa"]).to_dict()
    assert "No A/A control" in json.dumps(without)


def test_coming_verdicts_reasons_and_preempted_runs_are_shown_and_keyed():
    cells = metrics.compute_metrics(known_ratio_runs())
    cells = cells.assign(
        saturation=np.where(cells["server"] == "fastify", "database-bound", "server-bound"),
        saturation_reason=np.where(cells["server"] == "fastify", "db CPU 0.97", ""),
        preempted_runs=np.where(cells["server"] == "express", 1, 0),
    )
    text = markdown.to_markdown(markdown.body(known_ratio_runs(), cells, metrics.geomean_scores(cells)))
    fastify = next(line for line in text.splitlines() if line.startswith("| fastify |"))
    express = next(line for line in text.splitlines() if line.startswith("| express |"))
    assert fastify.endswith("| database-bound (db CPU 0.97) |") and "disturbed (1 run)" in express
    assert "**database-bound**: the database set the pace" in text and "**disturbed (k runs)**" in text


def test_an_all_disturbed_pair_is_said_to_be_unchecked_and_a_noisy_machine_leads_the_report():
    runs = known_ratio_runs()
    # Every fastify run still disturbed after it was measured again: its ratios cannot be checked without them.
    fastify = runs["server"].astype(str) == "fastify"
    runs = runs.assign(disturbed=fastify, measurement_count=np.where(fastify, 3, 1))
    text = summary_of(runs)
    assert "cannot be checked: no round without a disturbed run" in text
    assert "moves none of these ratios" not in text
    # 3 of 15 runs still disturbed (20 %): the report leads with it, and the machine's state counts them.
    assert paras(text)[1].startswith("**This machine was too noisy for the stated precision**: 3 of 15 runs")
    assert "3 of 15 runs measured again because another task or the hypervisor took the server's CPU, 3 still" in text
    quiet = summary_of(known_ratio_runs().assign(disturbed=False, measurement_count=1))
    assert "too noisy" not in quiet and "cannot be checked" not in quiet


def test_every_report_says_what_the_instrument_adds_and_its_measured_cost_where_measured(synthetic_runs):
    runs = synthetic_runs.assign(server_requests=None)
    runs.loc[runs.index[0], ["requests", "connections"]] = [1000, 200]  # one run with a large bound: 20 %
    line = markdown.instrument_line(runs)
    assert line.startswith("**The instrument**: no request is touched") and "at most 20.000% here" in line, line
    assert "has not been measured on this checkout" in line and "precision.py --calibrate" in line
    cal = {"date": "2026-12-05", "cpu_model": "Test CPU", "rounds": 6,
           "servers": {"fastify": {"median": 1.004, "lo": 0.99, "hi": 1.02}}}  # fmt: skip
    line = markdown.instrument_line(runs, cal)
    assert "measured on 2026-12-05 on Test CPU" in line and "fastify +0.4% [-1.0%, +2.0%]" in line, line
    # Older records counted by the hook are said to be.
    runs.loc[runs.index[:3], "server_requests"] = 10
    assert "3 of" in markdown.instrument_line(runs) and "older records" in markdown.instrument_line(runs)
    # The summary carries it.
    scores = metrics.geomean_scores(metrics.compute_metrics(synthetic_runs))
    text = markdown.render(synthetic_runs, metrics.compute_metrics(synthetic_runs), scores,
                           pd.Timestamp("2026-01-02", tz="UTC").to_pydatetime(), calibration=cal)  # fmt: skip
    assert "**The instrument**:" in text and "fastify +0.4%" in text


def test_the_vega_bundle_is_built_once_per_version_and_read_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    built = page.vega_bundle.__wrapped__()
    kept = tmp_path / page.BUNDLE_CACHE.format(version=page.vl_convert.__version__)
    assert kept.read_text() == built and "vegaEmbed" in built
    assert list(kept.parent.iterdir()) == [kept]  # no temporary file left
    kept.write_text("// the kept copy")
    assert page.vega_bundle.__wrapped__() == "// the kept copy"
    kept.write_bytes(b"\xff\xfe\x00")  # not text: built again and kept again
    assert page.vega_bundle.__wrapped__() == built and kept.read_text() == built


def test_the_vega_bundle_is_built_where_data_cannot_be_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").write_text("a file where the directory would be")
    assert "vegaEmbed" in page.vega_bundle.__wrapped__()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]

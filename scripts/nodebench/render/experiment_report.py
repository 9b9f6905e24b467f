"""An experiment's report: its cells, the stopping-rule arithmetic, the duration sweep, the client comparison.

Every section is drawn from the data: a section appears when the experiment measured
what it needs (count runs next to duration runs of the same cell; one cell at several
durations; one cell under several load generators). The report is a list of blocks
(render/document.py): summary.md and index.html are both written from it, as the main
matrix's are, and nothing is read back from the Markdown.
"""

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import pandas as pd

from nodebench.analysis import looks, outcomes
from nodebench.analysis import scenarios as sc
from nodebench.analysis import versions as ver
from nodebench.analysis.experiments import (
    GROUP,
    VERDICTS,
    as_strings,
    held_back,
    sweep_table,
)
from nodebench.analysis.intervals import describe, percent
from nodebench.analysis.latency import instrument_table
from nodebench.catalogue import figures
from nodebench.catalogue.clients import OPEN_LOOP
from nodebench.catalogue.thresholds import CLIENT_BOUND_CPU, CONFIDENCE, EDGE_CPU, EDGE_ELU, SERVER_BOUND_ELU, pct
from nodebench.render.costcurve_report import costcurve_blocks, sweep_blocks
from nodebench.render.document import Block, Heading, Items, Para, Table
from nodebench.render.latency_report import instrument_blocks, latency_blocks, server_blocks
from nodebench.render.markdown import ci, machine_line

#: Verdicts that say a client's CPU was the limit (today's and the finer ones that may replace it).
CLIENT_LIMITED = {"client-bound", "client CPUs saturated (shared)"}
#: Verdicts that say the database, not the server's event loop or a client, set the pace.
DATABASE_LIMITED = {"io-bound", "database-bound"}


def penalty_table(table: pd.DataFrame) -> Table:
    """Per fixed-count cell: the two stopping rules' req/s, the penalty, and where the unaccounted time went."""
    columns = [
        "server", "client", "workload", "conn", "duration req/s", "count req/s", "penalty", "requests done / asked",
        "took s", "at sustained rate s", "unaccounted s (share)", "of which: full load / connection tail / idle s",
        "us/req ELU duration / count", "verdict",
    ]  # fmt: skip
    rows = [
        [
            r.server,
            r.client,
            r.workload,
            str(r.connections),
            f"{r.duration_req_per_s_reported:,.0f} ({r.duration_stop})",
            f"{r.count_req_per_s_reported:,.0f}",
            f"{r.penalty_reported:.1%}",
            f"{r.requests_completed:,.0f} / {r.requests_target:,}",
            f"{r.actual_s:.2f}",
            f"{r.expected_s:.2f}",
            f"{r.unaccounted_s:.2f} ({r.unaccounted_share:.1%})",
            f"{_num(r.full_load_s)} / {_num(r.connection_tail_s)} / {_num(r.idle_s)}",
            f"{r.us_per_req_elu_duration:.1f} / {r.us_per_req_elu_count:.1f}",
            VERDICTS[r.verdict],
        ]  # fmt: skip
        for r in table.itertuples()
    ]
    return Table(columns, rows, "lllrrrrrrrrrrl")


def _num(value, fmt=".2f") -> str:
    return "n/a" if pd.isna(value) else f"{value:{fmt}}"


def _row_sentence(r) -> str:
    s = (
        f"{r.server} {r.count_stop} ({r.client}, {r.workload}, {r.connections} connections): "
        f"{r.requests_completed:,.0f} of {r.requests_target:,} requests in {r.actual_s:.2f} s; at the "
        f"{r.duration_req_per_s:,.0f} req/s of its {r.duration_stop} runs that is {r.expected_s:.2f} s, so "
        f"{r.unaccounted_s:.2f} s ({r.unaccounted_share:.1%}) is unaccounted, against a {r.penalty_reported:.1%} "
        f"penalty in the req/s the client reported"
    )
    if pd.notna(r.full_load_s):
        s += (
            f". Of it, {r.idle_s:.2f} s came after the last response with nothing in flight, "
            f"{r.connection_tail_s:.2f} s while the connections finished their shares one by one (from "
            f"{r.first_connection_done_s:.2f} s to {r.last_response_s:.2f} s), and {r.full_load_s:.2f} s in the "
            f"full-load phase, which ran at {r.full_load_req_per_s:,.0f} req/s"
        )
    elif pd.notna(r.idle_s):
        s += f"; {r.idle_s:.2f} s of the run came after its last response"
    return s + f" ({VERDICTS[r.verdict]})."


def stopping_paragraph(table: pd.DataFrame, cpu_model: str) -> str:
    """Plain words from the numbers: does the tail arithmetic explain the penalty here?"""
    kinds = set(table["verdict"])
    where = f"On this machine ({cpu_model})"
    real = table[table["verdict"] != "noise"]
    if kinds == {"noise"}:
        head = (
            f"**{where} there is no fixed-count penalty to explain**: the penalties "
            f"({', '.join(f'{p:+.1%}' for p in table['penalty_reported'])}) are within the spread of the "
            f"fixed-duration runs' own rates (up to {table['rate_spread'].max():.1%})."
        )
    elif kinds <= {"tail", "noise"}:
        head = (
            f"**{where} the arithmetic explains the penalty**"
            + (
                f" where there is one ({', '.join(f'{r.server} {r.count_stop}' for r in real.itertuples())})"
                if "noise" in kinds
                else ""
            )
            + ": the unaccounted share equals the penalty, and the unaccounted time is the tail (connections "
            "finishing apart, then the wait for the client to stop); the full-load phase ran at the sustained rate, "
            "within the fixed-duration runs' spread."
        )
    else:
        head = (
            f"**{where} the tail explains only part of the penalty**: "
            + "; ".join(f"{r.server} {r.count_stop}: {VERDICTS[r.verdict]}" for r in table.itertuples())
            + "."
        )
    parts = [head]
    split = real[real["full_load_s"].notna() & (real["unaccounted_s"] > 0)]
    if len(split):
        parts.append(
            "Where there is a penalty, the unaccounted time splits into "
            + "; ".join(
                f"{r.server} {r.count_stop} ({r.penalty_reported:.1%}): {r.idle_s / r.unaccounted_s:.0%} the client's "
                f"idle wait after the last response, {r.connection_tail_s / r.unaccounted_s:.0%} connections "
                f"finishing apart, {r.full_load_s / r.unaccounted_s:.0%} a slower full-load phase"
                for r in split.itertuples()
            )
            + " (medians of each part over the runs; per run the parts add up exactly)."
        )
    quantized = table[table["reported_is_count_per_sample"].fillna(False).astype(bool)]
    if len(quantized):
        parts.append(
            "In every fixed-count run of "
            + ", ".join(f"{r.server} {r.count_stop}" for r in quantized.itertuples())
            + " the reported req/s is exactly the count divided by the whole seconds autocannon sampled (e.g. "
            f"{quantized.iloc[-1]['requests_completed']:,.0f} / {quantized.iloc[-1]['client_samples']:.0f} = "
            f"{quantized.iloc[-1]['requests_completed'] / quantized.iloc[-1]['client_samples']:,.0f}), so a run "
            "that ends just past a whole second is charged the whole second. The reference's figures fit the same "
            "rule: 100,000 / 4 s = 25,000 (it reported 25,001 for Fastify) and 100,000 / 7 s = 14,286 (14,285 for "
            "Express)."
        )
    idle = table["idle_s"].dropna()
    if len(idle) and (table["client"] == "autocannon").any():
        parts.append(
            f"autocannon ends a fixed-count run only at its next once-a-second sample after the last response, and "
            f"its req/s is the mean of those samples, a partial last second counting as a whole one; that idle wait "
            f"({idle.min():.2f}–{idle.max():.2f} s here) is part of the penalty while the server does no work."
        )
    tails = (table["actual_s"] - table["first_connection_done_s"]).dropna()
    if len(tails) > 1:
        share = tails / table["actual_s"]
        parts.append(
            f"The tail lasts {tails.min():.2f}–{tails.max():.2f} s whatever the count, so its weight is set by the "
            f"run's length: {share.min():.1%} to {share.max():.1%} of these runs ({table['actual_s'].min():.1f}–"
            f"{table['actual_s'].max():.1f} s); the reference's 100,000-request runs lasted 4 to 7 s."
        )
    cost = table["us_per_req_elu_count"] / table["us_per_req_elu_duration"] - 1
    parts.append(
        f"Event-loop CPU per request (ELU, the seeds' figure) differs by {cost.min():+.1%} to {cost.max():+.1%} "
        f"between the fixed-count and fixed-duration runs."
    )
    return " ".join([*parts, *(_row_sentence(r) for r in table.itertuples())])


def sweep_section(sweep: pd.DataFrame) -> list[Block]:
    """Per cell run at several durations: how far its req/s moved, and a row per duration."""
    blocks: list[Block] = []
    for key, group in sweep.groupby(GROUP):
        lo, hi = group["req_per_s_reported"].min(), group["req_per_s_reported"].max()
        blocks += [
            Para(
                f"{key[1]} ({key[3]}, {key[0]}, {key[2]} connections): median req/s from {lo:,.0f} to {hi:,.0f} "
                f"across {len(group)} durations ({hi / lo - 1:.1%} apart)."
            ),
            Table(
                ["duration s", "runs", "req/s (median)", "min–max", "us/req ELU", "ELU"],
                [
                    [
                        f"{r.duration_s:g}",
                        str(r.rounds),
                        f"{r.req_per_s_reported:,.0f}",
                        f"{r.req_per_s_min:,.0f}–{r.req_per_s_max:,.0f}",
                        f"{r.us_per_req_elu:.1f}",
                        f"{r.elu:.1%}",
                    ]  # fmt: skip
                    for r in group.itertuples()
                ],
                "rrrrrr",
            ),
        ]
    return blocks


def clients_table(metrics: pd.DataFrame) -> Table:
    """Per workload and server, each client's req/s, the server's ELU and the client's own CPU."""
    m = as_strings(metrics).sort_values(["workload", "server", "client"])
    columns = [
        "workload", "server", "client", "stop", "req/s [interval]", "ELU", "us/req ELU [interval]",
        "client CPU (of cores)", "p99 ms", "verdict",
    ]  # fmt: skip
    rows = [
        [
            r.workload,
            r.server,
            r.client,
            r.stop,
            ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi),
            f"{r.elu_utilization:.1%}",
            ci(r.us_per_req_elu, r.us_per_req_elu_lo, r.us_per_req_elu_hi, ".1f"),
            f"{r.client_cpu_util:.2f} (of {r.client_cpu_capacity:g})",
            f"{r.latency_p99_ms:.2f}",
            r.saturation,
        ]  # fmt: skip
        for r in m.itertuples()
    ]
    return Table(columns, rows, "llllrrrrrl")


def bottleneck_paragraph(metrics: pd.DataFrame) -> str:
    """Which client, if any, limited each server; node-http on empty named first."""
    m = as_strings(metrics)
    back = held_back(m)

    def describe(r) -> str:
        return (
            f"{r.client} {r.req_per_s:,.0f} req/s at ELU {r.elu_utilization:.0%}, its own CPU "
            f"{r.client_cpu_util:.2f} of {r.client_cpu_capacity:g} core(s) ({r.saturation})"
        )

    parts = []
    node_empty = m[(m["server"] == "node-http") & (m["workload"] == "empty")].sort_values("req_per_s")
    if len(node_empty):
        parts.append("node-http on `empty`: " + "; ".join(describe(r) for r in node_empty.itertuples()) + ".")
        ruled = node_empty[node_empty["saturation"].isin(CLIENT_LIMITED)]
        compared = back[(back["server"] == "node-http") & (back["workload"] == "empty")]
        limiting = sorted(set(ruled["client"]) | set(compared["client"]))
        if limiting:
            why = [
                f"{r.client} left node-http's event loop at {r.elu_utilization:.0%} while {r.best_client} "
                f"drove it to {r.best_elu:.0%} and {r.best_req_per_s / r.req_per_s - 1:.0%} more req/s"
                for r in compared.itertuples()
            ] + [f"{r.client} used {r.client_cpu_util:.2f} of its cores" for r in ruled.itertuples()]
            parts.append(
                f"**The bottleneck for node-http on `empty` was the client with {' and '.join(limiting)}**: "
                + "; ".join(why)
                + "."
            )
        else:
            parts.append(
                "**No client was the bottleneck for node-http on `empty`**: each drove its event loop to saturation "
                "or as far as the best client did."
            )
        edge = node_empty[
            ~node_empty["saturation"].isin(CLIENT_LIMITED)
            & (
                (node_empty["elu_utilization"] < EDGE_ELU)
                | (node_empty["client_cpu_util"] >= EDGE_CPU * node_empty["client_cpu_capacity"])
            )
        ]
        if len(edge):
            parts.append(
                "Close to the edge: "
                + "; ".join(
                    f"{r.client} (server ELU {r.elu_utilization:.1%}, client {r.client_cpu_util:.2f} of "
                    f"{r.client_cpu_capacity:g} core(s))"
                    for r in edge.itertuples()
                )
                + f", within a point of the {pct(SERVER_BOUND_ELU)} ELU line or at {EDGE_CPU:.0%} of its cores: "
                "a noisier run could "
                "tip it to client-limited."
            )
    others = back[~((back["server"] == "node-http") & (back["workload"] == "empty"))]
    if len(others):
        parts.append(
            "Elsewhere a client held the server back (another client drove it further, intervals apart) in: "
            + ", ".join(
                f"{r.workload}/{r.server} with {r.client} ({r.req_per_s:,.0f} req/s against "
                f"{r.best_req_per_s:,.0f} with {r.best_client})"
                for r in others.itertuples()
            )
            + "."
        )
    ruled_others = m[
        m["saturation"].isin(CLIENT_LIMITED) & ~((m["server"] == "node-http") & (m["workload"] == "empty"))
    ]
    if len(ruled_others):
        parts.append(
            "Client-bound by CPU: "
            + ", ".join(f"{r.workload}/{r.server} with {r.client}" for r in ruled_others.itertuples())
            + "."
        )
    io = m[m["saturation"].isin(DATABASE_LIMITED)]
    io = io[
        ~io.set_index(["workload", "server", "client"]).index.isin(
            back.set_index(["workload", "server", "client"]).index
        )
    ]
    if len(io):
        parts.append(
            "Neither the server's event loop nor a client was the limit in: "
            + ", ".join(f"{r.workload}/{r.server} with {r.client} ({r.saturation})" for r in io.itertuples())
            + "; there the database, sharing CPUs with the client, set the pace."
        )
    return " ".join(parts)


def cells_table(metrics: pd.DataFrame) -> Table:
    """Every cell: its rounds, req/s with its interval, ELU, CPU per request, the client's CPU and the verdict."""
    m = as_strings(metrics).sort_values(["workload", "server", "client", "stopping_rule", "stop"])
    columns = [
        "workload", "server", "conn", "client", "stop", "runs", "req/s [interval]", "ELU", "us/req ELU",
        "client CPU", "verdict",
    ]  # fmt: skip
    rows = [
        [
            r.workload,
            r.server,
            str(r.connections),
            r.client,
            r.stop,
            str(r.rounds),
            ci(r.req_per_s, r.req_per_s_lo, r.req_per_s_hi),
            f"{r.elu_utilization:.1%}",
            f"{r.us_per_req_elu:.1f}",
            f"{r.client_cpu_util:.2f}",
            r.saturation,
        ]  # fmt: skip
        for r in m.itertuples()
    ]
    return Table(columns, rows, "llrllrrrrrl")


def interval_note(metrics: pd.DataFrame) -> str:
    """What the [lo–hi] after a figure is, at the numbers of runs the cells have."""
    ns = sorted({int(n) for n in metrics["rounds"]})
    return (
        "[lo–hi] after a figure is a distribution-free interval for its median from order statistics, the narrowest "
        f"[x(k), x(n+1-k)] covering at least {pct(CONFIDENCE)}, or min-max with its own lower coverage: "
        f"{'; '.join(describe(n) for n in ns)}. A figure without brackets had one run (no interval) or identical "
        "bounds."
    )


def _range(r) -> str:
    return f"{r['median']:.1f} [{r['lo']:.1f}–{r['hi']:.1f}]" if r["hi"] > r["lo"] else f"{r['median']:.1f}"


def scenario_table(t: pd.DataFrame, score_set: str) -> Table | None:
    """The score table in the seed's shape: per server its score from CPU and from req/s, then each scenario's %."""
    scores = t[(t["kind"] == "score") & (t["score_set"] == score_set)]
    cells = t[(t["kind"] == "cell") & (t["score_set"] == score_set) & (t["basis"] == "cpu")]
    if scores.empty:
        return None
    names = sc.order(cells["cell"])
    cpu = scores[scores["basis"] == "cpu"].set_index("server")
    rps = scores[scores["basis"] == "rps"].set_index("server")
    seed = score_set == sc.SEED_SET
    columns = [
        "server", "score from CPU/req [min–max]", "score from req/s [min–max]",
        *(["seed's published score"] if seed else []), *names,
    ]  # fmt: skip
    rows = []
    for server in cpu.sort_values("median", ascending=False).index:
        c = cells[cells["server"] == server].set_index("cell")["median"]
        row = [server, _range(cpu.loc[server]), _range(rps.loc[server]) if server in rps.index else "n/a"]
        if seed:
            published = sc.SEED_PUBLISHED.get(server)
            row.append(f"{published:.1f}" if published is not None else "not in the seed")
        row += [f"{c[n]:.0f} %" if n in c else "n/a" for n in names]
        rows.append(row)
    return Table(columns, rows, "l" + "r" * (len(columns) - 1))


def scenario_paragraphs(t: pd.DataFrame, score_set: str) -> list[str]:
    """One sentence per server: where it is furthest above and below its own score, and how its two scores differ."""
    out = []
    scores = t[(t["kind"] == "score") & (t["score_set"] == score_set)]
    cpu = scores[scores["basis"] == "cpu"].set_index("server")
    rps = scores[scores["basis"] == "rps"].set_index("server")
    for server in cpu.sort_values("median", ascending=False).index:
        if server == sc.BASELINE:
            continue
        found = sc.furthest(t, server, score_set)
        if found is None:
            continue
        best, best_pct, worst, worst_pct = found
        score = cpu.loc[server, "median"]
        text = (
            f"**{server}** scores {score:.1f} from CPU per request: furthest above that in *{best}* ({best_pct:.0f} % "
            f"of node:http) and furthest below in *{worst}* ({worst_pct:.0f} %)."
        )
        if server in rps.index:
            r = rps.loc[server, "median"]
            gap = r - score
            text += f" From req/s it scores {r:.1f}" + (
                f", {abs(gap):.1f} points {'higher' if gap > 0 else 'lower'}: the two part where a server is not "
                "saturated, since req/s then follows the pace the database or the client sets, not the server's cost."
                if abs(gap) >= 5
                else ", within 5 points of it."
            )
        out.append(text)
    return out


def scenario_sections(t: pd.DataFrame, runs: pd.DataFrame) -> list[Block]:
    """The score sections, one table per score set and, where the experiment ran several, per client and stop."""
    blocks: list[Block] = []
    rounds = int(t["rounds"].max()) if len(t) else 0
    by_client = [(None, t)]
    if t[["client", "stop"]].drop_duplicates().shape[0] > 1:
        # A server has one score per client and stopping rule: each gets its own table (a server's row
        # would otherwise be several rows at once).
        by_client = [(f"{client}, {stop}", g) for (client, stop), g in t.groupby(["client", "stop"])]
    for score_set, title in ((sc.SEED_SET, "The seed's twelve scenarios"), (sc.DATABASE_SET, "The database set")):
        for label, part in by_client:
            blocks += _scenario_section(part, score_set, title if label is None else f"{title}, {label}", rounds)
    return blocks


def _scenario_section(t: pd.DataFrame, score_set: str, title: str, rounds: int) -> list[Block]:
    """One score table with what it is and a sentence per server; nothing where the set was not measured."""
    table = scenario_table(t, score_set)
    if table is None:
        return []
    blocks: list[Block] = [
        Heading(2, f"Score: {title}"),
        Para(
            f"Score: the geometric mean over the set's scenarios of node:http's figure against the server's, "
            f"node:http = 100, higher is better (seed 004's definition, so no single scenario can carry or sink a "
            f"server). *From CPU/req*: node:http's event-loop CPU per request over the server's; *from req/s*: the "
            f"server's req/s over node:http's, the seed's own definition. Each ratio pairs two runs of the same "
            f"round; the figure is the median over {rounds} rounds and [min–max] the range over them, which is not a "
            f"confidence interval (for the median of {rounds}: {describe(rounds)}). The scenario columns are the "
            "CPU/req percentage against node:http."
        ),
    ]
    if score_set == sc.SEED_SET:
        blocks.append(
            Para(
                "*Seed's published score*: seeds/004, from req/s on one 4-core GitHub runner (median of three runs, "
                "15 s per scenario); quoted, not measured here. Set beside ours it compares orders, not values."
            )
        )
    return [*blocks, table, *map(Para, scenario_paragraphs(t, score_set))]


def _ratio(r) -> str:
    if pd.isna(r.ratio):
        return "n/a"
    return f"{r.ratio:.2f}x [{r.ratio_lo:.2f}–{r.ratio_hi:.2f}]" if pd.notna(r.ratio_lo) else f"{r.ratio:.2f}x"


def _preempted(r) -> str:
    return f" ‡{r.preempted_runs}/{r.preempted_runs_compared}" if r.preempted_runs or r.preempted_runs_compared else ""


def _gap(r) -> str:
    if pd.isna(r.pair_gap_min):
        return "n/a"
    return f"{r.pair_gap_min:.1f} / {r.pair_gap_max_min:.1f} min"


def _outcome(r) -> str:
    """A comparison's outcome in the report's words (outcomes.phrase)."""
    margin = getattr(r, "equivalence_margin", outcomes.DEFAULT_MARGIN)
    return outcomes.phrase(r.outcome if isinstance(r.outcome, str) else None, margin)


def version_sections(t: pd.DataFrame, runs: pd.DataFrame) -> list[Block]:
    """The Node.js table (each major against Node.js 20), the framework-major table, and a sentence per server."""
    binaries = runs[["node", "node_version", "node_binary", "node_sha256"]].dropna().astype(str).drop_duplicates()
    blocks: list[Block] = [
        Heading(2, "Versions"),
        Para(
            "Each ratio pairs a run with its partner's run of the same cell and round; the figure is the median over "
            "rounds, in brackets the order-statistic interval for it "
            f"({'; '.join(sorted(set(t['interval'].astype(str))))}). Below 1: the upgrade costs less CPU per "
            "request. *Beyond noise*: the whole interval lies beyond 1 (the A/A twin, the control measured twice per "
            "round on the pipeline's Node.js, is reported as a check, not used as a margin). The load generator runs "
            "on the pipeline's Node.js "
            f"({', '.join(sorted(runs['client_node_version'].dropna().astype(str).unique())) or 'n/a'}) throughout."
        ),
        Para(
            "Binaries: "
            + "; ".join(
                f"{ver.node_label(n)}: {v} ({b}, sha256 {h[:12]}…)"
                for n, v, b, h in sorted(binaries.itertuples(index=False), key=lambda r: (r[0] != "system", r[0]))
            )
            + "."
        ),
    ]
    nodes = t[t["kind"] == "node"]
    if len(nodes):
        majors = sorted(nodes["node"].unique(), key=int)
        ref = nodes["compared_to"].iloc[0]
        rows = []
        for (server, workload, conn), grp in nodes.groupby(["server", "workload", "connections"], sort=True):
            by = {r.node: r for r in grp.itertuples()}
            rows.append(
                [
                    server,
                    workload,
                    str(conn),
                    f"{grp.iloc[0]['us_per_req_compared']:.1f}",
                    *(f"{_ratio(by[m])} {_outcome(by[m])}{_preempted(by[m])}" if m in by else "n/a" for m in majors),
                ]  # fmt: skip
            )
        blocks += [
            Heading(3, f"CPU per request against Node.js {ref}"),
            Table(
                ["server", "workload", "conn", f"us/req on Node.js {ref}", *(f"Node.js {m}" for m in majors)],
                rows,
                "llrr" + "r" * len(majors),
            ),
            Para(
                "Each ratio's outcome (cheaper, costlier, equivalent within the margin, or inconclusive) is decided "
                "from its interval against 1 and the declared margin. ‡ k/m: k of this cell's runs and m of Node.js "
                f"{ref}'s were flagged as disturbed (the server's CPU was taken from it in the window)."
            ),
        ]
    changes = t[t["kind"] == "major"]
    if len(changes):
        rows = []
        for r in changes.itertuples():
            change = f"{ver.MAJOR_NAMES.get(r.compared_to, r.compared_to)} to {ver.MAJOR_NAMES.get(r.server, r.server)}"
            floor = f"±{r.noise_floor * 100:.1f} %" if pd.notna(r.noise_floor) else "n/a"
            rows.append(
                [
                    change,
                    ver.node_label(r.node),
                    r.workload,
                    str(r.connections),
                    f"{r.us_per_req_compared:.1f}",
                    f"{r.us_per_req:.1f}",
                    _ratio(r),
                    f"{r.throughput_ratio:.2f}x",
                    floor,
                    _outcome(r),
                    f"{r.preempted_runs} / {r.preempted_runs_compared}",
                    _gap(r),
                ]  # fmt: skip
            )
        columns = [
            "change", "Node.js", "workload", "conn", "us/req old", "us/req new", "new / old [interval]",
            "req/s new / old", "noise floor", "outcome", "disturbed runs new / old", "pairs apart (median / largest)",
        ]  # fmt: skip
        blocks += [Heading(3, "Framework majors on the same Node.js"), Table(columns, rows, "lllrrrrrrlrr")]
    margin = float(t["equivalence_margin"].iloc[0]) if len(t) else outcomes.DEFAULT_MARGIN
    sentences = list(ver.sentences(t, margin))
    return [*blocks, Heading(3, "In words"), *([Items(sentences)] if sentences else [])]


def ab_sections(t: pd.DataFrame, look: dict | None) -> list[Block]:
    """The A/B target's answer: B's CPU per request over A's per peer group, its outcome, the rounds it took."""
    if t.empty:
        return [Heading(2, "A/B"), Para("A and B were not both measured in any round: no comparison.")]
    a, b = t["a"].iloc[0], t["b"].iloc[0]
    margin = float(t["equivalence_margin"].iloc[0])
    answers = []
    for r in t.itertuples():
        said = outcomes.phrase(r.outcome if isinstance(r.outcome, str) else None, margin)
        answers.append(
            f"**{r.workload} at {r.connections} connections ({r.client}, {r.stop}): B costs {r.ratio:.3f}x A's "
            f"{figures.noun(figures.headline_of(t))} per request ({_bounds(r)}, {said})**: {r.us_per_req_b:.1f} us "
            f"against {r.us_per_req_a:.1f} us; throughput {r.throughput_ratio:.3f}x. {r.pairs} paired rounds "
            f"({r.interval} at a fixed n), half-width ±{r.half_width_log * 100:.1f} % on a log scale."
        )
    coverage = f"{percent(look['coverage_under_stopping'])} %" if look else ""
    out: list[Block] = [
        Heading(2, f"A/B: {b} (B) against {a} (A)"),
        Items(answers),
        Para(
            "Each round measures A and B back to back, A first in odd rounds and B first in even ones (A B B A ...), "
            "so a drift of the machine that is linear over two rounds cancels from the median of the rounds' B / A "
            f"ratios. {' '.join(_ab_order(r) for r in t.itertuples())} "
            "An A/B has no A/A twin, so cheaper or costlier means the interval lies wholly below or above 1; "
            f"equivalent means it lies within ±{margin * 100:.0f} % (config's equivalence_margin, declared before "
            'the data); anything else is inconclusive, which is not "the same". '
            + (
                f"The rounds stopped adaptively: each interval's coverage under the stopping rule is at least "
                f"{coverage} (simulated, docs/statistics.md#adaptive-rounds), not the fixed-n figure."
                if look
                else ""
            )
        ),
    ]
    if look:
        out.append(Para(looks.sentence(look)))
    for r in t.itertuples():
        if r.preempted_rounds:
            what = f"{r.workload} c{r.connections}: {r.preempted_rounds} of {r.pairs} rounds had a run still disturbed"
            if not r.pairs_unpreempted:
                out.append(
                    Para(f"{what}; the answer cannot be checked without them: no round without a disturbed run.")
                )
                continue
            flag = (
                "**more than half the interval's width away: the disturbance changed this answer; rerun on a "
                "quieter machine**"
                if r.preemption_matters
                else "within half the interval's width"
            )
            clean = f"{r.ratio_unpreempted:.3f}x over {r.pairs_unpreempted} rounds"
            out.append(Para(f"{what}; without them the ratio is {clean}, {flag}."))
    for r in t.itertuples():
        if r.cross_session:
            out.append(
                Para(
                    f"**{r.workload} c{r.connections}: {r.cross_session} of {r.pairs} rounds pair runs measured by "
                    "different Snakemake invocations, not side by side**: the drift between them is in the ratio. "
                    "Re-measure both builds (`--forcerun measure_run`) before reading this answer."
                )
            )
    gaps = t["pair_gap_s"].dropna()
    if len(gaps):
        out.append(
            Para(
                f"A pair's two runs started a median of {gaps.median():.0f} s apart (largest "
                f"{t['pair_gap_max_s'].max():.0f} s)."
            )
        )
    return out


def _bounds(r) -> str:
    return "no interval" if pd.isna(r.ratio_lo) else f"{r.ratio_lo:.3f}–{r.ratio_hi:.3f}"


def _ab_order(r) -> str:
    return f"A ran first in {r.a_first_rounds} rounds and B in {r.b_first_rounds} on {r.workload} c{r.connections}."


#: The tables an experiment's report reads beside its runs and metrics, where the experiment has them.
OPTIONAL_TABLES = ("scenarios", "versions", "ab", "latency")


def read_inputs(inputs: Mapping[str, str]) -> dict:
    """blocks()'s tables and look from a job's input files (write_summary and build_index_page read the same)."""
    found = {
        "runs": pd.read_parquet(inputs["runs"]),
        "metrics": pd.read_parquet(inputs["metrics"]),
        "stopping": pd.read_parquet(inputs["stopping"]),
        **{name: pd.read_parquet(inputs[name]) if name in inputs else None for name in OPTIONAL_TABLES},
    }
    found["look"] = json.loads(Path(inputs["look"]).read_text()) if "look" in inputs else None
    return found


def blocks(name: str, description: str, runs: pd.DataFrame, metrics: pd.DataFrame, stopping: pd.DataFrame,
           generated_at: datetime, scenarios: pd.DataFrame | None = None,
           versions: pd.DataFrame | None = None, ab: pd.DataFrame | None = None,
           look: dict | None = None, latency: pd.DataFrame | None = None) -> list[Block]:  # fmt: skip
    """The experiment's report as blocks, from its tables: summary.md and index.html are both written from these."""
    cpu_model = ", ".join(sorted(runs["cpu_model"].astype(str).unique()))
    instrument = instrument_table(runs)  # the calibration server's latency, where the block measured it
    out: list[Block] = [
        Heading(1, f"Experiment: {name}"),
        *([Para(description)] if description else []),
        Para(machine_line(runs)),
        *(ab_sections(ab, look) if ab is not None else []),
        *([Para(looks.sentence(look))] if look and ab is None else []),
        *(scenario_sections(scenarios, runs) if scenarios is not None and len(scenarios) else []),
        *(version_sections(versions, runs) if versions is not None and len(versions) else []),
        *(latency_blocks(latency, runs, instrument) if latency is not None and len(latency) else []),
        *costcurve_blocks(metrics, instrument),
        *instrument_blocks(instrument),
        *sweep_blocks(runs),
        Para(
            "req/s in the tables below is the server's own (requests it received over its ELU window) unless a "
            "column says *reported*, which is the figure the load generator itself prints. Medians over rounds; "
            f"{interval_note(metrics)}"
        ),
        Heading(2, "Cells"),
        cells_table(metrics),
    ]
    if len(stopping):
        out += [
            Heading(2, "Fixed duration against fixed count"),
            Para(
                "*duration req/s* and *count req/s* are what the load generator reported; *penalty* = 1 - count / "
                "duration. *At sustained rate* = requests done / the fixed-duration runs' measured rate (requests "
                "over the run's time); *unaccounted* = took - that; *share* = unaccounted / took."
            ),
            penalty_table(stopping),
            Para(stopping_paragraph(stopping, cpu_model)),
        ]
    sweep = sweep_table(runs)
    if len(sweep):
        out += [Heading(2, "Duration sweep"), Para("req/s as the load generator reported it."), *sweep_section(sweep)]
    if "server_startup_ms" in runs:
        out += server_blocks(runs)
    # An open loop's cells run at a share of capacity, not at the ceiling: they are not compared here.
    closed = metrics[~metrics["client"].astype(str).isin(OPEN_LOOP)]
    if closed["client"].nunique() > 1:
        out += [
            Heading(2, "Load generators"),
            Para(
                "The same cells under each client. *client CPU* is the load generator's own CPU over the run, in "
                "cores, of the cores it can use (its threads, at most its CPUs); "
                f"at {pct(CLIENT_BOUND_CPU)} of those the verdict is client-bound."
            ),
            clients_table(closed),
            Para(bottleneck_paragraph(closed)),
        ]
    return [*out, Para(f"Generated {generated_at.isoformat(timespec='seconds')} from {len(runs)} runs.")]

"""The report's tables of the open loop (latency at a fixed rate) and of each server's start-up and memory."""

import math

import pandas as pd

from nodebench.analysis.latency import P99_LIMIT_MS, crossing_table, crossing_text, server_table
from nodebench.catalogue.calibration import CALIBRATION_SERVER, DELAY_MS, P50_WITHIN_MS, P99_WITHIN_MS
from nodebench.catalogue.thresholds import SUSTAINED_SHARE
from nodebench.render.document import Block, Heading, Para, Table


def _num(value, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def _ci(value, lo, hi, fmt: str) -> str:
    """A median with its interval; an infinite one (an open loop's rounds not sustained: above any value) says so."""
    if value is None or pd.isna(value):
        return "-"
    if math.isinf(value):
        return "not sustained"

    def bound(x):
        return "∞" if math.isinf(x) else format(x, fmt)

    if pd.isna(lo) or pd.isna(hi):
        return format(value, fmt)
    return f"{format(value, fmt)} [{bound(lo)}, {bound(hi)}]"


def server_blocks(runs: pd.DataFrame) -> list[Block]:
    """Per server: start-up time, peak RSS and peak heap, medians over rounds with their intervals."""
    table = server_table(runs)
    if table.empty:
        return []
    rows = [
        [r.server, _ci(r.startup_ms, r.startup_ms_lo, r.startup_ms_hi, ",.0f"),
         _ci(r.rss_peak_mb, r.rss_peak_mb_lo, r.rss_peak_mb_hi, ".1f"),
         _ci(r.heap_used_peak_mb, r.heap_used_peak_mb_lo, r.heap_used_peak_mb_hi, ".1f"), str(r.rounds), r.interval]
        for r in table.itertuples()
    ]  # fmt: skip
    return [
        Heading(2, "Start-up and memory"),
        Para(
            "*start-up*: milliseconds from starting the server's process to the end of its first answer (GET "
            "/__whoami, tried every millisecond), the server alone on its CPU; every server registers all its "
            "routes, 400 of them for `routes-400`, before it listens. *peak RSS* and *peak heap used*: the highest "
            "resident memory and V8 heap in use over the measured window, process.memoryUsage() sampled every "
            "100 ms. Each is the median of a round's runs of the server (every cell it ran), then the median over "
            "rounds with its interval. Memory depends on the cell (connections, payload): the chart and "
            "metrics.parquet give it per cell."
        ),
        Table(
            ["server", "start-up (ms)", "peak RSS (MiB)", "peak heap used (MiB)", "rounds", "interval"], rows, "lrrrrl"
        ),  # fmt: skip
    ]


def arrivals_line(runs: pd.DataFrame) -> str:
    """How the open loop's requests arrived, and how many latencies its percentiles rest on."""
    ol = runs[runs["load_pct"].notna()] if "load_pct" in runs else runs.iloc[0:0]
    if ol.empty:
        return ""
    said = []
    if "openloop_arrivals" in ol:
        kinds = ol["openloop_arrivals"].astype(object).fillna("constant (recorded before arrivals were)")
        counts = kinds.value_counts()
        said.append(
            "Arrivals: "
            + ", ".join(f"{k} in {v} of {len(ol)} runs" for k, v in counts.items())
            + " (poisson: exponential gaps from a PRNG seeded per round, the same stream for every server of the "
            "round, scaled to its rate; constant: one request every 1/rate s, which understates queueing)."
        )
    # The windows whose percentiles are reported: a refused window's are not.
    read = ol[ol["openloop_refused"].isna()] if "openloop_refused" in ol else ol
    if "openloop_timed" in read and read["openloop_timed"].notna().any():
        timed = read["openloop_timed"].dropna().astype(float)
        fewest = int(timed.min())
        said.append(
            f"A reported window's percentiles rest on {int(timed.median()):,} latencies (median; fewest {fewest:,}): "
            f"a p99 on its slowest {fewest // 100:,} at the fewest, a p99.9 on its slowest {fewest // 1000:,}"
            + (", too few to read on its own: read the p99.9 as an order of magnitude" if fewest < 10_000 else "")
            + "."
        )
    return " ".join(said)


def _instrument_row(r) -> list[str]:
    """A latency table's row of the instrument's calibration at one fixed rate."""
    return [
        r.workload, f"{CALIBRATION_SERVER} (the instrument)", f"{r.rate:,} req/s", f"{r.rate:,}",
        _num(r.delivered_share, ".1%"), _ci(r.p50_ms, r.p50_ms_lo, r.p50_ms_hi, ".2f"),
        _ci(r.p90_ms, r.p90_ms_lo, r.p90_ms_hi, ".2f"), _ci(r.p99_ms, r.p99_ms_lo, r.p99_ms_hi, ".2f"),
        _ci(r.p99_9_ms, r.p99_9_ms_lo, r.p99_9_ms_hi, ".2f"), _num(r.lag_p99_ms, ".2f"),
        f"{r.not_sustained} of {r.rounds}" if r.not_sustained else "0",
        f"{r.refused} of {r.rounds}" if r.refused else "0", "-",
    ]  # fmt: skip


def instrument_blocks(instrument: pd.DataFrame) -> list[Block]:
    """The instrument's own latency at each fixed rate, and the rounds outside the calibration's bounds."""
    if instrument is None or instrument.empty:
        return []
    rows = [
        [r.workload, f"{r.rate:,}", _ci(r.p50_ms, r.p50_ms_lo, r.p50_ms_hi, ".2f"),
         _ci(r.p99_ms, r.p99_ms_lo, r.p99_ms_hi, ".2f"), _ci(r.p99_9_ms, r.p99_9_ms_lo, r.p99_9_ms_hi, ".2f"),
         _num(r.spread_p99_ms, ".2f"), f"{r.off_rounds} of {r.rounds - r.refused}", f"{r.refused} of {r.rounds}",
         r.interval]
        for r in instrument.itertuples()
    ]  # fmt: skip
    off = [f"{r.workload} at {r.rate:,} req/s: {r.off_detail}" for r in instrument.itertuples() if r.off_detail]
    measured = int((instrument["rounds"] - instrument["refused"]).sum())
    return [
        Heading(2, "The instrument in every round"),
        Para(
            f"`{CALIBRATION_SERVER}` (servers/fixed-delay.js) does each workload's work and answers exactly "
            f"{DELAY_MS:g} ms after its request arrived (the delay spun, not a timer): measured by the same open loop, "
            "at the same rates, in the same rounds and peer groups and with the same pinning as the servers, its "
            f"latency above {DELAY_MS:g} ms is the instrument's own (the client, the kernel, the loopback, this "
            "machine's wake-ups), on a workload that queries with the database's time beyond the delay too (a query "
            "that takes longer is answered late; the database shares the client's CPU). *instrument's p99 spread*: "
            "the width of its p99's interval over rounds, how far the instrument alone moves a p99 at that rate "
            "from round to round (its constant part adds to every server alike and cancels from a difference); two "
            "servers' p99s at that rate closer than it are not called different. A round calibrates the instrument "
            "when its "
            f"p50 is within {P50_WITHIN_MS:g} ms of the delay and its p99 within {P99_WITHIN_MS:g} ms; *outside*: "
            "the rounds that did not (or did not sustain the rate), of those measured. Its cost per request is its "
            "spin's, so it is in no cost table."
        ),
        Table(
            [
                "workload",
                "rate (req/s)",
                "p50",
                "p99",
                "p99.9",
                "instrument's p99 spread",
                "outside",
                "refused",
                "interval",
            ],
            rows,
            "lrrrrrrrl",
        ),  # fmt: skip
        Para(
            f"Outside the bounds, {int(instrument['off_rounds'].sum())} of {measured} rounds: " + "; ".join(off) + "."
            if off
            else f"Every one of the {measured} rounds measured was within the bounds."
        ),
    ]


def latency_blocks(
    latency: pd.DataFrame, runs: pd.DataFrame | None = None, instrument: pd.DataFrame | None = None
) -> list[Block]:
    """The open loop's table (server x load, the instrument's calibration at its fixed rates beside the servers) and
    where each server's p99 crosses P99_LIMIT_MS (from the runs: each round's own crossing, median over rounds with
    its interval; without the runs that table is empty)."""
    if latency.empty:
        return []
    rows = []
    for r in latency.sort_values(["workload", "server", "load_pct"]).itertuples():
        refused = f"{r.refused} of {r.rounds}" if r.refused else "0"
        short = f"{r.not_sustained} of {r.rounds}" if r.not_sustained else "0"
        rows.append([
            r.workload, r.server, f"{r.load_pct} %", _num(r.target_rate, ",.0f"), _num(r.delivered_share, ".1%"),
            _ci(r.p50_ms, r.p50_ms_lo, r.p50_ms_hi, ".2f"), _ci(r.p90_ms, r.p90_ms_lo, r.p90_ms_hi, ".2f"),
            _ci(r.p99_ms, r.p99_ms_lo, r.p99_ms_hi, ".2f"), _ci(r.p99_9_ms, r.p99_9_ms_lo, r.p99_9_ms_hi, ".2f"),
            _num(r.lag_p99_ms, ".2f"), short, refused, _num(r.capacity_gap_s_max, ".0f"),
        ])  # fmt: skip
    if instrument is not None:
        # Each workload's servers, then the instrument on that workload (a stable sort keeps each group's order).
        rows += [_instrument_row(r) for r in instrument.itertuples()]
        rows.sort(key=lambda row: (row[0], row[1].endswith("(the instrument)")))
    cross = crossing_table(runs) if runs is not None else pd.DataFrame()
    cross_rows = [
        [r.workload, r.server, str(r.connections), crossing_text(r, "pct"), crossing_text(r, "rate"), r.interval,
         "" if pd.isna(r.unknown_loads) else r.unknown_loads]
        for r in cross.itertuples()
    ]  # fmt: skip
    reasons = sorted({str(x) for x in latency["refused_reason"].dropna()})
    short_reasons = sorted({str(x) for x in latency["not_sustained_reason"].dropna()})
    n = int(latency["rounds"].sum())
    refused_n, short_n = int(latency["refused"].sum()), int(latency["not_sustained"].sum())
    blocks: list[Block] = [
        Heading(2, "Latency at a fixed arrival rate"),
        *([Para(line)] if runs is not None and (line := arrivals_line(runs)) else []),
        Para(
            "The open loop (servers/loadgen/openloop.js) sends each request at its scheduled time, whatever the "
            "server is doing, and times it from that moment, so a stall counts for every request due during it "
            "(no coordinated omission). Its rate is *load* % of the server's own capacity: the req/s wrk measured for "
            "the same workload, server and connections in the same round, just before (*gap*: the most seconds "
            "between the two runs' starts). *delivered*: answers per second of the window over the rate asked for. "
            "Latencies in ms, median over rounds [interval]; *lag p99*: how late the client itself sent, p99 "
            "(median over rounds). The window's first second (at most a fifth of it) is sent and counted but not "
            "timed: after the idle pause before the window this machine runs slow for a few hundred ms. A round is "
            "*not sustained* where the system did not keep up with the rate over the window (under "
            f"{SUSTAINED_SHARE:.0%} of it delivered, more requests in flight on average than connections, or "
            "requests never sent): that is a result, censored: its latencies are at least those measured, so its "
            "medians count it as above any value, and a load not sustained in most rounds reads *not sustained*. "
            "A round is *refused*, this machine could not measure it, where the client's own lateness moved a "
            "percentile by more than 10 % of it or it could not keep the schedule: its latencies are not "
            "reported (its other figures stand) and it is counted, never dropped. The "
            f"*{CALIBRATION_SERVER} (the instrument)* rows are a server that answers after exactly {DELAY_MS:g} ms, at "
            "fixed rates across the servers' (*The instrument in every round*, below): what the instrument alone "
            "reads at that rate. These latencies are not "
            "comparable with the closed loops' (wrk, autocannon), which are taken at full load (docs/openloop.md)."
        ),
        Para(
            f"Of the servers' {n} rounds: {short_n} not sustained ({short_n / n:.0%}), {refused_n} refused "
            f"({refused_n / n:.0%}), "
            f"{n - short_n - refused_n} measured and sustained ({(n - short_n - refused_n) / n:.0%})."
        ),
        Table(
            [
                "workload",
                "server",
                "load",
                "rate (req/s)",
                "delivered",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "lag p99",
                "not sustained",
                "refused",
                "gap (s)",
            ],
            rows,
            "lllrrrrrrrrrr",
        ),  # fmt: skip
        Heading(3, f"Where p99 crosses {P99_LIMIT_MS:g} ms"),
        Para(
            f"Each round's own crossing, then the median over rounds with its interval: in a round, the load at "
            f"which p99 reaches {P99_LIMIT_MS:g} ms, read on a straight line in log p99 between the highest load "
            "below it and the first above (p99 grows about exponentially towards capacity), in % of the server's "
            "capacity and in req/s. A load not sustained in a round is above the limit, and the crossing is put at "
            "it (the latest it can be); a refused load says nothing (listed) and only widens the bracket. *below* "
            "a load: already above at the lowest load measured (not refused); *above* one: not crossed by the "
            "highest load measured."
        ),
        Table(
            [
                "workload",
                "server",
                "conn",
                f"p99 reaches {P99_LIMIT_MS:g} ms at (% of capacity)",
                "at (req/s)",
                "interval",
                "refused loads",
            ],
            cross_rows,
            "llrrrll",
        ),  # fmt: skip
    ]
    if short_reasons:
        blocks.append(
            Para("Why not sustained: " + "; ".join(short_reasons[:6]) + ("; ..." if len(short_reasons) > 6 else ""))
        )
    if reasons:
        blocks.append(Para("Why the client refused: " + "; ".join(reasons[:6]) + ("; ..." if len(reasons) > 6 else "")))
    return blocks

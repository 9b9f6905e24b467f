"""reports/claims/index.md and index.html: the claims ledger, written from one list of blocks."""

import html

import pandas as pd

from nodebench.analysis import claims as C
from nodebench.render.document import Block, Heading, Items, Para, Table, to_html, to_markdown
from nodebench.render.page import STYLE

TITLE = "The claims ledger: published framework benchmarks, re-measured"
ROW_CLASS = {
    C.REPRODUCED: "reproduced",
    C.INCONCLUSIVE: "inconclusive",
    C.INVALID: "invalid",
    C.NOT_REPRODUCED: "refuted",
    C.UNTESTABLE: "untestable",
    C.PENDING: "pending",
}
LEDGER_STYLE = """
td { white-space: normal; vertical-align: top; max-width: 28em; }
tr.reproduced td:nth-child(4) { color: #070; font-weight: bold; }
tr.inconclusive td:nth-child(4) { color: #a60; font-weight: bold; }
tr.invalid td:nth-child(4) { color: #555; font-weight: bold; }
tr.refuted td:nth-child(4) { color: #a00; font-weight: bold; }
tr.untestable td, tr.pending td { color: #777; }
"""


def _published(row) -> str:
    text = row["published_text"] if row["published_text"] not in ("", "n/a") else ""
    cond = f" *({row['published_conditions']})*" if row["published_conditions"] else ""
    return (text or "-") + cond


def _ours(row) -> str:
    if not row["ours_text"]:
        return "-"
    where = f"[{row['scope']}](../{row['scope']}/index.html)" if row["scope"] else ""
    interval = f", {row['interval']}" if row["interval"] else ""
    cond = f" *({row['ours_conditions']})*" if row["ours_conditions"] else ""
    gap = ""
    if pd.notna(row.get("gap_median_s")):
        apart, largest = row["gap_median_s"], row["gap_max_s"]
        gap = f"; its runs of a round started {apart:.0f} s apart (median; largest {largest:.0f} s)"
    return f"**{row['ours_text']}** ({where}{interval}{gap}){cond}"


def _restates(row) -> str:
    return f"; restates {row['restates']}, counted once" if row.get("restates") else ""


def _family(ledger: pd.DataFrame) -> str:
    """One sentence: how many of the decided verdicts could be wrong at their intervals' stated coverage."""
    decided, miss = C.family(ledger)
    if not decided:
        return "No verdict is decided yet, so none can be wrong."
    return (
        f"Of the {decided} decided verdicts (reproduced or not reproduced), about {miss:.1f} could be wrong at "
        "their intervals' stated coverage: the sum over them of 1 - coverage, the expected number of intervals "
        "that miss the truth (an upper bound on wrong verdicts, for intervals that miss independently)."
    )


def blocks(ledger: pd.DataFrame, seeds: dict[str, str] | None = None) -> list[Block]:
    """The ledger as blocks: what the verdicts mean, the tally, then one table per seed."""

    restates = ledger["restates"].fillna("").astype(str) if "restates" in ledger else pd.Series("", index=ledger.index)

    def tally(rows) -> str:
        # A claim that restates another is counted once, under the one it restates.
        counts = rows[restates.loc[rows.index] == ""]["verdict"].value_counts()
        return ", ".join(f"{counts[v]} {v}" for v in C.VERDICTS if v in counts) or "none"

    # Checks of the harness and the model (claims that cannot fail by construction) stand apart from everything.
    check = ledger["check"].fillna("").astype(str) != "" if "check" in ledger else pd.Series(False, index=ledger.index)
    checks, ledger, restates = ledger[check], ledger[~check], restates[~check]
    derived = ledger["derived"].astype(bool) if "derived" in ledger else pd.Series(False, index=ledger.index)
    once = restates == ""
    out: list[Block] = [
        Para(
            f"{int((~derived & once).sum())} published claims from {ledger['seed'].nunique()} seeds, each beside our "
            f"measurement of it: {tally(ledger[~derived])}"
            + (
                f" ({int((~derived & ~once).sum())} more rows restate one of them and are counted once)"
                if (~derived & ~once).any()
                else ""
            )  # fmt: skip
            + f". Beside them, {int((derived & once).sum())} checks of our own "
            f"reading of a claim (a prediction from the measured service time, the seed's claim at today's versions "
            f"or at its run length), marked *our reading*: {tally(ledger[derived])}. Every verdict is computed from "
            "the data by the rule in its claim's entry in `claims.yaml`. " + _family(ledger)
        ),
        Items(
            [
                "**Ours** is the claim's statistic computed round by round from runs of the same round, then its "
                "median over rounds with the order-statistic interval for that median; n and the interval's "
                "coverage are printed beside it (n=3 is min-max and covers 75 %, n=5 93.75 %, n=10 2nd-9th 97.85 %).",
                f"**{C.REPRODUCED}**: the whole interval inside the claim's band (the tolerance rule: ±5 points "
                "for a figure in percent, ±10 % on a log scale for any other; for a claim of no difference, the "
                "band around no effect), or on the claimed side of its limit. "
                f"**{C.NOT_REPRODUCED}**: the whole interval outside it (the reason says whether it lies on the "
                f"published side of no effect or the opposite one). **{C.INCONCLUSIVE}**: the interval holds both "
                f"the claim and its negation, or there is no interval: the data cannot decide, which is not a "
                f"refutation. **{C.INVALID}**: most rounds had a cell below its ceiling where the claim is about the "
                f"framework at its ceiling, or runs without the figure it reads (a disturbed run is measured again, "
                f"and kept, never a reason to leave a round out). "
                f"**{C.UNTESTABLE}** and **{C.PENDING}** say why.",
                "Published figures are from other machines; only ratios and shapes transfer, so most claims are "
                "compared as ratios measured in one run, paired in time. The conditions under each figure say what "
                "each side measured, on which machine and when.",
            ]
        ),
    ]
    # The seeds' own claims, one table per seed: the "Published" column holds only what a seed published.
    for seed, rows in ledger[~derived].groupby("seed", sort=True):
        out.append(Heading(2, f"Seed {seed}" + (f": {seeds[seed]}" if seeds and seed in seeds else "")))
        out.append(
            Table(
                ["Claim", "Published", "Ours", "Verdict", "Why"],
                [
                    [f"*{r['quote']}* ({r['id']}{_restates(r)})", _published(r), _ours(r), r["verdict"], r["reason"]]
                    for _, r in rows.iterrows()
                ],
                "lllll",
                [ROW_CLASS.get(r["verdict"], "") for _, r in rows.iterrows()],
            )
        )
    # Our own readings apart, so that their figures (our predictions, today's versions, other conditions) are never
    # read as a seed's, and their verdicts never counted in the seeds' tally.
    if derived.any():
        rows = ledger[derived]
        out.append(Heading(2, "Our own readings of the seeds' claims"))
        out.append(
            Para(
                "Each row tests a figure of ours, not a seed's: a prediction from the measured service time, or a "
                "seed's claim at today's versions or under other conditions (each row says which). The quote is the "
                "seed sentence it reads; the seed's own claim, where it has one, is in the seed's table above."
            )
        )
        out.append(
            Table(
                ["Reading of", "Seed", "Figure tested (ours)", "Ours", "Verdict", "Why"],
                [
                    [f"*{r['quote']}* ({r['id']})", r["seed"], _published(r), _ours(r), r["verdict"], r["reason"]]
                    for _, r in rows.iterrows()
                ],
                "llllll",
                [ROW_CLASS.get(r["verdict"], "") for _, r in rows.iterrows()],
            )
        )
    if len(checks):
        out.append(Heading(2, "Checks of the harness and the model"))
        counts = checks["verdict"].value_counts()
        said = ", ".join(f"{counts[v]} {v}" for v in C.VERDICTS if v in counts)
        out.append(
            Para(
                f"{len(checks)} sentences of the seeds that cannot fail by construction (every server forms the same "
                "queue, an arithmetic identity, a fixture's own behaviour), each scored as a check that the harness "
                f"and the model read them as they must ({C.REPRODUCED}: the check held): {said}. None is counted "
                "among the claims above."
            )
        )
        out.append(
            Table(
                ["Sentence", "Why it cannot fail", "Ours", "Check", "Why"],
                [
                    [f"*{r['quote']}* ({r['id']})", r["check"], _ours(r), r["verdict"], r["reason"]]
                    for _, r in checks.iterrows()
                ],
                "lllll",
                [ROW_CLASS.get(r["verdict"], "") for _, r in checks.iterrows()],
            )
        )
    return out


def markdown(ledger: pd.DataFrame, seeds=None) -> str:
    return f"# {TITLE}\n\n" + to_markdown(blocks(ledger, seeds))


def page(ledger: pd.DataFrame, seeds=None) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(TITLE)}</title>
<style>{STYLE}{LEDGER_STYLE}</style>
</head><body>
<h1>{html.escape(TITLE)}</h1>
{to_html(blocks(ledger, seeds))}
<p>The same ledger as Markdown: <a href="index.md">index.md</a>; the data: <code>data/claims/ledger.parquet</code>;
the claims: <code>claims.yaml</code>. The main matrix: <a href="../overall/index.html">overall</a>.</p>
</body></html>
"""

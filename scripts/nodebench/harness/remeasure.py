"""Measure again, never drop: a disturbed run is measured again at once, and the least disturbed is used.

A run is disturbed when the server lost more of its window to other tasks on its CPU, or to the
hypervisor, than DISTURBED_STOLEN_SHARE (stolen_share, measured from outside the server by
harness/hostsample.disturbance). Dropping such runs afterwards would select on the outcome; measuring
again in the same job keeps the run's place in its block, next to the runs it is paired with. Every
measurement is kept in the record (`measurements`), the one used is the least disturbed, and a run still
disturbed after its attempts is kept and flagged (`disturbed` stays true).
"""

from collections.abc import Callable

#: The figures of each measurement kept in the used record's `measurements` list.
KEPT = ("started_at", "stolen_share", "disturbed", "us_per_req_elu", "us_per_req_oncpu", "req_per_s",
        "elu_utilization")  # fmt: skip


def cleanest(records: list[dict]) -> int:
    """Index of the least disturbed record: the lowest stolen_share (unknown counts as worst), the first on a tie."""
    return min(range(len(records)), key=lambda i: (records[i].get("stolen_share") is None,
                                                   records[i].get("stolen_share") or 0.0, i))  # fmt: skip


def measure_until_clean(measure: Callable[[], dict], attempts: int, progress: Callable[[str], None]) -> dict:
    """Call measure() until a record is not disturbed, at most 1 + attempts times; the cleanest record, which
    carries every measurement's figures (measurements), how many were made and which was used."""
    records = [measure()]
    while records[-1].get("disturbed") and len(records) <= attempts:
        last = records[-1]
        progress(
            f"disturbed: the server lost {last['stolen_share']:.1%} of its window to other tasks; measuring again "
            f"({len(records)} of {attempts} more)"
        )
        records.append(measure())
    used = cleanest(records)
    chosen = dict(records[used])
    chosen["measurements"] = [{k: r.get(k) for k in KEPT} for r in records]
    chosen["measurement_count"] = len(records)
    chosen["measurement_used"] = used + 1
    if chosen.get("disturbed"):
        progress(f"still disturbed after {len(records)} measurements: kept and flagged ({chosen['stolen_share']:.1%})")
    return chosen

"""How far along an invocation is: the workflow writes the plan of the runs it is about to measure once, and each
measurement job reads it when it is done to say which round of how many it measured, how many of the invocation's
runs are done and about how long the rest will take.

The remaining time is the plan's own estimate for the runs not yet recorded (warm-up + window + job time each, as
the workflow printed before any job), scaled by the pace observed so far: the time since the first of this
invocation's runs began over what the plan estimated for the runs now recorded. Provisioning before the first run
is not counted; a disturbed run measured again makes the pace slower, as it should.

The plan names each record's round and its cell's rounds (the workflow reads them from the paths, runs.Run); this
module never parses a record's path. It is left out of the measure jobs' code inputs (targets.NOT_MEASUREMENT_CODE):
what it prints never reaches a record, so editing it re-measures nothing.
"""

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

KEEP_DAYS = 7


def plan_path(state_dir: str | Path, session: str) -> Path:
    return Path(state_dir) / f"plan-{re.sub(r'[^A-Za-z0-9_.-]', '_', session)}.json"


def write(
    path: Path, rounds: Mapping[str, Sequence[int]], seconds: dict[str, float], capped: bool, now: float | None = None
) -> None:
    """The plan: every record the invocation asked for with (its round, the rounds planned for its cell), and the
    estimated seconds of each one still to measure (`seconds`). `capped`: adaptive blocks planned to their last look
    (an upper bound).
    Plans older than a week are removed: one file per invocation would otherwise pile up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time() if now is None else now
    for old in path.parent.glob("plan-*.json"):
        try:
            if now - old.stat().st_mtime > KEEP_DAYS * 86400:
                old.unlink()
        except OSError:
            pass
    body = {"written_at": now, "capped": capped, "rounds": {r: list(rounds[r]) for r in sorted(rounds)}}
    body["to_measure"] = seconds
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(body) + "\n")
    os.replace(tmp, path)


def read(path: str | Path | None) -> dict | None:
    """The plan, or None where there is none to read (a job run outside a planned invocation)."""
    if not path:
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def spoken(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def standing(
    record: str,
    plan: dict,
    now: float | None = None,
    mtime: Callable[[str], float | None] | None = None,
) -> tuple[str, str]:
    """(round k of n, where the invocation stands): e.g. ("round 2 of 6", "14 of 180 runs of this invocation done,
    4.5 min measuring, about 52 min left"). A record is done when its file exists; `mtime` gives a file's
    modification time or None where it does not exist."""
    now = time.time() if now is None else now

    def _mtime(p):
        try:
            return os.stat(p).st_mtime
        except OSError:
            return None

    mtime = mtime or _mtime
    # A record outside the plan (or a plan written before it named rounds) says nothing; the job names its round.
    found = plan.get("rounds", {}).get(record)
    round_part = f"round {found[0]} of {found[1]}" if found else ""
    seconds = plan.get("to_measure", {})
    if record not in seconds:
        return round_part, ""
    done = {p: t for p in seconds if (t := mtime(p)) is not None and t >= plan.get("written_at", 0)}
    if not done:
        return round_part, ""
    first = min(done, key=done.get)
    # The first run's file is written at its end: it began about its own estimate earlier.
    measuring = max(now - done[first] + seconds[first], 1e-9)
    estimated_done = sum(seconds[p] for p in done)
    left = sum(t for p, t in seconds.items() if p not in done)
    pace = measuring / estimated_done if estimated_done > 0 else 1.0
    part = f"{len(done)} of {len(seconds)} runs of this invocation done, {spoken(measuring)} measuring"
    if left > 0:
        part += f", {'at most ' if plan.get('capped') else ''}about {spoken(left * pace)} left"
    return round_part, part

"""A measurement job's attempts: which failures are worth a second one, and what the earlier ones said.

Snakemake retries a failed measurement job once (`retries:` in workflow/rules/measure.smk) and
removes the job's log before each attempt. So a failed attempt saves what its log said next to
it (<log>.failed.json); the next attempt writes that at the top of its own log and removes it,
and, when the earlier failure was not transient (a failed check, a full disk), fails at once
without measuring again: a check that failed once must not be retried into a pass.
"""

import errno
import json
from pathlib import Path

#: OSErrors that another attempt would meet again: the user has to fix them.
_LASTING = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def transient(exc: BaseException) -> bool:
    """May another attempt succeed? The error's own word (errors.py) if it has one; an unknown error: yes."""
    flag = getattr(exc, "transient", None)
    if flag is not None:
        return bool(flag)
    if isinstance(exc, OSError):
        return exc.errno not in _LASTING
    return not isinstance(exc, KeyboardInterrupt)


def saved_path(log: Path) -> Path:
    return Path(log).with_name(Path(log).name + ".failed.json")


def earlier(log: Path, attempt: int) -> list[dict]:
    """The failed attempts before this one, oldest first; a first attempt drops any an earlier run left."""
    path = saved_path(log)
    if attempt <= 1:
        path.unlink(missing_ok=True)
        return []
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return saved if isinstance(saved, list) else []


def save(log: Path, attempt: int, error: str, is_transient: bool, before: list[dict]) -> None:
    """Keep this failed attempt (with its log) for the next attempt, which Snakemake starts with an empty log."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        text = ""
    this = {"attempt": attempt, "error": error, "transient": is_transient, "log": text}
    saved_path(log).write_text(json.dumps([*before, this], indent=1) + "\n")


def forget(log: Path) -> None:
    saved_path(log).unlink(missing_ok=True)


def preamble(before: list[dict]) -> str:
    """The earlier attempts' logs, each line marked with its attempt, for the top of this attempt's log."""
    out = []
    for a in before:
        verdict = "transient, retried" if a["transient"] else "not transient, not retried"
        out.append(f"attempt {a['attempt']} | failed ({verdict}): {a['error']}")
        out += [f"attempt {a['attempt']} | {line}" for line in a["log"].splitlines()]
    return "\n".join(out) + "\n" if out else ""

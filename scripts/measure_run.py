"""measure_run: measure one cell and write its run record (nodebench.harness.measure does the work).

The measure_run rule runs it as a shell command; its arguments are read by nodebench.harness.job.
"""

import json
import os
import sys
from contextlib import suppress
from datetime import datetime
from pathlib import Path

from nodebench.harness import attempts, job, procs, remeasure, storage
from nodebench.harness.errors import DatabaseError, PortInUseError, RunError, StorageError, database_error
from nodebench.harness.measure import measure
from nodebench.harness.progress import read as read_plan
from nodebench.harness.progress import standing as plan_standing
from nodebench.harness.record import check_record


def where_we_are(
    label: str, out: str, round_: int, position: int | None, size: int | None, environ, now=None, mtime=None
) -> str:
    """One line after each measurement: which run of its round it was, which round of how many, and where this
    Snakemake invocation stands: runs done of its plan, time measuring and an estimate of the time left
    (nodebench.harness.progress). Without a plan (a job run by hand), the time since the invocation began (its
    session id starts with it: targets.job_environment)."""
    plan = read_plan(environ.get("NODEBENCH_PLAN"))
    rounds, standing = plan_standing(str(out), plan, now and now.timestamp(), mtime) if plan else ("", "")
    rounds = rounds or f"round {round_}"
    place = f"run {position} of {size} in {rounds}" if position and size else rounds
    line = f"measured {label}: {place}"
    if standing:
        return f"{line}; {standing}"
    try:
        began = datetime.strptime(str(environ.get("NODEBENCH_SESSION", ""))[:15], "%Y%m%dT%H%M%S")
    except ValueError:
        return line
    minutes = ((now or datetime.now()) - began).total_seconds() / 60
    return f"{line}; {minutes:.1f} min since this invocation began"


def main(argv: list[str] | None = None) -> None:
    procs.unwind_on_signals()
    j = job.parse(argv)
    cell = job.cell(j)
    server_node = job.server_node(j)
    # The pipeline's own Node.js, where it runs the autocannon driver.
    pipeline_node = json.loads(Path(j.inputs["pipeline_node"]).read_text()) if "pipeline_node" in j.inputs else None
    paths = job.paths(j)
    out, log_path = j.out, j.log
    # Snakemake counts a job's attempts from 1 (workflow/rules/measure.smk hands the number over).
    attempt = j.attempt
    before = attempts.earlier(log_path, attempt)
    try:
        logf = open(log_path, "w")
    except OSError as e:
        print(f"[measure] FAILED {cell.label()}: {storage.describe(log_path, e)}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    with logf:
        logf.write(attempts.preamble(before))

        def log(msg):
            with suppress(OSError):  # a full disk: the message still reaches Snakemake's output
                print(f"{datetime.now().isoformat(timespec='milliseconds')} {msg}", file=logf, flush=True)

        def progress(msg):
            log(msg)
            print(f"[measure] {msg}", file=sys.stderr, flush=True)

        def fail(e, message=None):
            message = message or str(e)
            transient = attempts.transient(e)
            if procs.stopped_by_user():
                # Ctrl-C reaches the job's children too: what failed first may be one of them, not the signal.
                transient, message = False, f"{message} (the job was being stopped by signal {procs.stopping()})"
            verdict = "transient" if transient else "not transient, not retried"
            log(f"FAILED (attempt {attempt}, {verdict}): {message}")
            print(f"[measure] FAILED {cell.label()} (attempt {attempt}, {verdict}): {message}", file=sys.stderr)
            with suppress(OSError):
                attempts.save(log_path, attempt, message, transient, before)
            raise SystemExit(1) from None

        try:
            if before and not before[-1]["transient"]:
                earlier = f"attempt {before[-1]['attempt']} failed, and that is not retried: {before[-1]['error']}"
                fail(RunError(), earlier)
            try:
                # Before anything is measured: a read-only or full data/ fails here, naming the directory.
                storage.probe(out.parent)
                opts = job.options(j, server_node)
                record = remeasure.measure_until_clean(
                    lambda: measure(cell, opts, paths, log, progress), opts.remeasure_attempts, progress
                )
                record |= {
                    "node": j.options["runtime"],
                    "node_binary": server_node["binary"],
                    "node_sha256": server_node["sha256"],
                    "node_package": server_node["package"],
                    "client_node_version": pipeline_node["version"] if pipeline_node else None,
                    "round_position": j.round_position,
                    "round_size": j.round_size,
                    "session": os.environ.get("NODEBENCH_SESSION"),
                    "attempt": attempt,
                    "retried_after": before[-1]["error"] if before else None,
                }
                check_record(record, paths.run_schema)
                storage.write_atomically(out, json.dumps(record, indent=1) + "\n")
                # The record is written: saying where the invocation stands is no reason to lose it (a failing job's
                # record is removed), and progress.py is no input of this job.
                try:
                    line = where_we_are(cell.label(), out, j.round, j.round_position, j.round_size, os.environ)
                except Exception as e:
                    line = f"measured {cell.label()} (where it stands could not be said: {type(e).__name__}: {e})"
                progress(line)
            except (RunError, DatabaseError, PortInUseError, StorageError) as e:
                fail(e)
            except Exception as e:
                psycopg = sys.modules.get("psycopg")
                if psycopg is not None and isinstance(e, psycopg.Error):
                    # The job's own PostgreSQL shut down under it: only a stop does that (a user's server may restart).
                    fail(database_error(e, own_cluster=not (j.options.get("database") or {}).get("dsn")))
                again = attempts.transient(e) and not procs.stopped_by_user()
                verdict = "transient" if again else "not transient, not retried"
                log(f"FAILED (attempt {attempt}, {verdict}): {type(e).__name__}: {e}")
                with suppress(OSError):
                    attempts.save(log_path, attempt, f"{type(e).__name__}: {e}", again, before)
                raise
        except KeyboardInterrupt:
            # Stopped by a user (Ctrl-C, a closed terminal): saved as not retried, since Snakemake may still start
            # its retry, which must not measure on after the user stopped the run. A SIGTERM (Snakemake, a
            # scheduler's time limit) saves nothing, as before: its retry may measure.
            if procs.stopped_by_user():
                why = f"stopped by signal {procs.stopping()} (Ctrl-C or a closed terminal)"
                log(f"STOPPED (attempt {attempt}, not transient, not retried): {why}")
                with suppress(OSError):
                    attempts.save(log_path, attempt, why, False, before)
            raise
    attempts.forget(log_path)


if __name__ == "__main__":
    main()

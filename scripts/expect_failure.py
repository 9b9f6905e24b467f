"""expect_failure: run a cell expected to fail and write what the harness reported as its outcome.

Seed 003's failure modes (a middleware that forgets next(), an async handler that throws) are
demonstrations that the harness reports rather than hangs. Such a cell runs exactly as a
measurement (nodebench.harness.measure); a failed check (RunError) is its outcome, and so is an
answer after all (the record's figures, cut to what the outcome needs). A failure that is the
harness's own (the database, a port in use, storage, a server that never started) fails the job,
as it would a measurement.
"""

import json
import sys
from datetime import UTC, datetime

from nodebench.harness import job, procs, storage
from nodebench.harness.errors import DatabaseError, PortInUseError, RunError, StartError, StorageError
from nodebench.harness.measure import measure

#: Of a run record, what the outcome of a cell that answered keeps.
KEPT = ("requests", "req_per_s", "status_counts", "non2xx", "timeouts", "errors", "us_per_req_elu", "server_exit_code")


def main(argv: list[str] | None = None) -> None:
    procs.unwind_on_signals()
    # A cell expected to fail runs once, as round 1 (its rule passes round 1).
    j = job.parse(argv)
    cell, paths = job.cell(j), job.paths(j)
    opts = job.options(j, job.server_node(j))
    outcome = {
        "workload": j.workload,
        "server": j.server,
        "connections": j.connections,
        "client": j.client,
        "stop": j.stop,
        "started_at": datetime.now(UTC).isoformat(),
    }
    with open(j.log, "w") as logf:

        def log(msg):
            print(f"{datetime.now().isoformat(timespec='milliseconds')} {msg}", file=logf, flush=True)

        def progress(msg):
            log(msg)
            print(f"[expect-failure] {msg}", file=sys.stderr, flush=True)

        try:
            record = measure(cell, opts, paths, log, progress)
        except StartError as e:
            progress(f"FAILED {cell.label()}: the server or load generator did not start: {e}")
            raise SystemExit(1) from None
        except RunError as e:
            progress(f"{cell.label()}: failed as a cell expected to fail may: {e}")
            outcome |= {"outcome": "failed", "check": str(e)}
        except (DatabaseError, PortInUseError, StorageError) as e:
            progress(f"FAILED {cell.label()}: {e}")
            raise SystemExit(1) from None
        else:
            answered = f"{record['requests']:,} requests, status {record['status_counts']}"
            progress(f"{cell.label()}: answered after all: {answered}")
            outcome |= {"outcome": "answered", "check": None} | {k: record.get(k) for k in KEPT}
        outcome["finished_at"] = datetime.now(UTC).isoformat()
    storage.write_atomically(j.out, json.dumps(outcome, indent=1) + "\n")


if __name__ == "__main__":
    main()

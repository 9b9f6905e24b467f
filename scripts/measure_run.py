"""measure_run: measure one cell and write its run record (nodebench.harness.measure does the work)."""

import json
import os
import sys
from datetime import datetime
from pathlib import Path

from nodebench import plan
from nodebench.catalogue.clients import Stop
from nodebench.harness import procs
from nodebench.harness.errors import DatabaseError, PortInUseError, RunError
from nodebench.harness.measure import Cell, Options, Paths, measure
from nodebench.harness.record import check_record


def main(sm) -> None:
    procs.unwind_on_signals()
    wc, p, i = sm.wildcards, sm.params, sm.input
    # The DSN from config: params are stored in .snakemake/metadata, so they hold it without its password.
    database = {**p.database, "dsn": sm.config["database"]["dsn"] or ""}
    cell = Cell(
        wc.server, wc.workload, int(wc.connections), int(wc.rep), wc.loadgen, Stop.parse(wc.stop),
        plan.server_file(wc.server, sm.config),
    )  # fmt: skip
    opts = Options(
        float(p.warmup_s), int(p.pool_size), int(p.server_port), database, str(p.scratch_dir), str(p.node),
        bool(p.allow_shared_cpu),
    )  # fmt: skip
    paths = Paths(
        server_file=Path(i.server).resolve(),
        client_file=Path(i.client_file) if "client_file" in i.keys() else None,
        lockfile=Path(i.lockfile),
        answer_fixture=Path(i.fixture) if "fixture" in i.keys() else None,
        template=Path(i.template) if "template" in i.keys() else None,
        run_schema=Path(i.run_schema),
    )
    out = Path(sm.output.record)
    with open(sm.log[0], "w") as logf:

        def log(msg):
            print(f"{datetime.now().isoformat(timespec='milliseconds')} {msg}", file=logf, flush=True)

        def progress(msg):
            log(msg)
            print(f"[measure] {msg}", file=sys.stderr, flush=True)

        def fail(e):
            log(f"error: {e}")
            print(f"[measure] FAILED {cell.label()}: {e}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None

        try:
            record = measure(cell, opts, paths, log, progress)
            position, size = plan.Plan(sm.config).place(
                wc.workload, wc.server, wc.connections, wc.loadgen, wc.stop, wc.rep
            )
            record |= {"round_position": position, "round_size": size, "session": os.environ.get("NODEBENCH_SESSION")}
            check_record(record, paths.run_schema)
        except (RunError, DatabaseError, PortInUseError) as e:
            fail(e)
        except Exception as e:
            psycopg = sys.modules.get("psycopg")
            if psycopg is not None and isinstance(e, psycopg.Error):
                fail(DatabaseError(f"database error: {e}"))
            raise
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(out)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

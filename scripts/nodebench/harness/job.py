"""What a measurement job (scripts/measure_run.py, scripts/expect_failure.py) hands the harness.

Both read the same Snakemake job object the same way: the cell from the wildcards, the files
from the inputs, the options from the params; one place, so a cell expected to fail runs
exactly as a measurement.
"""

import json
from pathlib import Path

from nodebench import plan
from nodebench.catalogue.clients import Stop
from nodebench.harness import nodejs
from nodebench.harness.measure import Cell, Options, Paths


def cell(sm, rep: int) -> Cell:
    wc = sm.wildcards
    return Cell(
        wc.server, wc.workload, int(wc.connections), rep, wc.loadgen, Stop.parse(wc.stop),
        plan.server_file(wc.server, sm.config),
    )  # fmt: skip


def server_node(sm) -> dict:
    """The server's Node.js as its probe or install job described it."""
    return json.loads(Path(sm.input.server_node).read_text())


def paths(sm) -> Paths:
    i = sm.input
    return Paths(
        server_file=Path(i.server).resolve(),
        client_file=Path(i.client_file) if "client_file" in i.keys() else None,
        lockfile=Path(i.lockfile),
        answer_fixture=Path(i.fixture) if "fixture" in i.keys() else None,
        template=Path(i.template) if "template" in i.keys() else None,
        run_schema=Path(i.run_schema),
    )


def options(sm, node: dict) -> Options:
    """The harness's options; checks that the server's Node.js binary runs (RunError if not)."""
    p, i = sm.params, sm.input
    # The DSN from config: params are stored in .snakemake/metadata, so they hold it without its password.
    database = {**p.database, "dsn": sm.config["database"]["dsn"] or ""}
    # An installed major's binary is an input (a storage provider stages it); the pipeline's own is where it was found.
    binary = Path(i.server_binary) if "server_binary" in i.keys() else Path(node["binary"])
    return Options(
        float(p.warmup_s), int(p.pool_size), int(p.server_port), database, str(p.scratch_dir), str(p.node),
        bool(p.allow_shared_cpu), node, nodejs.usable(node, binary),
    )  # fmt: skip

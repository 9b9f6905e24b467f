"""What a measurement job (scripts/measure_run.py, scripts/expect_failure.py) hands the harness.

Both rules run their entry script as a shell command with the same arguments, so a cell
expected to fail runs exactly as a measurement, and neither job imports Snakemake (a
`script:` job unpickles its job object, which costs about 0.1 s of every measurement).
The arguments are the cell (the rule's wildcards), the job's files (its named inputs,
output and log), its options (the rule's params, as JSON), its attempt and its place in
its round. A database DSN is not an argument, where `ps` would show its password: the
workflow hands it to its jobs in the environment (DSN_VARIABLE).
"""

import argparse
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from nodebench.catalogue.clients import Stop
from nodebench.harness import DSN_VARIABLE, nodejs
from nodebench.harness.errors import RunError
from nodebench.harness.measure import Cell, Options, Paths


@dataclass(frozen=True)
class Job:
    workload: str
    server: str
    connections: int
    client: str
    stop: str
    round: int
    inputs: dict
    options: dict
    out: Path
    log: Path
    attempt: int
    round_position: int | None
    round_size: int | None


def parse(argv: list[str] | None = None) -> Job:
    p = argparse.ArgumentParser(description="Run one measurement cell (the measure_run and expect_failure rules).")
    cell_names = ("WORKLOAD", "SERVER", "CONNECTIONS", "CLIENT", "STOP", "ROUND")
    p.add_argument("--cell", nargs=6, required=True, metavar=cell_names)
    p.add_argument("--inputs", required=True, help="the job's named inputs, as a JSON object")
    p.add_argument("--options", required=True, help="the rule's params, as a JSON object")
    p.add_argument("--out", required=True, type=Path, help="the file to write")
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--attempt", type=int, default=1, help="which attempt of this job, from 1")
    p.add_argument(
        "--place", nargs=2, type=int, default=(0, 0), metavar=("POSITION", "SIZE"), help="in its round; 0 0: none"
    )
    a = p.parse_args(argv)
    workload, server, connections, client, stop, round_ = a.cell
    position, size = a.place
    return Job(
        workload, server, int(connections), client, stop, int(round_), json.loads(a.inputs), json.loads(a.options),
        a.out, a.log, a.attempt, position or None, size or None,
    )  # fmt: skip


def cell(job: Job) -> Cell:
    # The configuration the server name runs is the file it was given (a twin runs its control's).
    configuration = Path(job.inputs["server"]).stem
    return Cell(job.server, job.workload, job.connections, job.round, job.client, Stop.parse(job.stop), configuration)


def server_node(job: Job) -> dict:
    """The server's Node.js as its probe or install job described it."""
    return json.loads(Path(job.inputs["server_node"]).read_text())


def paths(job: Job) -> Paths:
    i = job.inputs
    return Paths(
        server_file=Path(i["server"]).resolve(),
        client_file=Path(i["client_file"]) if "client_file" in i else None,
        lockfile=Path(i["lockfile"]),
        answer_fixture=Path(i["fixture"]) if "fixture" in i else None,
        template=Path(i["template"]) if "template" in i else None,
        run_schema=Path(i["run_schema"]),
        capacity=Path(i["capacity"]) if "capacity" in i else None,
    )


def options(job: Job, node: dict) -> Options:
    """The harness's options; checks that the server's Node.js binary runs (RunError if not)."""
    p, i = job.options, job.inputs
    # params are stored in .snakemake/metadata, so they hold the DSN without its password; the job reads it whole.
    dsn = os.environ.get(DSN_VARIABLE, "")
    if bool(dsn) != bool(p["database"]["dsn"]):
        raise RunError(
            f"config's database.dsn is {p['database']['dsn'] or 'empty'!r} but this job's {DSN_VARIABLE} is "
            f"{'set' if dsn else 'not set'}: run measurement jobs through the workflow, which hands them the DSN"
        )
    database = {**p["database"], "dsn": dsn}
    # An installed major's binary is an input (a storage provider stages it); the pipeline's own is where it was found.
    binary = Path(i["server_binary"]) if "server_binary" in i else Path(node["binary"])
    return Options(
        float(p["warmup_s"]), int(p["pool_size"]), int(p["server_port"]), database, str(p["scratch_dir"]),
        str(p["node"]), bool(p["allow_shared_cpu"]), node, nodejs.usable(node, binary),
        int(p.get("remeasure_attempts", 0)),
        arrivals=(str(p.get("openloop_arrivals", "constant")), arrival_seed(p.get("round_seed", 1), job.round)),
    )  # fmt: skip


def arrival_seed(round_seed: int | str, round_: int) -> int:
    """The open loop's seed in a round: one per round (every server of the round gets the same stream of gaps,
    scaled to its rate, so a paired ratio compares them on the same arrivals), reproducible from config's
    round_seed (an integer or a string, as the schema allows: a string by its CRC-32), and 32 bits as the client's
    PRNG takes."""
    base = round_seed if isinstance(round_seed, int) else zlib.crc32(str(round_seed).encode())
    return (base * 1_000_003 + round_) % 2**32

"""A run's identity, in one place: how a server is named on a Node.js and as the A/A control's twin, and where a
run's record and a failing cell's outcome are written (issue 37: no other module builds or parses these).

A cell is (workload, server, connections, load generator, stop); a run is a cell in one round, measured in a
block (plan.MAIN_BLOCK or an experiment's name). A server's name carries two marks:

- the Node.js it runs on, when not the pipeline's own: `<server>@node<major>` (express@node22), everywhere: its
  record path, the runs table, the metrics and the reports; on the pipeline's own Node.js (config's `node`,
  `system` in `node_versions`) the name is the server's alone, so those cells keep their names and paths;
- the A/A control's second name, `<server>-aa`: the same server file measured again in every round under
  another name (config's `control`), whose ratio to the first is what the machine's noise alone makes of two
  identical servers.

The ground floor: standard library only, no other module of the package.
"""

import re
from typing import NamedTuple

#: The A/A control's twin is the control's name with this suffix: node-http-aa.
TWIN_SUFFIX = "-aa"
#: The Node.js that runs the pipeline (config's `node`), as a `node_versions` entry.
SYSTEM_NODE = "system"
#: Between a server's name and the Node.js major it runs on: express@node22.
RUNTIME_MARK = "@node"

#: A run's record, under the block that measured it.
RECORD = "data/runs/{block}/{workload}/{server}/c{connections}/{client}-{stop}/r{round}.json"
#: A cell expected to fail: what happened when it was run.
FAILURE = "data/failures/{workload}/{server}/c{connections}/{client}-{stop}.json"
#: A run's log, and a cell-expected-to-fail's (the rules' `log:`), beside the same names.
RECORD_LOG = "data/logs/measure/{block}/{workload}/{server}/c{connections}/{client}-{stop}/r{round}.log"
FAILURE_LOG = "data/logs/failures/{workload}/{server}/c{connections}/{client}-{stop}.log"
#: A record's path, read back into its run (the block may hold slashes: compare/<a>/<b>); the last data/runs/ in
#: the path is the project's, so a checkout under a folder of that name reads right.
RECORD_PATH = re.compile(
    r"^(?:.*/)?data/runs/(?P<block>.+)/(?P<workload>[^/]+)/(?P<server>[^/]+)/c(?P<connections>\d+)/"
    r"(?P<client>[a-z_]+)-(?P<stop>[^/]+)/r(?P<round>\d+)\.json$"
)


class Run(NamedTuple):
    """A run: a cell in one round, measured in a block. The plan's key (plan.Plan.runs), what a record's path and a
    measure job's wildcards spell, built here only: connections and round are ints in a Run and text only in a
    path or a wildcard, and the conversion between them is made here (of, from_wildcards, from_path, path)."""

    block: str
    workload: str
    server: str
    connections: int
    client: str
    stop: str
    round: int

    @classmethod
    def of(cls, block, workload, server, connections, client, stop, round_) -> "Run":
        """A run from its seven parts as any layer holds them (connections and round as int or text)."""
        return cls(str(block), str(workload), str(server), int(connections), str(client), str(stop), int(round_))

    @classmethod
    def from_wildcards(cls, wildcards) -> "Run":
        """A measure job's run, from its wildcards (all text)."""
        w = wildcards
        return cls.of(w.block, w.workload, w.server, w.connections, w.client, w.stop, w.round)

    @classmethod
    def from_path(cls, path: str) -> "Run":
        """The run a record's path names; ValueError for a path that is not a record's."""
        found = RECORD_PATH.match(str(path))
        if found is None:
            raise ValueError(f"{path} is not a run record's path ({RECORD})")
        return cls.of(*found.group("block", "workload", "server", "connections", "client", "stop", "round"))

    @property
    def cell(self) -> tuple:
        """(workload, server, connections, client, stop): what the run measures, in any round or block."""
        return self.workload, self.server, self.connections, self.client, self.stop

    @property
    def path(self) -> str:
        """Its record's path."""
        return record_path(*self)


def twin(server: str) -> str:
    """The A/A control's second name for a server."""
    return f"{server}{TWIN_SUFFIX}"


def on_node(server: str, node) -> str:
    """A server's name on a Node.js: itself on the pipeline's own, <server>@node<major> on another."""
    return server if str(node) == SYSTEM_NODE else f"{server}{RUNTIME_MARK}{node}"


def runtime(label: str) -> tuple[str, str]:
    """(server, Node.js) of a cell's server name: ("express", "22") for express@node22, ("express", "system")."""
    server, mark, major = label.partition(RUNTIME_MARK)
    return server, (major if mark else SYSTEM_NODE)


def is_twin(server: str) -> bool:
    """An A/A control's second name, on any Node.js: node-http-aa, node-http-aa@node22."""
    return runtime(server)[0].endswith(TWIN_SUFFIX)


def twin_of(twin_name: str) -> str:
    """The server a twin repeats, on its Node.js: node-http@node22 for node-http-aa@node22."""
    name, node = runtime(twin_name)
    return on_node(name[: -len(TWIN_SUFFIX)], node)


def record_path(block, workload, server, connections, client, stop, round_) -> str:
    """A run's record, under the block that measured it (plan.MAIN_BLOCK or an experiment's name)."""
    cell = {"workload": workload, "server": server, "connections": connections, "client": client, "stop": stop}
    return RECORD.format(block=block, **cell, round=round_)


def failure_path(workload, server, connections, client, stop) -> str:
    """A cell expected to fail: where its outcome is written."""
    return FAILURE.format(workload=workload, server=server, connections=connections, client=client, stop=stop)


def planned_rounds(records) -> dict[str, tuple[int, int]]:
    """Each run record's (round, the highest round among the records of its cell in its block): what a measure job
    prints as 'round k of n' (harness/progress.py reads it from the plan, never from a path)."""
    found = {r: Run.from_path(r) for r in records}
    top: dict[Run, int] = {}
    for run in found.values():
        cell = run._replace(round=0)
        top[cell] = max(top.get(cell, 0), run.round)
    return {r: (run.round, top[run._replace(round=0)]) for r, run in found.items()}


def record_stop(record: str) -> str:
    """The stop of the run a record path names ('5s' of .../wrk-5s/r3.json)."""
    return Run.from_path(record).stop

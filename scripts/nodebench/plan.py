"""The measurement plan: every cell of the main matrix and of each experiment, and the order of rounds.

A cell is (workload, server, connections, load generator, stop); a run is a cell in one
round. Round r measures every cell of its matrix once before any cell of round r + 1
starts. Within a round the cells of one comparison (a peer group: every server of one
workload, connection count, client and stop, the A/A twin among them) run back to back,
the groups and the servers in each shuffled from config's `round_seed`: so slow drift of
the machine lands on all servers alike, and the two runs of a ratio are a few runs apart,
not a round apart.

Snakemake enforces the order through each measurement job's priority (higher runs
first among ready jobs); the job itself reads its round position from here, not from a
rule parameter, so that adding a server or changing the seed re-orders future runs
without marking every existing record as stale.

The A/A control: config's `control` names one server that the main matrix also
measures under a second name, `<server>-aa`, from the same file, in every round. Their
ratio is what the machine's noise alone makes of two identical servers. An experiment's
matrix can name its own `control` the same way.

Node.js versions: config's `node_versions` (and an experiment matrix's own) lists Node.js majors, or
`system` for the Node.js that runs the pipeline (config's `node`, the default). A cell's
server on another Node.js than the pipeline's is named `<server>@node<major>` everywhere:
its record path, the runs table, metrics and reports. So cells on the pipeline's own Node.js
keep their names and paths, and adding a version plans only that version's cells.
"""

import random

from nodebench.catalogue.clients import Stop
from nodebench.catalogue.workloads import WORKLOADS

#: The main matrix's load generator when config does not name one.
MAIN_CLIENT = "wrk"
TWIN_SUFFIX = "-aa"
#: Measurement jobs' priorities count down from here, one per run in plan order; the
#: client probe runs above them all.
FIRST_PRIORITY = 1_000_000
PROBE_PRIORITY = 2 * FIRST_PRIORITY
#: A framework configuration's current major -> its previous major's (servers/<name>.js, npm aliases).
MAJORS = {"express": "express4", "fastify": "fastify4"}
#: The Node.js that runs the pipeline (config's `node`), as a `node_versions` entry.
SYSTEM_NODE = "system"
#: Between a server's name and the Node.js major it runs on: express@node22.
RUNTIME_MARK = "@node"
#: The main matrix's block of runs (an experiment's block is its name).
MAIN_BLOCK = "main"


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


def node_versions(config: dict, matrix: dict | None = None) -> list[str]:
    """The main matrix's Node.js versions (config's `node_versions`), or an experiment matrix's own.

    A matrix without its own runs on the pipeline's Node.js only: the main matrix's list
    (say the preset 20, 22, 24, 26) does not multiply every experiment's cells.
    """
    found = (matrix.get("node_versions") if matrix is not None else config.get("node_versions")) or [SYSTEM_NODE]
    return [str(v) for v in found]


def controls(config: dict) -> set[str]:
    """Every server measured with an A/A twin: the main matrix's control and each matrix's own."""
    found = {control(config)} - {None}
    for experiment in (config.get("experiments") or {}).values():
        found |= {m["control"] for m in experiment["matrices"] if m.get("control") in m["servers"]}
    return found


def with_twin(servers: list[str], control_: str | None) -> list[str]:
    """The servers with the A/A control's twin right after its server."""
    servers = list(servers)
    if control_ and control_ in servers:
        servers.insert(servers.index(control_) + 1, twin(control_))
    return servers


def control(config: dict) -> str | None:
    """The A/A control's server, when config names one that the main matrix measures."""
    c = config.get("control") or None
    return c if c in config["servers"] else None


def main_servers(config: dict) -> list[str]:
    """The main matrix's servers on each of its Node.js versions, the A/A control's twin right after its server."""
    servers = with_twin(config["servers"], control(config))
    return [on_node(s, v) for v in node_versions(config) for s in servers]


def server_file(server: str, config: dict) -> str:
    """The configuration a cell's server name runs: its own file, on any Node.js; a twin runs its control's."""
    name, _ = runtime(server)
    if name.endswith(TWIN_SUFFIX) and name[: -len(TWIN_SUFFIX)] in controls(config):
        return name[: -len(TWIN_SUFFIX)]
    return name


def main_client(config: dict) -> str:
    return config.get("client") or MAIN_CLIENT


def main_stop(config: dict) -> str:
    return Stop("duration", config["duration_s"]).label


def main_cells(config: dict) -> list[tuple]:
    """Every (workload, server, connections, client, stop) of the main matrix, in config order."""
    stop = main_stop(config)
    return [
        (workload, server, connections, main_client(config), stop)
        for workload, spec in config["workloads"].items()
        for server in main_servers(config)
        for connections in spec["connections"]
    ]


def experiment_rounds(config: dict, name: str) -> int:
    return config["experiments"][name].get("rounds", config["rounds"])


def experiment_cells(config: dict, name: str) -> list[tuple]:
    """Every cell of an experiment, each once even where matrices overlap."""
    seen = {}
    for m in config["experiments"][name]["matrices"]:
        stops = [Stop("duration", d).label for d in m.get("durations_s", [])]
        stops += [Stop("count", n).label for n in m.get("counts", [])]
        servers = [on_node(s, v) for v in node_versions(config, m) for s in with_twin(m["servers"], m.get("control"))]
        for workload in m["workloads"]:
            levels = m.get("connections") or WORKLOADS[workload].connections
            for server in servers:
                for connections in levels:
                    for client in m["clients"]:
                        for stop in stops:
                            seen[(workload, server, connections, client, stop)] = None
    return list(seen)


def peer_key(cell: tuple) -> tuple:
    """What the cells of one comparison share: everything but the server (workload, connections, client, stop)."""
    workload, _, connections, client, stop = cell
    return (workload, connections, client, stop)


def blocked(cells: list[tuple], seed, round_: int) -> list[list[tuple]]:
    """One round's order as blocks: each peer group's cells back to back, the groups and each group's servers
    shuffled by a generator seeded with (seed, round).

    A ratio is taken between two servers of one peer group in one round, so its two runs
    are at most one block apart in time (a block is a few runs), however large the round.
    """
    groups: dict[tuple, list[tuple]] = {}
    for cell in sorted(cells, key=lambda c: tuple(map(str, c))):
        groups.setdefault(peer_key(cell), []).append(cell)
    rng = random.Random(f"{seed}/{round_}")
    keys = list(groups)
    rng.shuffle(keys)
    out = []
    for key in keys:
        group = groups[key]
        rng.shuffle(group)
        out.append(group)
    return out


class Plan:
    """Every run of the main matrix and the experiments, numbered in the order they are measured.

    A run belongs to a *block*: the main matrix's (MAIN_BLOCK) or an experiment's (its
    name). runs maps (block, workload, server, connections, client, stop, round) to
    (index, position, size): its place in the whole plan, its place in its block's round
    (from 1) and that round's size. Within a round a block measures each peer group back
    to back (blocked()).

    An experiment measures a peer group in its own block, unless an earlier block (the
    main matrix, then the experiments in config order) measures every server of that group
    in the same peer group and round: then it reads that block's runs, which were measured
    side by side too. So a ratio's two runs always come from one peer group of one block
    and round, never from two scopes' rounds (owner() says which block a scope's run is in).
    """

    def __init__(self, config: dict):
        self.runs: dict[tuple, tuple[int, int, int]] = {}
        #: (block, peer key, round) -> the servers that block measures there.
        self.groups: dict[tuple, set[str]] = {}
        #: (scope block, workload, server, connections, client, stop, round) -> the block that measures it.
        self.owners: dict[tuple, str] = {}
        self.blocks: list[str] = []
        seed = config.get("round_seed", 1)
        self._add(MAIN_BLOCK, main_cells(config), config["rounds"], seed)
        for name in config.get("experiments") or {}:
            self._add(name, experiment_cells(config, name), experiment_rounds(config, name), f"{seed}/{name}")

    def _add(self, block: str, cells: list[tuple], rounds: int, seed) -> None:
        groups: dict[tuple, list[tuple]] = {}
        for cell in cells:
            groups.setdefault(peer_key(cell), []).append(cell)
        for r in range(1, rounds + 1):
            fresh = []
            for key, members in groups.items():
                servers = {c[1] for c in members}
                owner = next((b for b in self.blocks if servers <= self.groups.get((b, key, r), set())), block)
                for c in members:
                    self.owners[(block, *c, r)] = owner
                if owner == block:
                    self.groups[(block, key, r)] = servers
                    fresh += members
            order = [c for group in blocked(fresh, seed, r) for c in group]
            for position, cell in enumerate(order, start=1):
                self.runs[(block, *cell, r)] = (len(self.runs), position, len(order))
        self.blocks.append(block)

    def owner(self, scope_block: str, workload, server, connections, client, stop, round_) -> str:
        """The block whose run a scope's run is: the scope's own, or an earlier block that measured its whole peer
        group in that round."""
        return self.owners[(scope_block, workload, server, int(connections), client, stop, int(round_))]

    def find(self, block, workload, server, connections, client, stop, round_) -> tuple[int, int, int] | None:
        """A run's (index, position, size), from its cell as a path spells it (connections and round as text)."""
        return self.runs.get((block, workload, server, int(connections), client, stop, int(round_)))

    def priority(self, *run) -> int:
        """Earlier in the plan, higher; a run asked for by path outside the plan comes after all of it."""
        found = self.find(*run)
        return FIRST_PRIORITY - (found[0] if found else len(self.runs))

    def place(self, *run) -> tuple[int, int] | tuple[None, None]:
        """(position in its round, round size); (None, None) for a run outside the plan."""
        found = self.find(*run)
        return (found[1], found[2]) if found else (None, None)

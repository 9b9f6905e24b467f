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
`system` for the Node.js that runs the pipeline (config's `node`, the default). How a server on
another Node.js, and the control's twin, are named is runs.py's, as is where a run's record goes.
"""

import random

from nodebench.catalogue.calibration import is_calibration
from nodebench.catalogue.clients import CAPACITY_CLIENT, CLIENTS, Stop
from nodebench.catalogue.workloads import WORKLOADS
from nodebench.runs import SYSTEM_NODE, Run, is_twin, on_node, runtime, twin, twin_of

#: The main matrix's load generator when config does not name one.
MAIN_CLIENT = "wrk"
#: Measurement jobs' priorities count down from here, one per run in plan order; the
#: client probe runs above them all.
FIRST_PRIORITY = 1_000_000
PROBE_PRIORITY = 2 * FIRST_PRIORITY
#: A framework configuration's current major -> its previous major's (servers/<name>.js, npm aliases).
MAJORS = {"express": "express4", "fastify": "fastify4"}
#: The main matrix's block of runs (an experiment's block is its name).
MAIN_BLOCK = "main"


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
    if is_twin(name) and twin_of(name) in controls(config):
        return twin_of(name)
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
    """An experiment's rounds: its own, else the top-level's; an adaptive one's cap (its last look)."""
    looks = block_looks(config, name)
    return looks[-1] if looks else config["experiments"][name].get("rounds", config["rounds"])


def main_rounds(config: dict) -> int:
    """The main matrix's rounds, or its cap (the last look) when its rounds are adaptive."""
    looks = block_looks(config, MAIN_BLOCK)
    return looks[-1] if looks else config["rounds"]


def block_adaptive(config: dict, block: str) -> dict | None:
    """A block's adaptive rounds ({half_width, looks}): config's `adaptive` for the main matrix, an experiment's
    own `adaptive` for its block; None measures the fixed `rounds`."""
    found = config.get("adaptive") if block == MAIN_BLOCK else config["experiments"][block].get("adaptive")
    return found or None


def block_stops_on(config: dict, block: str) -> str | None:
    """What an adaptive block's looks read: "headline" (its headline intervals against its half_width) or "claims"
    (the ledger's claims that read it, each against its own tolerance); None when it is not adaptive."""
    adaptive = block_adaptive(config, block)
    return adaptive.get("stop_on", "headline") if adaptive else None


def block_looks(config: dict, block: str) -> list[int] | None:
    """The rounds after which an adaptive block looks at its intervals, ascending; None when it is not adaptive."""
    adaptive = block_adaptive(config, block)
    return sorted(int(n) for n in adaptive["looks"]) if adaptive else None


def block_name(config: dict, name: str) -> str:
    """The block an experiment measures in, and the folder its records live in: its name, or the A/B target's
    compare/<a>/<b>, so that another pair never takes this pair's records (each A was measured beside its own B)."""
    return config["experiments"][name].get("block", name)


def block_order(config: dict, block: str) -> str:
    """How a block orders each peer group's servers within a round: "shuffled", or "abba" (A/B target)."""
    return "shuffled" if block == MAIN_BLOCK else config["experiments"][block].get("order", "shuffled")


#: The A/B target's block and scope (reports/compare/all) and its config key; until 2026-12-06 both were "ab",
#: which is also ApacheBench's name (RENAMED_KEYS in configcheck, RENAMED_SCOPES in targets say so).
AB = "compare"


def with_ab(config: dict) -> dict:
    """config with its A/B target (config's `compare`) among the experiments, as the workflow plans it."""
    if not config.get(AB):
        return config
    return {**config, "experiments": {**(config.get("experiments") or {}), AB: ab_experiment(config[AB])}}


def ab_experiment(ab: dict) -> dict:
    """config's `compare` (two builds A and B of one server) as the experiment it is measured as.

    A and B are server names, each optionally on a Node.js major (express@node22): each side
    is its own matrix, so that the two may differ in server, in Node.js, or both. Their
    peer group is measured in turns, A B in odd rounds and B A in even ones (order abba),
    so that a drift of the machine that is linear over two rounds cancels from the median.
    """
    matrices = []
    for side in (ab["a"], ab["b"]):
        server, node = runtime(side)
        matrices.append(
            {
                "servers": [server],
                "node_versions": [node],
                "workloads": list(ab["workloads"]),
                "connections": [int(ab["connections"])],
                "clients": [ab["client"]],
                "durations_s": [ab["duration_s"]],
            }
        )
    return {
        "description": (
            f"A/B: does {ab['b']} (B) cost more or less per request than {ab['a']} (A)? Measured in turns, "
            "A B B A, until the interval is known or the cap is reached."
        ),
        "order": "abba",
        "block": f"{AB}/{ab['a']}/{ab['b']}",
        "ab": [ab["a"], ab["b"]],
        "adaptive": {"half_width": ab["half_width"], "looks": list(ab["looks"])},
        "matrices": matrices,
    }


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
                            if not CLIENTS[client].open_loop:
                                seen[(workload, server, connections, client, stop)] = None
                                continue
                            # An open loop's capacity cell first, then one cell per share of it and one per
                            # rate common to every server (the cost curve's ladder), then the capacity again:
                            # the sweep's two capacities say whether its ceiling held while it was measured.
                            # The instrument's calibration has no capacity of its own: its fixed rates alone.
                            calibration = is_calibration(server)
                            if not calibration:
                                seen[capacity_cell((workload, server, connections, client, stop))] = None
                            rule = Stop.parse(stop)
                            shares = [] if calibration else m.get("loads_pct") or []
                            rates = [Stop(rule.rule, rule.value, load_pct=p) for p in shares]
                            rates += [Stop(rule.rule, rule.value, rate=r) for r in m.get("rates_per_s") or []]
                            for rated in rates:
                                seen[(workload, server, connections, client, rated.label)] = None
                            if not calibration:
                                seen[capacity_end_cell((workload, server, connections, client, stop))] = None
    return list(seen)


def capacity_cell(cell: tuple) -> tuple:
    """The closed-loop cell whose req/s, in the same round, an open-loop cell's rate is a share of: the same
    workload, server, connections and duration, with CAPACITY_CLIENT."""
    workload, server, connections, _, stop = cell
    return (workload, server, connections, CAPACITY_CLIENT, Stop.parse(stop).closed.label)


def capacity_end_cell(cell: tuple) -> tuple:
    """The closed-loop cell that measures an open-loop sweep's capacity again after it (stop '<d>s-end')."""
    workload, server, connections, _, stop = cell
    return (workload, server, connections, CAPACITY_CLIENT, Stop.parse(stop).closed.end.label)


def sweep_phase(cell: tuple) -> int:
    """Where a cell's peer group goes in its round: 0 a closed loop (an open-loop sweep's capacity among them),
    1 an open loop at a rate, 2 a capacity measured again after its sweep."""
    stop = Stop.parse(cell[4])
    return 2 if stop.after else 1 if stop.open else 0


def peer_key(cell: tuple) -> tuple:
    """What the cells of one comparison share: everything but the server (workload, connections, client, stop)."""
    workload, _, connections, client, stop = cell
    return (workload, connections, client, stop)


def back_to_back(cells: list[tuple], seed, round_: int) -> list[list[tuple]]:
    """One round's order, a list per peer group: each peer group's cells back to back, the groups and each group's
    servers shuffled by a generator seeded with (seed, round).

    A ratio is taken between two servers of one peer group in one round, so its two runs
    are at most one peer group apart in time (a group is a few runs), however large the round.
    """
    groups: dict[tuple, list[tuple]] = {}
    for cell in sorted(cells, key=lambda c: tuple(map(str, c))):
        groups.setdefault(peer_key(cell), []).append(cell)
    rng = random.Random(f"{seed}/{round_}")
    keys = list(groups)
    rng.shuffle(keys)
    # Shuffled within each phase of an open-loop sweep: capacities, then the rates, then the capacities again
    # (a block without open loops has one phase, so its order is the shuffle's).
    keys.sort(key=lambda k: sweep_phase(groups[k][0]))
    out = []
    for key in keys:
        group = groups[key]
        rng.shuffle(group)
        out.append(group)
    return out


def abba(cells: list[tuple], seed, round_: int) -> list[list[tuple]]:
    """One round of an A/B block: each peer group's servers in their given order (A then B) in odd rounds and
    reversed in even ones, so that over rounds the sequence is A B B A A B ...; the groups shuffled as in
    back_to_back()."""
    groups: dict[tuple, list[tuple]] = {}
    for cell in cells:
        groups.setdefault(peer_key(cell), []).append(cell)
    rng = random.Random(f"{seed}/{round_}")
    keys = sorted(groups, key=lambda k: tuple(map(str, k)))
    rng.shuffle(keys)
    return [groups[k] if round_ % 2 else groups[k][::-1] for k in keys]


class Plan:
    """Every run of the main matrix and the experiments, numbered in the order they are measured.

    A run belongs to a *block*: the main matrix's (MAIN_BLOCK) or an experiment's (its
    name). runs maps (block, workload, server, connections, client, stop, round) to
    (index, position, size): its place in the whole plan, its place in its block's round
    (from 1) and that round's size. Within a round a block measures each peer group back
    to back (back_to_back()).

    An experiment measures its round in its own block, unless an earlier block (the main
    matrix, then the experiments in config order) measures every server of every one of its
    peer groups in that round: then it reads that block's runs, which were measured side by
    side too. So any statistic over one round of a scope, a ratio's two runs or a claim over
    several peer groups, reads runs of one block and round, never of two scopes' rounds
    (as_measured() says which block a scope's run is in).
    """

    def __init__(self, config: dict):
        #: Every run of the plan -> (index in the plan, position in its round, the round's size).
        self.runs: dict[Run, tuple[int, int, int]] = {}
        #: (block, peer key, round) -> the servers that block measures there.
        self.groups: dict[tuple, set[str]] = {}
        #: (scope block, workload, server, connections, client, stop, round) -> the block that measures it.
        self.measuring: dict[tuple, str] = {}
        self.blocks: list[str] = []
        #: block -> its cells, in config order (what the configuration asked of it, read once here).
        self.cells: dict[str, list[tuple]] = {}
        seed = config.get("round_seed", 1)
        self._add(MAIN_BLOCK, main_cells(config), main_rounds(config), seed, block_looks(config, MAIN_BLOCK))
        for name in config.get("experiments") or {}:
            self._add(
                block_name(config, name), experiment_cells(config, name), experiment_rounds(config, name),
                f"{seed}/{name}", block_looks(config, name), block_order(config, name),
            )  # fmt: skip

    def _add(self, block: str, cells: list[tuple], rounds: int, seed, looks=None, order="shuffled") -> None:
        groups: dict[tuple, list[tuple]] = {}
        for cell in cells:
            groups.setdefault(peer_key(cell), []).append(cell)
        # An adaptive block may stop at its first look: only the rounds up to it are sure to be measured, and
        # so only those are lent to later blocks.
        lent = looks[0] if looks else rounds
        for r in range(1, rounds + 1):
            fresh = []
            # A block reads another's round only where that block measured every peer group of this one, whole,
            # in that round: a statistic over two peer groups (a claim's e20 - f20 against e0 - f0) then still
            # reads runs of one block's round, side by side, never one group from here and one from 40 minutes
            # away. An A/B block always measures its own pairs: in its order, not another block's shuffle.
            lenders = self.blocks if order == "shuffled" else []
            lender = next(
                (
                    b
                    for b in lenders
                    if all({c[1] for c in m} <= self.groups.get((b, k, r), set()) for k, m in groups.items())
                ),
                block,
            )
            for key, members in groups.items():
                servers = {c[1] for c in members}
                for c in members:
                    self.measuring[(block, *c, r)] = lender
                if lender == block:
                    if r <= lent:
                        self.groups[(block, key, r)] = servers
                    fresh += members
            ordered = back_to_back(fresh, seed, r) if order == "shuffled" else abba(fresh, seed, r)
            ordered = [c for group in ordered for c in group]
            for position, cell in enumerate(ordered, start=1):
                self.runs[Run(block, *cell, r)] = (len(self.runs), position, len(ordered))
        self.blocks.append(block)
        self.cells[block] = list(cells)

    def as_measured(self, run: Run) -> Run:
        """A scope's run as measured: the same cell and round in the block that measures it, the scope's own or an
        earlier block that measured all of the scope's round (every one of its peer groups, whole)."""
        return run._replace(block=self.measuring[run])

    def find(self, run: Run) -> tuple[int, int, int] | None:
        """A run's (index, position, size); None for a run outside the plan. (Run.of: a run built with its count of
        connections or round as text finds its key all the same.)"""
        return self.runs.get(Run.of(*run))

    def priority(self, run: Run) -> int:
        """Earlier in the plan, higher; a run asked for by path outside the plan comes after all of it."""
        found = self.find(run)
        return FIRST_PRIORITY - (found[0] if found else len(self.runs))

    def place(self, run: Run) -> tuple[int, int] | tuple[None, None]:
        """(position in its round, round size); (None, None) for a run outside the plan."""
        found = self.find(run)
        return (found[1], found[2]) if found else (None, None)

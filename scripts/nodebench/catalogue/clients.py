"""The load generators a cell can use, what each can do, and stopping rules."""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Client:
    """A load generator: the stopping rules it supports, its files, and how to get it."""

    name: str
    rules: tuple[str, ...]
    install: str
    #: The program on PATH, for clients that are system programs (None: from npm).
    program: str | None = None
    #: Files under the repository a cell with this client uses (its inputs, and only its).
    files: tuple[str, ...] = ()
    #: Threads it runs (None: one per client CPU, at most one per connection).
    threads: int | None = 1
    #: It counts an answer whose length differs from the first one as a failure (ab), so it
    #: cannot run a workload whose answers vary in length.
    equal_lengths: bool = False
    #: It sends requests on a schedule at a rate (a share of the server's capacity, Stop.load_pct), not
    #: as fast as the answers come back; it sends GET requests only.
    open_loop: bool = False


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "autocannon",
            ("duration", "count"),
            "installed by npm ci from servers/package-lock.json",
            files=("servers/loadgen/autocannon.js",),
        ),
        # wrk has no fixed-count mode, and its -d takes whole seconds only.
        Client(
            "wrk",
            ("duration",),
            "apt-get install wrk (Debian's wrk package)",
            program="wrk",
            files=("servers/loadgen/wrk-report.lua",),
            threads=None,
        ),
        # ab's -t mode is a time limit on top of a 50,000-request cap, not a duration rule.
        Client(
            "ab",
            ("count",),
            "apt-get install apache2-utils (Debian's package with ab)",
            program="ab",
            equal_lengths=True,
        ),
        # ab as most people run it, without -k: HTTP/1.0, a new connection for every request, which the server
        # closes after its answer (seed 002's `ab -n 10000 -c 100`). Each request then costs the server an accept
        # and a close beside its answer.
        Client(
            "ab_close",
            ("count",),
            "apt-get install apache2-utils (Debian's package with ab)",
            program="ab",
            equal_lengths=True,
        ),
        # The open loop (servers/loadgen/openloop.js, Node.js built-ins only): a fixed rate, each latency
        # counted from the request's scheduled time; its rate is a share of the capacity that the closed loop
        # (CAPACITY_CLIENT) measured for the same cell in the same round (docs/openloop.md).
        Client(
            "openloop",
            ("duration",),
            "servers/loadgen/openloop.js, run by the pipeline's Node.js (nothing to install)",
            files=("servers/loadgen/openloop.js",),
            open_loop=True,
        ),
        # The same open loop, always spinning between sends (openloop naps where it shares its CPUs with the
        # database its workload queries; docs/openloop.md#waiting-between-sends), for measuring the difference.
        Client(
            "openloop_spin",
            ("duration",),
            "servers/loadgen/openloop.js, run by the pipeline's Node.js (nothing to install)",
            files=("servers/loadgen/openloop.js",),
            open_loop=True,
        ),
    )
}
#: The closed loop that measures an open-loop cell's capacity: the same workload, server, connections and
#: duration, in the same round, with this client.
CAPACITY_CLIENT = "wrk"
#: The open-loop clients, by name.
OPEN_LOOP = frozenset(c.name for c in CLIENTS.values() if c.open_loop)
#: Clients that are system programs, by name: the workflow probes for them before measuring.
PROGRAMS = {c.name: c.program for c in CLIENTS.values() if c.program}


@dataclass(frozen=True)
class Stop:
    """How a measured run ends: after `value` seconds (duration) or `value` requests (count); for an open
    loop, also the rate it sends at: a percentage of the server's capacity (load_pct), or a rate in requests per
    second common to every server (rate), never both."""

    rule: str
    value: float
    load_pct: int | None = None
    rate: int | None = None
    #: A closed loop's capacity measured again after its open-loop sweep (label '5s-end'): the sweep's two
    #: capacities, before and after, say whether the server's ceiling held while the sweep measured it.
    after: bool = False

    @property
    def label(self) -> str:
        """The path segment: '10s', '100000req', '5s-at50' (5 s at 50 % of capacity), '5s-r2000' (5 s at
        2,000 req/s) or '5s-end' (the capacity again after the sweep)."""
        base = f"{self.value:g}s" if self.rule == "duration" else f"{int(self.value)}req"
        if self.after:
            return f"{base}-end"
        if self.rate is not None:
            return f"{base}-r{self.rate}"
        return base if self.load_pct is None else f"{base}-at{self.load_pct}"

    @property
    def open(self) -> bool:
        """An open loop's rule: it sends at a rate (a share of capacity or a fixed one)."""
        return self.load_pct is not None or self.rate is not None

    @property
    def closed(self) -> "Stop":
        """The same stopping rule without a rate: the capacity cell's."""
        return Stop(self.rule, self.value)

    @property
    def end(self) -> "Stop":
        """The same stopping rule as the capacity measured again after the sweep."""
        return Stop(self.rule, self.value, after=True)

    @classmethod
    def parse(cls, label: str) -> "Stop":
        found = re.fullmatch(r"(?:(\d+)req|(\d+(?:\.\d+)?)s)(?:-at(\d+)|-r(\d+)|(-end))?", label)
        if not found:
            raise ValueError(
                f"not a stopping rule: {label!r} (expected e.g. 10s, 100000req, 5s-at50, 5s-r2000 or 5s-end)"
            )
        count, seconds, load, rate, end = found.groups()
        load_pct = int(load) if load else None
        rate_ = int(rate) if rate else None
        if count:
            return cls("count", int(count), load_pct, rate_, bool(end))
        return cls("duration", float(seconds), load_pct, rate_, bool(end))


def problems(client: str, rules: dict, workloads=()) -> list[str]:
    """Why a client cannot run the stopping rules {rule: [values]} or the workloads (catalogue entries); empty
    when it can."""
    if client not in CLIENTS:
        return [f"load generator {client!r} is unknown; available: {', '.join(CLIENTS)}"]
    found = []
    if CLIENTS[client].equal_lengths:
        varying = [w.name for w in workloads if w.answer_varies]
        if varying:
            found.append(
                f"{client} counts answers of different lengths as failures, and workload {', '.join(varying)} "
                "answers a new id each time; use wrk or autocannon for it"
            )
    if CLIENTS[client].open_loop:
        posts = [w.name for w in workloads if w.method != "GET"]
        if posts:
            found.append(
                f"{client} sends GET requests only, and workload {', '.join(posts)} is a {workloads[0].method}"
            )
    supported = CLIENTS[client].rules
    for rule, values in rules.items():
        if values and rule not in supported:
            found.append(
                f"{client} cannot stop after a fixed {rule} ({values}); it supports only: {' or '.join(supported)}"
            )
    if client == "wrk":
        fractional = [v for v in rules.get("duration", []) if float(v) != int(v)]
        if fractional:
            found.append(f"wrk takes whole seconds only, not durations {fractional}")
    return found


def parse_version(client: str, text: str) -> str:
    """'wrk debian/4.1.0-3+b2 [epoll] ...' -> 'debian/4.1.0-3+b2'; 'This is ApacheBench, Version 2.3 ...' -> '2.3'."""
    found = re.search(r"^wrk (\S+)" if client == "wrk" else r"Version (\S+)", text, re.MULTILINE)
    return found.group(1) if found else "unknown"

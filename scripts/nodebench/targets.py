"""Every file the workflow makes, by name, and which of them each target needs: pure functions of the config.

The rule files (workflow/rules/*.smk) only declare; their input functions ask this module.
A *scope* is what one report covers: the whole main matrix (`overall`), one workload of
it, or one experiment. Each path is spelt once, here, but a run's record and a failing cell's
outcome, which are runs.py's (a run's identity); a pattern's wildcards are the rules', named as
the config, the records and the tables name them (`round`, `client`, `scope`).
"""

import difflib
import hashlib
import json
import os
import re
import time

from nodebench import claimfile, codegraph, plan
from nodebench.catalogue.baselines import BASELINES
from nodebench.catalogue.calibration import is_calibration
from nodebench.catalogue.clients import CLIENTS, OPEN_LOOP, Stop
from nodebench.catalogue.figures import DEFAULT_HEADLINE, HEADLINE_COLUMN
from nodebench.catalogue.workloads import FRAMEWORK_ONLY, SCORE_BASELINE, WORKLOADS
from nodebench.render.chart_list import CHART_LIST, EXTENSIONS, ScopeFacts, charts_for
from nodebench.runs import SYSTEM_NODE, Run, failure_path, record_stop, runtime, twin

# --- The path table ----------------------------------------------------------------------
TABLE = "data/{scope}/{table}.parquet"
SUMMARY = "reports/{scope}/summary.md"
PAGE = "reports/{scope}/index.html"
MANIFEST = "reports/{scope}/all"
#: A scope's results to take away (nodebench.analysis.results): the answer as CSV and as JSON with its provenance.
RESULTS_CSV = "reports/{scope}/results.csv"
RESULTS_JSON = "reports/{scope}/results.json"
#: The instrument's measured cost on this machine (tests/benchmarks/precision.py --calibrate): read by the main
#: matrix's and each workload's report where it exists, and a report is written again when it changes.
CALIBRATION = "data/calibration/instrument.json"
#: The A/B target's check against config's compare.fail_above, written only when it passes.
AB_CHECK = "reports/{scope}/threshold-check.txt"
CHART = "reports/{scope}/charts/{chart}.{ext}"
DATABASE_INFO = "data/database/database.json"
TEMPLATE = "data/database/template"
NODE_MODULES = "servers/node_modules/.nodebench-installed"
CLIENT_PROBE = "data/toolchain/{client}.json"
SYSTEM_NODE_INFO = "data/toolchain/node-system.json"
NODE_INFO = "data/toolchain/node{major}.json"
NODE_BINARY = "data/toolchain/node{major}/bin/node"
#: What an adaptive block found after its first n rounds: whether to stop (nodebench.analysis.looks).
LOOK = "data/looks/{block}/n{n}.json"
LEDGER = "data/claims/ledger.parquet"
#: The runs of one scope that the ledger's claims read (not the whole scope's).
LEDGER_RUNS = "data/claims/runs/{scope}.parquet"
LEDGER_MARKDOWN = "reports/claims/index.md"
LEDGER_PAGE = "reports/claims/index.html"
LEDGER_MANIFEST = "reports/claims/all"
RUN_SCHEMA = "workflow/schemas/run-record.schema.yaml"
#: The workload catalogue is no measurement's input: a cell's own entry is a parameter of its job, so adding
#: or editing another workload re-measures nothing.
CATALOGUE_MODULE = "scripts/nodebench/catalogue/workloads.py"
#: Modules a measure job imports that cannot change what it measures, left out of its code inputs: the workloads'
#: catalogue (each cell's own entry is a param instead, so editing one workload re-measures only its cells) and the
#: progress line (it prints where the invocation stands; nothing of it reaches a record).
NOT_MEASUREMENT_CODE = {CATALOGUE_MODULE, "scripts/nodebench/harness/progress.py"}
#: The whole matrix's scope name.
OVERALL = "overall"


def chart_path(scope: str, chart: str, ext: str) -> str:
    return CHART.format(scope=scope, chart=chart, ext=ext)


def table_path(scope: str, table: str) -> str:
    return TABLE.format(scope=scope, table=table)


def job_environment(config: dict, scripts: str, environ) -> dict[str, str]:
    """What every job inherits from the Snakemake process.

    PYTHONPATH: this checkout's nodebench first, even when the virtual environment has another checkout's
    installed in editable mode. The DSN: jobs read config's database.dsn from here, not from their command
    line, where `ps` would show its password (an inherited value is never the one they use).
    NODEBENCH_SESSION: one id per Snakemake invocation (kept where set), so records of one round measured by
    different invocations are pairs that cross sessions, and the reports say so.
    """
    from nodebench.harness import DSN_VARIABLE

    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [scripts, environ.get("PYTHONPATH")])),
        DSN_VARIABLE: config["database"]["dsn"] or "",
        "NODEBENCH_SESSION": environ.get("NODEBENCH_SESSION") or f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}",
    }


def job_command(entry: str, rest: str) -> str:
    """A measurement job's command line (nodebench/harness/job.py reads it). A shell command, not a `script:`:
    a script job imports Snakemake to unpickle its job object, about 0.1 s of every measurement before anything
    starts. Its entry script is an input, and so is its code. PYTHON is the interpreter running Snakemake."""
    return (
        (
            "{PYTHON:q} scripts/ENTRY --out {output:q} --log {log:q}"
            " --inputs {params.inputs:q} --options {params.options:q}"
            " --cell {wildcards.workload} {wildcards.server} {wildcards.connections}"
            " {wildcards.client} {wildcards.stop} REST"
        )
        .replace("ENTRY", entry)
        .replace("REST", rest)
    )


def job_inputs(inputs) -> str:
    """The named inputs the harness opens (not the lists that are inputs only to rerun the job), as JSON."""
    return json.dumps({k: inputs[k] for k in inputs.keys() if isinstance(inputs[k], str)}, sort_keys=True)


def code(script: str) -> list[str]:
    """A rule's code inputs: the nodebench modules its entry script imports, transitively."""
    return list(codegraph.python_modules(f"scripts/{script}"))


def chart_code(chart: str) -> list[str]:
    """A chart job's code inputs: plot_chart's and its draw function's module's (imported by name, so
    not among plot_chart's imports), so that editing one chart's module redraws only the charts it draws."""
    drawn_by = CHART_LIST[chart].draw_file()
    return sorted({*code("plot_chart.py"), drawn_by, *codegraph.python_modules(drawn_by)})


class Targets:
    """What the workflow plans for one configuration: cells, scopes, each scope's files and charts."""

    def __init__(self, config: dict):
        self.config = config
        self.experiments: dict = config.get("experiments") or {}
        self.workloads = list(config["workloads"])
        self.scopes = [OVERALL, *self.workloads, *self.experiments]
        self.plan = plan.Plan(config)
        self.embedded = not config["database"].get("dsn")
        #: The figure the cost ratios, the looks and the reports read (config's headline).
        self.headline = config.get("headline", DEFAULT_HEADLINE)
        #: block -> the rounds an adaptive block stopped at. The workflow sets it to read its looks (checkpoints);
        #: without it, an adaptive block is planned at its cap.
        self.stopped_at = None
        #: The ledger's claims (claimfile.ledger_claims), which a block whose looks read the claims stops on. The
        #: workflow sets it once it has resolved them against this configuration's cells.
        self.claims = None
        #: experiment -> the block it measures in (its name; compare/<a>/<b> for the A/B target), and back.
        self.block_names = {name: plan.block_name(config, name) for name in self.experiments}
        self.experiment_of = {block: name for name, block in self.block_names.items()}

    # --- cells and runs ------------------------------------------------------------------
    def main_runs(self, rounds: int | None = None) -> list[tuple]:
        """Every (workload, server, connections, client, stop, round) of the main matrix (its cap when adaptive)."""
        rounds = rounds or plan.main_rounds(self.config)
        return [(*cell, r) for cell in self.plan.cells[plan.MAIN_BLOCK] for r in range(1, rounds + 1)]

    def experiment_runs(self, name: str, rounds: int | None = None) -> list[tuple]:
        """Every run of an experiment, each once even where matrices overlap (its cap when adaptive)."""
        rounds = rounds or plan.experiment_rounds(self.config, name)
        return [(*cell, r) for cell in self.plan.cells[self.block_names[name]] for r in range(1, rounds + 1)]

    # --- adaptive rounds -----------------------------------------------------------------
    def block_of(self, scope: str) -> str:
        """The block whose rounds a scope reports: an experiment's own, else the main matrix's."""
        return self.block_names.get(scope, plan.MAIN_BLOCK)

    def _sweeps(self) -> dict:
        """(block, workload, server, connections, round) -> the (client, stop) of each open-loop run that block
        measures there, built once."""
        if getattr(self, "_sweep_index", None) is None:
            index: dict[tuple, list] = {}
            for block, workload, server, connections, client, stop, round_ in self.plan.runs:
                if Stop.parse(stop).open:
                    index.setdefault((block, workload, server, connections, round_), []).append((client, stop))
            self._sweep_index = index
        return self._sweep_index

    def _entry(self, block: str) -> str:
        """The config entry of a block: MAIN_BLOCK, or the experiment that measures in it."""
        return self.experiment_of.get(block, plan.MAIN_BLOCK)

    def looks(self, block: str) -> list[int] | None:
        return plan.block_looks(self.config, self._entry(block))

    def adaptive(self, block: str) -> dict | None:
        return plan.block_adaptive(self.config, self._entry(block))

    def stops_on(self, block: str) -> str | None:
        """What an adaptive block's looks read: "headline" or "claims"; None for a block of fixed rounds."""
        return plan.block_stops_on(self.config, self._entry(block))

    def block_claims(self, block: str) -> list[dict]:
        """The ledger's claims a block's looks read (stop_on: claims): those that read runs, of a scope this block
        measures. An empty list stops the block at its first look."""
        if self.claims is None:
            raise ValueError(f"the looks of {block} read the ledger's claims, and none were given (Targets.claims)")
        return [c for c in self.claims if claimfile.reads_runs(c) and self.block_of(c["scope"]) == block]

    def claims_digest(self, block: str) -> str | None:
        """What a claim block's look was made for: its claims, as a digest (a look made for others is stale)."""
        if self.stops_on(block) != "claims":
            return None
        text = json.dumps(self.block_claims(block), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def ab_pair(self, block: str) -> list[str] | None:
        """The A/B target's [a, b] for its block; None for any other block."""
        return self.experiments.get(self._entry(block), {}).get("ab")

    def rounds(self, block: str) -> int:
        """How many rounds a block's scopes report: its fixed rounds, or where its looks stopped it."""
        if self.looks(block) and self.stopped_at is not None:
            return self.stopped_at(block)
        entry = self._entry(block)
        return plan.main_rounds(self.config) if entry == plan.MAIN_BLOCK else plan.experiment_rounds(self.config, entry)

    def look_path(self, block: str, n: int) -> str:
        return LOOK.format(block=block, n=n)

    def look_records(self, block: str, n: int) -> list[str]:
        """The records an adaptive block's look after n rounds reads, rounds 1 to n: the block's scope's; where the
        looks read the claims, every cell of each peer group a claim reads a cell of (a round's peer group is measured
        back to back, so the experiment's own pairs are never split by the looks), and no other."""
        if self.stops_on(block) == "claims":
            return sorted({p for c in self.block_claims(block) for p in self._claim_paths(c, n, peers=True)})
        return self._records(OVERALL if block == plan.MAIN_BLOCK else self._entry(block), n)

    def look_inputs(self, block: str, n: int) -> list[str]:
        """Every file a look is made from: its records, the run schema and its code (the look rule's inputs)."""
        return [*self.look_records(block, n), RUN_SCHEMA, *code("look.py")]

    def adaptive_blocks(self) -> dict:
        """Per adaptive block: (looks, what a look is made for (its target and the headline figure), the path of
        look n, the inputs of look n, its products), for recovery.drop_stale_looks."""
        return {
            block: (
                self.looks(block),
                {
                    "half_width_target": self.adaptive(block).get("half_width")
                    if self.stops_on(block) == "headline"
                    else None,
                    HEADLINE_COLUMN: self.headline,
                    **({"claims_digest": self.claims_digest(block)} if self.stops_on(block) == "claims" else {}),
                },
                lambda n, b=block: self.look_path(b, n),
                lambda n, b=block: self.look_inputs(b, n),
                self.block_products(block),
            )
            for block in [plan.MAIN_BLOCK, *self.block_names.values()]
            if self.looks(block)
        }

    def block_products(self, block: str) -> list[str]:
        """What is made from the rounds a block stopped at: each of its scopes' runs table, summary, page and
        manifest (reports/all among them for the main matrix), and the ledger's runs of those scopes and its
        manifest (the ledger reads the rounds the block stopped at too)."""
        scopes = [OVERALL, *self.workloads] if block == plan.MAIN_BLOCK else [self._entry(block)]
        found = ["reports/all"] if block == plan.MAIN_BLOCK else []
        for scope in scopes:
            found += [table_path(scope, "runs"), SUMMARY.format(scope=scope), PAGE.format(scope=scope)]
            found += [MANIFEST.format(scope=scope), LEDGER_RUNS.format(scope=scope)]
        return [*found, LEDGER_MANIFEST]

    def is_ab(self, scope: str) -> bool:
        """The A/B target's scope: two builds of one server measured in turns (config's `compare`)."""
        return scope in self.experiments and "ab" in self.experiments[scope]

    def failure_cells(self, name: str) -> list[tuple]:
        """An experiment's cells expected to fail (its `failures`), each once: (workload, server, connections,
        client, stop)."""
        failures = self.experiments.get(name, {}).get("failures") or []
        if not failures:
            return []
        return plan.experiment_cells({"experiments": {name: {"matrices": failures}}}, name)

    def failure_paths(self, scopes) -> list[str]:
        """The outcome files of the scopes' cells expected to fail, each once, sorted."""
        return sorted({failure_path(*c) for s in scopes for c in self.failure_cells(s)})

    def all_runs(self) -> list[tuple]:
        return [*self.main_runs(), *(run for e in self.experiments for run in self.experiment_runs(e))]

    def all_failure_cells(self) -> list[tuple]:
        return [c for e in self.experiments for c in self.failure_cells(e)]

    def scope_cells(self, scope: str) -> list[tuple] | None:
        """A scope's planned cells (workload, server, connections, client, stop); None for no such scope."""
        if scope == OVERALL:
            return list(self.plan.cells[plan.MAIN_BLOCK])
        if scope in self.experiments:
            return list(self.plan.cells[self.block_names[scope]])
        return None

    # --- a measurement job ---------------------------------------------------------------
    def cell_inputs(self, workload: str, server: str, client_name: str) -> dict:
        """A cell's files only: its server and what that server loads, its workload's and its client's files."""
        server_file = f"servers/{plan.server_file(server, self.config)}.js"
        client = CLIENTS[client_name]
        inputs = {
            "server": server_file,
            "server_files": list(codegraph.js_files(server_file)),
            "lockfile": "servers/package-lock.json",
            "node_modules": NODE_MODULES,
            "database": DATABASE_INFO,
            "run_schema": RUN_SCHEMA,
            "entry": "scripts/measure_run.py",
            "code": [m for m in code("measure_run.py") if m not in NOT_MEASUREMENT_CODE],
        }
        fixture = WORKLOADS[workload].answer_fixture
        if fixture:
            inputs["fixture"] = f"servers/fixtures/{fixture}"
        if client.files:
            inputs["client_file"] = client.files[0]
            inputs["client_files"] = [
                f for path in client.files if path.endswith(".js") for f in codegraph.js_files(path)
            ]
        if self.embedded:
            inputs["template"] = TEMPLATE
        if client.program:
            inputs["client_probe"] = CLIENT_PROBE.format(client=client_name)
        # The server's Node.js: the pipeline's own as described, or an installed major's binary and description.
        # The pipeline's own also where it runs the client (autocannon's driver), so that a change of it
        # re-measures only the cells it runs in.
        _, node = runtime(server)
        if node == SYSTEM_NODE:
            inputs["server_node"] = SYSTEM_NODE_INFO
        else:
            inputs["server_node"] = NODE_INFO.format(major=node)
            inputs["server_binary"] = NODE_BINARY.format(major=node)
        if node == SYSTEM_NODE or client.program is None:
            inputs["pipeline_node"] = SYSTEM_NODE_INFO
        return inputs

    def measure_inputs(self, run: Run) -> dict:
        """A measure job's files: its cell's (cell_inputs) and what its place in the plan makes it wait for.

        An open loop's capacity run, a capacity measured again after its sweep the sweep's runs; in the A/B
        target's block, also the other build's server files (partner_files): a change to either build re-measures
        both, so that every round's A and B are still measured side by side."""
        inputs = self.cell_inputs(run.workload, run.server, run.client)
        if CLIENTS[run.client].open_loop and not is_calibration(run.server):
            # Its rate is a share of the req/s its closed-loop cell measured in the same round (that run's record), or a
            # fixed rate measured beside that capacity (its record gives the curve's top).
            cell = plan.capacity_cell(run.cell)
            inputs["capacity"] = self.plan.as_measured(Run(run.block, *cell, run.round)).path
        if Stop.parse(run.stop).after:
            # The capacity measured again after its sweep: after every open-loop run of it, whatever the order
            # the scheduler would otherwise choose (its records are inputs; nothing is read from them).
            key = (run.block, run.workload, run.server, run.connections, run.round)
            inputs["sweep"] = [run._replace(client=c, stop=stop).path for c, stop in self._sweeps().get(key, [])]
        pair = self.ab_pair(run.block)
        if pair and run.server in pair:
            other = pair[1 - pair.index(run.server)]
            other_file = f"servers/{plan.server_file(other, self.config)}.js"
            inputs["partner_files"] = [other_file, *codegraph.js_files(other_file)]
        return inputs

    def failure_inputs(self, workload: str, server: str, client_name: str) -> dict:
        """A cell expected to fail takes what its measurement would, and its own entry script's code."""
        return self.cell_inputs(workload, server, client_name) | {
            "entry": "scripts/expect_failure.py",
            "code": [m for m in code("expect_failure.py") if m not in NOT_MEASUREMENT_CODE],
        }

    def public_dsn(self) -> str:
        """database.dsn without its password: params are kept in .snakemake/metadata, so jobs read the DSN from
        the environment."""
        dsn = self.config["database"]["dsn"]
        if not dsn:
            return ""
        from nodebench.harness.database import redacted_dsn

        return redacted_dsn(dsn)

    def database_params(self) -> dict:
        """The database settings a measurement depends on (the DSN without its password)."""
        db = self.config["database"]
        return {"dsn": self.public_dsn(), "run_as": db["run_as"], "settings": db["settings"]}

    def job_options(self, server: str, client: str = "") -> str:
        """The measurement's options as JSON: config's keys it depends on and the server's Node.js label; for
        the open loop, its arrivals and the seed they come from (only there: changing them re-measures its cells
        alone)."""
        c = self.config
        arrivals = (
            {"openloop_arrivals": c["openloop"]["arrivals"], "round_seed": c["round_seed"]}
            if client in OPEN_LOOP
            else {}
        )
        return json.dumps(
            {
                **arrivals,
                "warmup_s": c["warmup_s"],
                "pool_size": c["pool_size"],
                "server_port": c["server_port"],
                "node": c["node"],
                "scratch_dir": c["scratch_dir"],
                "allow_shared_cpu": c["allow_shared_cpu"],
                "remeasure_attempts": c["remeasure"]["attempts"],
                "database": self.database_params(),
                "runtime": runtime(server)[1],
            },
            sort_keys=True,
        )

    # --- scopes --------------------------------------------------------------------------
    def scope_records(self, scope: str) -> list[str]:
        """The run records a scope reports: every round of a fixed block, the rounds an adaptive one stopped at."""
        return self._records(scope, self.rounds(self.block_of(scope)))

    def _records(self, scope: str, rounds: int) -> list[str]:
        if scope in self.experiments:
            found, block = self.experiment_runs(scope, rounds), self.block_of(scope)
        else:
            found = [c for c in self.main_runs(rounds) if scope == OVERALL or c[0] == scope]
            block = plan.MAIN_BLOCK
        return [self.plan.as_measured(Run(block, *c)).path for c in found]

    def claim_cells(self, claim: dict) -> list[tuple]:
        """The planned cells of its scope a measured claim reads: each alias's cell; for a claim on the scenario
        score, every cell of its score set for its servers and node:http; for a limit (at_most, at_least, below),
        also the A/A control and its twin in its cells' peer groups, whose offset is the claim's floor."""
        planned = self.scope_cells(claim["scope"]) or []
        keys = ("workload", "server", "connections", "client", "stop")
        if claim.get("scores"):
            servers = {s["server"] for s in claim["cells"].values()} | {SCORE_BASELINE}
            wanted = claim["scores"]["score_set"]
            return [c for c in planned if c[1] in servers and WORKLOADS[c[0]].score_set == wanted]
        found = []
        for selector in claim["cells"].values():
            want = {k: str(selector[k]) for k in keys if k in selector}
            found += [c for c in planned if all(str(c[keys.index(k)]) == v for k, v in want.items())]
        if claimfile.uses_floor(claim):
            if claim["scope"] == OVERALL:
                controls = {plan.control(self.config)} - {None}
            else:
                controls = {m["control"] for m in self.experiments.get(claim["scope"], {}).get("matrices", [])
                            if m.get("control")}  # fmt: skip
            pair = controls | {twin(c) for c in controls}
            peers = {plan.peer_key(c) for c in found}
            found += [c for c in planned if c[1] in pair and plan.peer_key(c) in peers]
        return list(dict.fromkeys(found))

    def claim_records(self, claims: list[dict]) -> dict[str, list[str]]:
        """Per scope, the records of every round of the cells the measured claims read (outcome claims read
        failures instead; where the block's looks read the claims, their whole peer groups), each under the block
        that measures it: what the ledger measures, and no more."""
        out: dict[str, set[str]] = {}
        for claim in filter(claimfile.reads_runs, claims):
            scope = claim["scope"]
            block = self.block_of(scope)
            # A block whose looks read the claims measures their whole peer groups (look_records): planned so.
            peers = self.stops_on(block) == "claims"
            out.setdefault(scope, set()).update(self._claim_paths(claim, self.rounds(block), peers=peers))
        return {scope: sorted(paths) for scope, paths in out.items()}

    def _claim_paths(self, claim: dict, rounds: int, peers: bool = False) -> set[str]:
        """The records of rounds 1 to `rounds` of the cells a claim reads (with peers, of every cell of their peer
        groups: the same workload, connections, client and stop), each under the block that measures it."""
        block = self.block_of(claim["scope"])
        cells = self.claim_cells(claim)
        if peers:
            groups = {(w, c, client, stop) for w, _, c, client, stop in cells}
            cells = [x for x in self.scope_cells(claim["scope"]) or [] if (x[0], *x[2:]) in groups]
        return {self.plan.as_measured(Run(block, *cell, r)).path for cell in cells
                for r in range(1, rounds + 1)}  # fmt: skip

    def measured_runs(self) -> list[tuple]:
        """Every run the plan measures, each once: (block, workload, server, connections, client, stop, round)."""
        return list(self.plan.runs)

    def scope_workloads(self, scope: str) -> list[str] | None:
        """The workloads a scope's metrics keep (None: every workload it measured)."""
        return [scope] if scope in self.workloads else None

    def reference_runs(self, scope: str) -> list[str]:
        """A single workload's share models need the framework-only workload's runs beside its own."""
        if scope in self.workloads and scope != FRAMEWORK_ONLY and FRAMEWORK_ONLY in self.workloads:
            return [table_path(FRAMEWORK_ONLY, "runs")]
        return []

    def versioned(self, scope: str) -> bool:
        """An experiment compares Node.js versions, or framework majors (a server and its <name>4 beside it).
        The A/B target compares its two builds only."""
        if scope not in self.experiments or self.is_ab(scope):
            return False
        matrices = self.experiments[scope]["matrices"]
        nodes = {v for m in matrices for v in plan.node_versions(self.config, m)}
        servers = {s for m in matrices for s in m["servers"]}
        return len(nodes) > 1 or any(new in servers and old in servers for new, old in plan.MAJORS.items())

    def scored(self, scope: str) -> bool:
        """An experiment scores its servers against node:http when it measures node:http on scenarios of a score
        set (not with an open loop, whose cells are latencies or costs at a rate, not costs at the ceiling)."""
        if scope not in self.experiments or self.versioned(scope):
            return False
        if any(CLIENTS[c].open_loop for m in self.experiments[scope]["matrices"] for c in m["clients"] if c in CLIENTS):
            return False
        return any(
            "node-http" in m["servers"]
            and len(m["servers"]) > 1
            and any(WORKLOADS[w].score_set for w in m["workloads"])
            for m in self.experiments[scope]["matrices"]
        )

    def facts(self, scope: str) -> ScopeFacts:
        """What a scope measured, as far as the choice of its charts goes."""
        if scope in self.experiments:
            matrices = self.experiments[scope]["matrices"]
            return ScopeFacts(
                experiment=True,
                scored=self.scored(scope),
                versioned=self.versioned(scope),
                both_stops=any(m.get("counts") and m.get("durations_s") for m in matrices),
                durations=max((len(m.get("durations_s", [])) for m in matrices), default=0),
                clients=len({c for m in matrices for c in m["clients"] if c in CLIENTS and not CLIENTS[c].open_loop}),
                open_loop=self.open_loop(scope),
                # The instrument's calibration alone at fixed rates is no cost curve (it is kept out of one).
                cost_curve=any(
                    m.get("rates_per_s") and not all(is_calibration(s) for s in m["servers"]) for m in matrices
                ),
            )
        workloads = self.workloads if scope == OVERALL else [scope]
        return ScopeFacts(
            experiment=False,
            swept=any(len(self.config["workloads"][w]["connections"]) > 1 for w in workloads),
            baseline=bool(set(BASELINES) & set(self.config["servers"])),
            control=bool(plan.control(self.config)),
        )

    def chart_names(self, scope: str) -> list[str]:
        """The charts drawn for a scope, in the order its page shows them."""
        return charts_for(self.facts(scope))

    def chart_files(self, scope: str, exts=EXTENSIONS) -> list[str]:
        return [chart_path(scope, c, e) for c in self.chart_names(scope) for e in exts]

    def chart_tables(self, scope: str, chart: str) -> dict[str, str]:
        """The scope's tables a chart is drawn from."""
        return {t: table_path(scope, t) for t in CHART_LIST[chart].tables}

    def open_loop(self, scope: str) -> bool:
        """An experiment with open-loop cells at shares of capacity (latency at a fixed rate, loads_pct): it gets a
        latency table and chart. Cells at fixed rates only (rates_per_s) get the cost curve instead."""
        matrices = self.experiments.get(scope, {}).get("matrices") or []
        return any(CLIENTS[c].open_loop for m in matrices if m.get("loads_pct") for c in m["clients"] if c in CLIENTS)

    def tables(self, scope: str) -> list[str]:
        """The tables a scope's summary is written from."""
        tables = ["runs", "metrics", "stopping" if scope in self.experiments else "scores"]
        tables += ["scenarios"] * self.scored(scope) + ["versions"] * self.versioned(scope)
        tables += ["latency"] * self.open_loop(scope)
        return tables + ["ab"] * self.is_ab(scope)

    def summary_inputs(self, scope: str) -> dict[str, str]:
        """The tables a summary is written from, and an adaptive block's last look (where and why it stopped)."""
        inputs = {t: table_path(scope, t) for t in self.tables(scope)}
        block = self.block_of(scope)
        if self.looks(block):
            inputs["look"] = self.look_path(block, self.rounds(block))
        if os.path.exists(CALIBRATION) and "stopping" not in inputs:
            inputs["calibration"] = CALIBRATION
        return inputs

    def outputs(self, scope: str) -> list[str]:
        """Everything a scope's manifest lists."""
        return [
            *self.scope_records(scope),
            *(failure_path(*c) for c in self.failure_cells(scope)),
            *self.summary_inputs(scope).values(),
            SUMMARY.format(scope=scope),
            PAGE.format(scope=scope),
            RESULTS_CSV.format(scope=scope),
            RESULTS_JSON.format(scope=scope),
            *([AB_CHECK.format(scope=scope)] if self.is_ab(scope) else []),
            *self.chart_files(scope),
        ]

    def manifests(self) -> list[str]:
        """Every scope's manifest: reports/all for the whole matrix, reports/<scope>/all for the others."""
        return ["reports/all", *(MANIFEST.format(scope=s) for s in self.scopes)]

    def planned_records(self, scopes, claim_records=None) -> list[str]:
        """The run records the scopes' reports read (an adaptive block's at its cap; 'claims': claim_records's),
        each once: what measuring them may take is known before any job runs."""
        found = []
        for scope in scopes:
            if scope == "claims":
                found += [r for paths in (claim_records or {}).values() for r in paths]
                continue
            entry = self._entry(self.block_of(scope))
            main = entry == plan.MAIN_BLOCK
            cap = plan.main_rounds(self.config) if main else plan.experiment_rounds(self.config, entry)
            found += self._records(scope, cap)
            if self.reference_runs(scope):
                found += self._records(FRAMEWORK_ONLY, cap)
        return list(dict.fromkeys(found))


# --- Before any job: the targets asked for, and how long their measurements take -------------
#: A report target as the command line spells it: reports/<scope>/all, or a file under reports/<scope>/.
REPORT_TARGET = re.compile(r"reports/([^/.]+)(/.*)?")
#: A measurement job's time beyond its warm-up and window, seconds, as the README's estimated times take it: so
#: estimated, the default matrix (150 runs of 3 + 5 s) is 21.5 min, and it took 21 min 47 s with its reports on
#: 2026-12-03 (README, Targets). A slow state of the machine doubles it (harness_overhead_s 0.88 s plus 0.1 s of
#: Snakemake between jobs, docs/performance.md); the limit it is checked against is hours, not seconds.
RUN_OVERHEAD_S = 0.6


def valid_targets(scopes) -> list[str]:
    """Every report target: the whole matrix's, each scope's, the claims ledger's."""
    return ["reports/all", *(MANIFEST.format(scope=s) for s in scopes), LEDGER_MANIFEST]


def target_of(scope: str) -> str:
    """A scope's report target as the README writes it: reports/all for the whole matrix."""
    return "reports/all" if scope == OVERALL else MANIFEST.format(scope=scope)


#: Report targets that were renamed: old scope -> new (the A/B target was reports/ab/all until 2026-12-06).
RENAMED_SCOPES = {"ab": plan.AB}


def target_problems(args, scopes) -> list[str]:
    """Each report target among the command line's arguments that names no scope, with the nearest target, then
    the list of targets; empty when there is none (other arguments are Snakemake's to judge)."""
    known = {*scopes, "claims"}
    valid = valid_targets(scopes)
    found = []
    for arg in args:
        match = REPORT_TARGET.fullmatch(arg)
        if not match or arg == "reports/all" or (match[1] in known and match[2]):
            continue
        if match[1] in known:
            found.append(f"target '{arg}' is a folder; did you mean '{arg}/all'?")
            continue
        if match[1] in RENAMED_SCOPES:
            new = RENAMED_SCOPES[match[1]]
            found.append(f"target '{arg}' is an old name: the report is '{target_of(new)}' now")
            continue
        near = difflib.get_close_matches(arg, valid, n=1, cutoff=0.6)
        found.append(f"target '{arg}' names no report; " + (f"did you mean '{near[0]}'?" if near else "see below"))
    if found:
        found.append(f"targets: {', '.join(valid)}")
    return found


#: Snakemake's short options that take no value: one of these clusters with -n is still a dry run (-np, -pn).
FLAGS_WITHOUT_VALUE = set("nprqFfRUkTDS")


def dry_run_asked(args) -> bool:
    """Whether the command line asks for a dry run. Snakemake (9.27) sets workflow.dryrun only after the Snakefile
    has run (its executor does not exist yet), so code run while the Snakefile is read cannot ask it."""
    for arg in args:
        if arg in ("--dry-run", "--dryrun", "--dry_run") or arg.startswith(("--dry-run=", "--dryrun=")):
            return True
        if len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and "n" in arg and set(arg[1:]) <= FLAGS_WITHOUT_VALUE:
            return True
    return False


#: Snakemake's commands that run no job: loading the workflow for one of them must change no file.
RUNS_NO_JOB = {
    "--unlock", "--list-rules", "--list", "-l", "--list-target-rules", "--lt", "--summary", "-S",
    "--detailed-summary", "-D", "--lint", "--dag", "--rulegraph", "--filegraph", "--d3dag", "--list-changes",
    "--lc", "--list-untracked", "--lu", "--cleanup-metadata", "--cm", "--report",
}  # fmt: skip


def changes_nothing(args) -> bool:
    """Whether the command line runs no job (a dry run, --unlock, a summary, a graph): the workflow's own tidying
    (false manifests, stale looks) then says what it would remove and removes nothing."""
    return dry_run_asked(args) or any(arg.split("=", 1)[0] in RUNS_NO_JOB for arg in args)


def requested_scopes(args, scopes) -> list[str]:
    """The scopes whose reports the command line asks for ('claims' for the ledger); the whole matrix's when
    it names none (reports/all is the default target)."""
    known = {*scopes, "claims"}
    found = [OVERALL if arg == "reports/all" else m[1] for arg in args if (m := REPORT_TARGET.fullmatch(arg))]
    return list(dict.fromkeys(s for s in found if s in known)) or [OVERALL]


def report_problem(args, scopes, exists=os.path.exists) -> list[str]:
    """Snakemake's --report gathers the charts of finished runs; asked for before the reports it would gather exist,
    it printed a warning per missing file (165 from a fresh checkout) and then failed on the first chart. One line
    instead, naming the target to run first; empty when --report is not asked for or everything is there."""
    if not any(a == "--report" or a.startswith("--report=") for a in args):
        return []
    missing = [target_of(s) for s in requested_scopes(args, scopes) if not exists(target_of(s))]
    if not missing:
        return []
    return [
        f"--report gathers the charts of a finished run, and {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not there yet: run `.venv/bin/snakemake --cores 1 "
        f"{' '.join(missing)}` first, then the same command with --report <file>.html"
    ]


def measuring_seconds(records, warmup_s: float) -> float:
    """How long measuring these run records takes: each run's warm-up, its window (a count's, taken as none) and
    the job's own time."""
    total = 0.0
    for record in records:
        stop = Stop.parse(record_stop(record))
        total += warmup_s + (stop.value if stop.rule == "duration" else 0.0) + RUN_OVERHEAD_S
    return total


def spoken_duration(seconds: float) -> str:
    """A duration as a person reads it: 40 s, 23 min, 5.2 h, 174 days."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def estimate(what: str, records, recorded: int, warmup_s: float, max_hours: float, capped=False):
    """The line that says how long the measurements still to make will take (at most, where an adaptive block is
    `capped`: planned to its last look), and the problems: one when that is above max_hours, else none."""
    seconds = measuring_seconds(records, warmup_s)
    line = (
        f"{what}: {len(records)} runs to measure ({recorded} already recorded), {'at most ' if capped else ''}about "
        f"{spoken_duration(seconds)} ({warmup_s:g} s warm-up + the window + ~{RUN_OVERHEAD_S:g} s, each)"
    )
    if seconds <= max_hours * 3600:
        return line, []
    needed = -(-seconds // 3600)
    return line, [
        f"{line}: above config key 'max_hours' ({max_hours:g}); raise it with --config max_hours={needed:.0f}, or "
        "measure less (rounds, duration_s, warmup_s, fewer targets)"
    ]

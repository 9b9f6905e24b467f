"""The workload catalogue: one entry per workload (scenario), everything the pipeline needs to know about it.

Adding a workload is one entry here plus its route in every server (see docs/extending.md, "Adding a workload").
The harness reads the request, the expected status and answer and the database cost
from the entry; the analysis and the charts read the order, roles and score sets from it.
"""

import json
from dataclasses import dataclass, field

#: The score sets: the seed's twelve scenarios (seeds/004) and our database set.
SEED_SET = "seed"
DATABASE_SET = "database"
#: The server every scenario score is taken against (= 100).
SCORE_BASELINE = "node-http"


@dataclass(frozen=True)
class Workload:
    """One request every server answers the same way."""

    name: str
    #: What it isolates, in one line (for a reader of the catalogue; docs/workloads.md's table says the same).
    description: str
    #: The request the load generator sends (keep-alive): method, path and, for a POST, a JSON body.
    path: str
    #: Queries the database must run per request the server received (checked in every run).
    queries_per_request: int
    #: The expected answer: a JSON file under servers/fixtures/ ...
    answer_fixture: str | None = None
    #: ... or SQL that reads it from the database independently of the servers' SQL (one JSON value) ...
    answer_sql: str | None = None
    #: ... or the JSON value itself.
    answer: object = None
    #: How the answer is compared: "exact" (equal to the expected one), "error" (an object whose
    #: "error" is a string: frameworks word their 400s differently) or "created" (the request
    #: body's fields plus an integer id, and any `stamps`).
    match: str = "exact"
    #: Requests that must be refused, with the status each must get.
    rejects: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    #: Answers without I/O, so its CPU per request is the framework's alone (the share models' reference).
    framework_only: bool = False
    method: str = "GET"
    body: object = None
    #: The status every answer must have; the zero-error gate counts it, and only it, as correct.
    status: int = 200
    #: Response headers every answer must carry, (name, value).
    headers: tuple[tuple[str, str], ...] = ()
    #: The connection levels it is measured at where a matrix does not name its own.
    connections: tuple[int, ...] = (100,)
    #: The score set it belongs to (SEED_SET, DATABASE_SET or None: in no score).
    score_set: str | None = None
    #: The answer's length changes from request to request (a new id each time), so the byte
    #: check allows for it and a client that needs equal lengths (ab) cannot run it.
    answer_varies: bool = False
    #: The seed's column heading, for the score table set beside the seed's.
    seed_label: str = ""
    #: For match "created": string fields the server adds beside the id (a creation time).
    stamps: tuple[str, ...] = ()
    #: The frameworks whose servers answer it (by /__whoami's framework); None: every server.
    frameworks: tuple[str, ...] | None = None

    def body_bytes(self) -> bytes | None:
        """The request body as sent: compact JSON."""
        return None if self.body is None else json.dumps(self.body, separators=(",", ":")).encode()


SMALL_BODY = {"name": "Mio", "age": 3}
#: Seed 001's request body.
ACCOUNT_BODY = {"email": "mio@example.com", "name": "Mio", "age": 3}
#: The fixed waits of seed 000's naive setTimeout benchmark (delay-<ms>ms).
DELAYS_MS = (1, 5, 20)
#: body-50's 50 items (about 2.8 KB as compact JSON).
BULK_BODY = {
    "items": [
        {"name": f"Tea {i + 1:02d}", "kind": ("green", "black", "oolong")[i % 3], "grams": 25 + i, "price": 4.5 + i / 4}
        for i in range(50)
    ]
}

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            name="empty",
            description="a fixed ~270-byte object, no I/O: the framework alone",
            path="/static/1",
            queries_per_request=0,
            answer_fixture="static-user.json",
            framework_only=True,
        ),
        Workload(
            name="point-lookup",
            description="one indexed query, one ~270-byte row: + one database round trip",
            path="/users/4242",
            queries_per_request=1,
            answer_sql="SELECT row_to_json(u) FROM users u WHERE id = 4242",
            rejects=(("/users/abc", 400), ("/users/999999999", 404)),
            connections=(50,),
            score_set=DATABASE_SET,
        ),
        Workload(
            name="list",
            description="one query, 100 rows (~27 KB): + a large payload",
            path="/list",
            queries_per_request=1,
            answer_sql=(
                "SELECT json_agg(row_to_json(u) ORDER BY u.id) FROM (SELECT * FROM users ORDER BY id LIMIT 100) u"
            ),
            connections=(50,),
            score_set=DATABASE_SET,
        ),
        # --- The seed's twelve scenarios (seeds/004), as its public benchmark defines them ---
        Workload(
            name="hello",
            description="a fixed 17-byte object: routing and serialising at its smallest",
            path="/hello",
            queries_per_request=0,
            answer={"hello": "world"},
            connections=(10, 100, 512),
            score_set=SEED_SET,
            seed_label="hello",
        ),
        Workload(
            name="params-query",
            description="an integer path parameter and a query string, echoed",
            path="/people/42?fields=name",
            queries_per_request=0,
            answer={"id": 42, "fields": "name"},
            rejects=(("/people/x?fields=name", 400),),
            score_set=SEED_SET,
            seed_label="params + query",
        ),
        Workload(
            name="small-body",
            description="a small JSON body parsed, validated (name, age) and answered 201",
            path="/users",
            method="POST",
            body=SMALL_BODY,
            status=201,
            queries_per_request=0,
            answer={"id": 1, **SMALL_BODY},
            score_set=SEED_SET,
            seed_label="small body",
        ),
        Workload(
            name="body-50",
            description="a body of 50 objects (~2.8 KB), each checked field by field",
            path="/teas/bulk",
            method="POST",
            body=BULK_BODY,
            status=201,
            queries_per_request=0,
            answer={"count": 50},
            score_set=SEED_SET,
            seed_label="body of 50",
        ),
        Workload(
            name="answer-100",
            description="100 objects built in memory (~17 KB) serialised",
            path="/teas",
            queries_per_request=0,
            answer_fixture="teas.json",
            score_set=SEED_SET,
            seed_label="answer of 100",
        ),
        Workload(
            name="routes-400",
            description="the last of 200 parameterised routes among 400 registered, both parameters echoed",
            path="/p199/7/items/abc",
            queries_per_request=0,
            answer={"route": 199, "id": "7", "item": "abc"},
            score_set=SEED_SET,
            seed_label="400 routes",
        ),
        Workload(
            name="middleware-3",
            description="three middlewares (hooks in Fastify) each set a header and count",
            path="/mw",
            queries_per_request=0,
            answer={"n": 3},
            headers=(("x-mw-1", "1"), ("x-mw-2", "1"), ("x-mw-3", "1")),
            score_set=SEED_SET,
            seed_label="3 middlewares",
        ),
        Workload(
            name="async",
            description="the handler waits one setImmediate before answering",
            path="/async/7",
            queries_per_request=0,
            answer={"id": "7"},
            score_set=SEED_SET,
            seed_label="async",
        ),
        Workload(
            name="not-found",
            description="an unknown path: 404 with a JSON error body",
            path="/nowhere/at/all",
            status=404,
            queries_per_request=0,
            answer={"error": "not found"},
            score_set=SEED_SET,
            seed_label="404",
        ),
        Workload(
            name="bad-request",
            description="an invalid small body: 400 with a JSON error body",
            path="/users",
            method="POST",
            body={"name": "", "age": "x"},
            status=400,
            queries_per_request=0,
            match="error",
            score_set=SEED_SET,
            seed_label="400",
        ),
        # --- Our database set, beside point-lookup and list ---
        Workload(
            name="create-user-db",
            description="the small body validated and inserted (INSERT ... RETURNING): + one write",
            path="/signups",
            method="POST",
            body=SMALL_BODY,
            status=201,
            queries_per_request=1,
            match="created",
            answer_varies=True,
            connections=(50,),
            score_set=DATABASE_SET,
        ),
        # --- Seed 001's CRUD endpoint: its body validated (express-validator in Express, the schema in
        # Fastify), answered 201 with a time id and stamp, with its 2 ms setTimeout "database" and without ---
        *(
            Workload(
                name=f"crud{suffix}",
                description=f"seed 001's POST /users: email, name and age validated, answered 201{what}",
                path=f"/crud/users{suffix}",
                method="POST",
                body=ACCOUNT_BODY,
                status=201,
                queries_per_request=0,
                match="created",
                stamps=("createdAt",),
                connections=(20,),
            )
            for suffix, what in (("", ""), ("-2ms", " after a 2 ms setTimeout"))
        ),
        # --- Seed 003's queueing on one thread ---
        Workload(
            name="fast",
            description="seed 003's /fast: the handler awaits one microtask",
            path="/fast",
            queries_per_request=0,
            answer={"fast": True},
            connections=(50,),
        ),
        Workload(
            name="block",
            description="seed 003's /block: 20 ms of synchronous work (spun on the clock) per request",
            path="/block",
            queries_per_request=0,
            answer={"blocked_ms": 20},
            connections=(50, 200),
        ),
        # Seed 003's failure modes, wrong on purpose and Express's only (experiments.yaml measures them as cells
        # expected to fail): a middleware that forgets next(), and an async handler that throws, which Express 5
        # answers with its error handler (500) and Express 4 leaves unhandled.
        Workload(
            name="hang",
            description="seed 003's forgotten next(): a middleware that neither answers nor passes the request on",
            path="/hang",
            queries_per_request=0,
            answer={"hello": "world"},
            connections=(50,),
            frameworks=("express",),
        ),
        Workload(
            name="throws",
            description="seed 003's async handler that throws: a 500 from the error handler, or no answer at all",
            path="/throws",
            status=500,
            match="error",
            queries_per_request=0,
            connections=(50,),
            frameworks=("express",),
        ),
        # --- Seed 000's naive benchmark: a fixed setTimeout instead of the query, then empty's answer ---
        *(
            Workload(
                name=f"delay-{ms}ms",
                description=f"waits a {ms} ms setTimeout, then answers empty's object: a wait that costs no CPU",
                path=f"/delay/{ms}",
                queries_per_request=0,
                answer_fixture="static-user.json",
                rejects=(("/delay/x", 400),),
                connections=(50,),
            )
            for ms in DELAYS_MS
        ),
    )
}

#: The order workloads appear in tables and charts.
ORDER = list(WORKLOADS)
#: The workload whose CPU per request is the framework's alone, if the catalogue has one.
FRAMEWORK_ONLY = next((w.name for w in WORKLOADS.values() if w.framework_only), None)


def score_set(name: str) -> list[str]:
    """The workloads of a score set, in catalogue order."""
    return [w.name for w in WORKLOADS.values() if w.score_set == name]


def ordered(names) -> list[str]:
    """names in catalogue order, unknown ones last and sorted."""
    names = set(names)
    return [w for w in ORDER if w in names] + sorted(names - set(ORDER))

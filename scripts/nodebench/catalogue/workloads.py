"""The workload catalogue: one entry per workload, everything the pipeline needs to know about it.

Adding a workload is one entry here plus its handler in every server (see the README).
The harness reads the request, the expected answer and the database cost from the entry;
the analysis and the charts read the order and roles from it.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Workload:
    """One request every server answers the same way."""

    name: str
    #: What it isolates, in one line (for a reader of the catalogue; the README's table says the same).
    description: str
    #: The request the load generator sends (GET, keep-alive).
    path: str
    #: Queries the database must run per request the server received (checked in every run).
    queries_per_request: int
    #: The expected answer: a JSON file under servers/fixtures/ ...
    answer_fixture: str | None = None
    #: ... or SQL that reads it from the database independently of the servers' SQL (one JSON value).
    answer_sql: str | None = None
    #: Requests that must be refused, with the status each must get.
    rejects: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    #: Answers without I/O, so its CPU per request is the framework's alone (the share models' reference).
    framework_only: bool = False


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
        ),
        Workload(
            name="list",
            description="one query, 100 rows (~27 KB): + a large payload",
            path="/list",
            queries_per_request=1,
            answer_sql=(
                "SELECT json_agg(row_to_json(u) ORDER BY u.id) FROM (SELECT * FROM users ORDER BY id LIMIT 100) u"
            ),
        ),
    )
}

#: The order workloads appear in tables and charts.
ORDER = list(WORKLOADS)
#: The workload whose CPU per request is the framework's alone, if the catalogue has one.
FRAMEWORK_ONLY = next((w.name for w in WORKLOADS.values() if w.framework_only), None)


def ordered(names) -> list[str]:
    """names in catalogue order, unknown ones last and sorted."""
    names = set(names)
    return [w for w in ORDER if w in names] + sorted(names - set(ORDER))

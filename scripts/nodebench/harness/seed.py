"""Deterministic rows for the users table: the same id always gives the same row."""

FIRST = [
    "Ada",
    "Grace",
    "Alan",
    "Edsger",
    "Barbara",
    "Donald",
    "Frances",
    "John",
    "Margaret",
    "Ken",
    "Radia",
    "Dennis",
    "Sophie",
    "Niklaus",
    "Hedy",
    "Tony",
    "Karen",
    "Leslie",
    "Jean",
    "Robin",
]
LAST = [
    "Lovelace",
    "Hopper",
    "Turing",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Allen",
    "McCarthy",
    "Hamilton",
    "Thompson",
    "Perlman",
    "Ritchie",
    "Wilson",
    "Wirth",
    "Lamarr",
    "Hoare",
    "Jones",
    "Lamport",
    "Bartik",
    "Milner",
]
CITIES = [
    ("Lisbon", "PT"),
    ("Oslo", "NO"),
    ("Nairobi", "KE"),
    ("Osaka", "JP"),
    ("Lima", "PE"),
    ("Tallinn", "EE"),
    ("Leeds", "GB"),
    ("Porto Alegre", "BR"),
    ("Austin", "US"),
    ("Pune", "IN"),
    ("Lyon", "FR"),
    ("Graz", "AT"),
    ("Hobart", "AU"),
    ("Accra", "GH"),
    ("Quebec", "CA"),
    ("Krakow", "PL"),
]
WORDS = [
    "builds",
    "compilers",
    "for",
    "small",
    "teams",
    "and",
    "writes",
    "about",
    "queues",
    "caches",
    "latency",
    "budgets",
    "in",
    "the",
    "evenings",
    "likes",
    "trains",
    "maps",
    "tea",
    "chess",
    "careful",
    "benchmarks",
    "with",
    "honest",
    "numbers",
    "on",
    "quiet",
    "machines",
]
BIO_WORDS = 15
COLUMNS = ("id", "username", "email", "full_name", "city", "country", "bio", "score", "active")


def user_row(i: int) -> dict:
    """The row with primary key i, as the JSON object a server returns for it."""
    first, last = FIRST[i % len(FIRST)], LAST[(i * 7) % len(LAST)]
    city, country = CITIES[(i * 11) % len(CITIES)]
    username = f"{first.lower()}.{last.lower()}{i}"
    bio = " ".join(WORDS[(i * 31 + k * 17) % len(WORDS)] for k in range(BIO_WORDS)).capitalize() + "."
    return {
        "id": i,
        "username": username,
        "email": f"{username}@example.com",
        "full_name": f"{first} {last}",
        "city": city,
        "country": country,
        "bio": bio,
        "score": (i * 2654435761) % 100_000,
        "active": i % 7 != 0,
    }


def user_rows(count: int):
    """Rows 1..count as tuples in column order, for COPY."""
    for i in range(1, count + 1):
        row = user_row(i)
        yield tuple(row[c] for c in COLUMNS)

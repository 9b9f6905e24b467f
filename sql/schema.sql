-- The one table every workload reads. Identifiers are lower_snake_case; the seed is
-- deterministic (scripts/seed.py) and loaded with COPY by the template stage.
CREATE TABLE IF NOT EXISTS users (
    id         integer PRIMARY KEY,
    username   text    NOT NULL,
    email      text    NOT NULL,
    full_name  text    NOT NULL,
    city       text    NOT NULL,
    country    text    NOT NULL,
    bio        text    NOT NULL,
    score      integer NOT NULL,
    active     boolean NOT NULL
);

-- Written by the create-user-db scenario (POST /signups): one INSERT ... RETURNING per request.
CREATE TABLE IF NOT EXISTS signups (
    id    serial  PRIMARY KEY,
    name  text    NOT NULL,
    age   integer NOT NULL
);

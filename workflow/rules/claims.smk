# The claims ledger (reports/claims/all): each published claim in claims.yaml beside our
# measurement of it. A claim whose cells this configuration does not plan is shown as not
# testable, with the reason, so a smaller matrix still gets a ledger.


# The runs of each scope that the claims read, and no others: the ledger measures what its claims need, in the
# blocks that measure them, not every cell of every scope it touches.
use rule aggregate_runs as aggregate_claim_runs with:
    input:
        records=lambda wc: T.claim_records(LEDGER_CLAIMS)[wc.scope],
        schema=targets.RUN_SCHEMA,
        code=code("aggregate_runs.py"),
    output:
        runs=targets.LEDGER_RUNS,
    log:
        "data/logs/aggregate_claim_runs/{scope}.log",
    localrule: True


rule compute_claims:
    input:
        claims=CLAIMS_FILE,
        runs=[targets.LEDGER_RUNS.format(scope=s) for s in LEDGER_RUN_SCOPES],
        failures=LEDGER_FAILURES,
        code=code("compute_claims.py"),
    output:
        ledger=targets.LEDGER,
    log:
        "data/logs/compute_claims.log",
    localrule: True
    params:
        scopes=LEDGER_RUN_SCOPES,
        # Each scope whose block's rounds are chosen by looks, with its looks: its intervals state a floor (looks.py).
        looks={
            s: T.looks(T.block_of(s))
            for s in LEDGER_RUN_SCOPES
            if T.looks(T.block_of(s))
        },
        # What this configuration cannot measure, so a change of the matrix re-evaluates the ledger.
        unresolved={
            c["id"]: c["untestable"] for c in LEDGER_CLAIMS if c.get("untestable")
        },
    script:
        "../../scripts/compute_claims.py"


rule write_ledger:
    input:
        ledger=targets.LEDGER,
        claims=CLAIMS_FILE,
        code=code("write_ledger.py"),
    output:
        markdown=targets.LEDGER_MARKDOWN,
        page=targets.LEDGER_PAGE,
    log:
        "data/logs/write_ledger.log",
    localrule: True
    script:
        "../../scripts/write_ledger.py"


# reports/claims/all: the ledger (its rows link each scope's report, built by that scope's own target).
use rule list_outputs as list_claims_outputs with:
    input:
        outputs=lambda wc: [
            targets.LEDGER,
            targets.LEDGER_MARKDOWN,
            targets.LEDGER_PAGE,
            *(r for paths in T.claim_records(LEDGER_CLAIMS).values() for r in paths),
        ],
        code=code("list_outputs.py"),
    output:
        manifest=targets.LEDGER_MANIFEST,
    log:
        "data/logs/list_outputs/claims.log",
    localrule: True
    params:
        due=lambda wc: manifest_due(targets.LEDGER_MANIFEST),

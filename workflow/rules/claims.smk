# The claims ledger (reports/claims/all): each published claim in claims.yaml beside our
# measurement of it. A claim whose cells this configuration does not plan is shown as not
# testable, with the reason, so a smaller matrix still gets a ledger.
import yaml
from nodebench import claimfile

CLAIMS_FILE = "claims.yaml"
# libyaml's loader: 5 ms instead of 40 at every start of the workflow.
CLAIMS_DOC = yaml.load(
    Path(workflow.basedir, CLAIMS_FILE).read_text(),
    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
)
validate(CLAIMS_DOC, str(Path(workflow.basedir, "workflow/schemas/claims.schema.yaml")))
_claim_problems = claimfile.check(CLAIMS_DOC["claims"])
if _claim_problems:
    raise WorkflowError(f"{CLAIMS_FILE}: " + "; ".join(_claim_problems))


def scope_cells(scope):
    """A scope's planned cells (workload, server, connections, client, stop); None for no such scope."""
    if scope == "overall":
        return plan.main_cells(config)
    if scope in EXPERIMENTS:
        return plan.experiment_cells(config, scope)
    return None


def ledger_claims():
    """The claims as the ledger evaluates them: those this configuration cannot measure marked so."""
    out = []
    for claim in CLAIMS_DOC["claims"]:
        if not (claim.get("pending") or claim.get("untestable")):
            cells = scope_cells(claim["scope"])
            if cells is not None and claim["compare"] == "outcome":
                cells = failure_cells(claim["scope"])
            problem = claimfile.resolve(claim, cells)
            if problem:
                claim = claimfile.unresolved(claim, problem)
        out.append(claim)
    return out


LEDGER_CLAIMS = ledger_claims()
LEDGER_SCOPES = claimfile.measured_scopes(LEDGER_CLAIMS)
# The outcomes of the cells expected to fail that the ledger's claims read.
LEDGER_FAILURES = sorted(
    {
        failure_path(*c)
        for claim in LEDGER_CLAIMS
        if claim.get("compare") == "outcome" and not claim.get("untestable")
        for c in failure_cells(claim["scope"])
    }
)


rule compute_claims:
    input:
        claims=CLAIMS_FILE,
        runs=[f"data/{s}/runs.parquet" for s in LEDGER_SCOPES],
        failures=LEDGER_FAILURES,
        code=code("compute_claims.py"),
    output:
        ledger="data/claims/ledger.parquet",
    log:
        "data/logs/compute_claims.log",
    params:
        scopes=LEDGER_SCOPES,
        # What this configuration cannot measure, so a change of the matrix re-evaluates the ledger.
        unresolved={
            c["id"]: c["untestable"] for c in LEDGER_CLAIMS if c.get("untestable")
        },
    script:
        "../../scripts/compute_claims.py"


rule write_ledger:
    input:
        ledger="data/claims/ledger.parquet",
        claims=CLAIMS_FILE,
        code=code("write_ledger.py"),
    output:
        markdown="reports/claims/index.md",
        page="reports/claims/index.html",
    log:
        "data/logs/write_ledger.log",
    script:
        "../../scripts/write_ledger.py"


# reports/claims/all: the ledger and the reports of every scope it reads, which its rows link.
use rule list_outputs as list_claims_outputs with:
    input:
        outputs=[
            "data/claims/ledger.parquet",
            "reports/claims/index.md",
            "reports/claims/index.html",
            *(f"reports/{s}/all" for s in LEDGER_SCOPES),
        ],
        code=code("list_outputs.py"),
    output:
        manifest="reports/claims/all",
    log:
        "data/logs/list_outputs/claims.log",

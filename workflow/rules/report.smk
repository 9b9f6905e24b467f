# summary_inputs: data/<scope>/<table>.parquet for runs, metrics, scores (an experiment: stopping), and
# scenarios, versions, latency and ab where the scope has them; an adaptive block's last look and the
# instrument's calibration where they exist (targets.summary_inputs). The summary, the page and the results
# read the same files.
rule write_summary:
    input:
        unpack(summary_inputs),
        code=code("write_summary.py"),
    output:
        summary=targets.SUMMARY,
    log:
        "data/logs/write_summary/{scope}.log",
    localrule: True
    params:
        description=lambda wc: EXPERIMENTS.get(wc.scope, {}).get("description", ""),
    script:
        "../../scripts/write_summary.py"


rule build_index_page:
    input:
        unpack(summary_inputs),
        specs=lambda wc: T.chart_files(wc.scope, exts=["vl.json"]),
        summary=targets.SUMMARY,
        code=code("build_index_page.py"),
    output:
        page=targets.PAGE,
    log:
        "data/logs/build_index_page/{scope}.log",
    localrule: True
    params:
        description=lambda wc: EXPERIMENTS.get(wc.scope, {}).get("description", ""),
        # The whole matrix's page links every experiment's page.
        elsewhere=lambda wc: (
            [(n, e.get("description", "")) for n, e in EXPERIMENTS.items()]
            if wc.scope == "overall"
            else []
        ),
        # ... and the claims ledger.
        ledger=lambda wc: wc.scope == "overall",
    script:
        "../../scripts/build_index_page.py"


# The answer to take away, from the tables the summary is written from (docs/architecture.md#results-to-take-away).
rule write_results:
    input:
        unpack(summary_inputs),
        code=code("write_results.py"),
    output:
        csv=targets.RESULTS_CSV,
        json=targets.RESULTS_JSON,
    log:
        "data/logs/write_results/{scope}.log",
    localrule: True
    script:
        "../../scripts/write_results.py"


rule list_outputs:
    input:
        # Everything the scope's manifest lists: its records, tables, summary, page, results and charts.
        outputs=lambda wc: T.outputs(wc.scope),
        code=code("list_outputs.py"),
    output:
        manifest=targets.MANIFEST,
    log:
        "data/logs/list_outputs/{scope}.log",
    localrule: True
    params:
        due=lambda wc: manifest_due(targets.MANIFEST.format(scope=wc.scope)),
    script:
        "../../scripts/list_outputs.py"


# reports/all, the top target: the whole matrix's manifest.
use rule list_outputs as list_all_outputs with:
    input:
        outputs=lambda wc: T.outputs(targets.OVERALL),
        code=code("list_outputs.py"),
    output:
        manifest="reports/all",
    log:
        "data/logs/list_outputs/all.log",
    localrule: True
    params:
        due=lambda wc: manifest_due("reports/all"),

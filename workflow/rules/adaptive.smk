# Adaptive rounds (docs/statistics.md#adaptive-rounds): a block with `adaptive` is measured up to
# its first look, looked at, and measured on to the next look only if some headline interval is
# still wider than its target. Each look is a checkpoint: the rounds a scope reports are only
# known once its looks have run, and T.rounds() asks them through stopped_at() (common.smk).
checkpoint look:
    input:
        # data/runs/<block>/.../r<k>.json for rounds 1 to n of the block's scope (of its claims' cells, where the
        # looks read the claims).
        records=lambda wc: T.look_records(wc.block, int(wc.n)),
        schema=targets.RUN_SCHEMA,
        code=code("look.py"),  # the three are T.look_inputs(), which a stale look is checked against
    output:
        look=targets.LOOK,
    log:
        "data/logs/look/{block}/n{n}.log",
    wildcard_constraints:
        n=r"\d+",
    localrule: True
    params:
        looks=lambda wc: T.looks(wc.block),
        half_width=lambda wc: T.adaptive(wc.block).get("half_width"),
        # What the looks read: the headline intervals, or the ledger's claims that read this block.
        stop_on=lambda wc: T.stops_on(wc.block),
        claims=lambda wc: (
            T.block_claims(wc.block) if T.stops_on(wc.block) == "claims" else None
        ),
        claims_digest=lambda wc: T.claims_digest(wc.block),
        ab=lambda wc: T.ab_pair(wc.block),
        headline=T.headline,
    script:
        "../../scripts/look.py"


# The A/B target's comparison, B over A per peer group.
rule compute_ab:
    input:
        runs=targets.table_path("{scope}", "runs"),
        code=code("compute_ab.py"),
    output:
        ab=targets.table_path("{scope}", "ab"),
    log:
        "data/logs/compute_ab/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, filter(T.is_ab, EXPERIMENTS))) or "(?!)",
    localrule: True
    params:
        ab=lambda wc: EXPERIMENTS[wc.scope]["ab"],
        margin=config["equivalence_margin"],
        headline=T.headline,
    script:
        "../../scripts/compute_ab.py"


# CI's gate (config's compare.fail_above): once the A/B's report and results are written, the job, and so the invocation,
# fails where B's whole interval lies above the threshold.
rule check_ab_threshold:
    input:
        ab=targets.table_path("{scope}", "ab"),
        summary=targets.SUMMARY,
        page=targets.PAGE,
        results=targets.RESULTS_CSV,
        code=code("check_ab_threshold.py"),
    output:
        check=targets.AB_CHECK,
    log:
        "data/logs/check_ab_threshold/{scope}.log",
    wildcard_constraints:
        scope="|".join(map(re.escape, filter(T.is_ab, EXPERIMENTS))) or "(?!)",
    localrule: True
    params:
        fail_above=(config.get(plan.AB) or {}).get("fail_above"),
        manifest=lambda wc: targets.MANIFEST.format(scope=wc.scope),
    script:
        "../../scripts/check_ab_threshold.py"

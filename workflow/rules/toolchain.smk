rule install_node_packages:
    input:
        package="servers/package.json",
        lockfile="servers/package-lock.json",
    output:
        marker=NODE_MODULES,
    log:
        "data/logs/install_node_packages.log",
    shell:
        "(cd servers && npm ci --no-audit --no-fund) > {log} 2>&1 && touch {output.marker}"


# wrk and ab are programs from the system's packages, not from npm: a run that needs
# one checks for it first (high priority, so it runs before any measurement) and fails
# at once with the install instruction when it is missing. The file records its version.
rule probe_load_generator:
    input:
        code=code("probe_load_generator.py"),
    output:
        "data/toolchain/{loadgen}.json",
    log:
        "data/logs/probe_load_generator/{loadgen}.log",
    wildcard_constraints:
        loadgen="|".join(PROGRAMS),
    priority: plan.PROBE_PRIORITY
    script:
        "../../scripts/probe_load_generator.py"

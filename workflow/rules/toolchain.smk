rule install_node_packages:
    input:
        package="servers/package.json",
        lockfile="servers/package-lock.json",
    output:
        marker=targets.NODE_MODULES,
    log:
        "data/logs/install_node_packages.log",
    localrule: True
    shell:
        "(cd servers && npm ci --no-audit --no-fund) > {log} 2>&1 && touch {output.marker}"


# wrk and ab are programs from the system's packages, not from npm: a run that needs
# one checks for it first (high priority, so it runs before any measurement) and fails
# at once with the install instruction when it is missing. The file records its version.
rule probe_load_generator:
    input:
        code=code("probe_load_generator.py"),
    output:
        targets.CLIENT_PROBE,
    log:
        "data/logs/probe_load_generator/{client}.log",
    wildcard_constraints:
        client="|".join(PROGRAMS),
    priority: plan.PROBE_PRIORITY
    localrule: True
    script:
        "../../scripts/probe_load_generator.py"


# The Node.js that runs the servers: the pipeline's own (config's `node`), described once and
# again whenever that file changes (its identity is a parameter), and each other major that
# node_versions lists, installed from npm's node-<os>-<arch> package into data/toolchain/.
# The system's Node.js is never touched.
rule probe_node:
    input:
        code=code("probe_node.py"),
    output:
        targets.SYSTEM_NODE_INFO,
    log:
        "data/logs/probe_node.log",
    priority: plan.PROBE_PRIORITY
    localrule: True
    params:
        identity=nodejs.identity(config["node"]),
    script:
        "../../scripts/probe_node.py"


rule install_node:
    input:
        code=code("install_node.py"),
    output:
        binary=targets.NODE_BINARY,
        info=targets.NODE_INFO,
    log:
        "data/logs/install_node/node{major}.log",
    wildcard_constraints:
        major=r"\d+",
    priority: plan.PROBE_PRIORITY
    localrule: True
    script:
        "../../scripts/install_node.py"

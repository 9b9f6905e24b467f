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

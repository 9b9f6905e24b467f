if T.embedded:

    rule build_database_template:
        input:
            schema="sql/schema.sql",
            code=code("build_database_template.py"),
        output:
            template=directory(targets.TEMPLATE),
            info=targets.DATABASE_INFO,
        log:
            "data/logs/build_database_template.log",
        params:
            rows=config["database"]["rows"],
            run_as=config["database"]["run_as"],
        script:
            "../../scripts/build_database_template.py"

else:

    rule prepare_external_database:
        input:
            schema="sql/schema.sql",
            code=code("prepare_external_database.py"),
        output:
            info=targets.DATABASE_INFO,
        log:
            "data/logs/prepare_external_database.log",
        params:
            rows=config["database"]["rows"],
            dsn=T.public_dsn(),
        script:
            "../../scripts/prepare_external_database.py"

rule measure_run:
    input:
        # The cell's files (servers/<server>.js and what it requires, the client's files, the toolchain's
        # descriptions, the database template, the harness's modules), an open loop's capacity record,
        # a capacity-again run's sweep records, an A/B pair's other build: targets.measure_inputs.
        unpack(measure_inputs),
    output:
        record=runs.RECORD,
    log:
        runs.RECORD_LOG,
    priority: measure_priority
    # A cell whose processes did not start is measured once more; a failed check is not
    # (the job fails at once on its second attempt; scripts/nodebench/harness/attempts.py).
    retries: 1
    resources:
        bench=1,
        # Not a limit: hands the job its attempt number, which goes into the record.
        attempt=attempt_number,
        # Nor are these: the run's place in its shuffled round, for the record. Not params, which
        # would re-measure every cell when a server is added and the rounds are shuffled anew.
        round_position=round_position,
        round_size=round_size,
    params:
        # The job's inputs and options as JSON, for its command line (scripts/nodebench/harness/job.py).
        inputs=job_inputs,
        options=job_options,
        workload=workload_entry,
    shell:
        targets.job_command(
            "measure_run.py",
            "{wildcards.round} --attempt {resources.attempt}"
            " --place {resources.round_position} {resources.round_size}",
        )

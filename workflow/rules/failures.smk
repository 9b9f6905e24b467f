# Cells expected to fail (an experiment's `failures`, seed 003's failure modes): run once like a
# measurement, and what the harness reported is the outcome, written to data/failures/. The
# job fails only for a failure of the harness's own (database, port, storage, a server that
# never started).
rule expect_failure:
    input:
        # The cell's files, as a measurement's, with this rule's own entry script: targets.failure_inputs.
        unpack(failure_inputs),
    output:
        outcome=runs.FAILURE,
    log:
        runs.FAILURE_LOG,
    resources:
        bench=1,
    params:
        inputs=job_inputs,
        options=job_options,
        workload=workload_entry,
    shell:
        targets.job_command("expect_failure.py", "1")

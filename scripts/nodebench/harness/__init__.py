"""How one cell is measured: database, server, load generator, verification, record.

measure.measure() runs a cell; the other modules are its parts: pgcluster and database
(the PostgreSQL it uses), server, loadgen and parsers (the load), verify (every check),
record (the run record), procs (child processes that cannot outlive the job).
"""

#: The environment variable through which the workflow hands its measurement jobs config's
#: database.dsn (job.py): not their command line, where `ps` would show its password.
DSN_VARIABLE = "NODEBENCH_DATABASE_DSN"

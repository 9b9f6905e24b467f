"""How one cell is measured: database, server, load generator, verification, record.

measure.measure() runs a cell; the other modules are its parts: pgcluster and database
(the PostgreSQL it uses), server, loadgen and parsers (the load), verify (every check),
record (the run record), procs (child processes that cannot outlive the job).
"""

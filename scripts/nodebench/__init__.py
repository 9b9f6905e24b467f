"""nodebench: Node.js web frameworks measured against a real PostgreSQL.

Four parts, each answering one kind of question:

- ``catalogue``: what can be measured (workloads, load generators, thresholds), as data;
- ``harness``: how one cell is measured (database, server, load generator, checks, record);
- ``analysis``: what the records say (aggregate, metrics, experiments' arithmetic), pure;
- ``render``: how it is shown (theme, charts, Markdown, HTML).

``codegraph`` lets the workflow compute each rule's code inputs from these imports.
"""

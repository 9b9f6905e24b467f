"""The servers every other server is compared with, in one place.

Each baseline's name suffixes the metrics tables' columns of the comparison with it (cost_vs_express,
pairs_vs_node_http, outcome_vs_express, ...). The order is the one the reports name them in: the framework
everyone knows, then bare node:http, what every framework adds to.
"""

#: baseline server -> the suffix of its comparison's columns.
BASELINES = {"express": "vs_express", "node-http": "vs_node_http"}

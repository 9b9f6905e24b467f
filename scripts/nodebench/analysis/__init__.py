"""What the records say: aggregation to Parquet, per-cell metrics, the experiments' arithmetic. Pure functions."""

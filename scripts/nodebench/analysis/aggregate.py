"""All run records to one typed, long-form Parquet table: one row per run."""

import json
from pathlib import Path

import fastjsonschema
import jsonschema
import pandas as pd

SORT_KEYS = ["workload", "server", "connections", "load_generator", "stop", "repetition"]


def column_types(schema: dict) -> dict:
    """pandas dtype per column, from the run-record schema (the data dictionary)."""
    types = {}
    for name, spec in schema["properties"].items():
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        if "integer" in kinds:
            types[name] = "Int64" if "null" in kinds else "int64"
        elif "number" in kinds:
            types[name] = "float64"
        elif "boolean" in kinds:
            types[name] = "bool"
        elif spec.get("x-category"):
            types[name] = "category"
        else:
            types[name] = "string"
    return types


def load_records(paths, schema: dict) -> list[dict]:
    """Read and validate run records; a record that breaks the schema names its file."""
    # fastjsonschema compiles the schema to Python (the keywords used are all draft-07's),
    # which checks 10,000 records in a fraction of jsonschema's time; jsonschema then
    # words the message for a record that fails.
    fast = fastjsonschema.compile({k: v for k, v in schema.items() if k != "$schema"})
    validator = jsonschema.Draft202012Validator(schema)
    records = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        try:
            fast(record)
            errors = []
        except fastjsonschema.JsonSchemaException:
            errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
        if errors:
            where = "/".join(map(str, errors[0].path)) or "(record)"
            raise ValueError(f"{path}: {where}: {errors[0].message}")
        records.append(record)
    return records


def to_frame(records: list[dict], schema: dict) -> pd.DataFrame:
    """Typed, sorted frame with one row per run and the schema's columns in order."""
    types = column_types(schema)
    rows = [{**r, "status_counts": json.dumps(r.get("status_counts", {}), sort_keys=True)} for r in records]
    return (
        pd.DataFrame.from_records(rows, columns=list(types))
        .astype(types)
        .sort_values(SORT_KEYS, kind="stable")
        .reset_index(drop=True)
    )

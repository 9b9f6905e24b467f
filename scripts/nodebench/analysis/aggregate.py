"""All run records to one typed, long-form Parquet table: one row per run."""

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import fastjsonschema
import jsonschema
import pandas as pd

from nodebench.harness.record import FORMAT_VERSION

SORT_KEYS = ["workload", "server", "connections", "client", "stop", "round"]
#: Records converted to a typed frame at a time.
BATCH = 10_000
#: Fields renamed since records were first written (old name -> name now): a record from before reads as one
#: written today.
RENAMED = {"repetition": "round", "load_generator": "client", "load_generator_version": "client_version"}


#: The record formats this checkout reads (harness/record.py, FORMAT_VERSION): 1, a record from before the
#: field, reads as one of today through RENAMED and nulls.
READS_FORMATS = range(1, FORMAT_VERSION + 1)


class RecordFormatError(ValueError):
    """A record whose format this checkout cannot read."""


def current_names(record: dict) -> dict:
    """A record with the fields that were renamed under their names of today."""
    if RENAMED.keys().isdisjoint(record):
        return record
    return {RENAMED.get(k, k): v for k, v in record.items()}


def readable(record: dict, path=None) -> dict:
    """A run record as one of today: its format (1 where it has none) and current_names; RecordFormatError for a
    format this checkout does not read (one written by a newer checkout), naming the file."""
    version = record.get("format_version", 1)
    if version not in READS_FORMATS:
        raise RecordFormatError(
            f"{path or 'a run record'}: record format {version!r}, and this checkout reads formats "
            f"{READS_FORMATS.start}-{READS_FORMATS.stop - 1}: it was written by a newer nodebench; update this "
            "checkout, or measure the cell again with this one (--forcerun measure_run)"
        )
    return {"format_version": version} | current_names(record)


def column_types(schema: dict) -> dict:
    """pandas dtype per column, from the run-record schema (the data dictionary).

    A nullable column gets a dtype that holds a missing value (Int64, boolean, NaN in
    float64), so a record written before the column existed reads as null, never as 0 or False.
    """
    types = {}
    for name, spec in schema["properties"].items():
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        if "integer" in kinds:
            types[name] = "Int64" if "null" in kinds else "int64"
        elif "number" in kinds:
            types[name] = "float64"
        elif "boolean" in kinds:
            types[name] = "boolean" if "null" in kinds else "bool"
        elif spec.get("x-category"):
            types[name] = "category"
        else:
            types[name] = "string"
    return types


def iter_records(paths, schema: dict) -> Iterator[dict]:
    """Read and validate run records one at a time; a record that breaks the schema names its file."""
    # fastjsonschema compiles the schema to Python (the keywords used are all draft-07's),
    # which checks 10,000 records in a fraction of jsonschema's time; jsonschema then
    # words the message for a record that fails.
    fast = fastjsonschema.compile({k: v for k, v in schema.items() if k != "$schema"})
    validator = jsonschema.Draft202012Validator(schema)
    for path in paths:
        record = readable(json.loads(Path(path).read_text()), path)
        try:
            fast(record)
            errors = []
        except fastjsonschema.JsonSchemaException:
            errors = sorted(validator.iter_errors(record), key=lambda e: list(e.path))
        if errors:
            where = "/".join(map(str, errors[0].path)) or "(record)"
            older = (
                f" (a record of format {record['format_version']}, older than this checkout's {FORMAT_VERSION}: "
                "measure the cell again with --forcerun measure_run)"
                if record["format_version"] < FORMAT_VERSION
                else ""
            )
            raise ValueError(f"{path}: {where}: {errors[0].message}{older}")
        yield record


def load_records(paths, schema: dict) -> list[dict]:
    """Every record of iter_records() in a list."""
    return list(iter_records(paths, schema))


def to_frame(records: Iterable[dict], schema: dict, batch: int = BATCH) -> pd.DataFrame:
    """Typed, sorted frame with one row per run and the schema's columns in order.

    records may be an iterator (iter_records): it is read a batch at a time, so only one
    batch of records is held as Python objects beside the typed table. Categories are
    set once the batches are joined, so that every batch has the same ones.
    """
    types = column_types(schema)
    categories = [c for c, t in types.items() if t == "category"]
    batch_types = {c: t for c, t in types.items() if t != "category"}
    records = iter(records)
    parts = []
    while chunk := list(itertools.islice(records, batch)):
        rows = [
            {
                **r,
                "format_version": r.get("format_version", 1),
                "status_counts": json.dumps(r.get("status_counts", {}), sort_keys=True),
                "server_statuses": json.dumps(r.get("server_statuses", {}), sort_keys=True),
                "measurements": None if r.get("measurements") is None else json.dumps(r["measurements"]),
            }
            for r in chunk
        ]
        parts.append(pd.DataFrame.from_records(rows, columns=list(types)).astype(batch_types))
        del chunk, rows
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(types)).astype(batch_types)
    del parts
    return (
        frame.astype(dict.fromkeys(categories, "category")).sort_values(SORT_KEYS, kind="stable").reset_index(drop=True)
    )

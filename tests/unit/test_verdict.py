"""The saturation verdict on hand-made cells whose answer is known, one per rule and per missing figure."""

import numpy as np
import pandas as pd
import pytest

from nodebench.analysis.verdict import VERDICTS, cpu_count, verdict
from nodebench.catalogue.thresholds import CLIENT_BOUND_CPU, CLIENT_CPUS_BUSY, DB_BOUND_SHARE, SERVER_BOUND_ELU

NAN = np.nan
# elu, client_cpu_util, client_cpu_capacity, client_cpus_busy, db_cpu_util, client_cpus -> verdict, reason fragment
CASES = {
    "busy event loop": ((0.97, 0.95, 1.0, 1.0, 0.0, 1), "server-bound", f"ELU 0.97 >= {SERVER_BOUND_ELU:.2f}"),
    "ELU exactly at the threshold": ((SERVER_BOUND_ELU, 0.2, 1.0, 0.3, 0.0, 1), "server-bound", "ELU 0.95"),
    "server wins over a busy client": ((0.99, 1.0, 1.0, 1.0, NAN, 1), "server-bound", "ELU 0.99"),
    "autocannon at its one core": (
        (0.80, 0.93, 1.0, 0.95, 0.0, 1),
        "client-bound",
        f"client CPU 0.93 >= {CLIENT_BOUND_CPU:.2f} x 1",
    ),
    "wrk at 3 of its 3 threads": ((0.80, 2.8, 3.0, 0.95, 0.1, 3), "client-bound", "x 3.00 cores"),
    "wrk at 2 of 3 threads is not": ((0.80, 2.0, 3.0, 0.70, 0.1, 3), "not saturated", "client CPU 2.00 of 3"),
    "PostgreSQL took what the client left": (
        (0.70, 0.40, 1.0, 0.99, 0.57, 1),
        "database-bound",
        f"PostgreSQL 0.57 cores >= {DB_BOUND_SHARE:.2f} x the 0.60 cores the client left of 1 CPU",
    ),
    "PostgreSQL on three client CPUs": ((0.70, 0.80, 1.0, 0.97, 2.0, 3), "database-bound", "left of 3 CPUs"),
    "both share the CPU, neither dominant": (
        (0.70, 0.60, 1.0, 0.98, 0.30, 1),
        "client CPUs saturated (shared)",
        f"client CPUs 0.98 busy >= {CLIENT_CPUS_BUSY:.2f} (client 0.60 + PostgreSQL 0.30 cores)",
    ),
    "idle everywhere": ((0.40, 0.30, 1.0, 0.45, 0.10, 1), "not saturated", "ELU 0.40, client CPU 0.30 of 1"),
}


def frame(rows) -> pd.DataFrame:
    cols = ["elu_utilization", "client_cpu_util", "client_cpu_capacity", "client_cpus_busy", "db_cpu_util"]
    return pd.DataFrame([r[:5] for r in rows], columns=cols).assign(client_cpus=[r[5] for r in rows])


@pytest.mark.parametrize("name", CASES)
def test_each_rule(name):
    figures, expected, reason = CASES[name]
    got = verdict(frame([figures]))
    assert got.loc[0, "saturation"] == expected
    assert reason in got.loc[0, "saturation_reason"], got.loc[0, "saturation_reason"]


def test_one_frame_of_every_case_keeps_its_index():
    cells = frame([c[0] for c in CASES.values()]).set_axis([f"cell{i}" for i in range(len(CASES))])
    got = verdict(cells)
    assert list(got.index) == list(cells.index)
    assert list(got["saturation"]) == [c[1] for c in CASES.values()]
    assert got["saturation_reason"].notna().all()
    assert set(got["saturation"].cat.categories) == set(VERDICTS)


def test_rules_follow_their_thresholds():
    just_below = frame([(SERVER_BOUND_ELU - 0.001, CLIENT_BOUND_CPU - 0.001, 1.0, CLIENT_CPUS_BUSY - 0.001, 0.0, 1)])
    assert verdict(just_below).loc[0, "saturation"] == "not saturated"
    # PostgreSQL exactly DB_BOUND_SHARE of what the client left.
    at = frame([(0.5, 0.5, 1.0, 0.5, DB_BOUND_SHARE * 0.5, 1)])
    assert verdict(at).loc[0, "saturation"] == "database-bound"


def test_an_external_database_is_never_database_bound():
    # db_cpu_util is null for a DSN database: the shared-CPU rule still sees the busy CPUs.
    got = verdict(frame([(0.70, 0.40, 1.0, 0.99, NAN, 1), (0.70, 0.40, 1.0, 0.50, NAN, 1)]))
    assert list(got["saturation"]) == ["client CPUs saturated (shared)", "not saturated"]
    assert "PostgreSQL" not in got.loc[0, "saturation_reason"]
    assert "PostgreSQL CPU not measured" in got.loc[1, "saturation_reason"]


def test_old_records_without_the_new_figures():
    # Before issue 10 a record had no client_cpus_busy, db_cpu_util or CPU count: the old rules still decide.
    old = pd.DataFrame(
        {
            "elu_utilization": [0.99, 0.5, 0.5],
            "client_cpu_util": [0.5, 0.95, 0.5],
            "client_cpu_capacity": [1.0, 1.0, 1.0],
        }
    )
    got = verdict(old)
    assert list(got["saturation"]) == ["server-bound", "client-bound", "not saturated"]
    assert "not measured" in got.loc[2, "saturation_reason"]


def test_all_figures_missing_is_not_a_crash():
    got = verdict(frame([(NAN, NAN, NAN, NAN, NAN, NAN), (NAN, NAN, NAN, NAN, NAN, None)]))
    assert list(got["saturation"]) == ["not saturated", "not saturated"]
    assert "ELU not measured" in got.loc[0, "saturation_reason"]
    assert verdict(frame([])).empty


def test_client_cpus_as_the_record_writes_them():
    counts = cpu_count(pd.Series(["1", "1,2,3", "", None, 2, 4.0]))
    assert np.allclose(counts, [1, 3, NAN, NAN, 2, 4], equal_nan=True)
    cells = frame([(0.70, 0.80, 1.0, 0.97, 2.0, 0)]).assign(client_cpus=pd.Categorical(["1,2,3"]))
    assert verdict(cells).loc[0, "saturation"] == "database-bound"
    counted = frame([(0.70, 0.80, 1.0, 0.97, 2.0, 0)]).drop(columns="client_cpus").assign(client_cpu_count=[3])
    assert verdict(counted).loc[0, "saturation"] == "database-bound"

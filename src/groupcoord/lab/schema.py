"""Spark schemas of the lab's tables, built from the plain-Python column lists of ``lab.runs``.

One place names every column's type, so the executors' Arrow batches, the Parquet files and
the tests agree. Imported by the Spark side only (it imports ``pyspark``).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from groupcoord.lab.runs import (
    DISTURBANCE_FIELDS,
    EVENT_FIELDS,
    KEY_COLUMNS,
    RUN_METRICS,
    VIOLATION_FIELDS,
)

_TYPES: dict[str, DataType] = {
    "int": IntegerType(), "long": LongType(), "double": DoubleType(), "bool": BooleanType(),
    "str": StringType(), "str_list": ArrayType(StringType(), containsNull=False),
}

#: The type of every parameter column (``lab.spec.RunParams``), in order.
PARAM_FIELDS: tuple[tuple[str, str], ...] = (
    ("run_id", "str"), ("sweep", "str"), ("protocol", "str"), ("scenario", "str"),
    ("scenario_def", "str"), ("size", "int"), ("workload", "str"), ("topics", "int"),
    ("partitions", "int"), ("connectors", "int"), ("tasks", "int"), ("fault_rate", "double"),
    ("replicate", "int"), ("seed", "long"), ("events", "bool"), ("checkpoint_every", "int"),
    ("max_steps", "long"), ("spec_ref", "str"), ("work", "str"),
)

_NOT_NULL = {"run_id", "sweep", "protocol", "scenario", "workload", "replicate", "seed", "events",
             "checkpoint_every", "spec_ref", "ok", "window", "seq"}


def struct(fields: tuple[tuple[str, str], ...]) -> StructType:
    """A StructType of ``(name, kind)`` pairs (kinds: int, long, double, bool, str, str_list)."""
    return StructType([StructField(n, _TYPES[k], nullable=n not in _NOT_NULL) for n, k in fields])


PARAMS_SCHEMA = struct(PARAM_FIELDS)
RUNS_SCHEMA = struct(PARAM_FIELDS + RUN_METRICS)
_KEY_FIELDS = tuple((n, k) for n, k in PARAM_FIELDS if n in KEY_COLUMNS)
DISTURBANCES_SCHEMA = struct(_KEY_FIELDS + DISTURBANCE_FIELDS)
EVENTS_SCHEMA = struct(_KEY_FIELDS + EVENT_FIELDS)
VIOLATIONS_SCHEMA = struct(_KEY_FIELDS + VIOLATION_FIELDS)

#: What an executor returns per run: the ``runs`` row with its nested parts.
RESULT_SCHEMA = StructType([
    *RUNS_SCHEMA.fields,
    StructField("disturbance_rows", ArrayType(struct(DISTURBANCE_FIELDS), containsNull=False)),
    StructField("event_rows", ArrayType(struct(EVENT_FIELDS), containsNull=False)),
    StructField("violation_row", struct(VIOLATION_FIELDS), nullable=True),
])

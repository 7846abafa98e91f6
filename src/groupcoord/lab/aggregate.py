"""Aggregation of a sweep in Spark SQL (docs/lab.md).

Per cell (protocol x scenario x size, and the workload and fault rate, which a spec may vary
too): how many runs, how many kept every invariant, how many converged, and for each headline
metric of ``lab.runs`` its p50, p95, p99 and mean over the runs that kept every invariant (a
violation stops a run early, so its figures are partial). Percentiles are Spark's exact
``percentile`` (linear interpolation between closest ranks, as ``numpy.percentile``); null
values (a run that did not converge has no convergence time) are left out. The application
metrics of the work model (stall time, lag, ...: ``lab.findings.CATALOG``) are aggregated the
same way whenever the ``runs`` table has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The metrics summarized per cell, with the unit the report shows.
METRICS: tuple[tuple[str, str], ...] = (
    ("convergence_ms", "ms"),
    ("resources_moved", "resources"),
    ("resource_downtime_ms", "resource-ms"),
    ("epoch_bumps", "bumps"),
    ("messages", "messages"),
    # the members' applications (``sim.workload``)
    ("records_processed", "records"),
    ("lag_peak", "records"),
    ("lag_record_s", "record-s"),
    ("stall_ms", "ms"),
    ("paused_partition_s", "partition-s"),
    ("records_reprocessed", "records"),
    ("task_restarts", "restarts"),
)
PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
GROUP_COLUMNS: tuple[str, ...] = ("protocol", "scenario", "size", "workload", "fault_rate")


def metrics_for(columns: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """:data:`METRICS`, then the catalog's application metrics (``lab.findings``) that a
    ``runs`` table with these columns has (the work model's, when the simulator reports them)."""
    from groupcoord.lab.findings import CATALOG

    have = {m for m, _ in METRICS}
    extra = tuple((m.column, m.unit) for m in CATALOG if m.column in columns
                  and m.column not in have)
    return METRICS + extra


def aggregate_sql(view: str = "runs",
                  metrics: tuple[tuple[str, str], ...] = METRICS) -> str:
    """The Spark SQL that aggregates the ``runs`` table registered as ``view``."""
    cols = [
        "count(*) AS runs",
        "CAST(count_if(ok) AS BIGINT) AS ok_runs",
        "CAST(count_if(NOT ok) AS BIGINT) AS violations",
        "CAST(count_if(ok AND converged) AS BIGINT) AS converged_runs",
        "avg(members) AS members",
    ]
    for metric, _ in metrics:
        for name, p in PERCENTILES:
            cols.append(f"percentile({metric}, {p}) FILTER (WHERE ok) AS {metric}_{name}")
        cols.append(f"avg({metric}) FILTER (WHERE ok) AS {metric}_mean")
    keys = ", ".join(GROUP_COLUMNS)
    return (f"SELECT {keys},\n       " + ",\n       ".join(cols) +
            f"\nFROM {view}\nGROUP BY {keys}\nORDER BY {keys}")


def aggregate(spark: SparkSession, runs: DataFrame, view: str = "lab_runs") -> DataFrame:
    """The per-cell aggregates of a ``runs`` DataFrame."""
    runs.createOrReplaceTempView(view)
    return spark.sql(aggregate_sql(view, metrics_for(runs.columns)))


def aggregate_columns(metrics: tuple[tuple[str, str], ...] = METRICS) -> list[str]:
    """The columns of the aggregates table, in order."""
    out = [*GROUP_COLUMNS, "runs", "ok_runs", "violations", "converged_runs", "members"]
    for metric, _ in metrics:
        out += [f"{metric}_{name}" for name, _ in PERCENTILES] + [f"{metric}_mean"]
    return out

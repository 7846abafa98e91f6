"""The sweep job: runs on Spark executors, Parquet tables, aggregates, report (docs/lab.md).

:func:`run_sweep` expands a spec (``lab.spec``) into a DataFrame of runs, one row per run,
spread over tasks (at least 4 per core, at most 100 runs each) largest first (by expected cost:
:func:`task_chunks`), so that the longest runs start first and the short ones fill the cores at
the end. ``mapInArrow`` runs each row through :func:`groupcoord.lab.runs.run_one`
on an executor, the real simulator code, and returns Arrow batches of nested results (the
``runs`` row with its disturbance windows, trace and violation). The results are cached and
counted once (that job runs every simulation, with progress), then written as Parquet, each
table partitioned by protocol and scenario, one file per partition::

    DIR/runs/protocol=.../scenario=.../part-*.parquet          parameters + summary metrics
    DIR/disturbances/...                                       one row per disturbance window
    DIR/events/...                                             trace lines (spec: events = true)
    DIR/violations/...                                         invariant, message, trace, command
                                                               (an empty table: one file, no rows)
    DIR/aggregates/part-*.parquet                              Spark SQL, ``lab.aggregate``
    DIR/sweep.json                                             the spec and the job's figures
    DIR/report/index.html, summary.md, *.png                   ``lab.report``

**Progress**: an accumulator counts finished runs (executors add to it as tasks finish); a
thread of the driver polls it with the status tracker every few seconds and reports
``runs done / total`` to a callback (by default the log).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupcoord.lab.aggregate import aggregate
from groupcoord.lab.runs import KEY_COLUMNS, RUN_COLUMNS
from groupcoord.lab.spec import RunParams, SweepSpec, cells, expand

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

PARTITION_COLUMNS = ("protocol", "scenario")
#: The most runs one Spark task simulates (smaller tasks: finer progress, better balance).
MAX_RUNS_PER_TASK = 100
#: Results per Arrow batch an executor returns.
BATCH_ROWS = 16


@dataclass(slots=True)
class Progress:
    """How far a sweep is: runs done of total, time so far, Spark tasks running."""

    done: int
    total: int
    elapsed_s: float
    running_tasks: int = 0
    final: bool = False

    def format(self) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        text = f"runs {self.done}/{self.total} ({pct:.0f}%) in {self.elapsed_s:.1f} s"
        if not self.final and 0 < self.done < self.total:
            left = self.elapsed_s * (self.total - self.done) / self.done
            text += f", {self.running_tasks} tasks running, ~{left:.0f} s left"
        return text


ProgressCallback = Callable[[Progress], None]


def log_progress(p: Progress) -> None:
    log.info("sweep: %s", p.format())


class ProgressMonitor:
    """Polls a run counter (an accumulator) and Spark's status tracker from a driver thread."""

    def __init__(self, spark: SparkSession, total: int, counter: Accumulator[int],
                 callback: ProgressCallback = log_progress, interval_s: float = 2.0) -> None:
        self._sc = spark.sparkContext
        self.total = total
        self.counter = counter
        self.callback = callback
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lab-progress", daemon=True)
        self._t0 = time.monotonic()
        self._last = -1

    def __enter__(self) -> ProgressMonitor:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None and self._last != self.total:
            self.callback(Progress(min(self.counter.value, self.total), self.total,
                                   time.monotonic() - self._t0, 0, final=True))

    def snapshot(self) -> Progress:
        tracker = self._sc.statusTracker()
        running = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                running += info.numActiveTasks
        return Progress(min(self.counter.value, self.total), self.total,
                        time.monotonic() - self._t0, running)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                p = self.snapshot()
            except Exception as e:  # the session may be stopping; progress is best effort
                log.debug("progress: %s", e)
                continue
            if p.done != self._last:
                self._last = p.done
                self.callback(p)


def _simulate_partition(counter: Accumulator[int]) -> Callable[[Iterator[pa.RecordBatch]],
                                                              Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: one simulation per input row, on the executor."""

    def simulate_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from groupcoord.lab.runs import run_one
        from groupcoord.lab.schema import RESULT_SCHEMA

        schema = to_arrow_schema(RESULT_SCHEMA)
        for batch in batches:
            out: list[dict[str, Any]] = []
            for row in batch.to_pylist():
                out.append(run_one(RunParams.from_row(row)))
                counter.add(1)
                if len(out) >= BATCH_ROWS:
                    yield pa.RecordBatch.from_pylist(out, schema=schema)
                    out = []
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=schema)

    return simulate_batches


def runs_per_task(total: int, parallelism: int) -> int:
    """Enough tasks for balance and progress (4 per core at least), at most 100 runs each
    (a task costs a few hundred ms of scheduling and worker hand-over on a busy machine)."""
    return max(1, min(MAX_RUNS_PER_TASK, math.ceil(total / max(1, parallelism * 4))))


def expected_cost(r: RunParams) -> int:
    """A run's expected CPU, for the order in which runs are handed out: its members (the
    paper spec's first seeds, CPU per run by size: 3-12 members 0.05-0.2 s, 30-100 members
    0.6 s, 300 members 1.5 s, 1,000 members 4.3 s). A size the scenario keeps counts as 10."""
    return r.size if r.size is not None else 10


def task_chunks(runs: list[RunParams], per_task: int, parallelism: int) -> list[list[RunParams]]:
    """The runs in tasks, largest first: runs sorted by expected cost (then run id), cut into
    consecutive tasks of at most ``per_task`` runs and at most the total cost over four tasks
    per core (a run costlier than that alone). Spark hands tasks out in their order, so the
    longest runs start first and short ones fill the cores at the end: neither core idles
    while the other finishes a 1,000-member run handed out last."""
    ordered = sorted(runs, key=lambda r: (-expected_cost(r), r.run_id))
    budget = sum(expected_cost(r) for r in ordered) / max(1, parallelism * 4)
    chunks: list[list[RunParams]] = []
    cur: list[RunParams] = []
    cost = 0
    for r in ordered:
        c = expected_cost(r)
        if cur and (len(cur) >= per_task or cost + c > budget):
            chunks.append(cur)
            cur, cost = [], 0
        cur.append(r)
        cost += c
    if cur:
        chunks.append(cur)
    return chunks


def params_frame(spark: SparkSession, runs: list[RunParams],
                 per_task: int | None = None) -> DataFrame:
    """The runs as a DataFrame, one partition per task of :func:`task_chunks` (largest runs
    first)."""
    from groupcoord.lab.schema import PARAMS_SCHEMA

    sc = spark.sparkContext
    per = per_task or runs_per_task(len(runs), sc.defaultParallelism)
    chunks = task_chunks(runs, per, sc.defaultParallelism)
    keyed = [(i, tuple(r.as_row().values())) for i, chunk in enumerate(chunks) for r in chunk]
    rdd = sc.parallelize(keyed, 1).partitionBy(max(1, len(chunks)), lambda task: task).values()
    return spark.createDataFrame(rdd, PARAMS_SCHEMA)


def simulate_frame(spark: SparkSession, runs: list[RunParams], *,
                   per_task: int | None = None,
                   progress: ProgressCallback | None = log_progress) -> DataFrame:
    """Run every simulation (one Spark job, with progress); the nested results, cached."""
    from pyspark import StorageLevel

    from groupcoord.lab.schema import RESULT_SCHEMA

    counter = spark.sparkContext.accumulator(0)
    frame = params_frame(spark, runs, per_task)
    results = frame.mapInArrow(_simulate_partition(counter), RESULT_SCHEMA)
    results = results.persist(StorageLevel.MEMORY_AND_DISK)
    if progress is None:
        results.count()
    else:
        with ProgressMonitor(spark, len(runs), counter, progress):
            results.count()
    return results


def write_table(df: DataFrame, path: Path, sort: tuple[str, ...]) -> None:
    """Parquet partitioned by protocol and scenario, one file per partition, rows sorted.

    An empty table is written as one Parquet file with the table's schema and no rows (the
    partition columns as ordinary columns): partitioned, Spark would write no file at all, and
    ``spark.read.parquet`` of that directory fails with UNABLE_TO_INFER_SCHEMA."""
    if df.isEmpty():
        df.coalesce(1).write.mode("overwrite").parquet(str(path))
        return
    (df.repartition(*PARTITION_COLUMNS).sortWithinPartitions(*sort)
       .write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(str(path)))


def result_tables(results: DataFrame) -> dict[str, DataFrame]:
    """The four tables of a nested results DataFrame."""
    from pyspark.sql import functions as F

    keys = list(KEY_COLUMNS)
    return {
        "runs": results.select(*RUN_COLUMNS),
        "disturbances": results.select(*keys, F.explode("disturbance_rows").alias("d"))
                               .select(*keys, "d.*"),
        "events": results.select(*keys, F.explode("event_rows").alias("e")).select(*keys, "e.*"),
        "violations": results.where(F.col("violation_row").isNotNull())
                             .select(*keys, "violation_row.*"),
    }


TABLE_SORT: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",), "disturbances": ("run_id", "window"), "events": ("run_id", "seq"),
    "violations": ("run_id",),
}


@dataclass(slots=True)
class SweepOutcome:
    """What a sweep produced: where, how many runs, the aggregates and the violations."""

    out_dir: Path
    spec: str
    runs: int
    cells: int
    sim_s: float
    wall_s: float
    aggregates: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    report: Path | None = None


def grid_meta(spec: SweepSpec) -> list[dict[str, Any]]:
    """The spec's grids as ``sweep.json`` records them (the report's findings per question)."""
    from dataclasses import replace

    out = []
    for g in spec.grids:
        one = replace(spec, grids=(g,))
        out.append({"name": g.name, "description": g.description,
                    "protocols": one.resolved_protocols(), "scenarios": list(g.scenarios),
                    "sizes": list(g.sizes), "workloads": [w.name for w in g.workloads],
                    "fault_rates": list(g.fault_rates), "seeds": g.seeds,
                    "confirm_seeds": g.confirm_seeds,
                    "metrics": list(g.metrics), "question": getattr(g, "question", "")})
    return out


def run_sweep(spark: SparkSession, spec: SweepSpec, out_dir: str | Path, *,
              per_task: int | None = None, progress: ProgressCallback | None = log_progress,
              report: bool = True) -> SweepOutcome:
    """Sweep, write the tables, aggregate, and (by default) render the report."""
    t0 = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = expand(spec)
    log.info("sweep %s: %d runs in %d cells", spec.name, len(runs), cells(runs))
    results = simulate_frame(spark, runs, per_task=per_task, progress=progress)
    sim_s = time.monotonic() - t0
    try:
        tables = result_tables(results)
        for name, df in tables.items():
            if name == "events" and not spec.events:
                shutil.rmtree(out / name, ignore_errors=True)  # no stale traces of another sweep
                continue
            write_table(df, out / name, TABLE_SORT[name])
        aggregates = aggregate(spark, tables["runs"]).coalesce(1).cache()
        aggregates.write.mode("overwrite").parquet(str(out / "aggregates"))
        agg_rows = [r.asDict() for r in aggregates.collect()]
        aggregates.unpersist()
        violations = [r.asDict() for r in tables["violations"].drop("trace")
                      .orderBy("protocol", "scenario", "run_id").limit(1000).collect()]
    finally:
        results.unpersist()
    outcome = SweepOutcome(out, spec.source or spec.name, len(runs), cells(runs), sim_s,
                           time.monotonic() - t0, agg_rows, violations)
    meta = {"spec": spec.source or spec.name, "name": spec.name,
            "description": spec.description, "runs": len(runs), "cells": outcome.cells,
            "protocols": spec.resolved_protocols(), "scenarios": list(spec.scenarios),
            "sizes": list(spec.sizes), "workloads": [asdict(w) for w in spec.workloads],
            "fault_rates": list(spec.fault_rates), "seeds": spec.seeds, "events": spec.events,
            "confirm_seeds": spec.confirm_seeds, "violations": len(violations), "sim_s": round(sim_s, 3),
            "master": spark.sparkContext.master, "spark": spark.version,
            "grids": grid_meta(spec)}
    (out / "sweep.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    if report:
        from groupcoord.lab.report import build_report

        outcome.report = build_report(out)
    outcome.wall_s = time.monotonic() - t0
    return outcome

"""Lab benchmark (docs/lab.md): simulation runs per second on Spark local[2], side by
side with the same runs on a 2-process ``multiprocessing`` pool without Spark.

The runs are the first N (2,000; quick: 40) of a fixed sweep (crash, bounce, scale-out and leave
at 3 and 6 members, with and without 2 % network faults, every protocol of the simulator; the
members do the scenarios' default work, ``sim/workload.py``), in run-id order so that cells are
mixed. Both sides run ``groupcoord.lab.runs.run_one`` once per run
and hand back every nested result:

- ``lab.spark.runs=N``: ``lab.sweep.simulate_frame`` on a local[2] session (the job that a sweep
  runs: ``mapInArrow`` over tasks of up to 100 runs, at least 4 per core; results cached in Spark
  and counted);
- ``lab.pool.runs=N``: ``Pool(2).map(run_one, runs)`` with the same chunk size, results pickled
  back to the parent;
- ``lab.spark_vs_pool.runs=N``: Spark's rate over the pool's (target: >= 0.75 at 2,000).

Both sides are warmed up first (Spark's Python workers started and their imports done, the
pool's processes started with ``groupcoord.lab.runs`` imported), so the figures are steady-state
throughput; session and pool start-up are not counted. The repetitions alternate (pool, Spark,
pool, Spark, ...) so that a change in the machine's load affects both; values are medians of 3
repetitions (quick: 1). An active Spark session (the test suite's) is reused and left running; otherwise one
is started (local[2], driver 1 g) and stopped at the end.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
import tomllib
from collections.abc import Callable
from typing import Any

from benchmarks._harness import Result
from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import RunParams, expand, parse_spec
from groupcoord.lab.sweep import runs_per_task, simulate_frame

BENCH_SPEC = """
name = "bench"
scenarios = ["crash", "bounce", "scale-out", "leave"]
sizes = [3, 6]
fault_rates = [0.0, 0.02]
seeds = {seeds}
"""

PROCESSES = 2
MASTER = "local[2]"


def bench_runs(n: int) -> list[RunParams]:
    """The first ``n`` runs of the benchmark sweep, in run-id order."""
    seeds = 1
    while True:
        runs = expand(parse_spec(tomllib.loads(BENCH_SPEC.format(seeds=seeds)), "bench"))
        if len(runs) >= n:
            return sorted(runs, key=lambda r: r.run_id)[:n]
        seeds = seeds * 2


def _import_lab() -> None:
    import groupcoord.lab.runs  # noqa: F401 - warm the worker


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _session() -> tuple[Any, bool]:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    from groupcoord.lab.session import make_session

    return make_session(MASTER, app_name="groupcoord-bench-lab",
                        conf={"spark.sql.shuffle.partitions": "2"}), True


def run(quick: bool = False) -> list[Result]:
    n = 40 if quick else 2_000
    repeat = 1 if quick else 3
    runs = bench_runs(n)
    per_task = runs_per_task(n, PROCESSES)
    params = {"runs": n, "repeat": repeat, "runs_per_task": per_task}

    ctx = multiprocessing.get_context("spawn")  # no fork of a process running a JVM gateway
    spark, owned = _session()
    try:
        with ctx.Pool(PROCESSES, initializer=_import_lab) as pool:
            pool.map(run_one, runs[:PROCESSES * 2], chunksize=1)  # warm-up
            simulate_frame(spark, runs[:8], per_task=4, progress=None).unpersist()  # warm-up

            def pool_run() -> None:
                results = pool.map(run_one, runs, chunksize=per_task)
                assert len(results) == n

            def spark_run() -> None:
                simulate_frame(spark, runs, per_task=per_task, progress=None).unpersist()

            # alternate the two, so that a change of the machine's load hits both alike
            pool_samples: list[float] = []
            spark_samples: list[float] = []
            for _ in range(repeat):
                pool_samples.append(_timed(pool_run))
                spark_samples.append(_timed(spark_run))
        master = spark.sparkContext.master
    finally:
        if owned:
            spark.stop()
    pool_s = statistics.median(pool_samples)
    spark_s = statistics.median(spark_samples)

    spark_rate = n / spark_s
    pool_rate = n / pool_s
    return [
        Result(f"lab.spark.runs={n}", spark_rate, "per_s",
               {**params, "master": master, "seconds": round(spark_s, 3)}),
        Result(f"lab.pool.runs={n}", pool_rate, "per_s",
               {**params, "processes": PROCESSES, "seconds": round(pool_s, 3)}),
        Result(f"lab.spark_vs_pool.runs={n}", spark_rate / pool_rate, "ratio",
               {**params, "target": 0.75}),
    ]

"""The lab benchmark module runs (quick sizes) and reports docs/design.md-shaped results.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")

from benchmarks._harness import Result
from benchmarks.lab import bench_runs, run


def test_quick_run_shape(spark: Any) -> None:
    results = run(quick=True)  # reuses the suite's Spark session
    assert all(isinstance(r, Result) for r in results)
    by_name = {r.name: r for r in results}
    assert set(by_name) == {"lab.spark.runs=40", "lab.pool.runs=40", "lab.spark_vs_pool.runs=40"}
    assert by_name["lab.spark.runs=40"].unit == by_name["lab.pool.runs=40"].unit == "per_s"
    assert by_name["lab.spark_vs_pool.runs=40"].unit == "ratio"
    for r in results:
        assert r.value > 0 and r.params["runs"] == 40
        assert set(r.as_json()) == {"name", "value", "unit", "params"}
    assert by_name["lab.spark.runs=40"].params["master"] == "local[2]"
    assert spark.sparkContext._jsc is not None  # the suite's session is still running


def test_bench_runs_are_a_fixed_mix() -> None:
    runs = bench_runs(40)
    assert runs == bench_runs(40) and len(runs) == 40
    assert len({r.scenario for r in runs}) == 4 and len({r.run_id for r in runs}) == 40

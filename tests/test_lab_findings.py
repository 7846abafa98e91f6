"""The lab's metric catalog and its shared helpers (``lab.findings``): workload parameters read
from a run, the swept parameter, the reproduce command."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import (
    BY_COLUMN,
    CATALOG,
    number,
    reproduce,
    sweep_parameter,
    with_work_parameters,
    work_value,
)


def _run(protocol: str, seed: int, **extra: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "bounce", "workload": "4x8", "fault_rate": 0.0,
            "size": 8, "seed": seed, "ok": True, **extra}


def test_every_metric_has_a_unit_a_direction_and_a_floor() -> None:
    assert len(BY_COLUMN) == len(CATALOG)
    for m in CATALOG:
        assert m.floor > 0, m.column
    # the question metrics of both grids are in the catalog
    for column in ("task_restarts", "task_downtime_task_s", "time_to_balance_ms", "stall_ms",
                   "lag_peak", "lag_record_s", "convergence_ms", "resources_moved",
                   "records_reprocessed"):
        assert column in BY_COLUMN
    assert not BY_COLUMN["records_processed"].lower_is_better
    assert BY_COLUMN["stall_ms"].fmt(1500) == "1.5 s"
    assert BY_COLUMN["task_downtime_task_s"].fmt(12.34) == "12.3 task·s"
    assert BY_COLUMN["resource_downtime_ms"].fmt(123_456_789) == "123,457 resource·s"


def test_numbers_print_three_significant_digits_without_exponent() -> None:
    assert [number(v) for v in (0, 0.000123, 0.5, 2.25, 12.34, 123.4, 1_234_567)] == [
        "0", "0.000123", "0.5", "2.25", "12.3", "123", "1,234,567"]


def test_a_swept_parameter_read_from_the_workloads_overrides() -> None:
    rows = []
    for ms in (0.5, 8):
        work = json.dumps({"processing_ms": {"dist": "exponential", "mean": ms},
                           "records_per_s": 10})
        rows += [_run(p, s, work=work, workload=f"p{ms}")
                 for p in ("consumer:uniform", "classic:eager") for s in range(2)]
    assert work_value(rows[0], "processing_ms") == 0.5  # a distribution: its mean
    assert work_value({"work": json.dumps({"processing_ms": {"min": 2, "max": 4}})},
                      "processing_ms") == 3.0
    assert work_value({"processing_ms": 7.0}, "processing_ms") == 7.0  # a column first
    assert work_value({"work": "{not json"}, "processing_ms") is None
    with_x = with_work_parameters(rows)
    # records_per_s is the same everywhere: the processing time is what the grid sweeps
    assert sweep_parameter(with_x) == "processing_ms"
    assert sorted({r["processing_ms"] for r in with_x}) == [0.5, 8.0]
    assert sweep_parameter(with_work_parameters(rows[:4])) is None
    # two of the workload's own parameters varying together are two workloads, not a sweep
    # of either (the load, busy_pct, follows from them and does not count)
    two = []
    for ms, rate in ((7.5, 80), (2, 300)):
        work = json.dumps({"processing_ms": {"dist": "exponential", "mean": ms},
                           "records_per_s": rate})
        two += [_run(p, s, work=work, workload=f"r{rate}")
                for p in ("consumer:uniform", "share:simple") for s in range(2)]
    assert sweep_parameter(with_work_parameters(two)) is None


def test_the_reproduce_command_names_the_cells() -> None:
    assert reproduce("paper", "crash", 30, "4x250", ["consumer:uniform", "classic:eager"]) == (
        "groupcoord lab run --spec paper --scenario crash --size 30 --workload 4x250 "
        "--protocol consumer:uniform --protocol classic:eager --out DIR")
    # a spec file with a space in its path stays one argument
    assert reproduce("my spec.toml", "crash").startswith(
        "groupcoord lab run --spec 'my spec.toml' --scenario crash")

"""The simulator benchmark module runs (quick sizes) and reports docs/design.md-shaped results.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

import json
import math

from benchmarks._harness import Result
from benchmarks.sim import run


def test_quick_run_shape() -> None:
    results = run(quick=True)
    assert results and all(isinstance(r, Result) for r in results)
    by_name = {r.name: r for r in results}
    assert len(by_name) == len(results)
    size = "members=10.partitions=100"
    assert set(by_name) == {
        f"sim.events_per_s.scenario=steady.{size}",
        f"sim.coordinator_share.scenario=steady.{size}",
        f"sim.events_per_s.scenario=rolling-bounce.{size}",
        f"sim.coordinator_share.scenario=rolling-bounce.{size}",
        f"sim.rolling_bounce.{size}",
        f"sim.events_per_s.scenario=rolling-bounce.static=true.{size}",
        f"sim.coordinator_share.scenario=rolling-bounce.static=true.{size}",
        f"sim.rolling_bounce.static=true.{size}",
        "sim.events_per_s.scenario=random",
        # the same with members that do work (sim/workload.py)
        f"sim.events_per_s.scenario=steady.{size}.work=default",
        f"sim.coordinator_share.scenario=steady.{size}.work=default",
        f"sim.events_per_s.scenario=rolling-bounce.{size}.work=default",
        f"sim.coordinator_share.scenario=rolling-bounce.{size}.work=default",
        f"sim.rolling_bounce.{size}.work=default",
        "sim.events_per_s.scenario=random.work=drawn",
    }
    for r in results:
        assert isinstance(r.value, float) and math.isfinite(r.value) and r.value > 0, r
        unit = {"events_per_s": "per_s", "coordinator_share": "ratio",
                "rolling_bounce": "ms"}[r.name.split(".")[1]]
        assert r.unit == unit, r
        assert r.params["events"] > 0 and r.params["sim_time_ms"] > 0
        json.dumps(r.as_json())
    assert 0 < by_name[f"sim.coordinator_share.scenario=steady.{size}"].value < 1
    assert by_name[f"sim.rolling_bounce.{size}"].params["members"] == 10
    assert by_name["sim.events_per_s.scenario=random"].params["seeds"] == 10
    assert by_name[f"sim.rolling_bounce.{size}"].params.get("workload") is None  # idle
    assert "rec/s" in by_name[f"sim.rolling_bounce.{size}.work=default"].params["workload"]

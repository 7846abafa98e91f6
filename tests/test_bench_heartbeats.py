"""The heartbeat benchmark module runs (quick sizes) and reports docs/design.md-shaped results.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

from benchmarks._harness import Result
from benchmarks.heartbeats import run


def test_quick_run_shape() -> None:
    results = run(quick=True)
    assert results and all(isinstance(r, Result) for r in results)
    by_name = {r.name: r for r in results}
    assert len(by_name) == len(results)
    assert set(by_name) == {
        "heartbeats.steady.members=50",
        "heartbeats.full.members=50",
        "heartbeats.join.members=50",
    }
    for r in results:
        assert r.value > 0
        assert r.unit == ("ms" if ".join." in r.name else "per_s")
        assert r.name.startswith("heartbeats.")
        assert r.params["members"] == int(r.name.rsplit("=", 1)[1])
        assert r.params["scenario"] == r.name.split(".")[1]
        assert set(r.as_json()) == {"name", "value", "unit", "params"}
    assert by_name["heartbeats.steady.members=50"].params["heartbeats"] > 0

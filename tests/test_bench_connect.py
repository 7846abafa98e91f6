"""The Connect benchmark module runs (quick sizes) and reports docs/design.md-shaped results.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

from benchmarks._harness import Result
from benchmarks.connect import run


def test_quick_run_shape() -> None:
    results = run(quick=True)
    assert results and all(isinstance(r, Result) for r in results)
    names = [r.name for r in results]
    assert len(names) == len(set(names))
    suffix = "workers=10.connectors=50.tasks=4"
    for family in ("cooperative.join", "cooperative.followup", "cooperative.full",
                   "cooperative.join_wire", "eager.join"):
        assert f"connect.{family}.{suffix}" in names
    for r in results:
        assert r.unit == "ms"
        assert r.value > 0
        assert set(r.as_json()) == {"name", "value", "unit", "params"}
        parts = r.name.split(".")
        for key, part in zip(("workers", "connectors", "tasks"), parts[-3:], strict=True):
            assert part == f"{key}={r.params[key]}"
    by_name = {r.name: r for r in results}
    join = by_name[f"connect.cooperative.join.{suffix}"]
    # The joining worker's share is revoked from the others (50/10 connectors, 200/10 tasks).
    assert join.params["revoked"] == 5 + 20 and join.params["delay"] == 0
    assert by_name[f"connect.cooperative.followup.{suffix}"].params["assigned"] == 25
    assert by_name[f"connect.cooperative.full.{suffix}"].params["assigned"] == 250

"""The share assignor benchmark module runs (quick sizes) and reports docs/design.md-shaped
results. No timing assertions: speed is measured by the benchmarks, never by tests."""

from __future__ import annotations

from benchmarks._harness import Result
from benchmarks.share_assignor import run


def test_quick_run_shape() -> None:
    results = run(quick=True)
    assert results and all(isinstance(r, Result) for r in results)
    names = [r.name for r in results]
    assert len(names) == len(set(names))
    for suffix in ("members=20.partitions=200", "members=40.partitions=10"):
        for scenario in ("simple.full", "simple.join", "simple.leave", "simple.hetero",
                         "share.join"):
            assert f"{scenario}.{suffix}" in names
    for r in results:
        assert r.unit == "ms" and r.value > 0
    moved = {r.name: r.params["moved"] for r in results if "moved" in r.params}
    # a join into a settled group moves a new member's share, not the whole group
    assert 0 < moved["simple.join.members=20.partitions=200"] <= 10
    assert moved["simple.join.members=40.partitions=10"] == 1

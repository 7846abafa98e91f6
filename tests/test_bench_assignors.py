"""The assignor benchmark module runs (quick sizes) and reports docs/design.md-shaped results.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

import pytest
from benchmarks._harness import Result
from benchmarks.assignors import run


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's schema loading
def test_quick_run_shape() -> None:
    results = run(quick=True)
    assert results and all(isinstance(r, Result) for r in results)
    names = [r.name for r in results]
    assert len(names) == len(set(names))
    suffix = "members=20.partitions=200"
    for expected in (
        f"uniform.full.{suffix}",
        f"uniform.join.{suffix}",
        f"uniform.join_copied.{suffix}",
        f"uniform.join_read_all.{suffix}",
        "uniform.join.members=50.partitions=500",
        "uniform.full.members=50.partitions=500",
        f"range.full.{suffix}",
        f"range.join.{suffix}",
        f"peer.kafka-python.sticky.full.{suffix}",
        f"peer.kafka-python.sticky.join.{suffix}",
        f"target.join.{suffix}",
        f"target.join_loaded.{suffix}",
        "target.join.members=50.partitions=500",
    ):
        assert expected in names
    for r in results:
        assert r.unit == "ms"
        assert r.value > 0
        parts = r.name.split(".")
        assert parts[-2].startswith("members=") and parts[-1].startswith("partitions=")
        assert r.params["members"] == int(parts[-2].split("=")[1])
        assert r.params["partitions"] == int(parts[-1].split("=")[1])
        json = r.as_json()
        assert set(json) == {"name", "value", "unit", "params"}
        if ".join." in r.name:
            assert r.params["moved"] >= 0
        if r.name.startswith("target.join."):
            # one member joins a balanced group: it gets its share, taken from others
            assert r.params["records"] >= 2 and r.params["moved"] > 0

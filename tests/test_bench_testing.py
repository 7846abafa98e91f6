"""The embedded-server start-up benchmark runs (quick) and reports DESIGN.md's result shape; no
timing asserted."""

from __future__ import annotations

import json
import math

from benchmarks import testing


def test_testing_benchmark_quick_shape() -> None:
    results = testing.run(quick=True)
    by_name = {r.name: r for r in results}
    assert set(by_name) == {"testing.start.warm", "testing.start.async", "testing.stop",
                            "testing.first_join", "testing.start.cold"}
    for r in results:
        assert r.unit == "ms"
        assert isinstance(r.value, float) and math.isfinite(r.value) and r.value > 0, r
        json.dumps(r.as_json())

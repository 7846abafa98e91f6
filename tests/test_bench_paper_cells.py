"""The paper spec's benchmark (``groupcoord bench paper_cells``) runs its quick selection and
reports docs/design.md-shaped results: wall time, CPU per grid (the forked paired controls
counted), and the whole spec's CPU estimated from them. No timing assertions."""

from __future__ import annotations

import math
from typing import Any

from benchmarks import paper_cells
from benchmarks._harness import Result


def test_quick_selection_is_one_small_run_per_grid() -> None:
    runs = paper_cells._runs("quick")
    first = paper_cells._runs("first")
    grids = [paper_cells.grid_of(r) for r in runs]
    assert len(grids) == len(set(grids)) and set(grids) == {paper_cells.grid_of(r) for r in first}
    assert all(r.replicate == 0 for r in runs)
    smallest = {g: min(r.size or 0 for r in first if paper_cells.grid_of(r) == g) for g in grids}
    assert all((r.size or 0) == smallest[paper_cells.grid_of(r)] for r in runs)


def test_quick_run_shape() -> None:
    results = paper_cells.run(quick=True)
    assert all(isinstance(r, Result) and r.unit == "ms" for r in results)
    by_name = {r.name: r for r in results}
    grids = {paper_cells.grid_of(r) for r in paper_cells._runs("quick")}
    assert set(by_name) == {"lab.paper.wall_ms", "lab.paper.spec_cpu_ms",
                            *(f"lab.paper.cpu_ms.grid={g}" for g in grids)}
    for r in results:
        assert math.isfinite(r.value) and r.value > 0, r
    per_grid = [by_name[f"lab.paper.cpu_ms.grid={g}"] for g in grids]
    # the whole spec's estimate scales each grid's CPU per run by the grid's runs in the spec
    estimate = sum(r.value / r.params["runs"] * r.params["spec_runs"] for r in per_grid)
    assert math.isclose(by_name["lab.paper.spec_cpu_ms"].value, estimate, rel_tol=0.01)
    assert sum(r.params["spec_runs"] for r in per_grid) == len(paper_cells._runs("all"))


def test_the_schedule_estimate_replays_both_orders_on_two_cores(tmp_path: Any) -> None:
    import json

    # a measurement whose runs cost their members in seconds (the spec's cells, first seeds)
    runs = {r.run_id: {"cpu_s": float(r.size or 10),
                       "run": f"{r.scenario}/{r.protocol}/{r.size}/{r.workload}/0"}
            for r in paper_cells._runs("first")}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"runs": runs}))
    est = paper_cells.schedule_estimate(str(path), draws=5)
    assert est["runs"] == len(paper_cells._runs("all"))
    assert est["bound_s"] <= est["largest_first_s"] <= est["before_median_s"] \
        <= est["before_worst_s"]
    assert est["largest_first_s"] <= est["bound_s"] * 1.05  # largest first: near the bound

"""The lab's share-group comparison (``src/groupcoord/lab/data/share.toml``): share groups
(KIP-932) against consumer groups (KIP-848) on the same workloads, seeds and scenarios, each run
paired with its control."""

from __future__ import annotations

import json
from pathlib import Path

from groupcoord.lab.runs import flatten, run_one
from groupcoord.lab.spec import expand, load_spec

SPEC = Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data" / "share.toml"


def test_the_share_spec_pairs_share_and_consumer_groups_on_the_same_seeds() -> None:
    runs = expand(load_spec(str(SPEC)))
    assert {r.protocol for r in runs} == {"share:simple", "consumer:uniform"}
    by_cell: dict[tuple[object, ...], set[tuple[str, int]]] = {}
    # (the lock grid is share groups' only: a consumer group has no lock, its rows would be
    # the poison workload's)
    assert {r.protocol for r in runs if r.workload == "1x4-poison-lock"} == {"share:simple"}
    for r in runs:
        if r.workload == "1x4-poison-lock":
            continue
        key = (r.scenario, r.size, r.workload, r.fault_rate, r.replicate)
        by_cell.setdefault(key, set()).add((r.protocol, r.seed))
    # every cell runs both protocols on one seed: the comparison is paired
    assert all(len(v) == 2 and len({s for _, s in v}) == 1 for v in by_cell.values())
    assert {r.size for r in runs} == {4, 12} and {r.scenario for r in runs} >= {"crowd-crash"}


def test_a_share_run_and_its_control_are_simulated_step_by_step() -> None:
    runs = expand(load_spec(str(SPEC)))
    run = next(r for r in runs if r.protocol == "share:simple" and r.scenario == "crowd-crash"
               and r.size == 12 and r.fault_rate == 0.0)
    f = flatten(run_one(run))
    assert f["runs"][0]["ok"], f["runs"][0]["invariant"]
    crash = next(d for d in f["disturbances"] if d["disturbance"] == "crash")
    # the control keeps up (its lag is the records in flight), so the crash's excess is real;
    # a control whose clock jumped without its consumers would pile the production up as lag
    assert crash["control_lag_peak"] is not None and crash["control_lag_peak"] < 200
    assert crash["records_processed"] > 0


def test_the_poison_workloads_are_the_clean_one_with_poison_records() -> None:
    spec = load_spec(str(SPEC))
    work = {w.name: json.loads(w.work or "{}") for w in spec.workloads}
    clean = work["1x4-busy"]
    w = dict(work["1x4-poison"])
    # as in the field: a 2 s attempt, 1 s back-off, dead-letter after 5 attempts (the default)
    assert (w.pop("poison_rate"), w.pop("poison_attempt_ms"), w.pop("poison_backoff_ms")) \
        == (0.0002, 2000, 1000)
    assert w == clean  # the same records, rates and processing: only the poison differs
    lock = dict(work["1x4-poison-lock"])
    assert lock.pop("share_lock_duration_ms") == 1500 < 2000  # the attempt outlasts the lock
    assert lock == work["1x4-poison"]
    runs = expand(spec)
    assert {r.workload for r in runs} == set(work)


def test_a_poison_run_meets_its_poison_records_in_both_protocols() -> None:
    runs = expand(load_spec(str(SPEC)))
    picked = [r for r in runs if r.workload == "1x4-poison" and r.scenario == "bounce"
              and r.size == 4 and r.fault_rate == 0.0 and r.replicate == 0]
    assert {r.protocol for r in picked} == {"share:simple", "consumer:uniform"}
    for r in picked:
        f = flatten(run_one(r))
        row = f["runs"][0]
        assert row["ok"], row["invariant"]
        summary = json.loads(row["summary_json"])
        if r.protocol == "share:simple":
            assert summary["share_archived"] > 0
        else:
            assert summary["work"]["poison_skipped"] > 0


def test_an_equal_capacity_workload_runs_beside_the_four_partition_one() -> None:
    """1x12-busy: the same total production and processing as 1x4-busy on 12 partitions, so at
    12 members each protocol works each partition with one member (capacity not confounded
    with protocol); the grid shows the partitions stopped beside the assignment changes."""
    spec = load_spec(str(SPEC))
    by_name = {w.name: w for w in spec.workloads}
    four, twelve = by_name["1x4-busy"], by_name["1x12-busy"]
    w4, w12 = json.loads(four.work or "{}"), json.loads(twelve.work or "{}")
    assert four.partitions * w4.pop("records_per_s") == twelve.partitions * w12.pop("records_per_s")
    assert (four.partitions, twelve.partitions) == (4, 12) and w4 == w12
    cells = {(r.protocol, r.size) for r in expand(spec) if r.workload == "1x12-busy"}
    assert cells >= {("share:simple", 12), ("consumer:uniform", 12)}
    # its own grid: a grid whose workloads differ in rate per partition reads as a sweep of it
    grids = {g.name: g for g in spec.grids}
    assert [w.name for w in grids["equal-capacity"].workloads] == ["1x12-busy"]
    assert "1x12-busy" not in [w.name for w in grids["share"].workloads]
    for grid in grids.values():
        assert {"resources_moved", "resource_downtime_ms", "records_reprocessed",
                "convergence_ms"} <= set(grid.metrics)

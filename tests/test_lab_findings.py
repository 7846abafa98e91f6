"""Findings generated from runs (``lab.findings``) and the report's presentation of them."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import BY_COLUMN, findings, present_metrics, sweep_parameter


def _run(protocol: str, size: int, seed: int, **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "bounce", "workload": "4x8", "fault_rate": 0.0,
            "size": size, "seed": seed, "ok": True, **metrics}


def test_ranking_is_paired_by_seed_with_its_numbers_and_command() -> None:
    rows = []
    for seed in range(4):
        rows.append(_run("classic:eager", 10, seed, resource_downtime_ms=9000 + seed))
        # cooperative is lower in 3 of 4 seeds, but not in seed 3
        rows.append(_run("classic:cooperative", 10, seed,
                         resource_downtime_ms=2000 if seed < 3 else 9999))
    rows.append({**_run("classic:cooperative", 10, 9, resource_downtime_ms=1), "ok": False})
    found = findings(rows, "paper")
    assert len(found) == 1
    f = found[0]
    assert f.kind == "ranking"
    assert f.numbers["best"] == "classic:cooperative" and f.numbers["worst"] == "classic:eager"
    assert (f.numbers["paired_wins"], f.numbers["pairs"]) == (3, 4)  # the failed run is out
    # the seeds' range beside a median whose runs spread (cooperative's 2 s to 10 s)
    assert ("median 2 resource·s (2 to 10 over 4 seeds) against 9 resource·s for "
            "classic:eager (4.5x)") in f.text
    assert "lower in 3 of 4 seeds" in f.text
    assert f.command == "groupcoord lab run --spec paper --scenario bounce --size 10 --out DIR"


def test_metrics_that_do_not_differ_give_no_finding() -> None:
    rows = [_run(p, 10, s, resources_moved=4, convergence_ms=100)
            for p in ("consumer:uniform", "consumer:range") for s in range(2)]
    assert findings(rows) == []


def test_work_model_metrics_come_first_and_scale_across_sizes() -> None:
    rows = []
    for size, stall in ((10, (1000, 5000)), (100, (1500, 60000))):
        for seed in range(3):
            rows.append(_run("consumer:uniform", size, seed, stall_ms=stall[0],
                             resource_downtime_ms=5))
            rows.append(_run("classic:eager", size, seed, stall_ms=stall[1],
                             resource_downtime_ms=5))
    assert [m.column for m in present_metrics(rows)] == ["stall_ms", "resource_downtime_ms"]
    found = findings(rows)
    kinds = [(f.kind, f.numbers["metric"]) for f in found]
    assert kinds == [("ranking", "stall_ms"), ("scaling", "stall_ms")]
    assert "classic:eager from 5 s to 60 s (12.0x)" in found[1].text
    assert "--protocol consumer:uniform --protocol classic:eager" in found[1].command


def test_crossover_over_a_swept_parameter_across_workloads() -> None:
    """One workload per processing time; the winner changes between 2 and 5 ms."""
    rows = []
    for ms, (a, b) in {1: (10, 30), 2: (10, 25), 5: (40, 15), 10: (70, 20)}.items():
        for seed in range(2):
            rows.append({**_run("consumer:uniform", 10, seed, lag_peak=a), "processing_ms": ms,
                         "workload": f"p{ms}"})
            rows.append({**_run("classic:cooperative", 10, seed, lag_peak=b),
                         "processing_ms": ms, "workload": f"p{ms}"})
    assert sweep_parameter(rows) == "processing_ms"
    cross = [f for f in findings(rows) if f.kind == "crossover"]
    assert len(cross) == 1
    assert cross[0].numbers["flips"] == [(2.0, 5.0, "classic:cooperative")]
    assert ("peak consumer lag against the processing time per record: at 1 ms "
            "consumer:uniform has the lowest; classic:cooperative has the lowest from 5 ms on "
            "(the change comes between 2 and 5 ms)") in cross[0].text
    assert "10 ms: classic:cooperative 20 records, consumer:uniform 70 records" in cross[0].text
    # no ranking per workload where a parameter is swept across them
    assert [f.kind for f in findings(rows)] == ["crossover"]


def test_higher_is_better_metrics_rank_the_other_way() -> None:
    m = BY_COLUMN["records_processed"]
    assert not m.lower_is_better
    rows = [_run(p, 10, s, records_processed=v) for s in range(2)
            for p, v in (("consumer:uniform", 1000), ("classic:eager", 800))]
    (f,) = findings(rows)
    assert f.numbers["best"] == "consumer:uniform" and "the most records processed" in f.text


def test_a_swept_parameter_read_from_the_workloads_overrides() -> None:
    rows = []
    for ms, (a, b) in {0.5: (1000, 5000), 8: (9000, 5000)}.items():
        work = json.dumps({"processing_ms": {"dist": "exponential", "mean": ms},
                           "records_per_s": 10})
        for seed in range(2):
            rows.append({**_run("consumer:uniform", 8, seed, stall_ms=a), "work": work,
                         "workload": f"p{ms}"})
            rows.append({**_run("classic:eager", 8, seed, stall_ms=b), "work": work,
                         "workload": f"p{ms}"})
    (cross,) = [f for f in findings(rows) if f.kind == "crossover"]
    assert cross.numbers["parameter"] == "processing_ms"
    assert cross.numbers["flips"] == [(0.5, 8.0, "classic:eager")]


def test_differences_below_a_metrics_floor_are_ties() -> None:
    rows = [_run(p, 10, s, stall_ms=v, lag_peak=w) for s in range(3)
            for p, v, w in (("classic:eager", 23, 900), ("consumer:uniform", 0, 100))]
    found = findings(rows)
    assert [f.numbers["metric"] for f in found] == ["lag_peak"]  # a 23 ms stall is noise
    only = findings(rows, metrics=["stall_ms"])
    assert only == []


def test_a_scenarios_runs_outside_the_sweep_still_rank() -> None:
    """crash swept over processing time at 8 members, and crash on another workload at 10:
    the first give a crossover, the second still a ranking."""
    rows = []
    for ms, (a, b) in {1: (10, 40), 5: (60, 20)}.items():
        for seed in range(2):
            rows.append({**_run("consumer:uniform", 8, seed, lag_peak=a), "processing_ms": ms,
                         "workload": f"p{ms}"})
            rows.append({**_run("classic:eager", 8, seed, lag_peak=b), "processing_ms": ms,
                         "workload": f"p{ms}"})
    for seed in range(2):
        rows.append({**_run("consumer:uniform", 10, seed, lag_peak=100), "workload": "big"})
        rows.append({**_run("classic:eager", 10, seed, lag_peak=500), "workload": "big"})
    kinds = sorted((f.kind, f.numbers.get("size")) for f in findings(rows))
    assert kinds == [("crossover", None), ("ranking", 10)]


def test_scaling_says_what_the_size_does_to_each_members_load() -> None:
    """A size sweep over a fixed topic workload divides the same production among more
    members: the sentence says so (lag that falls with members is the load falling)."""
    rows = []
    work = json.dumps({"records_per_s": 2})
    for size, (a, b) in ((10, (900, 3000)), (100, (100, 2000))):
        for seed in range(3):
            for p, v in (("consumer:uniform", a), ("classic:eager", b)):
                rows.append({**_run(p, size, seed, lag_peak=v), "topics": 4,
                             "partitions": 250, "work": work})
    scaling = [f for f in findings(rows) if f.kind == "scaling"]
    assert scaling
    assert ("The group's production is 2,000 records/s at both sizes, so each member's share "
            "falls from 200 to 20 records/s.") in scaling[0].text


def test_crossover_names_tied_winners_and_each_members_load() -> None:
    rows = []
    for ms, (a, b, c) in {0.5: (0, 0, 900), 10: (0, 0, 600)}.items():
        work = json.dumps({"processing_ms": ms, "records_per_s": 10})
        for seed in range(2):
            for p, v in (("consumer:uniform", a), ("classic:cooperative", b),
                         ("classic:eager", c)):
                rows.append({**_run(p, 8, seed, stall_ms=v), "work": work, "topics": 4,
                             "partitions": 8, "workload": f"p{ms}"})
    (cross,) = [f for f in findings(rows) if f.kind == "crossover"]
    # two protocols at 0 s share the place; the load per member is 40 records/s x ms
    assert "0.5 ms (2% busy): classic:cooperative 0 s, consumer:uniform 0 s, classic:eager" \
        in cross.text
    assert "10 ms (40% busy)" in cross.text
    assert "classic:cooperative and consumer:uniform have the lowest at every value" \
        in cross.text


def test_a_steep_fall_keeps_its_ratio() -> None:
    rows = []
    for size, (a, b) in ((3, (1000, 40_000)), (12, (900, 2_000))):
        for seed in range(2):
            rows.append(_run("consumer:uniform", size, seed, lag_peak=a))
            rows.append(_run("classic:eager", size, seed, lag_peak=b))
    (scaling,) = [f for f in findings(rows) if f.kind == "scaling"]
    assert "classic:eager from 40,000 records to 2,000 records (0.05x)" in scaling.text

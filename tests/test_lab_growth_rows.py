"""A topic's growth on the page: the load column and the settings list say the production
before and after (records/s a partition and the topic's), the calibration's growth rows say
that their wire producer kept its rate a partition (and the simulated side models the same
producer), and a refresh phase's draw carries no sentence from a few seeds."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.calibrate import WIRE_GROWTH_RATE, WireWorkload, simulated_scenario
from groupcoord.lab.limits import calibration_row_text, settings_notes
from groupcoord.lab.mechanism import member_load
from groupcoord.lab.verdict import PHASE_MIN_SEEDS, grid_verdict, phase_draw
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import load_scenario
from groupcoord.sim.workload import parse_workload


def _run(growth_rate: str) -> dict[str, Any]:
    """A run row of partition-added (foo 4 -> 8) at 10 records/s a partition, as the lab
    stores it (its work model and summary)."""
    wl = parse_workload("w", {"records_per_s": 10, "growth_rate": growth_rate})
    res = simulate("partition-added", 1, "consumer:uniform", workload=wl)
    return {"protocol": "consumer:uniform", "scenario": "partition-added", "size": 3,
            "members": 3, "workload": "w", "total_partitions": 4,
            "work_model": str(res.summary["workload"]),
            "summary_json": json.dumps(res.summary, default=str)}


def test_a_growth_rows_load_says_the_rate_before_and_after() -> None:
    ld = member_load(_run("topic"))
    assert ld is not None
    assert ("foo grows from 4 to 8 partitions: 10 rec/s a partition before, 5 after, the "
            "topic 40 rec/s before and after (a producer at a fixed rate") in ld.text()
    ld = member_load(_run("partition"))
    assert ld is not None
    assert ("10 rec/s a partition before and after, the topic 40 rec/s before, 80 after "
            "(growth_rate partition") in ld.text()


def test_the_settings_list_says_a_grown_topics_production() -> None:
    text = " ".join(settings_notes([_run("topic")]))
    assert "Production on a grown topic (a model input, not a Kafka setting): " \
           "partition-added (w): foo grows from 4 to 8 partitions" in text


def test_the_calibrations_simulated_side_models_the_wire_producer() -> None:
    # lab.wire._Producer writes records_per_s to every partition, new ones too
    assert WIRE_GROWTH_RATE == "partition"
    sc = simulated_scenario(load_scenario("partition-added", 1), "classic:eager",
                            WireWorkload())
    assert sc.workload.growth_rate == "partition"


def test_a_growth_calibration_row_says_its_producer() -> None:
    row = {"scenario": "grow-by-900", "protocol": "classic:eager", "within_2x": True,
           "disturbance": "add-partitions x1",
           "metrics": {"time_to_converge_ms": {"simulated": 1000.0, "measured": 1200.0}}}
    text = calibration_row_text(row, ["time_to_converge_ms"])
    assert "the wire's producer kept its rate a partition" in text
    assert "models the same producer (growth_rate partition)" in text
    other = calibration_row_text({**row, "disturbance": "crash x1"}, ["time_to_converge_ms"])
    assert "producer" not in other


def _verdict(seeds: int, metric: str) -> Any:
    grid = {"name": "g", "protocols": ["classic:eager", "consumer:uniform"],
            "metrics": [metric], "seeds": seeds}
    rows = [{"run_id": f"{p}{s}", "protocol": p, "scenario": "grow-by-900", "size": 10,
             "members": 10, "workload": "light", "fault_rate": 0.0, "seed": s,
             "replicate": s, "ok": True, "caught_up": True, "noop_events": 0,
             "settings_json": "{}", metric: v + s}
            for p, v in (("classic:eager", 100_000.0), ("consumer:uniform", 5_000.0))
            for s in range(seeds)]
    return grid_verdict(grid, rows).rows[0].metrics[0]


def test_a_refresh_phase_draw_is_headlined_in_time_to_converge_from_20_seeds() -> None:
    assert PHASE_MIN_SEEDS == 20
    assert phase_draw("grow-by-900", _verdict(5, "convergence_ms"))
    assert not phase_draw("grow-by-900", _verdict(20, "convergence_ms"))
    assert phase_draw("grow-by-900", _verdict(20, "lag_record_s"))  # quoted, never headlined
    mv = _verdict(5, "convergence_ms")
    assert not phase_draw("crash", mv)


def test_the_report_reads_a_grown_topics_production_from_the_summaries() -> None:
    # the report reads the runs without summary_json: attach_growth puts it back for the load
    from groupcoord.lab.mechanism import attach_growth, growth_runs

    run = {**_run("topic"), "run_id": "r1"}
    summary = json.loads(run.pop("summary_json"))
    other = {"run_id": "r2", "scenario": "crash"}
    assert growth_runs([run, other]) == {"r1"}
    assert member_load(run) is not None and "grows from" not in member_load(run).text()
    attach_growth([run, other], {"r1": summary})
    ld = member_load(run)
    assert ld is not None and "foo grows from 4 to 8 partitions" in ld.text()
    assert "growth" not in other


def test_a_growth_sentence_on_partitions_moved_names_no_refresh_cause() -> None:
    # eager's revocation moves the partitions, not the classic refresh's phase
    from groupcoord.lab.verdict import claims, grid_verdicts

    grid = {"name": "g", "protocols": ["classic:eager", "classic:cooperative"],
            "scenarios": ["partition-added"], "workloads": ["light"],
            "metrics": ["resources_moved", "convergence_ms"], "seeds": 5}
    rows = [{"run_id": f"{p}{s}", "protocol": p, "scenario": "partition-added", "size": 10,
             "members": 10, "workload": "light", "fault_rate": 0.0, "seed": s,
             "replicate": s, "ok": True, "caught_up": True, "noop_events": 0,
             "settings_json": json.dumps({"metadata.max.age.ms": 300000}),
             "resources_moved": moved, "convergence_ms": 100_000.0 + 1000 * s}
            for p, moved in (("classic:eager", 246), ("classic:cooperative", 0))
            for s in range(5)]
    (c,) = claims(grid_verdicts({"spec": "paper", "grids": [grid]}, rows))
    assert c.metric == "resources_moved" and "metadata discovery" not in c.text, c.text

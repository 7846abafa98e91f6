"""A share sentence's calibration line (ninth outside review of the share page): a wire row
is printed under the sentence whose cell it measured (a kill sentence's lost host in the same
cell, owner-crash, included; a grid's no-difference sentence only its grid's workloads), and
its simulated side is the page's own runs of the cell where the page has them: the
calibration file's simulated side is the model of the day it was measured."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.share_report import (
    page_side,
    sentence_calibration_limits,
    share_calibration_note,
)

SHARE, KIP848 = "share:simple", "consumer:uniform"


def _hot() -> dict[str, Any]:
    """The owner-crash wire row of 1x4-hot as the file keeps it: its simulated side from an
    older model (3 records, 0 ms stopped) against the wire's lost host."""
    return {"scenario": "owner-crash", "members": 12, "workload": "1x4-hot",
            "protocol": SHARE, "wire": [{}] * 10,
            "measured": {"crash": "SIGSTOP (a lost host: nothing closes; killed after the run)"},
            "checks": {"excess_lag_peak": False, "resource_downtime_ms": False,
                       "lag_peak": False},
            "medians": {"excess_lag_peak": {"sim": 3.0, "wire": 7_944.0},
                        "resource_downtime_ms": {"sim": 0.0, "wire": 23_351.0},
                        "lag_peak": {"sim": 56.0, "wire": 8_076.0}}}


def _runs(n: int = 4) -> list[dict[str, Any]]:
    return [{"protocol": SHARE, "scenario": "owner-crash", "size": 12, "workload": "1x4-hot",
             "ok": True, "lag_peak": 7_024.0 + i, "resource_downtime_ms": 23_350.0 + i}
            for i in range(n)]


def test_the_simulated_side_is_the_pages_own_runs_of_the_cell() -> None:
    cell = page_side(_hot(), SHARE, _runs())
    assert cell["page_runs"] == 4
    assert cell["medians"]["excess_lag_peak"] == {"sim": 7_025.5, "wire": 7_944.0}
    assert cell["checks"] == {"excess_lag_peak": True, "resource_downtime_ms": True}
    assert "lag_peak" not in cell["medians"]  # the runs carry no raw lag peak
    # no run of the cell on the page: the file's row as it is
    assert page_side(_hot(), SHARE, []) is not None and "page_runs" not in page_side(
        _hot(), SHARE, [])


def test_a_kill_sentence_carries_its_lost_hosts_wire_row_and_a_grid_sentence_its_own() -> None:
    cells = [_hot()]
    note = share_calibration_note("owner-kill", 12, [SHARE], cells=cells, cal={},
                                  workload="1x4-hot", metric="lag_peak", runs=_runs(),
                                  also=("owner-crash",))
    assert "owner-crash at 12 members on 1x4-hot (10 wire runs" in note
    assert "simulated (this page's 4 runs of the cell) / measured: on this sentence's " \
           "metric, excess lag peak 7,026 / 7,944: within 2x" in note
    assert "not within 2x" not in note
    # the wire row calibrates the lost host, not the kill: the line says which (the tenth
    # outside share review)
    assert note.startswith("Calibration against real clients: the wire rows are of "
                           "owner-crash, not owner-kill (owner-kill: not measured on the "
                           "wire); "), note
    # without the lost-host clause the kill sentence has no wire row of its own
    assert share_calibration_note("owner-kill", 12, [SHARE], cells=cells, cal={},
                                  workload="1x4-hot").endswith("uncalibrated (share:simple)")
    # a no-difference sentence of a 1x12 grid: the 1x4 row is another grid's cell
    assert share_calibration_note("owner-crash", 12, [SHARE], cells=cells, cal={},
                                  workloads=("1x12-busy",)).endswith(
        "uncalibrated (share:simple)")


def test_the_outside_2x_list_reads_the_pages_runs() -> None:
    sentences = [("owner-kill", 12, "1x4-hot", [SHARE, KIP848], ("owner-crash",), ())]
    stale = sentence_calibration_limits([], sentences, cells=[_hot()], cal={"rows": []})
    assert any("outside 2x" in t and "(owner-crash at 12 members on 1x4-hot): excess lag peak "
               "3 / 7,944" in t for t in stale)
    now = sentence_calibration_limits([], sentences, cells=[_hot()], cal={"rows": []},
                                      runs=_runs())
    assert not any("The sentences' own cells outside 2x" in t for t in now)


def test_a_wire_rows_partitions_stopped_says_how_it_was_measured_and_each_run() -> None:
    """A wire median equal to the simulation's to the millisecond (23,351 / 23,351) reads as
    derived unless the line says what was timed and shows the runs it is the median of (the
    eleventh outside share review)."""
    row = _hot()
    row["wire"] = [{"resource_downtime_ms": v} for v in
                   (53_200, 23_348, 23_299, 0, 23_339, 23_385, 23_354, 23_334, 38_114, 36_517)]
    note = share_calibration_note("owner-crash", 12, [SHARE], cells=[row], cal={},
                                  workload="1x4-hot", runs=_runs(3))
    assert "resource downtime ms 23,351 / 23,351 (measured on the wire, not derived: " in note
    assert "no record of the partition handed to any member's application for over 2 s" in note
    assert "the 10 wire runs: 0, 23,299, 23,334, 23,339, 23,348, 23,354, 23,385, 36,517, " \
           "38,114, 53,200)" in note
    consumer = {**_hot(), "protocol": KIP848,
                "wire": [{"resource_downtime_ms": v} for v in (42_620, 47_040, 46_510)],
                "medians": {"resource_downtime_ms": {"sim": 47_908.0, "wire": 46_510.0}}}
    note = share_calibration_note("owner-crash", 12, [KIP848], cells=[consumer], cal={},
                                  workload="1x4-hot")
    assert "no live owner in the members' rebalance callbacks" in note
    assert "the 3 wire runs: 42,620, 46,510, 47,040)" in note
    # under the floor on the wire: nothing to explain
    quiet = {**_hot(), "medians": {"resource_downtime_ms": {"sim": 0.0, "wire": 0.0}}}
    assert "measured on the wire" not in share_calibration_note(
        "owner-crash", 12, [SHARE], cells=[quiet], cal={}, workload="1x4-hot")

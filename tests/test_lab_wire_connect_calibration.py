"""``groupcoord lab calibrate --connect`` (``lab.wire_connect_calibration``): the kip415 grid's
classic-connect cells against real Connect workers. These tests check the comparison, the data
file's order and the page's sentence on written rows; the wire itself is
``tests/test_lab_wire_connect.py``'s, and the rows the package holds are checked for shape."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from groupcoord.lab.wire_connect_calibration import (
    DATA,
    METRICS,
    calibration_line,
    cell_params,
    load_rows,
    run_cli,
    save_rows,
    within_2x,
)


def _row(scenario: str, size: int, protocol: str, restarts: float) -> dict[str, object]:
    row: dict[str, object] = {"scenario": scenario, "size": size, "protocol": protocol,
                              "client": "connect-runtime X", "wire_runs": 2, "load": [5.0, 6.0]}
    for m in METRICS:
        row[m] = {"sim": restarts, "wire": restarts * 3, "within_2x": within_2x(m, restarts,
                                                                               restarts * 3)}
    return row


def test_within_2x_uses_the_floors_and_the_ratio() -> None:
    assert within_2x("task_restarts", 0, 1) is True  # both below 2 tasks
    assert within_2x("task_restarts", 0, 128) is False
    assert within_2x("task_restarts", 50, 99) is True
    assert within_2x("time_to_balance_ms", 2000, 4100) is False
    assert within_2x("task_downtime_task_s", 214.1, 228.4) is True
    assert within_2x("task_downtime_task_s", None, 3.0) is None


def test_rows_are_saved_in_a_stable_order_and_a_cell_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    save_rows([_row("worker-leaves-d0", 6, "classic-connect:eager", 1)], path)
    save_rows([_row("kip415-worker-joins", 3, "classic-connect:sessioned", 2),
               _row("worker-leaves-d0", 6, "classic-connect:eager", 50)], path)
    rows = load_rows(path)
    assert [(r["scenario"], r["size"]) for r in rows] == [("kip415-worker-joins", 3),
                                                           ("worker-leaves-d0", 6)]
    assert rows[1]["task_restarts"]["sim"] == 50  # type: ignore[index]
    line = calibration_line("worker-leaves-d0", "classic-connect:eager", rows)
    assert line is not None and "6 workers" in line and "restarts 50 / 150 (not within 2x)" in line
    assert calibration_line("kip415-worker-joins", "classic-connect:eager", rows) is None


def test_a_cell_outside_the_grid_or_a_consumer_protocol_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="no cell"):
        cell_params("kip415-worker-joins", 7, "classic-connect:eager")
    ns = argparse.Namespace(scenario=None, size=None, protocol=["classic:eager"], repeat=1,
                            quiet=True, save=None, keep=None, json=False)
    assert run_cli(ns) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_the_rows_the_package_holds_compare_every_metric() -> None:
    for r in load_rows(DATA):
        assert r["protocol"].startswith("classic-connect:") and r["wire_runs"] >= 1
        for m in METRICS:
            cell = r[m]
            assert len(cell["wire_runs"]) == r["wire_runs"]
            assert cell["within_2x"] == within_2x(m, cell["sim"], cell["wire"])


def test_the_page_s_calibration_lookup_gives_a_connect_cell_its_real_workers_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from groupcoord.lab import limits, wire_connect_calibration

    path = tmp_path / "cal.json"
    save_rows([_row("kip415-connector-added", 3, "classic-connect:sessioned", 1)], path)
    monkeypatch.setattr(wire_connect_calibration, "DATA", path)
    text = limits.calibration_for("kip415-connector-added", "classic-connect:sessioned")
    # the line names its protocol: a sentence carries one line per protocol it compares
    assert text is not None and text.startswith(
        "classic-connect:sessioned against real Connect workers")
    assert "3 workers: restarts 1 / 3" in text
    # a size not measured says so, with the sizes that were
    text = limits.calibration_for("kip415-connector-added", "classic-connect:sessioned",
                                  members=12)
    assert text is not None and "(not measured at 12 workers)" in text and "3 workers" in text
    # a consumer protocol's lookup is unchanged
    assert "Connect workers" not in (limits.calibration_for("kip415-connector-added",
                                                            "classic:eager") or "")

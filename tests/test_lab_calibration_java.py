"""The calibration against Apache Kafka's Java client beside librdkafka's (``lab.limits``): its
rows (``lab/data/calibration-java.json``, written by ``lab calibrate --client java --save``)
are read with librdkafka's, each row names its client where both are there, and the report's
calibration text ("What the model leaves out") says which clients measured and, where both
measured the same cell, what each measured against the simulator, from the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupcoord.lab import limits
from groupcoord.lab.limits import (
    calibration_items,
    calibration_row_text,
    load_calibration,
    save_calibration,
    with_java_rows,
)

CHECKED = ["time_to_converge_ms", "converge_after_ms", "lag_peak", "lag_record_s"]


def _row(protocol: str, converge: tuple[float, float], lag: tuple[float, float],
         **extra: Any) -> dict[str, Any]:
    return {"scenario": "rolling-bounce", "protocol": protocol, "members": 6, "wire_runs": 2,
            "settings": {"heartbeat.interval.ms": 3000},
            "metrics": {"time_to_converge_ms": {"simulated": converge[0] + 3000,
                                                "measured": converge[1] + 3000},
                        "converge_after_ms": {"simulated": converge[0], "measured": converge[1]},
                        "lag_peak": {"simulated": 100, "measured": 110},
                        "lag_record_s": {"simulated": lag[0], "measured": lag[1]}},
            "within_2x": True, **extra}


LIB = {"measured": "2026-11-01", "checked": CHECKED,
       "setup": {"clients": {"classic": "confluent-kafka 2.16.1 (librdkafka 2.16.0), "
                                        "group.protocol=classic"}},
       "rows": [_row("classic:eager", (1196.3, 976.7), (110.6, 73.1)),
                _row("consumer:uniform", (4701.5, 5015.8), (603.7, 433.9))]}
JAVA = {"measured": "2026-11-28", "checked": CHECKED,
        "setup": {"clients": {"classic": "Apache Kafka kafka-clients 4.0.0-SNAPSHOT (commit "
                                         "1eb7644349cb, built here), group.protocol=classic"}},
        "rows": [_row("classic:eager", (1196.3, 1500.0), (110.6, 150.0), client="java")]}


def test_the_java_rows_follow_librdkafkas_tagged_with_their_client() -> None:
    both = with_java_rows(LIB, JAVA)
    assert [r.get("client") for r in both["rows"]] == [None, None, "java"]
    # a Java row is judged on the metrics it was checked on (its file's), whatever
    # librdkafka's file checks now
    assert both["rows"][2]["checked"] == CHECKED and "checked" not in both["rows"][0]
    assert with_java_rows({**LIB, "checked": [*CHECKED, "stall_ms"]}, JAVA)["rows"][2][
        "checked"] == CHECKED
    assert both["measured"] == "2026-11-28"
    assert both["setup"]["clients"] == LIB["setup"]["clients"]
    assert both["setup"]["clients_java"] == JAVA["setup"]["clients"]
    assert len(LIB["rows"]) == 2  # the inputs are not changed


def test_each_row_names_its_client_and_the_head_compares_the_cells_both_measured() -> None:
    both = with_java_rows(LIB, JAVA)
    items = calibration_items(both)
    head = items[0]
    assert "two clients: confluent-kafka (librdkafka) consumers and Apache Kafka's Java client" \
        in head
    assert "kafka-clients 4.0.0-SNAPSHOT" in head and "group.protocol" not in head
    # the one cell both measured, with the numbers of its rows; the other is not compared
    assert ("rolling-bounce, classic:eager: time to converge after the disturbance 1,196.3 "
            "simulated, 976.7 librdkafka, 1,500 Java ms; lag 110.6 simulated, 73.1 librdkafka, "
            "150 Java record·s") in head
    assert "rolling-bounce, consumer:uniform:" not in head
    assert "3 of 3 rows within 2x" in head
    rows = [i for i in items if i.startswith(("Within 2x", "Outside 2x"))]
    assert rows[0].startswith("Within 2x: rolling-bounce at 6 members, classic:eager, "
                              "librdkafka (")
    assert rows[2].startswith("Within 2x: rolling-bounce at 6 members, classic:eager, "
                              "Java client (")


def test_without_java_rows_nothing_names_a_client_and_the_head_says_how_to_measure_it() -> None:
    head = calibration_items(LIB)[0]
    assert "No row below measures the Java client" in head
    assert "groupcoord lab calibrate --client java" in head
    assert "blocked" not in head
    text = calibration_row_text(LIB["rows"][0], CHECKED, LIB["setup"])
    assert text.startswith("Within 2x: rolling-bounce at 6 members, classic:eager (")


def test_the_package_results_include_the_java_file_when_it_is_there(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lib = save_calibration(LIB, tmp_path / "calibration.json")
    java = tmp_path / "calibration-java.json"
    monkeypatch.setattr(limits, "CALIBRATION_FILE", lib)
    monkeypatch.setattr(limits, "CALIBRATION_JAVA_FILE", java)
    assert load_calibration() == LIB  # no Java file: librdkafka's alone
    save_calibration(JAVA, java)
    loaded = load_calibration()
    assert loaded is not None
    assert [r.get("client") for r in loaded["rows"]] == [None, None, "java"]
    assert load_calibration(lib) == LIB  # a file named: that file only
    java.write_text("{not json")
    assert load_calibration() == LIB  # an unreadable Java file is left out, not fatal

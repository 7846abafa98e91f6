"""The lock limit as a sentence of its own, and a kill sentence with the wire's figure beside
the model's (the eleventh outside share review): a lost host or hung process stalls a share
partition for the record lock duration minus max.record.locks / the partition's rate, computed
from the runs' settings; the kill sentence keeps the kill only, each side's wire median of the
same cell beside its model median, or that side's kill not run on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.lab import share_marks
from groupcoord.lab.share_marks import family_key, share_claims
from groupcoord.lab.verdict import claims
from tests.test_lab_share_equal_members import KIP848, SHARE, _grids, _runs

#: the shipped file's shape: owner-kill's share side measured, its consumer side not; the
#: lost host's cell with its hung consumers' count
CELLS: list[dict[str, Any]] = [
    {"scenario": "owner-kill", "members": 12, "workload": "1x4-hot", "protocol": SHARE,
     "medians": {"excess_lag_peak": {"sim": 0.5, "wire": -207.0}},
     "wire": [{"lag_peak": 58, "control_lag_peak": 278},
              {"lag_peak": 84, "control_lag_peak": 278}]},
    {"scenario": "owner-crash", "members": 12, "workload": "1x4-hot", "protocol": SHARE,
     "medians": {"excess_lag_peak": {"sim": 3.0, "wire": 7_944.0}},
     "lost_host": {"runs": 10, "wire_stopped": 9}}]


def _stopped(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lost host's share runs above the limit stop a partition 23.35 s (the model's)."""
    for r in runs:
        if (r["scenario"], r["workload"], r["protocol"]) == ("owner-crash", "1x4-hot", SHARE):
            r["resource_downtime_ms"] = 23_351.0 + r["seed"]
    return runs


def _found(monkeypatch: pytest.MonkeyPatch, runs: list[dict[str, Any]]) -> list[Any]:
    monkeypatch.setattr(share_marks, "load_share_calibration", lambda *a, **k: CELLS)
    verdicts = _grids()
    found = claims(verdicts, family_of=family_key(runs))
    return share_claims(found, claims(verdicts, limit=len(runs) + 1), verdicts, runs)


def test_the_lock_limit_is_a_sentence_of_its_own_after_the_kills(
        monkeypatch: pytest.MonkeyPatch) -> None:
    found = _found(monkeypatch, _stopped(_runs()))
    kill = next(c for c in found if c.scenario == "owner-kill")
    assert kill.text == (
        "owner-kill, 12 members on 4 partitions (1x4-hot): share:simple 3 (wire: 71 against its "
        "control's 278, within the control's noise) against consumer:uniform 13,121 "
        "(consumer's kill not run on the wire) records of excess lag "
        "peak, medians of 5 seeds. 5 seeds, no confirmation set."), kill.text
    lock = next(c for c in found if c.scenario == "owner-crash")
    assert found.index(lock) == found.index(kill) + 1
    assert lock.text.startswith(
        "Lock limit: a lost host or hung process (owner-crash) stalls a share partition for "
        "the record lock duration minus max.record.locks / the partition's rate (30 s - 2,000 "
        "/ 300 records/s = 23.3 s on 1x4-hot): 12 members on 4 partitions, resource downtime "
        "23.4 s on 5 of 5 seeds; share:simple's excess lag peak 7,046 records, worse than "
        "consumer:uniform on 12 partitions (4,557) on every seed (medians of 5 and 5 seeds, "
        "each table's); share:simple against consumer:uniform: 4,577 against 4,557 on the same "
        # the same layouts beside the cross-layout one (the fifteenth outside share review)
        "12 partitions, 7,046 against 13,526 on the same 4 partitions. On the wire a hung share "
        "consumer (SIGSTOP) stopped its partition on 9 of 10 runs."), lock.text
    assert "--scenario owner-crash " in lock.command and "owner-kill" not in lock.command
    assert any(x.startswith("lock limit: ") for x in lock.caveats)
    assert KIP848 in lock.text
    # a wire excess over its floor is its median alone
    monkeypatch.setattr(share_marks, "load_share_calibration", lambda *a, **k: [
        {**CELLS[0], "medians": {"excess_lag_peak": {"sim": 5.5, "wire": 526.0}}}])
    assert share_marks.wire_text("owner-kill", 12, "1x4-hot", SHARE, "lag_peak") == "526"


def test_without_a_stop_the_lost_host_stays_in_the_kills_sentence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    found = _found(monkeypatch, _runs())
    assert not any(c.text.startswith("Lock limit") for c in found)
    kill = next(c for c in found if c.scenario == "owner-kill")
    assert "A lost host or hung process (owner-crash) there: share:simple 7,046" in kill.text

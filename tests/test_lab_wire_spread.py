"""``lab.wire_spread``: how far apart a classic eager group's members learn of a rebalance,
from their revocation callbacks in a kept run's logs, on logs whose answer is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.lab.wire_spread import Round, main, rounds


def _log(d: Path, name: str, events: list[tuple[float, str]]) -> None:
    with open(d / f"{name}.jsonl", "w") as f:
        for t, e in events:
            f.write(json.dumps({"t": t, "e": e, **({"parts": [["foo", 0]]} if e == "revoke"
                                                   else {})}) + "\n")
            if e == "revoke":
                f.write(json.dumps({"t": t + 0.001, "e": "rec", "tp": "foo", "p": 0, "o": 1})
                        + "\n")


def test_each_rebalance_is_the_spread_of_the_members_revocations(tmp_path: Path) -> None:
    # c1 closes at 30 (its own revocation is not learning); c2, c3 learn at 31.0 and 33.5;
    # then c1 rejoins and c2, c3 learn at 36.0 and 36.2
    _log(tmp_path, "c1", [(29.99, "closing"), (30.0, "revoke"), (30.1, "closed")])
    _log(tmp_path, "c2", [(31.0, "revoke"), (36.0, "revoke")])
    _log(tmp_path, "c3", [(32.2, "revoke"), (36.2, "revoke")])
    assert rounds(tmp_path) == [Round(31.0, 2, 1.2), Round(36.0, 2, 0.2)]


def test_the_command_prints_the_median_and_refuses_a_missing_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _log(tmp_path, "c1", [(10.0, "revoke"), (20.0, "revoke")])
    _log(tmp_path, "c2", [(10.5, "revoke"), (20.1, "revoke")])
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 members 0.500 s, 2 members 0.100 s" in out
    assert "2 rebalances: spread median 0.300 s, largest 0.500 s" in out
    assert main([str(tmp_path / "none")]) == 2

"""``lab.wire_spread``: how far apart a classic eager group's members learn of a rebalance,
from their revocation callbacks in a kept run's logs, on logs whose answer is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.lab import wire_spread
from groupcoord.lab.wire_spread import Round, load_spread, main, rounds, spread_text


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


def test_save_stores_one_row_per_client_that_the_page_text_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--save CLIENT`` stores the client's result (replacing its earlier row, keeping the
    other client's); :func:`spread_text` says the largest spread over every stored row."""
    store = tmp_path / "wire_spread.json"
    monkeypatch.setattr(wire_spread, "SPREAD_FILE", store)
    logs = tmp_path / "logs"
    logs.mkdir()
    _log(logs, "c1", [(10.0, "revoke"), (20.0, "revoke"), (30.0, "revoke")])
    _log(logs, "c2", [(10.04, "revoke"), (20.01, "revoke"), (30.02, "revoke")])
    assert main(["--save", "Java", str(logs)]) == 0
    assert main(["--save", "librdkafka", str(logs)]) == 0
    _log(logs, "c2", [(10.5, "revoke"), (20.1, "revoke"), (30.3, "revoke")])
    assert main(["--save", "Java", str(logs)]) == 0  # measured again: replaces its row
    rows = load_spread(store)
    assert [(r["client"], r["rebalances"], r["median_s"], r["largest_s"]) for r in rows] == [
        ("Java", 3, 0.3, 0.5), ("librdkafka", 3, 0.02, 0.04)]
    text = spread_text(rows)
    assert text.startswith("real classic members, measured on the wire (eager rolling "
                           "bounce): within 0.500 s of one another")
    assert "median 0.300 s, Java, 3 rebalances; median 0.020 s, librdkafka" in text
    assert spread_text([]) == ""
    # no rebalance with two members: nothing saved, and a missing client name is refused
    lone = tmp_path / "lone"
    lone.mkdir()
    _log(lone, "c1", [(10.0, "revoke")])
    assert main(["--save", "Java", str(lone)]) == 1
    assert load_spread(store) == rows
    assert main(["--save"]) == 2
    assert load_spread(tmp_path / "missing.json") == []
    capsys.readouterr()

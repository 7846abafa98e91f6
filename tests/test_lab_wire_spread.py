"""``lab.wire_spread``: how far apart a classic eager group's members learn of a rebalance,
from their revocation callbacks in a kept run's logs, on logs whose answer is known."""

from __future__ import annotations

import itertools
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


def _events_log(d: Path, name: str, events: list[tuple[float, str]]) -> None:
    with open(d / f"{name}.jsonl", "a") as f:
        for t, e in events:
            f.write(json.dumps({"t": t, "e": e, **({"parts": [["foo", 0]]} if e in (
                "assign", "revoke") else {})}) + "\n")


def test_a_join_into_a_stable_group_is_the_spread_of_the_members_already_there(
        tmp_path: Path) -> None:
    """``--stable``: each join (a start after the group formed) is measured over the members
    already there, from their first revocation after the joiner's start; the joiner itself,
    a member closing, and a revocation more than ``LEARN_S`` later are not learning of it;
    the stable time counts from the last assignment before the join."""
    from groupcoord.lab.wire_spread import Learned, stable_rounds

    # c1..c3 form the group at 5.0; c4 starts at 305.0 and the three learn at 306.1, 307.9,
    # 308.4; all are assigned again at 310.0; c5 starts at 610.0, c1..c4 learn (c4 at 612.0)
    # except c3, which is closing from 600 on; a revocation at 700 is another matter
    _events_log(tmp_path, "c1", [(0.5, "start"), (5.0, "assign"), (306.1, "revoke"),
                                 (310.0, "assign"), (611.0, "revoke"), (615.0, "assign")])
    _events_log(tmp_path, "c2", [(0.7, "start"), (5.0, "assign"), (307.9, "revoke"),
                                 (310.0, "assign"), (611.5, "revoke"), (615.0, "assign")])
    _events_log(tmp_path, "c3", [(0.9, "start"), (5.0, "assign"), (308.4, "revoke"),
                                 (310.0, "assign"), (600.0, "closing"), (600.1, "revoke")])
    _events_log(tmp_path, "c4", [(305.0, "start"), (310.0, "assign"), (612.0, "revoke"),
                                 (615.0, "assign"), (700.0, "revoke")])
    _events_log(tmp_path, "c5", [(610.0, "start"), (615.0, "assign")])
    assert stable_rounds(tmp_path) == [Learned(305.0, 300.0, 3, 1.1, 2.3),
                                       Learned(610.0, 300.0, 3, 1.0, 1.0)]
    # no group formed: nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    _events_log(empty, "c1", [(0.5, "start")])
    assert stable_rounds(empty) == []


def test_stable_save_keeps_the_bounce_rows_and_orders_by_client_and_minutes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--stable --save CLIENT`` stores one row per stable duration in whole minutes under
    the file's ``stable`` key, replacing that client's earlier rows, keeping the rolling-bounce
    rows; :func:`stable_text` says the largest spread and each client's medians."""
    from groupcoord.lab.wire_spread import load_stable, stable_text

    store = tmp_path / "wire_spread.json"
    monkeypatch.setattr(wire_spread, "SPREAD_FILE", store)
    bounce = tmp_path / "bounce"
    bounce.mkdir()
    _log(bounce, "c1", [(10.0, "revoke"), (20.0, "revoke")])
    _log(bounce, "c2", [(10.5, "revoke"), (20.1, "revoke")])
    assert main(["--save", "Java", str(bounce)]) == 0
    run = tmp_path / "run"
    run.mkdir()
    # joins after 300 s, 300 s and 600 s stable: spreads 2.0, 1.0, 2.5
    _events_log(run, "c1", [(0.0, "start"), (5.0, "assign"), (306.0, "revoke"),
                            (310.0, "assign"), (611.0, "revoke"), (615.0, "assign"),
                            (1216.0, "revoke"), (1220.0, "assign")])
    _events_log(run, "c2", [(0.0, "start"), (5.0, "assign"), (308.0, "revoke"),
                            (310.0, "assign"), (612.0, "revoke"), (615.0, "assign"),
                            (1218.5, "revoke"), (1220.0, "assign")])
    _events_log(run, "c3", [(305.0, "start"), (310.0, "assign"), (612.0, "revoke"),
                            (615.0, "assign"), (1217.0, "revoke"), (1220.0, "assign")])
    _events_log(run, "c4", [(610.0, "start"), (615.0, "assign"), (1217.5, "revoke"),
                            (1220.0, "assign")])
    _events_log(run, "c5", [(1215.0, "start"), (1220.0, "assign")])
    assert main(["--stable", "--save", "librdkafka", str(run)]) == 0
    assert main(["--stable", "--save", "Java", str(run)]) == 0
    out = capsys.readouterr().out
    assert "after 300 s stable 2 members learned 1.000 s after the join, 2.000 s apart" in out
    assert "3 joins: spread median 2.000 s, largest 2.500 s" in out
    stable = load_stable(store)
    assert [(r["client"], r["stable_min"], r["runs"], r["rebalances"], r["members"],
             r["median_s"], r["largest_s"]) for r in stable] == [
        ("Java", 5, 1, 2, [2, 3], 1.5, 2.0), ("Java", 10, 1, 1, [4], 2.5, 2.5),
        ("librdkafka", 5, 1, 2, [2, 3], 1.5, 2.0), ("librdkafka", 10, 1, 1, [4], 2.5, 2.5)]
    # the runs of a row are those that had a join after that long; two runs, one of them
    # with joins after 5 min only
    short = tmp_path / "short"
    short.mkdir()
    _events_log(short, "c1", [(0.0, "start"), (5.0, "assign"), (306.0, "revoke")])
    _events_log(short, "c2", [(0.0, "start"), (5.0, "assign"), (306.5, "revoke")])
    _events_log(short, "c3", [(305.0, "start"), (310.0, "assign")])
    assert main(["--stable", "--save", "librdkafka", str(run), str(short)]) == 0
    assert [(r["stable_min"], r["runs"], r["rebalances"]) for r in load_stable(store)
            if r["client"] == "librdkafka"] == [(5, 2, 3), (10, 1, 1)]
    assert main(["--stable", "--save", "librdkafka", str(run)]) == 0
    assert [r["client"] for r in load_spread(store)] == ["Java"]  # the bounce row kept
    assert main(["--save", "Java", str(bounce)]) == 0  # and a bounce save keeps these
    assert load_stable(store) == stable
    text = stable_text(stable)
    assert text.startswith("after 5 to 10 min stable, real classic members learned of a "
                           "member's join within 2.500 s of one another (Java: median "
                           "1.500 s, 2 joins after 5 min, median 2.500 s, 1 join after "
                           "10 min; librdkafka: ")
    assert stable_text([]) == ""
    # a run without a join into a formed group saves nothing
    assert main(["--stable", "--save", "Java", str(bounce)]) == 1
    assert load_stable(store) == stable
    capsys.readouterr()


def test_the_stable_scenarios_join_one_member_at_a_time_after_five_minutes_or_more() -> None:
    """The scenarios the stable-group rows were measured with (module doc): six members, and
    each join a single member at least 5 min after the group last changed."""
    from groupcoord.sim.scenario import load_scenario

    for name, gaps in (("stable-scale-out", [300_000, 300_000, 600_000]),
                       ("stable-scale-out-35min", [2_100_000])):
        sc = load_scenario(str(wire_spread.SPREAD_FILE.with_name(f"{name}.toml")))
        assert sc.members == 6
        assert [(e.kind, e.params.get("count")) for e in sc.events] == [("scale-out", 1)] * len(
            gaps)
        times = [0] + [e.at_ms for e in sc.events]
        assert [b - a for a, b in itertools.pairwise(times)] == gaps

"""The consumer wire harness's closing check (``lab.wire.run_wire``) and its producer thread.

After the last disturbance the harness asks every half second whether the group has converged
(``lab.wire_metrics.converged_now``). Its producer is a thread of the harness's interpreter
(one tick every ``_Producer.TICK_S``); a check that parsed every member's whole log each time
(one JSON line per record) held that interpreter, and a late tick produces its share of
records at once. The check reads the logs' membership lines only, each line once
(``MembershipTail``), which is all that convergence reads: the same answer as the whole logs.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from groupcoord.lab.calibrate import calibration_scenario
from groupcoord.lab.wire import (
    MembershipTail,
    WireWindow,
    WireWorkload,
    _collect,
    _Members,
    _Proc,
    _RunContext,
    late_ticks,
    run_wire,
)
from groupcoord.lab.wire_metrics import converged_now, convergence
from groupcoord.sim.scenario import parse_scenario

T0 = 1_000_000.0


def _line(t: float, e: str, **kw: Any) -> str:
    return json.dumps({"t": t, "e": e, **kw}) + "\n"


def _logs() -> dict[str, list[str]]:
    """Two members on foo (2 partitions), c2 bounced at 10 s and back at 12 s; both process
    records throughout (c1 both partitions while c2 is away), one JSON line per record."""
    c1 = [_line(T0 + 0.5, "assign", parts=[["foo", 0]])]
    c2 = [_line(T0 + 0.6, "assign", parts=[["foo", 1]])]
    c1 += [_line(T0 + 1 + i / 10, "rec", tp="foo", p=0, o=i) for i in range(90)]
    c2 += [_line(T0 + 1 + i / 10, "rec", tp="foo", p=1, o=i) for i in range(90)]
    c1 += [_line(T0 + 10.0, "revoke", parts=[["foo", 0]])]
    c2 += [_line(T0 + 10.0, "revoke", parts=[["foo", 1]]), _line(T0 + 10.01, "closed")]
    c1 += [_line(T0 + 10.3, "assign", parts=[["foo", 0], ["foo", 1]])]
    c1 += [_line(T0 + 10.4 + i / 10, "rec", tp="foo", p=i % 2, o=90 + i) for i in range(15)]
    c1 += [_line(T0 + 12.5, "revoke", parts=[["foo", 0], ["foo", 1]]),
           _line(T0 + 12.8, "assign", parts=[["foo", 0]])]
    c2 += [_line(T0 + 12.8, "assign", parts=[["foo", 1]])]
    c1 += [_line(T0 + 13 + i / 10, "rec", tp="foo", p=0, o=105 + i) for i in range(40)]
    c2 += [_line(T0 + 13 + i / 10, "rec", tp="foo", p=1, o=105 + i) for i in range(40)]
    return {"c1": c1, "c2": c2}


def _context(tmp_path: Path) -> tuple[_RunContext, _Members]:
    sc = parse_scenario(tomllib.loads('name = "two"\n[group]\nmembers = 2\n'
                                      'topics = { foo = 2 }\n'))
    ctx = _RunContext("classic:eager", "127.0.0.1:0", sc, WireWorkload(), tmp_path, T0)
    members = _Members(ctx)
    members.live["c1"] = _Proc("c1", None, started=T0)  # type: ignore[arg-type]
    members.done.append(_Proc("c2", None, started=T0, stopped=T0 + 10.01))  # type: ignore[arg-type]
    members.live["c2"] = _Proc("c2", None, started=T0 + 12.0)  # type: ignore[arg-type]
    return ctx, members


def test_the_membership_lines_read_once_converge_exactly_as_the_whole_logs(
        tmp_path: Path) -> None:
    """Appended in pieces (a line cut in the middle included), the tail's membership-only
    run gives ``converged_now`` and every window's convergence as the whole logs do, and
    decodes no record line."""
    ctx, members = _context(tmp_path)
    windows = [WireWindow("initial-join", 0.0, 0.0), WireWindow("bounce", 10.0, 12.0)]
    logs = _logs()
    tail = MembershipTail(ctx.logs)
    written = dict.fromkeys(logs, 0)
    answers = []
    for upto in (5.0, 10.2, 12.0, 12.9, 14.0, 17.0):
        for name, lines in logs.items():
            due = [ln for ln in lines if json.loads(ln)["t"] <= T0 + upto]
            text = "".join(due[written[name]:])
            with open(ctx.logs / f"{name}.jsonl", "a") as f:
                f.write(text[:-5])  # the last line half written: read next time
            with open(ctx.logs / f"{name}.jsonl", "a") as f:
                f.write(text[-5:])
            written[name] = len(due)
        whole = _collect(ctx, members, None, T0, T0 + upto, windows)
        part = _collect(ctx, members, None, T0, T0 + upto, windows, tail=tail)
        assert all(d["e"] != "rec" for v in part.logs.values() for d in v)
        assert any(d["e"] == "rec" for v in whole.logs.values() for d in v)
        assert converged_now(part) == converged_now(whole), upto
        assert convergence(part) == convergence(whole), upto
        answers.append(converged_now(part))
    # not converged while c2 is away, converged once both own a partition again
    assert answers == [True, False, False, True, True, True]


def test_a_tick_is_late_beyond_the_tick_interval_by_more_than_the_threshold() -> None:
    ticks = [0.0, 0.02, 0.04, 0.20, 0.22, 0.36, 0.38]
    assert [(t, round(d, 3)) for t, d in late_ticks(ticks)] == [(0.20, 0.14), (0.36, 0.12)]
    assert late_ticks(ticks, late_s=0.13) == [(0.20, pytest.approx(0.14))]


SMALL = """
name = "closing-small"
[group]
members = 2
topics = { foo = 4 }
[[events]]
at_ms = 5000
kind = "bounce"
member = "c2"
down_ms = 2000
"""


def test_the_closing_check_reads_no_whole_log_before_the_run_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run (two classic eager members, c2 bounced): until the run's end no member log
    is read whole (``_read_jsonl``); the closing check read the membership lines only, and the
    group converged as the final logs say."""
    pytest.importorskip("confluent_kafka")
    import groupcoord.lab.wire as wire

    reads: list[tuple[float, str]] = []
    real = wire._read_jsonl

    def counted(path: Path) -> list[dict[str, Any]]:
        reads.append((wire.time.time(), path.name))
        return real(path)

    monkeypatch.setattr(wire, "_read_jsonl", counted)
    sc = calibration_scenario(parse_scenario(tomllib.loads(SMALL)), heartbeat_interval_ms=1000,
                              session_timeout_ms=10_000)
    run = run_wire(sc, "classic:eager", WireWorkload(records_per_s=20, processing_ms=2),
                   tail_s=1.0, seed=1, keep_dir=tmp_path / "run")
    assert reads, "the run's logs were never read"
    assert min(t for t, _ in reads) >= run.end, [(t - run.t0, n) for t, n in reads]
    [_, bounce] = convergence(run)
    assert bounce is not None and bounce <= run.end
    harness = json.loads((tmp_path / "run" / "harness.json").read_text())
    assert harness["checks"] and harness["ticks"] > 0

"""A scenario's ``slow`` event on the wire (``lab.wire``, ``wire_member --slow``, the Java
member's ``--slow``): the named member's revocation callback sleeps ``delay_ms`` after its
commit during the event's window, as the simulator's slow member's revocation ends that much
later; so an eager rebalance stalls above the calibration's 250 ms floor on the wire too."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from groupcoord.lab.calibrate import (
    calibration_scenario,
    disturbing,
    protocol_scenario,
    simulate_windows,
)
from groupcoord.lab.wire import WireError, WireWorkload, _actions, run_wire, slow_windows
from groupcoord.lab.wire_java import JavaClientMissing, java_client
from groupcoord.lab.wire_member import parse_slow, slow_delay_s
from groupcoord.lab.wire_metrics import window_metrics
from groupcoord.sim.scenario import parse_scenario

#: Three members on foo (6 partitions); c3's revocations take 1.5 s more from 6 s for 30 s;
#: c2 bounces at 9 s (two eager rebalances inside c3's window: c2's leave and its return).
SLOW = """
name = "slow-small"
description = "c3 slow by 1.5 s at every rebalance; c2 bounces."
[group]
members = 3
topics = { foo = 6 }
[[events]]
at_ms = 6000
kind = "slow"
member = "c3"
delay_ms = 1500
duration_ms = 30000
[[events]]
at_ms = 9000
kind = "bounce"
member = "c2"
down_ms = 4000
"""


def _scenario(text: str = SLOW) -> object:
    return calibration_scenario(parse_scenario(tomllib.loads(text)), heartbeat_interval_ms=1000,
                                session_timeout_ms=10_000)


def test_a_slow_window_delays_only_the_process_running_when_it_began() -> None:
    windows = parse_slow("100:160:2000,130:140:500")
    assert windows == [(100.0, 160.0, 2.0), (130.0, 140.0, 0.5)]
    assert slow_delay_s(windows, started=10, now=99.9) == 0  # not begun
    assert slow_delay_s(windows, started=10, now=120) == 2.0
    assert slow_delay_s(windows, started=10, now=135) == 0.5  # the later window replaces it
    assert slow_delay_s(windows, started=10, now=150) == 0  # ... and its end ends slowness
    assert slow_delay_s(windows, started=10, now=160) == 0
    # a process started after the window began is a new process (the simulator's restart)
    assert slow_delay_s(windows, started=101, now=120) == 0
    assert slow_delay_s(windows, started=101, now=135) == 0.5
    assert parse_slow("") == []


@pytest.mark.parametrize("bad", ["1:2", "a:2:3", "5:4:100", "1:2:-5"])
def test_a_bad_slow_argument_is_refused_in_one_line(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="slow"):
        parse_slow(bad)
    out = subprocess.run([sys.executable, "-m", "groupcoord.lab.wire_member", "--bootstrap",
                          "127.0.0.1:1", "--group", "g", "--name", "c1", "--protocol", "eager",
                          "--topics", "foo", "--log", str(tmp_path / "c1.jsonl"), "--slow", bad],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--slow" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "c1.jsonl").exists()


def test_the_harness_passes_the_slow_window_to_the_named_member_only() -> None:
    sc = _scenario()
    assert slow_windows(sc, "c3", 1000.0) == "1006.000:1036.000:1500"  # type: ignore[arg-type]
    assert slow_windows(sc, "c1", 1000.0) == ""  # type: ignore[arg-type]
    every = _scenario(SLOW.replace('member = "c3"', 'member = "all"'))
    assert slow_windows(every, "c1", 0.0) == "6.000:36.000:1500"  # type: ignore[arg-type]
    acts, windows = _actions(sc)  # type: ignore[arg-type]
    # no action of the harness's own: only the starts and the bounce's stop and go
    assert [a[1] for a in acts] == ["go", "go", "go", "stop", "go"]
    # a window of its own, over at once (as the simulator's), so the windows pair by index
    assert [(w.label, w.at_s, w.settle_s) for w in windows[1:]] == [
        ("slow", 6.0, 6.0), ("bounce", 9.0, 13.0)]


def test_a_slow_event_is_refused_for_connect_workers() -> None:
    with pytest.raises(WireError, match="slow is played for consumer groups only"):
        run_wire(_scenario(), "connect:cooperative", WireWorkload())  # type: ignore[arg-type]


def _client(name: str) -> str:
    if name == "librdkafka":
        pytest.importorskip("confluent_kafka")
    else:
        try:
            java_client()
        except JavaClientMissing as e:
            pytest.skip(str(e))
    return name


@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_a_slow_member_makes_eager_stall_above_the_floor_on_the_wire(client: str,
                                                                     tmp_path: Path) -> None:
    run = run_wire(_scenario(), "classic:eager",  # type: ignore[arg-type]
                   WireWorkload(records_per_s=10, processing_ms=5), tail_s=1, seed=1,
                   keep_dir=tmp_path / "run", client=_client(client))
    logs = tmp_path / "run" / "logs"
    events = [json.loads(line) for line in (logs / "c3.jsonl").read_text().splitlines()
              if '"e": "rec"' not in line]
    # c3 slept 1.5 s right after each revocation it ran in the window (c2's leave and return),
    # and only then rejoined: its next assignment is at least that much later
    # (the window still holds when the run ends: c3's close is slow too)
    closing = next(i for i, e in enumerate(events) if e["e"] == "closing")
    slow = [i for i, e in enumerate(events) if e["e"] == "slow"]
    assert len([i for i in slow if i < closing]) >= 2, events
    for i in slow:
        assert events[i - 1]["e"] == "revoke" and events[i]["ms"] == 1500
        if i < closing:
            nxt = next(e for e in events[i + 1:] if e["e"] == "assign")
            assert nxt["t"] - events[i - 1]["t"] >= 1.45
    # the others are not slow
    for other in ("c1.jsonl", "c2.jsonl"):
        assert '"e": "slow"' not in (logs / other).read_text()
    # every eager rebalance waits for c3: the bounce's stall is above the 250 ms floor,
    # about two of c3's delays (without the slow member it is tens of milliseconds)
    bounce = disturbing(window_metrics(run))[1]
    assert bounce["disturbance"] == "bounce"
    assert bounce["stall_ms"] >= 2_000, bounce


def test_a_slow_events_own_window_is_left_out_of_the_comparison_on_both_sides() -> None:
    sc = _scenario()
    simulated = simulate_windows(protocol_scenario(sc, "classic:eager"),  # type: ignore[arg-type]
                                 "classic:eager", WireWorkload(records_per_s=10, processing_ms=5), 1)
    assert [w["disturbance"] for w in simulated] == ["initial-join", "bounce"]
    # the bounce's eager rebalances wait for the slow member in the model too
    assert simulated[1]["stall_ms"] >= 2_000
    assert disturbing([{"disturbance": "slow"}, {"disturbance": "bounce"}]) == [
        {"disturbance": "bounce"}]

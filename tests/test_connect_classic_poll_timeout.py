"""A classic Connect worker whose revocation outlasts ``rebalance.timeout.ms`` leaves the group
and joins again as a new member, as Apache Kafka's does (``client/connect/classic_worker.py``,
"Poll timeout during a revocation").

Upstream's ``WorkerGroupMember`` gives the ``AbstractCoordinator``'s ``Heartbeat`` the rebalance
timeout as its poll interval; the herder blocks in the revocation (``startAndStop`` of its
stopping callables) and its heartbeat thread, which goes on heartbeating, calls
``handlePollTimeoutExpiry`` once the poll timer has run out: LeaveGroup, member id and generation
reset. The revocation runs on; then ``joinGroupIfNeeded`` joins again, as a new member. An
incremental cooperative worker's timer starts at the JoinGroup's answer (the heartbeat thread's
``enable`` resets it), an eager worker's at the revocation (the poll that found the rebalance),
where the coordinator's own join deadline, counted from the rebalance's start, usually removes it
first.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from groupcoord.client.connect.classic_worker import ClassicConnectWorker, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.coordinator.classic.messages import LeaveGroupRequest
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.scenario import parse_scenario
from groupcoord.sim.workload import parse_workload

from .classic_connect_support import ConnectCluster, name_of, table

CONFIG = ConfigSnapshot(1, {"A": 5, "B": 5})
TIMEOUT = 20_000
INTERVAL = 500


def _group(protocol: str) -> ConnectCluster:
    """W1 (the leader) and W2 share the 12 connectors and tasks; W2 will stop slowly."""
    c = _recorded(ConnectCluster(CONFIG, protocol=protocol, heartbeat_interval_ms=INTERVAL,
                                 session_timeout_ms=6_000, rebalance_timeout_ms=TIMEOUT))
    c.start("W1", "W2")
    c.settle()
    assert c.leader() == "W1" and all(c.runs().values())
    c.listeners["W2"].defer = True
    return c


def _until_w2_revokes(c: ConnectCluster) -> int:
    for _ in range(10_000):
        if c.listeners["W2"].stopping is not None:
            return c.now
        c.advance(10)
    raise AssertionError("W2 never revoked anything")


def _leaves(c: ConnectCluster) -> list[tuple[int, str]]:
    """Every LeaveGroup the shard has been sent: (time, member id)."""
    return [(t, req.members[0].member_id) for t, req in _SENT[id(c)]
            if isinstance(req, LeaveGroupRequest)]


#: The requests each cluster sent, with their times (by the cluster's id).
_SENT: dict[int, list[tuple[int, Any]]] = {}


def _recorded(c: ConnectCluster) -> ConnectCluster:
    sent = _SENT[id(c)] = []
    real = c.h.send

    def send(req: Any) -> Any:
        sent.append((c.now, req))
        return real(req)

    c.h.send = send  # type: ignore[method-assign]
    return c


def test_a_cooperative_worker_leaves_when_its_revocation_outlasts_the_rebalance_timeout() -> None:
    c = _group("sessioned")
    w2 = c.workers["W2"]
    old = w2.member_id
    c.start("W3")
    began = _until_w2_revokes(c)
    [revoking] = [r for r in c.rounds if r.generation == w2.generation]
    assert table(revoking)["W2"][2], "W2 gives work back in this round"
    # the poll timer started at the JoinGroup's answer, just before the revocation
    expiry = w2.poll_timeout_at()
    assert expiry is not None and began - INTERVAL <= expiry - TIMEOUT <= began
    beats = w2.stats["heartbeats"]
    c.advance(expiry - 1 - c.now)
    # up to the timer's end it heartbeats and keeps its membership (a long stop alone costs
    # no session: the heartbeat thread goes on)
    assert w2.member_id == old and w2.stats["poll_timeouts"] == 0
    assert w2.stats["heartbeats"] - beats >= (expiry - began) // INTERVAL - 2
    assert not _leaves(c)
    c.advance(1)
    # then the heartbeat thread leaves: one LeaveGroup, the member id and generation reset,
    # the revocation still under way
    assert _leaves(c) == [(expiry, old)]
    assert w2.stats["poll_timeouts"] == 1 and w2.member_id == "" and w2.generation == -1
    assert w2.state is WorkerState.JOINING and c.listeners["W2"].stopping is not None
    c.advance(5_000)
    # the group rebalanced without it: W2's kept work is lost and waits for the delay
    # (KIP-415), what it gave back already went to W3 (and runs twice while W2 stops it)
    without = c.rounds[-1]
    assert without.now_ms == expiry and set(table(without)) == {"W1", "W3"}
    assert c.zombie_overlaps > 0
    beats = w2.stats["heartbeats"]
    # nothing else leaves meanwhile, and W2 sends nothing until its stops are done
    c.advance(30_000)
    assert w2.stats["heartbeats"] == beats and len(_leaves(c)) == 1
    kept = {n for n in c.runs()["W2"]} - table(revoking)["W2"][2]
    c.listeners["W2"].defer = False
    c.finish_revocation("W2")
    c.settle()
    # it joined again as a new member, with the work it kept, and everything runs once
    assert w2.member_id not in ("", old) and w2.stats["joins"] >= 2
    back = c.rounds[-1]
    assert set(table(back)) == {"W1", "W2", "W3"}
    assert c.runs()["W2"] == kept and not w2.kept_after_poll_timeout
    c.complete()


def test_a_revocation_within_the_rebalance_timeout_keeps_the_membership() -> None:
    c = _group("sessioned")
    w2 = c.workers["W2"]
    old = w2.member_id
    c.start("W3")
    _until_w2_revokes(c)
    expiry = w2.poll_timeout_at()
    assert expiry is not None
    c.advance(expiry - 1 - c.now)
    c.listeners["W2"].defer = False
    c.finish_revocation("W2")
    assert w2.poll_timeout_at() is None  # nothing blocks the herder any more
    c.settle()
    c.advance(3 * TIMEOUT)
    assert w2.member_id == old and w2.stats["poll_timeouts"] == 0 and not _leaves(c)
    c.complete()


def test_an_eager_worker_whose_stops_outlast_the_rebalance_timeout_loses_its_membership() -> None:
    """Eager: the rebalance's JoinGroup barrier waits for W2 at most the rebalance timeout from
    the rebalance's start, which comes before W2's heartbeat learns of it; so the coordinator's
    deadline and W2's poll timer end within a heartbeat of each other, and whichever is
    first, W2 is out of the generation the others complete, and rejoins as a new member once
    its stops are done."""
    c = _group("eager")
    w2 = c.workers["W2"]
    old = w2.member_id
    before = len(c.rounds)
    c.start("W3")
    began = _until_w2_revokes(c)
    assert w2.state is WorkerState.JOINING and w2.member_id == old
    c.advance(TIMEOUT + 2 * INTERVAL)
    assert w2.member_id != old and w2.generation == -1
    without = c.rounds[before:]
    assert without and set(table(without[-1])) == {"W1", "W3"}
    assert c.zombie_overlaps > 0  # the others run what W2 still stops
    assert began - INTERVAL <= without[-1].now_ms - TIMEOUT <= began + INTERVAL
    c.listeners["W2"].defer = False
    c.finish_revocation("W2")
    c.settle()
    assert w2.member_id not in ("", old)
    assert {name_of(m) for m in table(c.rounds[-1])} == {"W1", "W2", "W3"}
    c.complete()


def _one_worker_then_two_join(tasks: int, protocol: str) -> Any:
    """One worker runs connector A with ``tasks`` tasks; two more join at 60 s; stops 5 s (8 at
    a time, Kafka's pool), starts 1 s, rebalance timeout 30 s, KIP-415 delay 30 s."""
    sc = parse_scenario({"group": {"members": 1, "connectors": {"A": tasks}},
                         "coordinator": {"session_timeout_ms": 10_000,
                                         "heartbeat_interval_ms": 3_000},
                         "member": {"rebalance_timeout_ms": 30_000,
                                    "scheduled_rebalance_max_delay_ms": 30_000},
                         "events": [{"at_ms": 60_000, "kind": "join", "count": 2}]},
                        source="slow-hand-back")
    wl = parse_workload("w", {"task_records_per_s": 10, "task_start_ms": 1_000,
                              "task_stop_ms": 5_000})
    return replace(sc, workload=wl)


@pytest.mark.parametrize(("tasks", "leaves"), [(40, False), (100, True)])
def test_the_simulated_worker_leaves_only_when_its_stops_outlast_the_timeout(
        tasks: int, leaves: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the simulator (classic-connect:sessioned): the first worker gives back two thirds of
    its items, 8 stops of 5 s at a time. 41 items: 27 back, 4 waves, 20 s, within the 30 s
    timeout: no leave. 101 items: 67 back, 9 waves, 45 s: it leaves at the timer's end (30 s
    after its JoinGroup's answer), the run keeps every invariant (the work the group hands out
    while the worker still stops it counts as a zombie's), and the group converges with the
    worker back as a new member."""
    timeouts: list[int] = []
    original = ClassicConnectWorker._leave_on_poll_timeout

    def leave(self: ClassicConnectWorker, now_ms: int) -> Any:
        assert self._polled_at is not None
        timeouts.append(now_ms - self._polled_at)
        return original(self, now_ms)

    monkeypatch.setattr(ClassicConnectWorker, "_leave_on_poll_timeout", leave)
    sim = build_simulation(_one_worker_then_two_join(tasks, "sessioned"), 0,
                           "classic-connect:sessioned", record_trace=True)
    res = sim.run()
    assert res.ok, res.violation
    lines = res.trace_text().splitlines()
    left = [ln for ln in lines if " leave> " in ln]
    if not leaves:
        assert not timeouts and not left and not sim.stats.get("zombie_overlaps")
        return
    assert timeouts and set(timeouts) == {30_000}
    first = left[0].split()
    assert first[3] == "c1"
    # 30 s after the JoinGroup answer of the round that revoked
    join_answer = max(int(ln.split()[0]) for ln in lines
                      if " join< " in ln and ln.split()[3] == "c1"
                      and int(ln.split()[0]) < int(first[0]))
    assert int(first[0]) == join_answer + 30_000
    assert sim.stats["zombie_overlaps"] > 0

"""Connect workers over the classic protocol (``client/connect/classic_worker.py``) against a real
in-process shard: every KIP-415 scenario (worker joins; worker
leaves; worker bounces, within the delay and after it; leader leaves; leader bounces) plus a
connector added, in the compatible and sessioned modes; the eager mode; eager and cooperative
workers in one group; CONFIG_MISMATCH; the error paths.

The leader's rounds are asserted as the KIP's tables print them (``table``: worker -> (delay,
assigned, revoked), "assigned" being what the worker runs once it applied the round). Where our
assignor departs from a table (connectors and tasks balanced separately; a new leader without the
previous assignment) the expectation is the one ``tests/test_connect_assignors.py`` documents for
the same round. After every pump the driver checks that no connector or task runs on two workers.
"""

from __future__ import annotations

import pytest

from groupcoord.client.connect.classic_worker import ClassicConnectWorker, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.coordinator.classic.messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.protocol.connect_protocol import (
    CONFIG_MISMATCH,
    ConnectorsAndTasks,
    ConnectProtocolCompatibility,
    decode_assignment,
    join_protocols,
)
from groupcoord.protocol.errors import ErrorCode as E

from .classic_connect_support import ConfigReader, ConfigTopic, ConnectCluster, name_of, table
from .test_connect_assignors import KIP_CONFIG, D, kip

COOPERATIVE = ["compatible", "sessioned"]
GROUP = "connect-cluster"


def kip_initial_group(protocol: str, *, w3_first: bool = False,
                      honor_reported_delay: bool = False) -> ConnectCluster:
    """KIP "First new member joins" then "Non-first new member joins", ending in the initial
    group of every later scenario: W1([AC0, AT1]), W2([AT2, BC0]), W3([BT1]), W1 leader."""
    c = ConnectCluster(KIP_CONFIG, protocol=protocol, honor_reported_delay=honor_reported_delay)
    c.start("W1")
    c.settle()
    [first] = c.rounds
    # W1(delay: 0, assigned: [AC0, AT1, AT2, BC0, BT1], revoked: [])
    assert table(first) == {"W1": (0, {"AC0", "AT1", "AT2", "BC0", "BT1"}, set())}
    assert first.protocol == protocol
    # W2 joins; W3 joins while the rebalance is still active; W1 rejoins with everything.
    c.start(*(("W3", "W2") if w3_first else ("W2", "W3")))
    c.settle()
    revoke, settle = c.rounds[1:]
    assert names_of_leaders(revoke, settle) == ["W1", "W1"]
    assert table(revoke) == {
        "W1": (0, {"AC0", "AT1"}, {"AT2", "BC0", "BT1"}),
        "W2": (0, set(), set()),
        "W3": (0, set(), set()),
    }
    # W1 stops the revoked resources and rejoins with [AC0, AT1]: the next round.
    assert settle.generation == revoke.generation + 1
    assert table(settle) == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    assert c.runs() == {"W1": {"AC0", "AT1"}, "W2": {"AT2", "BC0"}, "W3": {"BT1"}}
    c.complete()
    return c


def names_of_leaders(*rounds: object) -> list[str]:
    return [name_of(r.result.leader) for r in rounds]  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_joins(protocol: str) -> None:
    c = kip_initial_group(protocol)
    # W1's listener saw exactly: everything started; three items stopped; nothing else.
    events = c.listeners["W1"].events
    assert [e[0] for e in events] == ["assigned", "revoked"]
    c.advance(60_000)  # nothing moves any more: no further rounds
    assert len(c.rounds) == 3


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_leaves(protocol: str) -> None:
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.stop("W2")  # W2 stops its work, then leaves the group
    assert c.listeners["W2"].events[-1] == ("revoked", ("B",), (KIP_CONFIG.tasks("A")[1],))
    c.settle()
    [held] = c.rounds[mark:]
    # W1(delay: d, assigned: [AC0, AT1]), W3(delay: d, assigned: [BT1])
    assert table(held) == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    c.advance(D - 1)  # the delay runs: nothing is reassigned
    assert len(c.rounds) == mark + 1
    c.advance(1)  # after delay d, W1 and W3 rejoin
    c.settle()
    [after] = c.rounds[mark + 1:]
    assert after.now_ms == held.now_ms + D
    # The KIP prints W1 [AC0, AT1, BC0], W3 [BT1, AT2]; connectors and tasks are balanced
    # separately (see test_connect_assignors.test_worker_leaves): same load per worker.
    assert table(after) == {"W1": (0, {"AC0", "AT1", "AT2"}, set()), "W3": (0, {"BT1", "BC0"}, set())}
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_bounces_within_the_delay(protocol: str) -> None:
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.stop("W2")
    c.settle()
    c.advance(100_000)
    c.start("W2")  # before delay d expires, W2 (a new process) joins with []
    c.settle()
    held, back = c.rounds[mark:]
    assert table(held) == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    d1 = D - (back.now_ms - held.now_ms)  # d': the remaining delay
    assert 0 < d1 < D
    assert table(back) == {
        "W1": (d1, {"AC0", "AT1"}, set()),
        "W2": (d1, set(), set()),
        "W3": (d1, {"BT1"}, set()),
    }
    c.advance(d1)  # after delay d' all three rejoin
    c.settle()
    [final] = c.rounds[mark + 2:]
    assert table(final) == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_bounces_after_the_delay(protocol: str) -> None:
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.stop("W2")
    c.settle()
    c.advance(D)
    c.settle()
    held, expired = c.rounds[mark:]
    assert table(held)["W1"][0] == D
    assert table(expired) == {"W1": (0, {"AC0", "AT1", "AT2"}, set()), "W3": (0, {"BT1", "BC0"}, set())}
    c.start("W2")  # too late: W2 is a new worker; W1 gives up its extra task
    c.settle()
    revoke, balanced = c.rounds[mark + 2:]
    assert table(revoke) == {
        "W1": (0, {"AC0", "AT1"}, {"AT2"}),
        "W2": (0, set(), set()),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    assert table(balanced) == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2"}, set()),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_leader_leaves(protocol: str) -> None:
    # The coordinator makes the first remaining member (in join order) leader when the leader
    # leaves (upstream: hash order); the KIP's table has W3 lead, so W3 joined before W2.
    c = kip_initial_group(protocol, w3_first=True)
    mark = len(c.rounds)
    c.stop("W1")
    c.settle()
    [rnd] = c.rounds[mark:]
    assert name_of(rnd.result.leader) == "W3" and c.leader() == "W3"
    # No delay is in progress. The KIP prints W2 [AT2, BC0, AC0], W3 [BT1, AT1]; balanced per
    # type (test_connect_assignors.test_leader_leaves): AC0 to W3, AT1 to W2.
    assert table(rnd) == {"W2": (0, {"AT2", "BC0", "AT1"}, set()), "W3": (0, {"BT1", "AC0"}, set())}
    c.complete()


def leader_bounce_prefix(c: ConnectCluster) -> tuple[int, int]:
    """KIP "Leader bounces" up to W1 (the leader) leaving while the delay d' runs."""
    mark = len(c.rounds)
    c.stop("W2")
    c.settle()
    c.advance(100_000)
    c.start("W2")
    c.settle()
    held, back = c.rounds[mark:]
    assert table(held) == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    d1 = D - (back.now_ms - held.now_ms)
    assert table(back) == {
        "W1": (d1, {"AC0", "AT1"}, set()),
        "W2": (d1, set(), set()),
        "W3": (d1, {"BT1"}, set()),
    }
    c.advance(50_000)
    c.stop("W1")  # W1, which is the leader, leaves
    return mark + 2, d1


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_leader_bounces_upstream(protocol: str) -> None:
    """The new leader knows neither the previous assignment nor the delay (upstream): it assigns
    the unaccounted items at once; the returning W1 then gets work through a revocation."""
    c = kip_initial_group(protocol, w3_first=True)
    mark, _ = leader_bounce_prefix(c)
    c.settle()
    [rnd] = c.rounds[mark:]
    assert name_of(rnd.result.leader) == "W3"
    assert table(rnd) == {"W2": (0, {"AC0", "AT1", "AT2"}, set()), "W3": (0, {"BT1", "BC0"}, set())}
    c.advance(10_000)
    c.start("W1")  # W1 joins with []
    c.settle()
    revoke, balanced = c.rounds[mark + 1:]
    assert names_of_leaders(revoke, balanced) == ["W3", "W3"]
    assert table(revoke) == {
        "W1": (0, set(), set()),
        "W2": (0, {"AC0", "AT1"}, {"AT2"}),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    assert table(balanced) == {
        "W1": (0, {"AT2"}, set()),
        "W2": (0, {"AC0", "AT1"}, set()),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_leader_bounces_with_reported_delay(protocol: str) -> None:
    """``honor_reported_delay``: the KIP's "Leader bounces" table round for round."""
    c = kip_initial_group(protocol, w3_first=True, honor_reported_delay=True)
    mark, d1 = leader_bounce_prefix(c)
    c.settle()
    [rnd] = c.rounds[mark:]
    # "There's an active delay in progress." W3 leads; d'' is the delay the members reported.
    d2 = d1
    assert name_of(rnd.result.leader) == "W3"
    assert table(rnd) == {"W2": (d2, set(), set()), "W3": (d2, {"BT1"}, set())}
    c.advance(50_000)
    c.start("W1")  # before d'' expires, W1 joins with []
    c.settle()
    [back] = c.rounds[mark + 1:]
    d3 = d2 - (back.now_ms - rnd.now_ms)  # d''': the remaining delay
    assert table(back) == {
        "W1": (d3, set(), set()),
        "W2": (d3, set(), set()),
        "W3": (d3, {"BT1"}, set()),
    }
    c.advance(d3)
    c.settle()
    [final] = c.rounds[mark + 2:]
    # W1(delay: 0, assigned: [BC0, AT2]), W2(delay: 0, assigned: [AC0, AT1]), W3([BT1])
    assert table(final) == {
        "W1": (0, {"BC0", "AT2"}, set()),
        "W2": (0, {"AC0", "AT1"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_connector_added(protocol: str) -> None:
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.topic.publish(ConfigSnapshot(2, {"A": 2, "B": 1, "C": 2}))  # CC0, CT1, CT2 created
    c.settle()
    [rnd] = c.rounds[mark:]
    # No revocation: the new connector to the worker without one, its tasks to the workers
    # with the fewest tasks, ties by id.
    assert table(rnd) == {
        "W1": (0, {"AC0", "AT1", "CT1"}, set()),
        "W2": (0, {"AT2", "BC0", "CT2"}, set()),
        "W3": (0, {"BT1", "CC0"}, set()),
    }
    assert rnd.result.config_offset == 2
    c.complete()


def test_eager_revokes_everything_and_deals_round_robin() -> None:
    c = ConnectCluster(KIP_CONFIG, protocol="eager")
    c.start("W1")
    c.settle()
    assert [r.protocol for r in c.rounds] == ["default"]
    assert c.runs() == {"W1": {"AC0", "AT1", "AT2", "BC0", "BT1"}}
    c.start("W2", "W3")
    c.settle()
    [rnd] = c.rounds[1:]
    # Members sorted; connectors A, B dealt W1, W2; then tasks A-0 (AT1), A-1 (AT2), B-0 (BT1)
    # continue the same iterator: W3, W1, W2. Complete sets, no revocation list, no delay.
    assert table(rnd) == {
        "W1": (0, {"AC0", "AT2"}, set()),
        "W2": (0, {"BC0", "BT1"}, set()),
        "W3": (0, {"AT1"}, set()),
    }
    assert all(a.version == 0 for a in rnd.result.assignments.values())
    # W1 stopped everything before it rejoined, then started its new set.
    assert c.listeners["W1"].events[1:] == [
        ("revoked", ("A", "B"), tuple(sorted(KIP_CONFIG.all().tasks))),
        ("assigned", ("A",), (KIP_CONFIG.tasks("A")[1],)),
    ]
    c.complete()
    c.stop("W3")  # everyone revokes, round robin over two workers
    c.settle()
    assert table(c.rounds[-1]) == {
        "W1": (0, {"AC0", "AT1", "BT1"}, set()),
        "W2": (0, {"BC0", "AT2"}, set()),
    }
    c.complete()


def test_eager_and_cooperative_workers_settle_on_default() -> None:
    c = ConnectCluster(KIP_CONFIG)
    c.start("W1", protocol="sessioned")
    c.start("W2", protocol="compatible")
    c.start("W3", protocol="eager")
    c.settle()
    [rnd] = c.rounds
    assert rnd.protocol == "default"  # the only protocol all three support
    assert all(w.current_protocol.protocol == "default" for w in c.workers.values())
    assert table(rnd) == {
        "W1": (0, {"AC0", "AT2"}, set()),
        "W2": (0, {"BC0", "BT1"}, set()),
        "W3": (0, {"AT1"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_an_eager_worker_downgrades_a_cooperative_group(protocol: str) -> None:
    """KIP-415 migration plan: one eager worker joins; the leader first sends empty assignments
    (everyone stops), then the group runs eager rounds."""
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.start("W4", protocol="eager")
    c.settle()
    downgrade, eager = c.rounds[mark:]
    assert (downgrade.protocol, eager.protocol) == ("default", "default")
    assert all(v == (0, set(), set()) for v in table(downgrade).values())
    # Round robin over W1..W4: connectors A, B to W1, W2; tasks AT1, AT2, BT1 to W3, W4, W1.
    assert table(eager) == {
        "W1": (0, {"AC0", "BT1"}, set()),
        "W2": (0, {"BC0"}, set()),
        "W3": (0, {"AT1"}, set()),
        "W4": (0, {"AT2"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_config_mismatch_when_the_leader_is_behind(protocol: str) -> None:
    c = ConnectCluster(KIP_CONFIG, protocol=protocol)
    c.start("W1", lagging=True)  # W1 leads and reads the config topic late
    c.settle()
    c.start("W2")
    c.settle()
    mark = len(c.rounds)
    c.topic.publish(ConfigSnapshot(2, {"A": 2, "B": 1, "C": 1}))  # W2 sees it, W1 does not
    c.settle()
    mismatch, ok = c.rounds[mark:]
    assert mismatch.result.error == CONFIG_MISMATCH and mismatch.result.config_offset == 2
    assert all(not a.assigned.size() for a in mismatch.result.assignments.values())
    assert c.readers["W1"].reads_to_end == 1 and c.readers["W2"].reads_to_end == 0
    assert ok.result.error == 0 and ok.result.config_offset == 2
    assert c.workers["W1"].stats["mismatches"] == 1 and c.workers["W2"].stats["mismatches"] == 1
    c.complete()  # the new connector and its task run


@pytest.mark.parametrize(("protocol", "selected"), [
    ("eager", "default"), ("compatible", "compatible"), ("sessioned", "sessioned")])
def test_a_leader_that_catches_up_assigns_with_the_offset_of_its_fresh_snapshot(
        protocol: str, selected: str) -> None:
    """Upstream ``ensureLeaderConfig``: the leader joined at config offset 0, a member at 1; by
    the time it leads it has read offset 2 (connector C): it assigns from that snapshot and sends
    offset 2, so a follower still at 1 reads the config to the end before it starts the work (an
    assignment labelled 1 would have it start C, which its config does not hold)."""
    topic = ConfigTopic(ConfigSnapshot(0, {"A": 1, "B": 1}))
    leader = ClassicConnectWorker(GROUP, "http://l:8083/", ConfigReader(topic),
                                  protocol=protocol, client_id="l")
    leader.start(0)
    join = leader.poll_request(0)
    assert isinstance(join, JoinGroupRequest)
    topic.publish(ConfigSnapshot(1, {"A": 1}))
    follower_reader = ConfigReader(topic, lagging=True)  # stays at 1 until it reads to the end
    follower = ClassicConnectWorker(GROUP, "http://f:8083/", follower_reader, protocol=protocol,
                                    client_id="f")
    follower.start(0)
    assert isinstance(follower.poll_request(0), JoinGroupRequest)
    topic.publish(ConfigSnapshot(2, {"A": 1, "C": 1}))
    metadata = {"l-1": dict((p.name, p.metadata) for p in join.protocols)[selected],
                "f-1": dict(join_protocols("http://f:8083/", 1, None,
                                           ConnectProtocolCompatibility.from_config(protocol)))[selected]}
    members = tuple(JoinGroupResponseMember(mid, None, raw) for mid, raw in metadata.items())
    leader.on_response(JoinGroupResponse(0, 1, "connect", selected, "l-1", False, "l-1", members), 0)
    sync = leader.poll_request(0)
    assert isinstance(sync, SyncGroupRequest)
    sent = {a.member_id: decode_assignment(a.assignment) for a in sync.assignments}
    assert {a.config_offset for a in sent.values()} == {2} and not any(a.failed for a in sent.values())
    assert set().union(*(kip(a.assigned) for a in sent.values())) == {"AC0", "AT1", "CC0", "CT1"}
    # The follower, still at offset 1, catches up before it starts what it was given.
    follower.on_response(JoinGroupResponse(0, 1, "connect", selected, "l-1", False, "f-1"), 0)
    assert isinstance(follower.poll_request(0), SyncGroupRequest)
    raw = next(a.assignment for a in sync.assignments if a.member_id == "f-1")
    follower.on_response(SyncGroupResponse(0, "connect", selected, raw), 0)
    assert follower_reader.reads_to_end == 1 and follower_reader.snapshot().offset == 2
    assert kip(follower.running) == kip(sent["f-1"].assigned) != set()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_a_worker_dropped_by_the_coordinator_rejoins_with_its_work(protocol: str) -> None:
    """A long pause: the session expires, the leader holds W2's work back for the delay; W2
    wakes up, its heartbeat answers UNKNOWN_MEMBER_ID, it joins again as a new member and
    reports what it runs, which the leader then counts as running: nothing is lost any more, so
    the delay is cancelled and nothing moves."""
    c = kip_initial_group(protocol)
    old_id = c.workers["W2"].member_id
    mark = len(c.rounds)
    c.paused.add("W2")
    c.advance(20_000)  # more than the session timeout (10 s)
    [held] = c.rounds[mark:]
    assert table(held) == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    c.paused.clear()
    c.settle()
    w2 = c.workers["W2"]
    assert w2.stats["resets"] == 1 and w2.member_id != old_id
    [back] = c.rounds[mark + 1:]
    assert table(back) == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    assert [e[0] for e in c.listeners["W2"].events] == ["assigned"]  # never stopped
    c.advance(D)
    assert len(c.rounds) == mark + 2  # no scheduled rebalance is left
    c.complete()


def test_heartbeat_illegal_generation_resets_and_rejoins() -> None:
    c = kip_initial_group("sessioned")
    w = c.workers["W3"]
    gen = w.generation
    w.generation = gen - 1  # as if it missed a generation
    c.advance(3_000)
    c.settle()
    assert w.stats["resets"] == 1 and w.generation > gen
    assert c.runs()["W3"] == {"BT1"}
    c.complete()


def worker(protocol: str = "sessioned") -> ClassicConnectWorker:
    return ClassicConnectWorker(GROUP, "http://w:8083/", ConfigReader(ConfigTopic(KIP_CONFIG)),
                                protocol=protocol, client_id="w")


@pytest.mark.parametrize(("protocol", "offered"), [
    ("sessioned", ["sessioned", "compatible", "default"]),
    ("compatible", ["compatible", "default"]),
    ("eager", ["default"]),
])
def test_join_offers_protocols_per_mode(protocol: str, offered: list[str]) -> None:
    w = worker(protocol)
    w.start(0)
    req = w.poll_request(0)
    assert isinstance(req, JoinGroupRequest)
    assert req.protocol_type == "connect" and req.group_instance_id is None
    assert [p.name for p in req.protocols] == offered


def test_member_id_required_then_join_again_with_the_id() -> None:
    w = worker()
    w.start(0)
    w.poll_request(0)
    w.on_response(JoinGroupResponse(E.member_id_required, member_id="w-1"), 0)
    again = w.poll_request(0)
    assert isinstance(again, JoinGroupRequest) and again.member_id == "w-1"


def test_skip_assignment_is_refused() -> None:
    w = worker()
    w.start(0)
    w.poll_request(0)
    w.on_response(JoinGroupResponse(0, 1, "connect", "sessioned", "w-1", True, "w-1",
                                    (JoinGroupResponseMember("w-1", None, b""),)), 0)
    assert w.state is WorkerState.FATAL and "static membership" in (w.fatal_error or "")
    assert w.poll_request(0) is None


def test_fatal_join_error_stops_the_worker() -> None:
    w = worker()
    w.start(0)
    w.poll_request(0)
    w.on_response(JoinGroupResponse(E.inconsistent_group_protocol), 0)
    assert w.state is WorkerState.FATAL and w.next_deadline() is None


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_deferred_revocation_holds_the_rejoin(protocol: str) -> None:
    """W1 stops its revoked items slowly: it does not rejoin, so nobody gets them, until done."""
    c = ConnectCluster(KIP_CONFIG, protocol=protocol)
    c.start("W1")
    c.settle()
    c.listeners["W1"].defer = True
    c.start("W2", "W3")
    c.advance(30_000)
    assert len(c.rounds) == 2  # the revoking round only
    assert c.listeners["W1"].stopping is not None
    assert c.runs() == {"W1": {"AC0", "AT1", "AT2", "BC0", "BT1"}, "W2": set(), "W3": set()}
    c.listeners["W1"].defer = False
    c.finish_revocation("W1")
    c.settle()
    assert table(c.rounds[-1]) == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    c.complete()


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_a_worker_cut_off_from_the_coordinator_gives_up_its_work(protocol: str) -> None:
    c = kip_initial_group(protocol)
    mark = len(c.rounds)
    c.cut.add("W3")
    c.advance(3_000)  # its heartbeat fails: after a heartbeat interval without answer
    c.advance(3_000)
    assert c.runs()["W3"] == set() and c.listeners["W3"].events[-1] == (
        "lost", (), (KIP_CONFIG.tasks("B")[0],))
    c.advance(10_000)  # the coordinator expires W3's session: W3's task is held back
    [held] = c.rounds[mark:]
    assert table(held) == {"W1": (D, {"AC0", "AT1"}, set()), "W2": (D, {"AT2", "BC0"}, set())}
    c.cut.clear()  # W3 is back: UNKNOWN_MEMBER_ID, it joins as a new, empty worker
    c.settle()
    [back] = c.rounds[mark + 1:]
    d1 = D - (back.now_ms - held.now_ms)
    assert table(back) == {
        "W1": (d1, {"AC0", "AT1"}, set()),
        "W2": (d1, {"AT2", "BC0"}, set()),
        "W3": (d1, set(), set()),
    }
    c.advance(d1)
    c.settle()
    assert table(c.rounds[-1])["W3"] == (0, {"BT1"}, set())
    c.complete()


def test_the_driver_catches_work_run_twice() -> None:
    """The I1 check every pump runs is not vacuous."""
    c = ConnectCluster(KIP_CONFIG)
    c.start("W1", "W2")
    c.settle()
    c.check()
    holder = next(n for n, w in c.workers.items() if "A" in w.running.connectors)
    other = next(n for n in c.workers if n != holder)
    c.listeners[other].on_assigned(("A",), ())
    c.workers[other].running = ConnectorsAndTasks.of(
        [*c.workers[other].running.connectors, "A"], c.workers[other].running.tasks)
    with pytest.raises(AssertionError, match="runs on"):
        c.check()


@pytest.mark.parametrize("defer", [False, True])
def test_heartbeats_go_on_after_a_quick_cooperative_second_round(defer: bool) -> None:
    """The sequence of ``test_cli_classic_worker_joins_then_leaves_on_sigint`` (the leader W1
    runs everything; W2 joins; W1 stops the revoked items, synchronously or deferred, and
    rejoins at once; the next generation settles): right after it, each worker has a
    heartbeat due within the interval, and both keep their sessions well past the session
    timeout. (That test once lost W1's session: its event loop was blocked by CLI runs; the
    worker itself, here, keeps heartbeating.)"""
    interval, session = 300, 10_000
    c = ConnectCluster(KIP_CONFIG, heartbeat_interval_ms=interval, session_timeout_ms=session,
                       rebalance_timeout_ms=session)
    c.start("W1")
    c.settle()
    c.listeners["W1"].defer = defer
    c.start("W2")
    if defer:  # W1 learns of the rebalance by its heartbeat, leads it, defers the revocation
        for _ in range(100):
            if c.listeners["W1"].stopping is not None:
                break
            c.advance(10)
        assert c.listeners["W1"].stopping is not None
        c.advance(10)
        c.listeners["W1"].defer = False
        c.finish_revocation("W1")
    c.settle()
    revoke, settle = c.rounds[1:]
    assert settle.generation == revoke.generation + 1
    for w in c.workers.values():
        assert w.state is WorkerState.STABLE and w.inflight is None
        d = w.next_deadline()
        assert d is not None and c.now < d <= c.now + interval, (w, d, c.now)
    beats = {n: w.stats["heartbeats"] for n, w in c.workers.items()}
    c.advance(3 * session)
    assert c.rounds[-1] is settle  # nobody expired: no further round
    for n, w in c.workers.items():
        assert w.stats["resets"] == 0 and w.generation == settle.generation
        assert w.stats["heartbeats"] - beats[n] >= 3 * session // interval - 1, n
    c.complete()


def test_an_eager_worker_keeps_its_session_through_a_slow_stop() -> None:
    """Upstream's heartbeat thread keeps heartbeating through an eager worker's onJoinPrepare
    (the herder stopping every connector and task, 8 at a time): a stop three session timeouts
    long costs W1 neither its session nor its member id, and it joins W2's round when done."""
    interval, session = 500, 6_000
    c = ConnectCluster(KIP_CONFIG, protocol="eager", heartbeat_interval_ms=interval,
                       session_timeout_ms=session, rebalance_timeout_ms=60_000)
    c.start("W1")
    c.settle()
    w1 = c.workers["W1"]
    member, beats = w1.member_id, w1.stats["heartbeats"]
    c.listeners["W1"].defer = True
    c.start("W2")
    c.advance(3 * session)
    assert c.listeners["W1"].stopping is not None  # still stopping its work
    assert w1.state is WorkerState.JOINING and w1.member_id == member
    assert w1.stats["heartbeats"] >= beats + 3 * session // interval - 2
    assert w1.stats["resets"] == 0
    c.listeners["W1"].defer = False
    c.finish_revocation("W1")
    c.settle()
    assert w1.stats["resets"] == 0 and w1.member_id == member
    assert {name_of(m) for m in table(c.rounds[-1])} == {"W1", "W2"}
    c.complete()

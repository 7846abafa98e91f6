"""Connect assignors: Eager round-robin; Incremental Cooperative through every KIP-415 scenario of
KIP-415 (worker joins, leaves, bounces; leader leaves, bounces), driven round
by round as a group would drive it; load-balancing revocations and their backoff, CONFIG_MISMATCH,
duplicated and deleted items; invariants I1/I2 as properties.

The KIP's tables name items ``AC0`` (connector A), ``AT1``/``AT2`` (its tasks, numbered from 1) and
``W1``..``W3`` (workers); :func:`item` maps them to ours (task ``AT1`` is ``A-0``). Its "assigned"
column is what a worker runs once it has applied the round (e.g. W1 keeps ``[AC0, AT1]`` while
``[AT2, BC0, BT1]`` are revoked), so the tables are compared with :attr:`Round.runs`; what went on
the wire (newly assigned items only) is :attr:`Round.new`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.client.connect import (
    CONFIG_MISMATCH,
    DEFAULT_MAX_DELAY_MS,
    NO_ERROR,
    ConfigSnapshot,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    WorkerMetadata,
    apply_assignment,
    decode_assignment,
    decode_worker_metadata,
    encode_worker_metadata,
    revoking_backoff_ms,
)

D = DEFAULT_MAX_DELAY_MS  # the KIP's "d": scheduled.rebalance.max.delay.ms, 300000 by default

# ---------------------------------------------------------------------------------------------
# KIP notation
# ---------------------------------------------------------------------------------------------


def item(name: str) -> str | ConnectorTaskId:
    """``AC0`` -> connector ``A``; ``AT2`` -> task ``A-1`` (the KIP numbers tasks from 1)."""
    connector, kind, number = name[:-2], name[-2], int(name[-1])
    if kind == "C":
        return connector
    return ConnectorTaskId(connector, number - 1)


def kip(items: ConnectorsAndTasks | Iterable[str | ConnectorTaskId]) -> set[str]:
    """Our items in the KIP's notation."""
    if isinstance(items, ConnectorsAndTasks):
        items = [*items.connectors, *items.tasks]
    return {f"{i}C0" if isinstance(i, str) else f"{i.connector}T{i.task + 1}" for i in items}


def cat(names: str) -> ConnectorsAndTasks:
    """``"AC0 AT1"`` -> the items."""
    parsed = [item(n) for n in names.split()]
    return ConnectorsAndTasks.of([i for i in parsed if isinstance(i, str)],
                                 [i for i in parsed if isinstance(i, ConnectorTaskId)])


#: "Config topic contains: AC0, AT1, AT2, BC0, BT1"
KIP_CONFIG = ConfigSnapshot(1, {"A": 2, "B": 1})


# ---------------------------------------------------------------------------------------------
# A group, as the classic protocol drives Connect workers
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Worker:
    id: str
    assignor: IncrementalCooperativeAssignor
    runs: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    last: ConnectAssignment | None = None  # the last assignment received (embedded in metadata)
    last_completed: int = -1
    config_offset: int = 1

    def metadata(self, version: int) -> WorkerMetadata:
        """The JoinGroup metadata: the last assignment with everything the worker runs in it
        (upstream ``WorkerCoordinator`` keeps the revoked lists and delay of the last one)."""
        allocation = None
        if self.last is not None:
            a = self.last
            allocation = ConnectAssignment(version, a.error, a.leader, a.leader_url, a.config_offset,
                                           self.runs.connectors, self.runs.tasks, a.revoked_connectors,
                                           a.revoked_tasks, a.delay)
        return WorkerMetadata(version, f"http://{self.id}:8083/", self.config_offset, allocation)


@dataclass(slots=True)
class Round:
    generation: int
    leader: str
    error: int
    delay: int
    new: dict[str, ConnectorsAndTasks]      # newly assigned, as sent
    revoked: dict[str, ConnectorsAndTasks]  # revoked, as sent
    runs: dict[str, ConnectorsAndTasks]     # what each member runs after applying the round
    delays: dict[str, int]

    def table(self) -> dict[str, tuple[int, set[str], set[str]]]:
        """Worker -> (delay, assigned, revoked) in the KIP's notation and columns."""
        return {w: (self.delays[w], kip(self.runs[w]), kip(self.revoked[w])) for w in self.runs}


class Group:
    """Workers that join, leave, rejoin; the leader computes each round with its own assignor
    instance (state kept across the rounds it leads); every member applies its assignment.
    Metadata and assignments travel as bytes, as they would over JoinGroup/SyncGroup."""

    def __init__(self, config: ConfigSnapshot = KIP_CONFIG, *, max_delay: int = D,
                 honor_reported_delay: bool = False, version: int = 2) -> None:
        self.config = config
        self.max_delay = max_delay
        self.honor = honor_reported_delay
        self.version = version
        self.workers: dict[str, Worker] = {}
        self.leader: str | None = None
        self.generation = 0
        self.now = 1_000_000

    def join(self, *ids: str) -> None:
        for wid in ids:
            assert wid not in self.workers
            self.workers[wid] = Worker(wid, IncrementalCooperativeAssignor(
                self.max_delay, honor_reported_delay=self.honor), config_offset=self.config.offset)

    def leave(self, *ids: str) -> None:
        """A worker leaves (or dies): it stops everything; coming back it is a new process."""
        for wid in ids:
            del self.workers[wid]
            if self.leader == wid:
                self.leader = None

    def advance(self, ms: int) -> None:
        self.now += ms

    def set_config(self, config: ConfigSnapshot) -> None:
        self.config = config
        for w in self.workers.values():
            w.config_offset = config.offset

    def rebalance(self, leader: str | None = None, *, deliver: bool = True) -> Round:
        assert self.workers
        if leader is not None:
            self.leader = leader
        elif self.leader not in self.workers:
            self.leader = min(self.workers)
        assert self.leader is not None
        self.generation += 1
        members = {wid: decode_worker_metadata(encode_worker_metadata(w.metadata(self.version)))
                   for wid, w in self.workers.items()}
        lw = self.workers[self.leader]
        result = lw.assignor.assign(self.leader, members, self.config, now_ms=self.now,
                                    generation=self.generation, last_completed_generation=lw.last_completed,
                                    protocol_version=self.version)
        sent = {wid: decode_assignment(raw) for wid, raw in result.encoded().items()}
        assert sent == dict(result.assignments)
        runs = {}
        for wid, w in self.workers.items():
            a = sent[wid]
            after = apply_assignment(w.runs, a)
            assert after == result.allocations[wid], wid
            if deliver:
                w.runs, w.last, w.last_completed = after, a, self.generation
            runs[wid] = after
        return Round(
            self.generation, self.leader, result.error, result.delay,
            {wid: a.assigned for wid, a in sent.items()},
            {wid: a.revoked for wid, a in sent.items()},
            runs,
            {wid: a.delay for wid, a in sent.items()},
        )

    def runs(self) -> dict[str, set[str]]:
        return {wid: kip(w.runs) for wid, w in self.workers.items()}


def no_double_assignment(runs: dict[str, ConnectorsAndTasks]) -> None:
    """I1 (client view): no connector or task runs on two workers."""
    seen: dict[object, str] = {}
    for wid, r in runs.items():
        for i in (*r.connectors, *r.tasks):
            assert i not in seen, f"{i} runs on {seen[i]} and {wid}"
            seen[i] = wid


def complete(runs: dict[str, ConnectorsAndTasks], config: ConfigSnapshot) -> None:
    """I2: every configured connector/task runs exactly once, nothing else runs."""
    no_double_assignment(runs)
    everything = config.all()
    assert sorted(c for r in runs.values() for c in r.connectors) == list(everything.connectors)
    assert sorted(t for r in runs.values() for t in r.tasks) == list(everything.tasks)


def counts(rnd: Round) -> tuple[list[int], list[int]]:
    """Sorted connector and task counts per worker (upstream tests' allocation assertions)."""
    return (sorted(len(r.connectors) for r in rnd.runs.values()),
            sorted(len(r.tasks) for r in rnd.runs.values()))


# ---------------------------------------------------------------------------------------------
# KIP-415 scenarios
# ---------------------------------------------------------------------------------------------


def test_first_worker_joins() -> None:
    g = Group()
    g.join("W1")
    r = g.rebalance()
    # W1(delay: 0, assigned: [AC0, AT1, AT2, BC0, BT1], revoked: [])
    assert r.table() == {"W1": (0, {"AC0", "AT1", "AT2", "BC0", "BT1"}, set())}
    assert kip(r.new["W1"]) == {"AC0", "AT1", "AT2", "BC0", "BT1"}


def kip_initial_group(**kwargs: object) -> Group:
    """KIP "Non-first new member joins", ending in the initial group of every later scenario:
    W1([AC0, AT1]), W2([AT2, BC0]), W3([BT1]), W1 leader."""
    g = Group(**kwargs)  # type: ignore[arg-type]
    g.join("W1")
    g.rebalance()
    g.join("W2", "W3")
    first = g.rebalance()
    # W1(delay: 0, assigned: [AC0, AT1], revoked: [AT2, BC0, BT1]); W2, W3 get nothing yet.
    assert first.table() == {
        "W1": (0, {"AC0", "AT1"}, {"AT2", "BC0", "BT1"}),
        "W2": (0, set(), set()),
        "W3": (0, set(), set()),
    }
    assert all(a.is_empty() for a in first.new.values())
    # W1 stops the revoked items and rejoins with [AC0, AT1]; W2 and W3 rejoin with [].
    second = g.rebalance()
    assert second.table() == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    assert kip(second.new["W1"]) == set()
    assert second.leader == "W1"
    complete(second.runs, g.config)
    return g


def test_non_first_worker_joins() -> None:
    kip_initial_group()


def test_worker_leaves() -> None:
    g = kip_initial_group()
    g.leave("W2")
    r = g.rebalance()
    # W1(delay: d, assigned: [AC0, AT1], revoked: []); W3(delay: d, assigned: [BT1], revoked: [])
    assert r.table() == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    g.advance(D)  # after delay d, both rejoin
    r = g.rebalance()
    assert r.delay == 0 and all(not v.is_empty() for v in r.new.values())
    # The KIP's table: W1 [AC0, AT1, BC0], W3 [BT1, AT2]. Upstream balances connectors and tasks
    # separately: the lost connector BC0 goes to W3 (no connector), the lost task AT2 to W1 (W1 and
    # W3 both run one task; the tie goes to the lower id). Same load per worker as in the KIP.
    assert r.table() == {"W1": (0, {"AC0", "AT1", "AT2"}, set()), "W3": (0, {"BT1", "BC0"}, set())}
    assert {w: len(v) for w, v in g.runs().items()} == {"W1": 3, "W3": 2}
    complete(r.runs, g.config)


def test_worker_bounces() -> None:
    g = kip_initial_group()
    g.leave("W2")
    r = g.rebalance()
    assert r.table() == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    g.advance(100_000)
    g.join("W2")  # before delay d expires, W2 joins with []
    r = g.rebalance()
    d1 = D - 100_000  # d': the remaining delay
    assert r.table() == {
        "W1": (d1, {"AC0", "AT1"}, set()),
        "W2": (d1, set(), set()),
        "W3": (d1, {"BT1"}, set()),
    }
    g.advance(d1)
    r = g.rebalance()
    # No movement: W2 gets back exactly what it ran, nobody else is touched.
    assert r.table() == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    assert kip(r.new["W2"]) == {"AT2", "BC0"} and r.new["W1"].is_empty() and r.new["W3"].is_empty()
    complete(r.runs, g.config)


def test_worker_bounces_in_several_steps() -> None:
    """Incidental rebalances while the delay runs report the remaining delay each time."""
    g = kip_initial_group()
    g.leave("W2")
    assert g.rebalance().delay == D
    g.advance(D // 2)
    assert g.rebalance().delay == D // 2
    g.advance(D // 4)
    g.join("W2")
    assert g.rebalance().delay == D // 4
    g.advance(D // 4 - 1)
    r = g.rebalance()  # one millisecond early: still held back
    assert r.delay == 1 and r.runs["W2"].is_empty()
    g.advance(1)
    r = g.rebalance()
    assert r.delay == 0 and kip(r.runs["W2"]) == {"AT2", "BC0"}


@pytest.mark.parametrize("honor", [False, True], ids=["upstream", "honor_reported_delay"])
def test_leader_leaves(honor: bool) -> None:
    g = kip_initial_group(honor_reported_delay=honor)
    g.leave("W1")
    r = g.rebalance(leader="W3")  # W3 becomes leader; no delay is in progress
    assert r.delay == 0 and all(v.is_empty() for v in r.revoked.values())
    # The KIP's table: W2 [AT2, BC0, AC0], W3 [BT1, AT1]. Upstream: AC0 goes to the worker with
    # fewer connectors (W3), AT1 to the lower id among the workers with fewest tasks (W2).
    assert r.table() == {"W2": (0, {"AT2", "BC0", "AT1"}, set()), "W3": (0, {"BT1", "AC0"}, set())}
    assert {w: len(v) for w, v in g.runs().items()} == {"W2": 3, "W3": 2}
    complete(r.runs, g.config)


def leader_bounce_prefix(g: Group) -> None:
    """KIP "Leader bounces" up to W1 (the leader) leaving while the delay d' is in progress."""
    g.leave("W2")
    r = g.rebalance()
    assert r.table() == {"W1": (D, {"AC0", "AT1"}, set()), "W3": (D, {"BT1"}, set())}
    g.advance(100_000)
    g.join("W2")
    r = g.rebalance()
    d1 = D - 100_000
    assert r.table() == {
        "W1": (d1, {"AC0", "AT1"}, set()),
        "W2": (d1, set(), set()),
        "W3": (d1, {"BT1"}, set()),
    }
    g.advance(50_000)
    g.leave("W1")


def test_leader_bounces_upstream() -> None:
    """Upstream's new leader knows neither the previous assignment nor the delay: it assigns the
    unaccounted items at once (the KIP's table waits d''; see the next test)."""
    g = kip_initial_group()
    leader_bounce_prefix(g)
    r = g.rebalance(leader="W3")
    assert r.table() == {"W2": (0, {"AC0", "AT1", "AT2"}, set()), "W3": (0, {"BT1", "BC0"}, set())}
    g.advance(10_000)
    g.join("W1")  # the old leader returns as a new worker: load-balancing revocation
    r = g.rebalance()
    assert r.leader == "W3"
    assert r.table() == {
        "W1": (0, set(), set()),
        "W2": (0, {"AC0", "AT1"}, {"AT2"}),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    r = g.rebalance()
    assert r.table() == {
        "W1": (0, {"AT2"}, set()),
        "W2": (0, {"AC0", "AT1"}, set()),
        "W3": (0, {"BT1", "BC0"}, set()),
    }
    complete(r.runs, g.config)


def test_leader_bounces_with_reported_delay() -> None:
    """``honor_reported_delay``: the KIP's "Leader bounces" table, round for round."""
    g = kip_initial_group(honor_reported_delay=True)
    leader_bounce_prefix(g)
    d1 = D - 100_000
    r = g.rebalance(leader="W3")  # "There's an active delay in progress."
    # W2(delay: d'', assigned: []), W3(delay: d'', assigned: [BT1]). d'' is the delay members
    # reported (d', given 50 s ago): members do not say when they received it.
    d2 = d1
    assert r.table() == {"W2": (d2, set(), set()), "W3": (d2, {"BT1"}, set())}
    g.advance(50_000)
    g.join("W1")  # before d'' expires, W1 joins with []
    r = g.rebalance()
    d3 = d2 - 50_000  # d''': the remaining delay
    assert r.leader == "W3"
    assert r.table() == {
        "W1": (d3, set(), set()),
        "W2": (d3, set(), set()),
        "W3": (d3, {"BT1"}, set()),
    }
    g.advance(d3)
    r = g.rebalance()
    # W1(delay: 0, assigned: [BC0, AT2]), W2(delay: 0, assigned: [AC0, AT1]), W3(delay: 0, [BT1])
    assert r.table() == {
        "W1": (0, {"BC0", "AT2"}, set()),
        "W2": (0, {"AC0", "AT1"}, set()),
        "W3": (0, {"BT1"}, set()),
    }
    complete(r.runs, g.config)


# ---------------------------------------------------------------------------------------------
# upstream's multi-round cases (allocation counts as upstream's tests assert them)
# ---------------------------------------------------------------------------------------------


def two_connectors(*extra: tuple[str, int]) -> ConfigSnapshot:
    return ConfigSnapshot(618, {"connector1": 4, "connector2": 4, **dict(extra)})


def test_load_balancing_revocation_when_a_worker_joins() -> None:
    g = Group(two_connectors())
    g.join("worker1")
    r = g.rebalance()
    assert counts(r) == ([2], [8])
    g.join("worker2")
    r = g.rebalance()
    assert r.delay == 0
    assert counts(r) == ([0, 1], [0, 4])
    # worker1 gives up its highest items in sorted order.
    assert r.revoked["worker1"] == ConnectorsAndTasks(
        ("connector2",), tuple(ConnectorTaskId("connector2", i) for i in range(4)))
    assert r.new["worker1"].is_empty() and r.new["worker2"].is_empty()
    r = g.rebalance()
    assert all(v.is_empty() for v in r.revoked.values()) and r.delay == 0
    assert counts(r) == ([1, 1], [4, 4])
    assert r.runs["worker2"] == ConnectorsAndTasks(
        ("connector2",), tuple(ConnectorTaskId("connector2", i) for i in range(4)))
    complete(r.runs, g.config)
    r = g.rebalance()  # nothing changes any more
    assert all(v.is_empty() for v in r.new.values()) and all(v.is_empty() for v in r.revoked.values())


def test_successive_revoking_rounds_back_off() -> None:
    g = Group(two_connectors(("connector3", 4)))
    g.join("worker1")
    assert counts(g.rebalance()) == ([3], [12])
    g.join("worker2")
    r = g.rebalance()
    assert counts(r) == ([0, 2], [0, 6]) and r.delay == 0
    # A third worker right after a revoking round: no revocation, backoff 40 ms.
    g.join("worker3")
    r = g.rebalance()
    assert r.delay == 40 and all(v.is_empty() for v in r.revoked.values())
    assert counts(r) == ([0, 1, 2], [3, 3, 6])
    g.advance(40)
    g.join("worker4")
    r = g.rebalance()
    assert r.delay == 0
    assert counts(r) == ([0, 0, 1, 1], [0, 3, 3, 3])
    # Again right after: the second successive revoking round waits 40**2 ms.
    g.join("worker5")
    r = g.rebalance()
    assert r.delay == 1600
    assert counts(r) == ([0, 0, 1, 1, 1], [1, 2, 3, 3, 3])
    g.advance(1600)
    g.join("worker6")
    r = g.rebalance()
    assert r.delay == 0
    assert counts(r) == ([0, 0, 0, 1, 1, 1], [0, 1, 2, 2, 2, 2])
    r = g.rebalance()
    assert counts(r) == ([0, 0, 0, 1, 1, 1], [2, 2, 2, 2, 2, 2])
    complete(r.runs, g.config)


def test_immediate_revocations_when_max_delay_is_zero() -> None:
    g = Group(two_connectors(("connector3", 4)), max_delay=0)
    g.join("worker1")
    g.rebalance()
    g.join("worker2")
    assert counts(g.rebalance()) == ([0, 2], [0, 6])
    g.join("worker3")
    r = g.rebalance()
    assert r.delay == 0
    assert counts(r) == ([0, 1, 1], [3, 3, 4])
    r = g.rebalance()
    assert counts(r) == ([1, 1, 1], [4, 4, 4])
    complete(r.runs, g.config)


def test_max_delay_zero_reassigns_lost_items_at_once() -> None:
    g = kip_initial_group(max_delay=0)
    g.leave("W2")
    r = g.rebalance()
    assert r.delay == 0
    complete(r.runs, g.config)


def test_backoff_values() -> None:
    assert [revoking_backoff_ms(n, D) for n in range(1, 6)] == [40, 1600, 64000, 300000, 300000]
    assert revoking_backoff_ms(1, 1) == 1  # max equal to the initial interval: constant
    assert revoking_backoff_ms(3, 0) == 0  # max 0: revoke at once
    # Capped exponent, truncated like upstream's (long) cast: 40 ** log40(1000) is a hair under 1000.
    assert revoking_backoff_ms(2, 1000) in (999, 1000)
    assert revoking_backoff_ms(1, 1000) == 40


def test_worker_joining_during_delayed_rebalance() -> None:
    g = Group(two_connectors(("connector3", 4)))
    g.join("worker1")
    g.rebalance()
    g.join("worker2")
    g.rebalance()
    g.join("worker3")
    r = g.rebalance()
    assert r.delay == 40 and counts(r) == ([0, 1, 2], [3, 3, 6])
    g.advance(20)
    g.join("worker4")
    r = g.rebalance()
    assert r.delay == 20 and all(v.is_empty() for v in r.revoked.values())
    assert counts(r) == ([0, 0, 1, 2], [0, 3, 3, 6])
    g.advance(20)
    g.join("worker5")
    r = g.rebalance()
    assert r.delay == 0
    assert counts(r) == ([0, 0, 0, 1, 1], [0, 0, 2, 3, 3])
    r = g.rebalance()
    assert r.delay == 0 and all(v.is_empty() for v in r.revoked.values())
    assert counts(r) == ([0, 0, 1, 1, 1], [2, 2, 2, 3, 3])
    complete(r.runs, g.config)


def test_worker_leaves_permanently() -> None:
    g = Group(two_connectors())
    g.join("worker1", "worker2")
    assert counts(g.rebalance()) == ([1, 1], [4, 4])
    g.leave("worker2")
    r = g.rebalance()
    assert r.delay == D and counts(r) == ([1], [4])
    g.advance(D // 2)
    assert g.rebalance().delay == D // 2
    g.advance(D // 2 + 1)
    r = g.rebalance()
    assert r.delay == 0 and counts(r) == ([2], [8])
    complete(r.runs, g.config)


def test_first_assignment_attempt_fails() -> None:
    """The leader's round never completes: next time its previous generation does not match the
    last completed one, it starts from scratch and assigns everything as new (no delay)."""
    g = Group(two_connectors())
    g.join("worker1", "worker2")
    r = g.rebalance(deliver=False)
    assert counts(r) == ([1, 1], [4, 4])
    assert all(w.runs.is_empty() for w in g.workers.values())
    r = g.rebalance()
    assert r.delay == 0 and counts(r) == ([1, 1], [4, 4])
    complete(r.runs, g.config)


def test_subsequent_assignment_attempt_fails() -> None:
    g = Group(two_connectors())
    g.join("worker1", "worker2")
    g.rebalance()
    g.join("worker3")
    r = g.rebalance(deliver=False)  # would revoke one task from each, but never arrives
    assert r.delay == 0 and counts(r) == ([0, 1, 1], [0, 3, 3])
    assert sorted(len(w.runs.tasks) for w in g.workers.values()) == [0, 4, 4]
    r = g.rebalance()  # same reports again: a successive revoking round, held back
    assert r.delay > 0 and counts(r) == ([0, 1, 1], [0, 4, 4])
    assert all(v.is_empty() for v in r.revoked.values())
    g.advance(r.delay)
    r = g.rebalance()
    assert r.delay == 0 and counts(r) == ([0, 1, 1], [0, 3, 3])
    r = g.rebalance()
    assert counts(r) == ([0, 1, 1], [2, 3, 3])
    complete(r.runs, g.config)


# ---------------------------------------------------------------------------------------------
# deleted, duplicated, config mismatch
# ---------------------------------------------------------------------------------------------


def test_deleted_connector_is_revoked_and_not_reassigned() -> None:
    g = kip_initial_group()
    g.set_config(ConfigSnapshot(2, {"A": 2}))  # B deleted
    r = g.rebalance()
    assert r.table() == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2"}, {"BC0"}),
        "W3": (0, set(), {"BT1"}),
    }
    r = g.rebalance()
    assert all(v.is_empty() for v in r.revoked.values())
    complete(r.runs, g.config)


def test_connectors_deleted_rebalance_counts() -> None:
    g = Group(two_connectors(("connector3", 4)))
    g.join("worker1", "worker2")
    assert counts(g.rebalance()) == ([1, 2], [6, 6])
    g.set_config(two_connectors())
    r = g.rebalance()
    assert r.delay == 0 and counts(r) == ([1, 1], [4, 4])
    complete(r.runs, g.config)


def test_duplicated_items_are_revoked_from_all_holders() -> None:
    g = kip_initial_group()
    # A zombie view: W3 also reports AC0 and AT2 (held by W1 / W2).
    g.workers["W3"].runs = cat("BT1 AC0 AT2")
    r = g.rebalance()
    assert r.table() == {
        "W1": (0, {"AT1"}, {"AC0"}),
        "W2": (0, {"BC0"}, {"AT2"}),
        "W3": (0, {"BT1"}, {"AC0", "AT2"}),
    }
    r = g.rebalance()  # now nobody runs them: assigned again, once
    assert all(v.is_empty() for v in r.revoked.values())
    assert kip(r.new["W1"]) | kip(r.new["W2"]) | kip(r.new["W3"]) == {"AC0", "AT2"}
    complete(r.runs, g.config)


@pytest.mark.parametrize("assignor", ["eager", "cooperative"])
def test_config_mismatch(assignor: str) -> None:
    members = {
        "W1": WorkerMetadata(2, "http://w1/", 5, ConnectAssignment(2, 0, "W1", "http://w1/", 5, ("A",))),
        "W2": WorkerMetadata(2, "http://w2/", 9),
    }
    config = ConfigSnapshot(5, {"A": 1})  # the leader read the config topic to 5; W2 is at 9
    if assignor == "eager":
        result = EagerAssignor().assign("W1", members, config)
        version = 0
    else:
        ica = IncrementalCooperativeAssignor()
        result = ica.assign("W1", members, config, now_ms=0, generation=3)
        version = 2
        assert ica.state.previous_generation == -1  # state untouched
    assert result.error == CONFIG_MISMATCH
    for a in result.assignments.values():
        assert a == ConnectAssignment(version, CONFIG_MISMATCH, "W1", "http://w1/", 9)
        assert a.failed
    assert result.allocations["W1"] == ConnectorsAndTasks(("A",))  # W1 keeps what it runs
    # With a snapshot at 9 the same members are assigned, and the offset is the highest reported;
    # with a fresher one (the leader caught up past W2), the offset of that snapshot.
    ok = IncrementalCooperativeAssignor().assign("W1", members, ConfigSnapshot(9, {"A": 1}),
                                                 now_ms=0, generation=3)
    assert ok.error == NO_ERROR and ok.config_offset == 9
    fresher = EagerAssignor().assign("W1", members, ConfigSnapshot(12, {"A": 1}))
    assert fresher.error == NO_ERROR and fresher.config_offset == 12


@pytest.mark.parametrize("assignor", ["eager", "cooperative"])
def test_an_assignment_names_the_config_offset_it_was_computed_from(assignor: str) -> None:
    """Upstream ``ensureLeaderConfig``: a leader behind a member that takes a fresh snapshot
    assigns from it and sends *its* offset, so that members behind it catch up before they start
    the work. Here the fresh snapshot (12) holds connector B, which a member at the highest
    reported offset (9) may not know: the assignment must say 12, not 9."""
    members = {"W1": WorkerMetadata(2, "http://w1/", 5), "W2": WorkerMetadata(2, "http://w2/", 9)}
    fresh = ConfigSnapshot(12, {"A": 1, "B": 1})
    if assignor == "eager":
        result = EagerAssignor().assign("W1", members, fresh)
    else:
        result = IncrementalCooperativeAssignor().assign("W1", members, fresh, now_ms=0,
                                                         generation=1)
    assert result.error == NO_ERROR and result.config_offset == 12
    assert {a.config_offset for a in result.assignments.values()} == {12}
    assigned = [it for a in result.assignments.values() for it in kip(a.assigned)]
    assert sorted(assigned) == sorted(kip(ConnectorsAndTasks.of(["A", "B"], fresh.task_ids())))


def test_assign_rejects_bad_calls() -> None:
    ica = IncrementalCooperativeAssignor()
    meta = {"W1": WorkerMetadata(2, "u", 0)}
    with pytest.raises(ValueError, match="leader"):
        ica.assign("W9", meta, KIP_CONFIG, now_ms=0, generation=1)
    with pytest.raises(ValueError, match="no members"):
        ica.assign("W1", {}, KIP_CONFIG, now_ms=0, generation=1)
    with pytest.raises(ValueError, match="version"):
        ica.assign("W1", meta, KIP_CONFIG, now_ms=0, generation=1, protocol_version=0)
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(-1)
    with pytest.raises(ValueError):
        ConfigSnapshot(0, {"A": -1})


def test_protocol_version_one_is_written() -> None:
    g = Group(version=1)
    g.join("W1")
    r = g.rebalance()
    assert kip(r.runs["W1"]) == {"AC0", "AT1", "AT2", "BC0", "BT1"}
    assert g.workers["W1"].last is not None and g.workers["W1"].last.version == 1


# ---------------------------------------------------------------------------------------------
# Eager
# ---------------------------------------------------------------------------------------------


def test_eager_round_robin() -> None:
    members = {m: WorkerMetadata(0, f"http://{m}/", 3) for m in ("m3", "m1", "m2")}
    config = ConfigSnapshot(3, {"C": 0, "A": 2, "B": 3})
    result = EagerAssignor().assign("m2", members, config)
    a = result.assignments
    # Connectors A, B, C to m1, m2, m3; then, B-0, B-1, B-2 continue the same circular
    # iterator: m1, m2, m3, m1, m2 (connector C has no task).
    assert (a["m1"].connectors, a["m1"].tasks) == (("A",), (ConnectorTaskId("A", 0), ConnectorTaskId("B", 1)))
    assert (a["m2"].connectors, a["m2"].tasks) == (("B",), (ConnectorTaskId("A", 1), ConnectorTaskId("B", 2)))
    assert (a["m3"].connectors, a["m3"].tasks) == (("C",), (ConnectorTaskId("B", 0),))
    for x in a.values():
        assert (x.version, x.error, x.leader, x.leader_url, x.config_offset, x.delay) == (
            0, NO_ERROR, "m2", "http://m2/", 3, 0)
    complete(dict(result.allocations), config)
    raw = result.encoded()
    assert decode_assignment(raw["m3"]) == a["m3"]


def test_eager_tasks_continue_after_connectors() -> None:
    members = {m: WorkerMetadata(0, "u", 0) for m in ("w1", "w2")}
    config = ConfigSnapshot(0, {"A": 1, "B": 1, "C": 1})
    a = EagerAssignor().assign("w1", members, config).assignments
    # A->w1, B->w2, C->w1; A-0->w2, B-0->w1, C-0->w2
    assert a["w1"].connectors == ("A", "C") and a["w2"].connectors == ("B",)
    assert a["w1"].tasks == (ConnectorTaskId("B", 0),)
    assert a["w2"].tasks == (ConnectorTaskId("A", 0), ConnectorTaskId("C", 0))


# ---------------------------------------------------------------------------------------------
# properties: I1 every round, I2 (and balance) after convergence
# ---------------------------------------------------------------------------------------------

WORKERS = [f"w{i}" for i in range(6)]

ops = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(WORKERS)),
    st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
    st.tuples(st.just("advance"), st.integers(0, D)),
    st.tuples(st.just("config"), st.dictionaries(st.sampled_from("ABCDEFG"), st.integers(0, 5), max_size=6)),
    st.tuples(st.just("fail"), st.none()),
    st.tuples(st.just("leader"), st.sampled_from(WORKERS)),
)


def converge(g: Group, limit: int = 40) -> Round:
    """Rebalance until a round changes nothing and schedules nothing (the KIP-415 delay and the
    revocation backoff counted in, I5)."""
    last = None
    for _ in range(limit):
        r = g.rebalance()
        no_double_assignment(r.runs)
        quiet = (r.delay == 0 and all(v.is_empty() for v in r.new.values())
                 and all(v.is_empty() for v in r.revoked.values()))
        if quiet and last is not None:
            return r
        last = r
        g.advance(r.delay)
    raise AssertionError("no convergence")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, max_size=25), st.booleans(), st.sampled_from([0, 1000, D]))
def test_cooperative_invariants(script: list[tuple[str, object]], honor: bool, max_delay: int) -> None:
    g = Group(KIP_CONFIG, max_delay=max_delay, honor_reported_delay=honor)
    g.join("w0")
    g.rebalance()
    offset = KIP_CONFIG.offset
    for op, arg in script:
        if op == "join" and arg not in g.workers:
            g.join(str(arg))
        elif op == "leave" and arg in g.workers and len(g.workers) > 1:
            g.leave(str(arg))
        elif op == "advance":
            g.advance(int(arg))  # type: ignore[call-overload]
        elif op == "config":
            offset += 1
            g.set_config(ConfigSnapshot(offset, dict(arg)))  # type: ignore[call-overload]
        elif op == "leader" and arg in g.workers:
            g.leader = str(arg)
        r = g.rebalance(deliver=op != "fail")
        no_double_assignment(r.runs)  # I1 after every round
    r = converge(g)
    complete(r.runs, g.config)  # I2
    cs, ts = counts(r)
    assert cs[-1] - cs[0] <= 1 and ts[-1] - ts[0] <= 1  # balanced per type


@settings(max_examples=100, deadline=None)
@given(st.sets(st.sampled_from(WORKERS), min_size=1),
       st.dictionaries(st.sampled_from("ABCDEFG"), st.integers(0, 6), max_size=7))
def test_eager_assigns_everything_once(members: set[str], connectors: dict[str, int]) -> None:
    config = ConfigSnapshot(1, connectors)
    result = EagerAssignor().assign(min(members), {m: WorkerMetadata(0, m, 1) for m in members}, config)
    complete(dict(result.allocations), config)
    sizes = sorted(r.size() for r in result.allocations.values())
    assert sizes[-1] - sizes[0] <= 1  # one circular iterator over connectors then tasks


def test_items_reported_twice_by_one_worker_count_once() -> None:
    a = ConnectAssignment(2, 0, "W1", "u", 1, ("A", "A"), (ConnectorTaskId("A", 0),) * 2)
    members = {"W1": WorkerMetadata(2, "u", 1, a)}
    result = IncrementalCooperativeAssignor().assign("W1", members, KIP_CONFIG, now_ms=0, generation=1)
    assert kip(result.allocations["W1"]) == {"AC0", "AT1", "AT2", "BC0", "BT1"}
    assert kip(result.assignments["W1"].assigned) == {"AT2", "BC0", "BT1"}
    assert result.assignments["W1"].revoked.is_empty()


def test_revocation_that_did_not_take_effect_is_asked_again() -> None:
    g = Group()
    g.join("W1")
    g.rebalance()
    g.join("W2", "W3")
    r = g.rebalance()
    assert kip(r.revoked["W1"]) == {"AT2", "BC0", "BT1"}
    g.workers["W1"].runs = cat("AC0 AT1 AT2 BC0 BT1")  # W1 did not stop them
    r = g.rebalance()
    # Nothing is given away while W1 still runs the items: a successive revoking round, backoff.
    assert r.delay == 40 and all(v.is_empty() for v in r.new.values())
    assert all(v.is_empty() for v in r.revoked.values())
    no_double_assignment(r.runs)
    g.advance(40)
    r = g.rebalance()
    assert r.delay == 0 and kip(r.revoked["W1"]) == {"AT2", "BC0", "BT1"}
    r = g.rebalance()
    assert r.table() == {
        "W1": (0, {"AC0", "AT1"}, set()),
        "W2": (0, {"AT2", "BC0"}, set()),
        "W3": (0, {"BT1"}, set()),
    }


def test_same_inputs_same_bytes_whatever_the_member_order() -> None:
    g = kip_initial_group()
    g.join("W4")
    members = {w: g.workers[w].metadata(2) for w in g.workers}
    outputs = []
    for order in (sorted(members), sorted(members, reverse=True)):
        leader = g.workers["W1"]
        ica = IncrementalCooperativeAssignor()
        ica.state = leader.assignor.state.copy()
        result = ica.assign("W1", {w: members[w] for w in order}, g.config, now_ms=g.now,
                            generation=g.generation + 1, last_completed_generation=g.generation)
        outputs.append((result.encoded(), ica.state))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("honor", [False, True], ids=["upstream", "honor_reported_delay"])
def test_failed_sync_during_the_delay(honor: bool) -> None:
    """The leader's round fails while a delay runs. Upstream's leader then starts from nothing and
    hands the unaccounted items out at once; with ``honor_reported_delay`` it keeps waiting."""
    g = kip_initial_group(honor_reported_delay=honor)
    g.leave("W2")
    assert g.rebalance().delay == D
    g.advance(1000)
    g.rebalance(deliver=False)
    g.advance(1000)
    r = g.rebalance()
    if honor:
        assert r.delay == D - 2000 and kip(r.runs["W1"]) | kip(r.runs["W3"]) == {"AC0", "AT1", "BT1"}
    else:
        assert r.delay == 0
        complete(r.runs, g.config)

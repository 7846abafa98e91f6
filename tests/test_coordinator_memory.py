"""What the coordinator keeps per member and per assigned partition is shared where equal
(the scale target: 2 KB per member plus 200 bytes per assigned partition, ``bench scale``):

- a member that reaches its target holds the target's mapping itself, and an empty pending
  revocation or empty carried epochs is the one shared empty mapping; the same after the
  group is read back from its records (a log load);
- members subscribing alike hold one tuple of topic names (and one client id or host when
  equal), though every request and every decoded record brings its own; a session timer's
  key names the group and the member by the strings the group holds;
- the uniform assignor gives every member holding partition p alone of some topic the same
  ``{p}`` set, whatever the topic;
- the in-process measurement counts what the coordinator keeps of a request (the member id)
  and is the figure of a converged group.
"""

from __future__ import annotations

import sys
from uuid import UUID

from benchmarks.scale import coordinator_memory

from groupcoord.coordinator.assignors.base import GroupSpec, MemberSubscription
from groupcoord.coordinator.assignors.uniform import UniformAssignor
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from groupcoord.coordinator.modern.consumer.model import EMPTY, NO_EPOCHS, ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.consumer.reconciliation import reconcile
from groupcoord.coordinator.modern.group import GroupState
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.timers import Timers
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata

T, U = UUID(int=1), UUID(int=2)


def _fresh(text: str) -> str:
    """A new ``str`` equal to ``text`` (what a decoded request holds)."""
    return text.encode().decode()


def test_a_reconciled_member_holds_its_target_mapping() -> None:
    target = {T: frozenset({0, 1}), U: frozenset({5})}
    group = ConsumerGroup("g")
    member = ConsumerGroupMember("m", member_epoch=1, assigned_partitions={T: frozenset({0})})
    group.put_member(member)
    step = reconcile(member, 2, target, group.owner_of, None, group.owners.get)
    assert step.state is MemberState.STABLE and step.member_epoch == 2
    assert step.assigned_partitions is target
    assert step.partitions_pending_revocation is EMPTY
    # a partition still held by another member: not converged, a mapping of its own
    other = ConsumerGroupMember("o", member_epoch=1, assigned_partitions={U: frozenset({5})})
    group.put_member(other)
    waiting = reconcile(member, 2, target, group.owner_of, None, group.owners.get)
    assert waiting.state is MemberState.UNRELEASED_PARTITIONS
    assert waiting.assigned_partitions == {T: frozenset({0, 1})}
    assert waiting.assigned_partitions is not target
    assert waiting.assigned_partitions[T] is target[T]


def _converged_shard(members: int, topics: int, per_topic: int
                     ) -> tuple[Shard, ConsumerGroup, list[Record]]:
    """A shard whose group of ``members`` converged, every request built with fresh strings
    and tuples (as decoded from the wire), and the records it wrote."""
    names = [f"t{k}" for k in range(topics)]
    image = MetadataImage.of(TopicMetadata(UUID(int=k + 1), n, per_topic)
                             for k, n in enumerate(names))
    shard = Shard(metadata=image)
    records: list[Record] = []
    ids = [str(UUID(int=(1 << 100) + i)) for i in range(members)]
    epochs = dict.fromkeys(ids, 0)
    owned: dict[str, tuple[TopicPartitions, ...]] = dict.fromkeys(ids, ())
    now = 1_000
    for round_ in range(30):
        for mid in ids:
            if round_ == 0:
                req = ConsumerGroupHeartbeatRequest(
                    _fresh("g"), _fresh(mid), 0, rebalance_timeout_ms=60_000,
                    subscribed_topic_names=tuple(map(_fresh, names)), topic_partitions=(),
                    client_id=_fresh("rdkafka"), client_host=_fresh("/10.0.0.1"))
            else:
                req = ConsumerGroupHeartbeatRequest(_fresh("g"), _fresh(mid), epochs[mid],
                                                    topic_partitions=owned[mid],
                                                    client_id=_fresh("rdkafka"),
                                                    client_host=_fresh("/10.0.0.1"))
            res = shard.handle(req, now)
            records += res.records
            r = res.response
            assert r.error_code == 0, r.error_message
            epochs[mid] = r.member_epoch
            if r.assignment is not None:
                owned[mid] = tuple(TopicPartitions(t.topic_id, tuple(t.partitions))
                                   for t in r.assignment.topic_partitions)
        now += 1_000
        group = shard.groups["g"]
        assert isinstance(group, ConsumerGroup)
        if round_ > 1 and group.state() is GroupState.STABLE:
            return shard, group, records
    raise AssertionError("the group did not converge")


def _assert_shared(group: ConsumerGroup) -> None:
    for attr in ("subscribed_topic_names", "client_id", "client_host"):
        assert len({id(getattr(m, attr)) for m in group.members.values()}) == 1, attr
    for mid, m in group.members.items():
        assert m.is_reconciled_to(group.assignment_epoch)
        assert m.assigned_partitions is group.target_of(mid), mid
        assert m.partitions_pending_revocation is EMPTY
        assert not m.assignment_epochs or m.assignment_epochs is not NO_EPOCHS
        if not m.assignment_epochs:
            assert m.assignment_epochs is NO_EPOCHS


def test_a_converged_group_shares_mappings_and_subscriptions_also_after_a_load() -> None:
    shard, group, records = _converged_shard(members=6, topics=3, per_topic=4)
    assert all(m.assigned_partitions for m in group.members.values())
    _assert_shared(group)
    # the session timers name the group and the member by the strings the group holds
    keys = [k for k in shard.timers._timers if k[1] == "g"]
    assert len(keys) == len(group.members)
    assert all(k[1] is group.group_id and k[2] is group.members[k[2]].member_id for k in keys)
    loaded = Shard(metadata=shard.metadata)
    for rec in records:
        loaded.replay(Record.decode(*rec.encode()))  # decoded: mappings and tuples of its own
    again = loaded.groups["g"]
    assert isinstance(again, ConsumerGroup)
    assert again.digest() == group.digest()
    _assert_shared(again)


def test_uniform_shares_single_partition_sets_across_topics() -> None:
    topics = {UUID(int=k + 1): TopicMetadata(UUID(int=k + 1), f"t{k}", 4) for k in range(8)}
    ids = frozenset(topics)
    spec = GroupSpec({f"m{i}": MemberSubscription(f"m{i}", ids) for i in range(16)}, topics)
    result = UniformAssignor().assign(spec)
    singles = [ps for a in result.values() for ps in a.values() if len(ps) == 1]
    assert len(singles) > len({next(iter(ps)) for ps in singles})  # some partition number repeats
    by_number: dict[int, frozenset[int]] = {}
    for ps in singles:
        assert by_number.setdefault(next(iter(ps)), ps) is ps
    # every partition assigned exactly once
    held = sorted((t, p) for a in result.values() for t, ps in a.items() for p in ps)
    assert held == sorted((t, p) for t in topics for p in range(4))


def test_the_memory_measurement_counts_what_the_coordinator_keeps_of_requests() -> None:
    """The member ids (and client ids and hosts) the coordinator keeps come from the requests,
    built as decoded from the wire: they are counted, where they are allocated (the bench's
    request building)."""
    sites: list[tuple[str, int, int]] = []
    used, budget = coordinator_memory(30, 100, 2, sites=sites)
    assert budget == 2048 * 30 + 200 * 100
    assert sum(size for _, _, size in sites) <= used + 4096
    from_requests = sum(size for f, _, size in sites if f.endswith("scale.py"))
    member_id = str(UUID(int=1))
    assert from_requests >= 30 * (sys.getsizeof(member_id) + sys.getsizeof(f"consumer-g-{30}"))
    assert any("coordinator" in f for f, _, _ in sites)


def test_a_timer_without_payload_is_stored_as_its_deadline() -> None:
    timers = Timers()
    timers.schedule(("session", "g", "a"), 50)
    timers.schedule(("rebalance", "g", "a"), 40, 7)
    timers.schedule(("session", "g", "b"), 30, None)
    assert type(timers._timers[("session", "g", "a")]) is int  # no (deadline, None) tuple
    assert timers.deadline(("session", "g", "a")) == 50 and timers.payload(("session", "g", "a")) is None
    assert timers.deadline(("rebalance", "g", "a")) == 40 and timers.payload(("rebalance", "g", "a")) == 7
    timers.schedule(("session", "g", "b"), 60, "p")  # later, now with a payload
    timers.schedule(("rebalance", "g", "a"), 20)  # earlier, payload dropped
    assert timers.next_deadline() == 20
    due = [timers.pop_next_due(100) for _ in range(4)]
    assert due == [(("rebalance", "g", "a"), None), (("session", "g", "a"), None),
                   (("session", "g", "b"), "p"), None]

"""Online migration between classic and consumer groups (KIP-848 "Supporting Online
Consumer Group Upgrade", "Online Migration" case study, "Kafka Consumer Migration").

The case study is replayed step by step with the spec's tables (``support.tables``: group epoch
and members, target assignment, member assignments). Where this coordinator differs from the
printed tables the step says why:

- A member that leaves is tombstoned with its target assignment (as upstream's removeMember), so
  after "B leaves" the target no longer lists B although the spec's table still does.
- The spec's last rebalance revokes the partition most recently added to C (foo-4 of
  [foo-2, foo-5, foo-4]): so does the ``uniform`` assignor, which takes from a member above its
  quota the partitions it got last (KIP-1251 assignment epochs: C holds foo-2 and foo-5 since
  epoch 22, foo-4 since 23), so B ends with [foo-3, foo-4] and C with [foo-2, foo-5], as printed.
- A new member's row shows its state after its own heartbeat: B is at epoch 24 waiting for its
  partitions, where the spec prints the intermediate "epoch=0" before reconciliation.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.records import (
    ClassicGroupMemberMetadata,
    ClassicGroupMetadataValue,
    Record,
    classic_group_metadata_record,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import ErrorCode

from .support import image, owned, tables
from .test_classic_support import Harness

E = ErrorCode
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def sub(*owned_partitions: int, generation: int = -1, version: int = 3) -> bytes:
    return encode_subscription(["foo"], owned_partitions={"foo": list(owned_partitions)},
                               generation_id=generation, version=version)


def classic_protos(*owned_partitions: int, version: int = 3) -> tuple[JoinGroupProtocol, ...]:
    return (JoinGroupProtocol("range", sub(*owned_partitions, version=version)),)


def load_classic_group(h: Harness, generation: int, members: dict[str, tuple[str | None, list[int]]],
                       group_id: str = "g") -> None:
    """A Stable classic consumer group as a log holds it (one GroupMetadata record), loaded."""
    value = ClassicGroupMetadataValue("consumer", generation, "range", next(iter(members)), 0, tuple(
        ClassicGroupMemberMetadata(mid, instance, mid, "/10.0.0.1", REBALANCE_MS, SESSION_MS,
                                   sub(*ps, generation=generation),
                                   encode_assignment({"foo": ps}))
        for mid, (instance, ps) in members.items()))
    record = classic_group_metadata_record(group_id, value)
    h.records.append(record)
    h.shard.replay(record)
    h.shard.on_loaded(h.now)


def heartbeat(h: Harness, member_id: str, epoch: int, owned_tps: tuple[str, ...] | None = None,
              **kw: Any) -> Any:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", REBALANCE_MS)
        kw.setdefault("subscribed_topic_names", ("foo",))
        owned_tps = ()
    return h.send(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id=member_id, member_epoch=epoch,
        topic_partitions=None if owned_tps is None else owned(*owned_tps), **kw)).r


def classic_join(h: Harness, member_id: str, *owned_partitions: int,
                 instance: str | None = None, version: int = 9) -> Any:
    return h.join(member_id, instance=instance, protos=classic_protos(*owned_partitions),
                  version=version, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS,
                  client_id=member_id or "client").r


def synced(h: Harness, member_id: str, generation: int) -> list[int]:
    r = h.sync(member_id, generation).r
    assert r.error_code == 0, r
    return decode_assignment(r.assignment).partitions.get("foo", [])


def partitions(r: Any) -> list[int]:
    return sorted(p for tp in r.assignment.topic_partitions for p in tp.partitions)


def test_online_migration_case_study() -> None:
    h = Harness(metadata=image(foo=6))

    # We start with a generic group (generation=22): A, B, C.
    load_classic_group(h, 22, {"A-classic": ("a", [0, 1]), "B": (None, [3, 4]),
                               "C": (None, [2, 5])})
    g = h.group()
    assert (g.generation_id, g.state.value) == (22, "Stable")
    assert {m: decode_assignment(g.members[m].assignment).partitions["foo"]
            for m in g.members} == {"A-classic": [0, 1], "B": [3, 4], "C": [2, 5]}

    # A leaves and rejoins with the new protocol enabled (a static member: same instance id).
    # The group is converted; the current generation becomes the group epoch; the target and
    # the member assignments are created from the current assignment.
    r = heartbeat(h, "A", 0, instance_id="a")
    assert (r.error_code, r.member_epoch, partitions(r)) == (0, 22, [0, 1])
    assert isinstance(h.shard.groups["g"], ConsumerGroup)
    assert tables(h.shard) == {
        "group": (22, ["A", "B", "C"]),
        "target": (22, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (22, ["foo-0", "foo-1"], []), "B": (22, ["foo-3", "foo-4"], []),
                    "C": (22, ["foo-2", "foo-5"], [])},
    }
    # A uses the new protocol. B and C still use the old protocol.
    group = cg(h)
    assert [mid for mid, m in sorted(group.members.items()) if m.classic is not None] == ["B", "C"]
    assert h.heartbeat("B", 22).error_code == 0 and h.heartbeat("C", 22).error_code == 0

    # B leaves the group. The coordinator removes it and bumps the group epoch (B's target goes
    # with its other records).
    assert h.leave("B").error_code == 0
    assert tables(h.shard) == {
        "group": (23, ["A", "C"]),
        "target": (22, {"A": ["foo-0", "foo-1"], "C": ["foo-2", "foo-5"]}),
        "members": {"A": (22, ["foo-0", "foo-1"], []), "C": (22, ["foo-2", "foo-5"], [])},
    }

    # The coordinator computes a new target assignment and triggers a rebalance for C (C's
    # heartbeat: REBALANCE_IN_PROGRESS).
    assert h.heartbeat("C", 22).error_code == E.rebalance_in_progress
    assert tables(h.shard) == {
        "group": (23, ["A", "C"]),
        "target": (23, {"A": ["foo-0", "foo-1", "foo-3"], "C": ["foo-2", "foo-4", "foo-5"]}),
        "members": {"A": (22, ["foo-0", "foo-1"], []), "C": (22, ["foo-2", "foo-5"], [])},
    }

    # C revokes all its partitions (eager) and sends JoinGroup. C owns nothing any more, so it
    # transitions to epoch 23 (its generation in the JoinGroup response): CompletingRebalance.
    r = classic_join(h, "C")
    assert (r.error_code, r.generation_id, r.member_id, r.protocol_name) == (0, 23, "C", "range")
    assert tables(h.shard)["members"] == {"A": (22, ["foo-0", "foo-1"], []),
                                          "C": (23, ["foo-2", "foo-4", "foo-5"], [])}

    # In the meantime, A heartbeats and transitions to epoch 23 as well.
    r = heartbeat(h, "A", 22, owned_tps=("foo-0", "foo-1"))
    assert (r.member_epoch, partitions(r)) == (23, [0, 1, 3])

    # C sends SyncGroup and collects its new assignment (all free). C is Stable.
    assert synced(h, "C", 23) == [2, 4, 5]
    assert h.heartbeat("C", 23).error_code == 0
    assert tables(h.shard) == {
        "group": (23, ["A", "C"]),
        "target": (23, {"A": ["foo-0", "foo-1", "foo-3"], "C": ["foo-2", "foo-4", "foo-5"]}),
        "members": {"A": (23, ["foo-0", "foo-1", "foo-3"], []),
                    "C": (23, ["foo-2", "foo-4", "foo-5"], [])},
    }

    # B rejoins with the new protocol: added, group epoch 24, a new target: C gives up foo-4,
    # the partition it got most recently, and B gets [foo-3, foo-4].
    r = heartbeat(h, "B", 0)
    assert (r.error_code, r.member_epoch, partitions(r)) == (0, 24, [])
    assert tables(h.shard) == {
        "group": (24, ["A", "B", "C"]),
        "target": (24, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (23, ["foo-0", "foo-1", "foo-3"], []),
                    "B": (24, [], ["foo-3", "foo-4"]),
                    "C": (23, ["foo-2", "foo-4", "foo-5"], [])},
    }

    # A heartbeats and is told to revoke foo-3.
    r = heartbeat(h, "A", 23, owned_tps=("foo-0", "foo-1", "foo-3"))
    assert (r.member_epoch, partitions(r)) == (23, [0, 1])
    # A rebalance is triggered for C; it revokes everything and rejoins: nothing owned, so it
    # transitions to epoch 24 (CompletingRebalance) and its revoked partition is released.
    assert h.heartbeat("C", 23).error_code == E.rebalance_in_progress
    r = classic_join(h, "C")
    assert (r.error_code, r.generation_id) == (0, 24)
    assert tables(h.shard)["members"] == {"A": (23, ["foo-0", "foo-1", "foo-3"], []),
                                          "B": (24, [], ["foo-3", "foo-4"]),
                                          "C": (24, ["foo-2", "foo-5"], [])}

    # C sends SyncGroup to collect its assignment: Stable.
    assert synced(h, "C", 24) == [2, 5]
    assert h.heartbeat("C", 24).error_code == 0

    # A heartbeats, confirms the revocation of foo-3, transitions to epoch 24. Its assigned
    # partitions did not change (foo-3 was pending revocation), so the response carries no
    # assignment: Kafka's GroupMetadataManager sends one only on a join, a full request or a
    # change of the assigned partitions. Its state is checked in the tables below.
    r = heartbeat(h, "A", 23, owned_tps=("foo-0", "foo-1"))
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 24, None)

    # B heartbeats and gets its assignment.
    r = heartbeat(h, "B", 24, owned_tps=())
    assert (r.member_epoch, partitions(r)) == (24, [3, 4])
    assert tables(h.shard) == {
        "group": (24, ["A", "B", "C"]),
        "target": (24, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (24, ["foo-0", "foo-1"], []), "B": (24, ["foo-3", "foo-4"], []),
                    "C": (24, ["foo-2", "foo-5"], [])},
    }
    assert group.state().value == "Stable"
    # I4: the converted, mixed group is rebuilt from the records alone.
    assert replayed(h) == h.shard.state_digest()


# ----------------------------------------------------------------------------- helpers


def mixed_group(h: Harness) -> str:
    """A consumer group: new-protocol member "A" (epoch 1, all of foo), then a classic member
    joined (MEMBER_ID_REQUIRED first) and synced; returns the classic member's id."""
    r = heartbeat(h, "A", 0)
    assert (r.error_code, r.member_epoch) == (0, 1)
    first = classic_join(h, "")
    assert first.error_code == E.member_id_required
    r = classic_join(h, first.member_id)
    assert (r.error_code, r.member_id, r.leader) == (0, first.member_id, "")
    return first.member_id


def replayed(h: Harness) -> Any:
    """I4: the digest of a fresh shard fed the whole log through the codec (no load duties,
    which may compute a pending target assignment)."""
    shard = Shard(config=h.config, metadata=h.metadata)
    for rec in h.records:
        shard.replay(Record.decode(*rec.encode()))
    return shard.state_digest()


def cg(h: Harness) -> ConsumerGroup:
    g = h.shard.groups["g"]
    assert isinstance(g, ConsumerGroup), g
    return g


def owners_are_unique(h: Harness) -> None:
    """I1: no partition is held by two members (current assignment incl. pending revocation,
    or a classic group's persisted assignments)."""
    for g in h.shard.groups.values():
        seen: list[tuple[Any, int]] = []
        if isinstance(g, ConsumerGroup):
            for m in g.members.values():
                seen.extend(m.owned_partitions())
        elif isinstance(g, ClassicGroup) and g.committed is not None:
            for cm in g.committed.members:
                if cm.assignment:
                    ps = decode_assignment(cm.assignment).partitions
                    seen.extend((t, p) for t, pl in ps.items() for p in pl)
        assert len(seen) == len(set(seen)), f"a partition is owned twice in {g.group_id}: {seen}"


# ----------------------------------------------------------------------------- conversions


def test_upgrade_keeps_generation_subscriptions_and_classic_metadata() -> None:
    h = Harness(metadata=image(foo=6, bar=2))
    load_classic_group(h, 7, {"K1": (None, [0, 1, 2]), "K2": ("k2", [3, 4, 5])})
    r = heartbeat(h, "N", 0, subscribed_topic_names=("foo", "bar"))
    assert r.error_code == 0
    g = cg(h)
    # The joining member bumped the epoch once, from the classic generation.
    assert g.group_epoch == 8 and g.assignment_epoch == 8
    k1, k2 = g.members["K1"], g.members["K2"]
    assert k1.classic is not None and k1.classic.session_timeout_ms == SESSION_MS
    assert k1.classic.supported_protocols[0][0] == "range"
    assert (k1.subscribed_topic_names, k1.rebalance_timeout_ms) == (("foo",), REBALANCE_MS)
    assert g.static_member("k2") is k2
    # The classic members were at the generation; the new member's arrival moves them on.
    assert (k1.member_epoch, k1.previous_member_epoch) == (7, 7)
    assert h.heartbeat("K1", 7).error_code == E.rebalance_in_progress
    assert "bar" in g.subscription_metadata
    owners_are_unique(h)
    assert replayed(h) == h.shard.state_digest()


def test_upgrade_answers_pending_classic_requests_and_drops_classic_timers() -> None:
    h = Harness(metadata=image(foo=4))
    load_classic_group(h, 3, {"K1": (None, [0, 1]), "K2": (None, [2, 3])})
    join = h.join("K1", protos=classic_protos(), session_ms=SESSION_MS)  # parks: a rebalance
    assert not join.done
    assert heartbeat(h, "N", 0).error_code == 0
    assert join.r.error_code == E.rebalance_in_progress
    for key in [("classic-heartbeat", "g", "K1"), ("classic-heartbeat", "g", "K2"),
                ("classic-join", "g")]:
        assert key not in h.shard.timers
    # K1 rejoins the consumer group: answered at once.
    r = classic_join(h, "K1")
    assert r.error_code == 0 and r.generation_id == cg(h).group_epoch


def test_upgrade_refused_for_malformed_embedded_protocol() -> None:
    h = Harness(metadata=image(foo=4))
    value = ClassicGroupMetadataValue("consumer", 3, "range", "K1", 0, (
        ClassicGroupMemberMetadata("K1", None, "c", "h", REBALANCE_MS, SESSION_MS, sub(),
                                   b"\x00\x00garbage"),))
    h.shard.replay(classic_group_metadata_record("g", value))
    r = heartbeat(h, "N", 0)
    assert r.error_code == E.group_id_not_found
    assert isinstance(h.shard.groups["g"], ClassicGroup)


def test_downgrade_when_the_last_new_protocol_member_leaves() -> None:
    h = Harness(metadata=image(foo=4))
    k = mixed_group(h)
    g = cg(h)
    epoch = g.group_epoch
    assert synced(h, k, g.members[k].member_epoch) == []  # all held by A until it revokes
    r = heartbeat(h, "A", 1, owned_tps=("foo-0", "foo-1", "foo-2", "foo-3"))
    assert partitions(r) == [0, 1]
    r = heartbeat(h, "A", 1, owned_tps=("foo-0", "foo-1"))
    assert r.member_epoch == epoch
    # A leaves: only the classic member remains -> a classic group at generation = group epoch,
    # rebalancing so that its members rejoin under the classic protocol.
    assert heartbeat(h, "A", -1).error_code == 0
    c = h.group()
    assert (c.generation_id, c.protocol_type, c.protocol_name, c.leader_id) == \
        (epoch, "consumer", "range", k)
    assert c.state.value == "PreparingRebalance"
    assert decode_assignment(c.members[k].assignment).partitions == {}
    assert h.heartbeat(k, epoch).error_code == E.rebalance_in_progress
    join = h.join(k, protos=classic_protos(), session_ms=SESSION_MS)
    assert (join.r.error_code, join.r.generation_id, join.r.leader) == (0, epoch + 1, k)
    assert h.sync(k, epoch + 1, {k: encode_assignment({"foo": [0, 1, 2, 3]})}).r.error_code == 0
    assert h.group().state.value == "Stable"
    owners_are_unique(h)
    assert replayed(h) == h.shard.state_digest()


def test_empty_groups_always_convert_even_when_migration_is_disabled() -> None:
    h = Harness(config=CoordinatorConfig(consumer_migration_policy="disabled"),
                metadata=image(foo=2))
    h.shard.replay(classic_group_metadata_record(
        "g", ClassicGroupMetadataValue("consumer", 5, None, None, 0)))
    assert heartbeat(h, "N", 0).error_code == 0
    assert isinstance(h.shard.groups["g"], ConsumerGroup)
    assert heartbeat(h, "N", -1).error_code == 0
    join = h.join_new()
    assert isinstance(h.shard.groups["g"], ClassicGroup)
    h.advance(3_000)  # the initial rebalance delay
    assert join.r.error_code == 0


# ----------------------------------------------------------------------------- policies


def _upgrade_attempt(policy: str) -> tuple[Harness, Any]:
    h = Harness(config=CoordinatorConfig(consumer_migration_policy=policy), metadata=image(foo=4))
    load_classic_group(h, 3, {"K1": (None, [0, 1]), "K2": (None, [2, 3])})
    return h, heartbeat(h, "N", 0)


def _downgrade_attempt(policy: str) -> Harness:
    h = Harness(config=CoordinatorConfig(consumer_migration_policy=policy), metadata=image(foo=4))
    mixed_group(h)
    assert heartbeat(h, "A", -1).error_code == 0
    return h


def test_policy_disabled() -> None:
    h, r = _upgrade_attempt("disabled")
    assert r.error_code == E.group_id_not_found and isinstance(h.shard.groups["g"], ClassicGroup)
    h = _downgrade_attempt("disabled")
    g = cg(h)
    assert isinstance(g, ConsumerGroup) and all(m.classic for m in g.members.values())


def test_policy_upgrade() -> None:
    h, r = _upgrade_attempt("upgrade")
    assert r.error_code == 0 and isinstance(h.shard.groups["g"], ConsumerGroup)
    h = _downgrade_attempt("upgrade")
    assert isinstance(h.shard.groups["g"], ConsumerGroup)


def test_policy_downgrade() -> None:
    h, r = _upgrade_attempt("downgrade")
    assert r.error_code == E.group_id_not_found and isinstance(h.shard.groups["g"], ClassicGroup)
    h = _downgrade_attempt("downgrade")
    assert isinstance(h.shard.groups["g"], ClassicGroup)


def test_policy_bidirectional() -> None:
    h, r = _upgrade_attempt("bidirectional")
    assert r.error_code == 0 and isinstance(h.shard.groups["g"], ConsumerGroup)
    # ... and back: the new member leaves, the classic members remain.
    assert heartbeat(h, "N", -1).error_code == 0
    assert isinstance(h.shard.groups["g"], ClassicGroup)
    assert set(h.group().members) == {"K1", "K2"}
    assert replayed(h) == h.shard.state_digest()


# ----------------------------------------------------------------------------- classic members


def test_cooperative_classic_member_revokes_then_rejoins() -> None:
    h = Harness(metadata=image(foo=4))
    load_classic_group(h, 10, {"K1": (None, [0, 1, 2, 3])})
    r = heartbeat(h, "N", 0)
    assert (r.member_epoch, partitions(r)) == (11, [])  # waits for K1 to release two
    assert h.heartbeat("K1", 10).error_code == E.rebalance_in_progress
    # A cooperative member rejoins still owning everything: it stays at epoch 10 and its
    # assignment no longer lists what it must revoke.
    r = classic_join(h, "K1", 0, 1, 2, 3)
    assert r.generation_id == 10
    kept = synced(h, "K1", 10)
    assert len(kept) == 2
    g = cg(h)
    assert g.members["K1"].state is MemberState.UNREVOKED_PARTITIONS
    assert h.heartbeat("K1", 10).error_code == E.rebalance_in_progress
    # It revokes, rejoins owning what it kept: epoch 11.
    r = classic_join(h, "K1", *kept)
    assert r.generation_id == 11 and synced(h, "K1", 11) == kept
    assert h.heartbeat("K1", 11).error_code == 0
    r = heartbeat(h, "N", 11, owned_tps=())
    assert len(partitions(r)) == 2 and not set(partitions(r)) & set(kept)
    owners_are_unique(h)


def test_classic_member_errors_inside_a_consumer_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupSyncToConsumerGroup and
    classicGroupHeartbeatToConsumerGroup (throwIfGenerationIdUnmatched: ILLEGAL_GENERATION for a
    generation other than the member epoch; throwIfClassicProtocolUnmatched;
    throwIfMemberDoesNotUseClassicProtocol: UNKNOWN_MEMBER_ID)."""
    h = Harness(metadata=image(foo=4))
    k = mixed_group(h)
    epoch = cg(h).members[k].member_epoch
    assert h.heartbeat(k, epoch + 5).error_code == E.illegal_generation
    assert h.sync(k, epoch + 5).r.error_code == E.illegal_generation
    assert h.sync(k, epoch, protocol_name="roundrobin").r.error_code == \
        E.inconsistent_group_protocol
    assert h.heartbeat("A", 1).error_code == E.unknown_member_id  # A uses the new protocol
    assert h.heartbeat("ghost", 1).error_code == E.unknown_member_id
    other = h.join("", protos=(JoinGroupProtocol("roundrobin", sub()),), version=3).r
    assert other.error_code == E.inconsistent_group_protocol
    assert h.join("", protocol_type="connect", version=3).r.error_code == \
        E.inconsistent_group_protocol
    # A classic member id in a ConsumerGroupHeartbeat is not a new-protocol member.
    assert heartbeat(h, k, epoch, owned_tps=()).error_code == E.unknown_member_id


def test_classic_static_member_replaced_and_fenced() -> None:
    h = Harness(metadata=image(foo=4))
    heartbeat(h, "A", 0)
    r = classic_join(h, "", instance="s1")
    old = r.member_id
    assert r.error_code == 0
    g = cg(h)
    epoch = g.group_epoch
    target = g.target_of(old)
    # The same instance joins again without member id: a new id replaces the old one, which
    # is fenced; the group epoch does not move (same subscription).
    r = classic_join(h, "", instance="s1")
    assert r.error_code == 0 and r.member_id != old
    assert g.static_member("s1").member_id == r.member_id and old not in g.members
    assert g.group_epoch == epoch and g.target_of(r.member_id) == target
    assert h.heartbeat(old, epoch, instance="s1").error_code == E.fenced_instance_id
    # A static classic member leaves with its instance id: removed, epoch bumped.
    assert h.leave((r.member_id, "s1")).members[0].error_code == 0
    assert g.static_member("s1") is None and g.group_epoch == epoch + 1


def test_new_protocol_static_member_replaces_a_classic_one_at_once() -> None:
    h = Harness(metadata=image(foo=4))
    load_classic_group(h, 4, {"K1": ("s1", [0, 1]), "K2": (None, [2, 3])})
    r = heartbeat(h, "N1", 0, instance_id="s1")
    assert (r.error_code, r.member_epoch, partitions(r)) == (0, 4, [0, 1])
    g = cg(h)
    assert "K1" not in g.members and g.members["N1"].classic is None
    assert h.heartbeat("K1", 4, instance="s1").error_code == E.fenced_instance_id


def keep_alive(h: Harness, member_id: str) -> None:
    """A well-behaved new-protocol member's heartbeat: it owns what it was last told."""
    m = cg(h).members[member_id]
    held = tuple(f"{h.shard.metadata.by_id[t].name}-{p}"
                 for t, ps in m.assigned_partitions.items() for p in ps)
    assert heartbeat(h, member_id, m.member_epoch, owned_tps=held).error_code == 0


def test_classic_member_session_and_rejoin_timeouts() -> None:
    # every join in the next target at once (no assignment interval): the classic member's
    # rejoin completes in the same instant
    h = Harness(metadata=image(foo=4), config=CoordinatorConfig(consumer_assignment_interval_ms=0))
    k = mixed_group(h)
    g = cg(h)
    # The classic session timeout applies: no heartbeat for 10 s -> removed.
    for _ in range(3):
        h.advance(4_000)
        keep_alive(h, "A")
    assert k not in g.members
    # A member told to rejoin that never does is removed after its rebalance timeout.
    k2 = classic_join(h, "")
    k2 = classic_join(h, k2.member_id)
    assert synced(h, k2.member_id, k2.generation_id) is not None
    heartbeat(h, "B", 0)  # a new member: the epoch moves past k2
    assert h.heartbeat(k2.member_id, k2.generation_id).error_code == E.rebalance_in_progress
    for _ in range(8):
        h.advance(4_000)
        keep_alive(h, "A")
        keep_alive(h, "B")
        if k2.member_id in g.members:
            h.heartbeat(k2.member_id, k2.generation_id)
    assert k2.member_id not in g.members
    owners_are_unique(h)


# ----------------------------------------------------------------------------- random mixes


class MixedGroupMachine(RuleBasedStateMachine):
    """Random sequences of new-protocol and classic (eager) members on one group "g" that
    starts as a classic group at generation 5: upgrades, mixed rebalances, downgrades, time
    and fail-overs. Checked after every step: I1 (no partition held twice, in whichever type
    the group has) and I4 (a shard rebuilt from the log through the codec digests equal)."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(metadata=image(foo=6))
        load_classic_group(self.h, 5, {"K0": (None, [0, 1, 2]), "K1": (None, [3, 4, 5])})
        # new-protocol clients: member id -> (epoch, owned partitions) while joined
        self.new: dict[str, tuple[int, tuple[str, ...]]] = {}
        # classic clients: name -> member id, generation (None: must join), pending call
        self.ids: dict[str, str] = {"K0": "K0", "K1": "K1"}
        self.generation: dict[str, int | None] = {"K0": 5, "K1": 5}
        self.pending: dict[str, Any] = {}
        self.leader_members: dict[str, tuple[str, ...]] = {}

    # ---- new-protocol members

    @rule(i=st.integers(0, 1))
    def new_heartbeat(self, i: int) -> None:
        mid = f"N{i}"
        if mid not in self.new:
            r = heartbeat(self.h, mid, 0)
        else:
            epoch, held = self.new[mid]
            r = heartbeat(self.h, mid, epoch, owned_tps=held)
        if r.error_code:
            self.new.pop(mid, None)
            return
        held = self.new.get(mid, (0, ()))[1]
        if r.assignment is not None:
            held = tuple(f"foo-{p}" for p in partitions(r))
        self.new[mid] = (r.member_epoch, held)

    @rule(i=st.integers(0, 1))
    def new_leave(self, i: int) -> None:
        mid = f"N{i}"
        if self.new.pop(mid, None) is not None:
            heartbeat(self.h, mid, -1)

    # ---- classic members (eager: they own nothing when they rejoin)

    def _settle(self, name: str) -> None:
        call = self.pending.get(name)
        if call is None or not call.done:
            return
        del self.pending[name]
        r = call.response
        if r is None:  # lost in a fail-over
            self.generation[name] = None
        elif hasattr(r, "generation_id"):  # JoinGroup
            if r.error_code == E.member_id_required:
                self.ids[name] = r.member_id
            elif r.error_code == 0:
                self.ids[name] = r.member_id
                self.generation[name] = r.generation_id
                self.leader_members[name] = tuple(m.member_id for m in r.members) \
                    if r.leader == r.member_id else ()
            elif r.error_code == E.unknown_member_id:
                self.ids.pop(name, None)
        elif r.error_code:
            self.generation[name] = None

    @rule(i=st.integers(0, 2))
    def classic_join(self, i: int) -> None:
        name = f"K{i}"
        self._settle(name)
        if name in self.pending:
            return
        self.generation[name] = None
        self.pending[name] = self.h.join(self.ids.get(name, ""), protos=classic_protos(),
                                         session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS,
                                         client_id=name)
        self._settle(name)

    @rule(i=st.integers(0, 2))
    def classic_sync(self, i: int) -> None:
        name = f"K{i}"
        self._settle(name)
        gen = self.generation.get(name)
        if name in self.pending or gen is None or name not in self.ids:
            return
        members = sorted(self.leader_members.get(name, ()))
        plan = {m: encode_assignment({"foo": list(range(j, 6, len(members)))})
                for j, m in enumerate(members)}
        self.pending[name] = self.h.sync(self.ids[name], gen, plan)
        self._settle(name)

    @rule(i=st.integers(0, 2))
    def classic_heartbeat(self, i: int) -> None:
        name = f"K{i}"
        self._settle(name)
        gen = self.generation.get(name)
        if gen is None or name not in self.ids:
            return
        r = self.h.heartbeat(self.ids[name], gen)
        if r.error_code == E.unknown_member_id:
            self.ids.pop(name, None)
        if r.error_code:
            self.generation[name] = None

    @rule(i=st.integers(0, 2))
    def classic_leave(self, i: int) -> None:
        name = f"K{i}"
        self._settle(name)
        if name in self.ids and name not in self.pending:
            self.h.leave(self.ids.pop(name))
            self.generation[name] = None

    # ---- time and fail-over

    @rule(ms=st.sampled_from([1_000, 4_000, 11_000, 31_000]))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        for name in list(self.pending):
            self._settle(name)

    @rule()
    def fail_over(self) -> None:
        """A new shard from the log, its load duties' records kept in the log too; requests
        still pending are lost."""
        h = self.h
        shard = Shard(config=h.config, metadata=h.metadata)
        for rec in h.records:
            shard.replay(Record.decode(*rec.encode()))
        h.shard = shard
        loaded = shard.on_loaded(h.now)
        h._absorb(loaded.records, loaded.completions)
        for call in h.calls.values():
            if not call.done:
                call.response = None
        for name in list(self.pending):
            self._settle(name)

    # ---- invariants

    @invariant()
    def no_partition_owned_twice(self) -> None:
        owners_are_unique(self.h)

    @invariant()
    def replay_equals_live(self) -> None:
        assert replayed(self.h) == self.h.shard.state_digest()


MixedGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestMixedGroups = MixedGroupMachine.TestCase


@pytest.mark.parametrize("seed_policy", ["bidirectional"])
def test_mixed_group_reaches_both_types(seed_policy: str) -> None:
    """The machine's moves do reach both conversions (a sanity check of the machine itself)."""
    m = MixedGroupMachine()
    m.new_heartbeat(0)
    assert isinstance(m.h.shard.groups["g"], ConsumerGroup)
    m.classic_heartbeat(0)
    m.classic_join(0)
    m.new_leave(0)
    assert isinstance(m.h.shard.groups["g"], ClassicGroup)
    m.no_partition_owned_twice()
    m.replay_equals_live()


# ----------------------------------------------------------------------------- found over the wire


def _static_mixed_group(h: Harness) -> tuple[str, int]:
    """A consumer group of new-protocol static member N1 (instance s1) and classic static
    member K (instance s2), both reconciled at the group epoch; returns (K's id, epoch)."""
    assert heartbeat(h, "N1", 0, instance_id="s1").error_code == 0
    k = classic_join(h, "", instance="s2").member_id
    g = cg(h)
    for _ in range(5):  # N1 revokes what K is to get, K rejoins for it
        keep_alive(h, "N1")
        mk = g.members[k]
        if h.heartbeat(k, mk.member_epoch, instance="s2").error_code == E.rebalance_in_progress:
            held = [p for ps in mk.assigned_partitions.values() for p in ps]
            r = classic_join(h, k, *held, instance="s2")
            assert r.error_code == 0
    assert all(m.member_epoch == g.group_epoch and m.state is MemberState.STABLE
               for m in g.members.values()), g.members
    assert synced(h, k, g.group_epoch) == [2, 3]
    return k, g.group_epoch


def test_classic_static_member_replacing_the_last_new_protocol_member_downgrades() -> None:
    """Found by the static rolling downgrade with real clients (test_server_migration.py): a
    classic static member that replaces the last new-protocol static member (which left with
    epoch -2) converts the group to a classic group at once, as upstream's
    classicGroupJoinToConsumerGroup does, without a rebalance: the joiner keeps the replaced
    member's partitions, the other classic members keep theirs and their generation."""
    h = Harness(metadata=image(foo=4))
    k, epoch = _static_mixed_group(h)
    assert heartbeat(h, "N1", -2, instance_id="s1").error_code == 0  # a static restart
    r = classic_join(h, "", instance="s1")
    assert r.error_code == 0 and r.generation_id == epoch and r.protocol_name == "range"
    c = h.group()
    assert (c.state.value, c.generation_id, c.protocol_name) == ("Stable", epoch, "range")
    assert sorted(c.members) == sorted([k, r.member_id])
    assert synced(h, r.member_id, epoch) == [0, 1]  # N1's partitions, no rebalance
    assert h.heartbeat(k, epoch, instance="s2").error_code == 0
    assert synced(h, k, epoch) == [2, 3]
    assert h.heartbeat("N1", epoch, instance="s1").error_code == E.fenced_instance_id
    owners_are_unique(h)
    assert replayed(h) == h.shard.state_digest()
    # the classic sessions run: a member that stops heartbeating is removed by a rebalance
    for _ in range(4):
        h.advance(4_000)
        h.heartbeat(k, h.group().generation_id, instance="s2")
    assert r.member_id not in h.group().members


def test_classic_static_replacement_with_another_subscription_downgrades_and_rebalances() -> None:
    """The same replacement with a different subscription: the group converts and rebalances
    (upstream: "static member replacement with different subscription")."""
    h = Harness(metadata=image(foo=4, bar=2))
    k, epoch = _static_mixed_group(h)
    assert heartbeat(h, "N1", -2, instance_id="s1").error_code == 0
    protos = (JoinGroupProtocol("range", encode_subscription(["bar", "foo"])),)
    r = h.join("", instance="s1", protos=protos, session_ms=SESSION_MS,
               rebalance_ms=REBALANCE_MS).r
    assert r.error_code == 0
    c = h.group()
    assert (c.state.value, c.generation_id) == ("PreparingRebalance", epoch + 1)  # bar added
    assert h.heartbeat(k, c.generation_id, instance="s2").error_code == E.rebalance_in_progress
    owners_are_unique(h)
    assert replayed(h) == h.shard.state_digest()


@pytest.mark.parametrize("embedded", [-1, 0, 99])
def test_join_of_a_migrated_member_does_not_check_the_embedded_generation(embedded: int) -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinToConsumerGroup, which reads the topics,
    the owned partitions and the rack of the embedded ConsumerProtocolSubscription and not its
    GenerationId. KIP-848 "JoinGroup Handling" says that generation must equal the member
    epoch; Kafka 4 checks the generation on SyncGroup and Heartbeat only
    (throwIfGenerationIdUnmatched), and we follow Kafka (``modern/classic_bridge.py``): a
    classic client that lost its generation (-1 after ILLEGAL_GENERATION) rejoins. The
    generation it is given is its member epoch, and SyncGroup / Heartbeat hold it to that."""
    h = Harness(metadata=image(foo=4))
    k = mixed_group(h)
    epoch = cg(h).members[k].member_epoch
    r = h.join(k, protos=(JoinGroupProtocol("range", sub(generation=embedded)),),
               version=9, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS, client_id=k).r
    assert r.error_code == 0, r
    assert r.generation_id == cg(h).members[k].member_epoch >= epoch
    assert h.heartbeat(k, r.generation_id + 1).error_code == E.illegal_generation
    assert h.sync(k, r.generation_id).r.error_code == 0

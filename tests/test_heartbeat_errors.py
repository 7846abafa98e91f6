"""ConsumerGroupHeartbeat error codes and request handling (KIP-848 "Request Handling",
"Static Membership", "Member Epoch - Reconciliation", "Fail Over"; Kafka 4.x behaviour where
the spec's diff leaves two readings, as the shard docstring records).

One test per error code and per handling rule: the code, a non-empty message, and the records
and state that follow (or that nothing changed when the request was refused).
"""

from __future__ import annotations

from uuid import UUID

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import counter_member_ids
from groupcoord.coordinator.messages import AlterGroupConfigOp, AlterGroupConfigsRequest
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
)
from groupcoord.coordinator.records import Record, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image, names, seed_group, tables, topic_id

E = ErrorCode


# ----------------------------------------------------------------------------- helpers


def parts(r: ConsumerGroupHeartbeatResponse, shard: Shard) -> list[str]:
    assert r.assignment is not None
    return names({tp.topic_id: frozenset(tp.partitions) for tp in r.assignment.topic_partitions},
                 shard.metadata)


def assert_refused(c: Client, r: ConsumerGroupHeartbeatResponse, code: int, before: dict,
                   n_records: int) -> None:
    """``r`` carries ``code`` and a message, and the request changed nothing."""
    assert r.error_code == code, r.error_message
    assert r.error_message and r.error_message.strip()
    assert r.assignment is None
    assert len(c.records) == n_records, "a refused request wrote records"
    assert c.shard.state_digest() == before


def replayed(records: list[Record], metadata: MetadataImage) -> Shard:
    shard = Shard(metadata=metadata)
    for rec in records:
        shard.replay(rec)
    return shard


def two_member_group(partitions: int = 4) -> tuple[Shard, Client]:
    """A and B stable at epoch 2 on foo (A joined first, revoked half to B)."""
    shard = Shard(metadata=image(foo=partitions))
    c = Client(shard)
    c.heartbeat("A", 0)
    c.heartbeat("B", 0)
    all_parts = [f"foo-{p}" for p in range(partitions)]
    r = c.heartbeat("A", 1, owned_tps=all_parts)
    keep = parts(r, shard)
    assert c.heartbeat("A", 1, owned_tps=keep).member_epoch == 2
    assert c.heartbeat("B", 2, owned_tps=[]).member_epoch == 2
    assert shard.groups["g"].state().value == "Stable"
    return shard, c


# ----------------------------------------------------------------------------- UNKNOWN_MEMBER_ID


def test_unknown_member_id_for_unknown_member() -> None:
    shard, c = two_member_group()
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("Z", 2)
    assert_refused(c, r, E.unknown_member_id, before, n)


def test_unknown_member_id_for_unknown_group_with_positive_epoch() -> None:
    """Not GROUP_ID_NOT_FOUND (fatal to librdkafka), and no group is created."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.heartbeat("A", 5, group_id="nope")
    assert r.error_code == E.unknown_member_id
    assert r.error_message
    assert c.records == []
    assert shard.groups == {}


def test_unknown_member_id_for_unknown_instance_id() -> None:
    shard, c = two_member_group()
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("A", 2, instance_id="never-joined")
    assert_refused(c, r, E.unknown_member_id, before, n)


def test_unknown_member_id_for_leave_of_unknown_member() -> None:
    shard, c = two_member_group()
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("Z", -1)
    assert_refused(c, r, E.unknown_member_id, before, n)


# ----------------------------------------------------------------------------- FENCED_MEMBER_EPOCH


def test_fenced_member_epoch_for_greater_epoch_removes_member_and_bumps() -> None:
    shard, c = two_member_group()
    n = len(c.records)
    r = c.heartbeat("A", 3)
    assert r.error_code == E.fenced_member_epoch
    assert r.error_message and "greater" in r.error_message
    assert r.assignment is None
    g = shard.groups["g"]
    assert "A" not in g.members
    assert g.group_epoch == 3
    # The removal is written: tombstones for A's current assignment, target and metadata.
    tomb = {(rec.key.type, getattr(rec.key, "member_id", None))
            for rec in c.records[n:] if rec.value is None}
    assert {(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, "A"),
            (RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, "A"),
            (RecordType.CONSUMER_GROUP_MEMBER_METADATA, "A")} <= tomb
    assert shard.timers.deadline(("session", "g", "A")) is None
    # A must rejoin: its next heartbeat at any epoch is UNKNOWN_MEMBER_ID.
    assert c.heartbeat("A", 2).error_code == E.unknown_member_id
    assert replayed(c.records, shard.metadata).state_digest() == shard.state_digest()


def test_fenced_member_epoch_for_smaller_epoch_not_the_previous_one() -> None:
    shard = Shard(metadata=image(foo=6))
    seed_group(shard, "g", 10, {"A": ["foo-0", "foo-1", "foo-2"], "B": ["foo-3", "foo-4", "foo-5"]})
    c = Client(shard)
    assert shard.groups["g"].members["A"].previous_member_epoch == 9
    r = c.heartbeat("A", 8, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.error_code == E.fenced_member_epoch
    assert r.error_message and "smaller" in r.error_message
    assert "A" not in shard.groups["g"].members
    assert shard.groups["g"].group_epoch == 11
    assert tables(shard)["group"] == (11, ["B"])


def test_smaller_epoch_equal_to_previous_without_owned_partitions_is_fenced() -> None:
    """The lost-response case needs TopicPartitions to check; a partial heartbeat is fenced."""
    shard = Shard(metadata=image(foo=2))
    seed_group(shard, "g", 10, {"A": ["foo-0", "foo-1"]})
    c = Client(shard)
    r = c.heartbeat("A", 9)
    assert r.error_code == E.fenced_member_epoch and r.error_message
    assert "A" not in shard.groups["g"].members


def test_lost_response_previous_epoch_with_owned_subset_is_accepted() -> None:
    shard = Shard(metadata=image(foo=3))
    c = Client(shard)
    c.heartbeat("A", 0)
    c.heartbeat("B", 0)
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 2  # ... and this response is lost
    m = shard.groups["g"].members["A"]
    assert (m.member_epoch, m.previous_member_epoch) == (2, 1)
    before = shard.state_digest()

    # A retries with the epoch it knows (1), reporting a subset of what it is assigned.
    for owned_now in (["foo-0", "foo-1"], ["foo-0"], []):
        r = c.heartbeat("A", 1, owned_tps=owned_now)
        assert r.error_code == 0, r.error_message
        assert r.member_epoch == 2
        assert parts(r, shard) == ["foo-0", "foo-1"]
    assert "A" in shard.groups["g"].members
    assert shard.state_digest() == before


def test_lost_response_previous_epoch_with_owned_not_subset_is_fenced() -> None:
    shard = Shard(metadata=image(foo=3))
    c = Client(shard)
    c.heartbeat("A", 0)
    c.heartbeat("B", 0)
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"]).member_epoch == 2
    epoch = shard.groups["g"].group_epoch
    # foo-2 was revoked from A and now belongs to B's target: not a subset of A's assignment.
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.error_code == E.fenced_member_epoch and r.error_message
    assert "A" not in shard.groups["g"].members
    assert shard.groups["g"].group_epoch == epoch + 1


def test_lost_join_response_retried_join_is_accepted_without_change() -> None:
    """A join whose response was lost is retried at epoch 0 = the member's previous epoch with
    nothing owned: the lost-response case, answered again with the same epoch and partitions."""
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    first = c.heartbeat("A", 0)
    before, n = shard.state_digest(), len(c.records)
    again = c.heartbeat("A", 0)
    assert again.error_code == 0
    assert (again.member_epoch, again.assignment) == (first.member_epoch, first.assignment)
    assert len(c.records) == n and shard.state_digest() == before


def test_stale_join_at_epoch_zero_under_known_member_id_is_fenced_without_change() -> None:
    """A join at epoch 0 under a member id the group has at a later epoch, not the lost-response
    case (upstream throwIfMemberEpochIsInvalid): FENCED_MEMBER_EPOCH, no records, nothing
    changed; the member (whose own request in flight is another) goes on at its epoch."""
    shard, c = two_member_group()
    g = shard.groups["g"]
    a = g.members["A"]
    assert (a.member_epoch, a.previous_member_epoch) == (2, 1)
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("A", 0)
    assert_refused(c, r, E.fenced_member_epoch, before, n)
    r = c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"])
    assert r.error_code == 0 and r.member_epoch == 2
    assert shard.groups["g"].members["A"].member_epoch == 2


def test_stale_join_of_a_static_member_is_fenced_without_change() -> None:
    """The same for a static member: its member id holds the instance id, so the join is the
    member's own, but its epoch moved on (and it is not the lost-response case)."""
    shard = Shard(metadata=image(foo=4))
    c = Client(shard)
    c.heartbeat("A", 0, instance_id="a")
    c.heartbeat("B", 0)
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2", "foo-3"], instance_id="a")
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"], instance_id="a")
    assert r.member_epoch == 2
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("A", 0, instance_id="a")
    assert_refused(c, r, E.fenced_member_epoch, before, n)
    assert shard.groups["g"].static_members == {"a": "A"}


def test_member_fenced_for_its_epoch_rejoins_at_epoch_zero_as_new() -> None:
    """Fencing for a non-zero wrong epoch removes the member, so its rejoin at epoch 0 under the
    same member id finds no member and joins (one more epoch bump), starting from nothing."""
    shard, c = two_member_group()
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.error_code == E.fenced_member_epoch
    g = shard.groups["g"]
    assert "A" not in g.members
    epoch = g.group_epoch
    r = c.heartbeat("A", 0)
    assert r.error_code == 0
    g = shard.groups["g"]
    assert g.group_epoch == epoch + 1 and g.members["A"].previous_member_epoch == 0
    assert r.member_epoch == g.members["A"].member_epoch
    assert replayed(c.records, shard.metadata).state_digest() == shard.state_digest()


# ----------------------------------------------------------------------------- static members


def test_unreleased_instance_id() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    assert c.heartbeat("A1", 0, instance_id="a").error_code == 0
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("A2", 0, instance_id="a")
    assert_refused(c, r, E.unreleased_instance_id, before, n)
    assert shard.groups["g"].static_members == {"a": "A1"}


def test_static_member_repeating_its_join_is_the_same_member() -> None:
    """A static member whose join response was lost joins again with the same member id at
    epoch 0: it is the member holding the instance id, not a rival (no UNRELEASED_INSTANCE_ID,
    no new member, no epoch bump)."""
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    first = c.heartbeat("A1", 0, instance_id="a")
    assert first.error_code == 0
    epoch = shard.groups["g"].group_epoch
    again = c.heartbeat("A1", 0, instance_id="a")
    assert again.error_code == 0 and again.member_epoch == first.member_epoch
    g = shard.groups["g"]
    assert g.static_members == {"a": "A1"} and sorted(g.members) == ["A1"]
    assert g.group_epoch == epoch
    assert replayed(c.records, shard.metadata).state_digest() == shard.state_digest()


def test_fenced_instance_id_on_heartbeat() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("A2", 1, instance_id="a")
    assert_refused(c, r, E.fenced_instance_id, before, n)


def test_fenced_instance_id_on_leave() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    for epoch in (-1, -2):
        before, n = shard.state_digest(), len(c.records)
        r = c.heartbeat("A2", epoch, instance_id="a")
        assert_refused(c, r, E.fenced_instance_id, before, n)


def test_static_permanent_leave_removes_member_and_frees_instance_id() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    c.heartbeat("B", 0)
    epoch = shard.groups["g"].group_epoch
    r = c.heartbeat("A1", -1, instance_id="a")
    assert r.error_code == 0 and r.member_epoch == -1
    assert r.heartbeat_interval_ms == 5_000
    g = shard.groups["g"]
    assert "A1" not in g.members and g.static_members == {}
    assert g.group_epoch == epoch + 1
    # The instance id is free again: a new member takes it as a fresh join (no replacement).
    r = c.heartbeat("A2", 0, instance_id="a")
    assert r.error_code == 0
    assert g.static_members == {"a": "A2"}
    assert g.group_epoch == epoch + 2


def test_static_temporary_leave_keeps_member_and_epoch() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    epoch = shard.groups["g"].group_epoch
    r = c.heartbeat("A1", -2, instance_id="a")
    assert r.error_code == 0 and r.member_epoch == -2 and r.heartbeat_interval_ms > 0
    g = shard.groups["g"]
    assert g.group_epoch == epoch
    assert g.members["A1"].member_epoch == -2
    assert names(g.members["A1"].assigned_partitions, shard.metadata) == ["foo-0", "foo-1"]


def test_static_member_gone_past_its_session_timeout_is_removed() -> None:
    """KIP-848 "Static Membership": a static member that left temporarily (epoch -2) keeps its
    place only for its session timeout; if it does not return, the session expires, the member
    and its instance id are removed and its partitions go to the others. The leave does not
    renew the session (Kafka's ``consumerGroupStaticMemberGroupLeave`` only writes the -2
    epoch): it runs out 45 s after S's last heartbeat before the leave."""
    shard = Shard(metadata=image(foo=2), config=CoordinatorConfig(
        consumer_session_timeout_ms=45_000, consumer_assignment_interval_ms=0))
    c = Client(shard)
    c.heartbeat("S", 0, instance_id="s")
    b = c.heartbeat("B", 0)
    c.now += 1_000
    assert c.heartbeat("S", -2, instance_id="s").error_code == 0
    g = shard.groups["g"]
    for _ in range(8):  # B keeps its session; S's runs out at 45,000 (its join at 0)
        c.advance(5_000)
        b = c.heartbeat("B", b.member_epoch)
        assert b.error_code == 0
        assert "S" in g.members and g.members["S"].member_epoch == -2  # not yet
    c.advance(3_999)
    assert "S" in g.members
    c.advance(1)
    assert "S" not in g.members and "s" not in g.static_members
    b = c.heartbeat("B", b.member_epoch)
    assert names(g.target_assignment["B"], shard.metadata) == ["foo-0", "foo-1"]


# ----------------------------------------------------------------------------- max size


def test_group_max_size_reached() -> None:
    shard = Shard(metadata=image(foo=4), config=CoordinatorConfig(consumer_max_size=2))
    c = Client(shard)
    assert c.heartbeat("A", 0).error_code == 0
    assert c.heartbeat("B", 0).error_code == 0
    before, n = shard.state_digest(), len(c.records)
    r = c.heartbeat("C", 0)
    assert_refused(c, r, E.group_max_size_reached, before, n)
    assert "2" in r.error_message
    # Existing members keep working; after one leaves there is room again.
    assert c.heartbeat("B", 2).error_code == 0
    assert c.heartbeat("B", -1).error_code == 0
    assert c.heartbeat("C", 0).error_code == 0
    assert sorted(shard.groups["g"].members) == ["A", "C"]


def test_group_max_size_does_not_block_static_replacement() -> None:
    """A static member rejoining under a new member id replaces its old self: no new slot."""
    shard = Shard(metadata=image(foo=2), config=CoordinatorConfig(consumer_max_size=1))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    c.heartbeat("A1", -2, instance_id="a")
    r = c.heartbeat("A2", 0, instance_id="a")
    assert r.error_code == 0, r.error_message
    assert sorted(shard.groups["g"].members) == ["A2"]


# ----------------------------------------------------------------------------- member ids


def test_v0_join_gets_coordinator_generated_member_id() -> None:
    shard = Shard(metadata=image(foo=2), member_ids=counter_member_ids("m-"))
    c = Client(shard)
    r1 = c.heartbeat("", 0, version=0)
    assert r1.error_code == 0 and r1.member_id == "m-1" and r1.member_epoch == 1
    r2 = c.heartbeat("", 0, version=0)
    assert r2.error_code == 0 and r2.member_id == "m-2"
    assert sorted(shard.groups["g"].members) == ["m-1", "m-2"]
    # The generated id is the one to use afterwards.
    assert c.heartbeat("m-1", 1, version=0).error_code == 0


def test_v0_generated_member_id_skips_ids_already_in_the_group() -> None:
    shard = Shard(metadata=image(foo=2), member_ids=counter_member_ids("m-"))
    c = Client(shard)
    c.heartbeat("m-1", 0)  # a v1 client happened to pick "m-1"
    r = c.heartbeat("", 0, version=0)
    assert r.error_code == 0 and r.member_id == "m-2"


def test_v1_join_keeps_the_client_member_id() -> None:
    shard = Shard(metadata=image(foo=2), member_ids=counter_member_ids("m-"))
    c = Client(shard)
    r = c.heartbeat("client-chosen", 0)
    assert r.member_id == "client-chosen"


# ----------------------------------------------------------------------------- leave


def test_leave_removes_member_and_bumps_epoch() -> None:
    shard, c = two_member_group()
    n = len(c.records)
    r = c.heartbeat("A", -1)
    assert r.error_code == 0 and r.error_message is None
    assert r.member_id == "A" and r.member_epoch == -1
    assert r.heartbeat_interval_ms == 5_000
    g = shard.groups["g"]
    assert sorted(g.members) == ["B"]
    assert g.group_epoch == 3
    assert any(rec.key.type is RecordType.CONSUMER_GROUP_MEMBER_METADATA and rec.value is None
               for rec in c.records[n:])
    assert shard.timers.deadline(("session", "g", "A")) is None
    # B picks up A's partitions at the next epoch.
    r = c.heartbeat("B", 2)
    assert r.member_epoch == 3
    assert parts(r, shard) == ["foo-0", "foo-1", "foo-2", "foo-3"]
    assert replayed(c.records, shard.metadata).state_digest() == shard.state_digest()


def test_last_member_leaving_leaves_an_empty_group() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    c.heartbeat("A", -1)
    g = shard.groups["g"]
    assert g.members == {} and g.state().value == "Empty"
    assert g.group_epoch == 2


# ----------------------------------------------------------------------------- partial heartbeats


def test_partial_steady_heartbeat_writes_nothing() -> None:
    shard, c = two_member_group()
    before, n = shard.state_digest(), len(c.records)
    c.advance(3_000)
    r = c.heartbeat("A", 2)  # every optional field null: nothing changed
    assert r.error_code == 0 and r.member_epoch == 2
    assert r.assignment is None
    assert len(c.records) == n
    assert shard.state_digest() == before
    # Only the session timer moves.
    assert shard.timers.deadline(("session", "g", "A")) == c.now + 45_000


def test_repeating_unchanged_fields_writes_nothing() -> None:
    """Sending the same subscription / rack again is not a change."""
    shard, c = two_member_group()
    n = len(c.records)
    r = c.heartbeat("A", 2, topics=("foo",), rebalance_timeout_ms=30_000)
    assert r.error_code == 0
    assert len(c.records) == n
    assert shard.groups["g"].group_epoch == 2


def test_partial_heartbeat_keeps_null_fields_unchanged() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0, rack_id="r1", instance_id="i", server_assignor="range",
                rebalance_timeout_ms=12_345)
    c.heartbeat("A", 1, instance_id="i")
    m = shard.groups["g"].members["A"]
    assert (m.rack_id, m.instance_id, m.server_assignor, m.rebalance_timeout_ms,
            m.subscribed_topic_names) == ("r1", "i", "range", 12_345, ("foo",))


def test_changed_rack_writes_member_metadata_without_bump() -> None:
    shard, c = two_member_group()
    n = len(c.records)
    r = c.heartbeat("A", 2, rack_id="rack-9")
    assert r.error_code == 0
    new = c.records[n:]
    assert [rec.key.type for rec in new] == [RecordType.CONSUMER_GROUP_MEMBER_METADATA]
    assert shard.groups["g"].members["A"].rack_id == "rack-9"
    assert shard.groups["g"].group_epoch == 2


# ----------------------------------------------------------------------------- assignment field


def test_assignment_sent_on_join() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    r = c.heartbeat("A", 0)
    assert r.assignment is not None and parts(r, shard) == ["foo-0", "foo-1"]
    # Even with nothing to give, a join answers with an (empty) assignment.
    shard2 = Shard(metadata=image(foo=2))
    r = Client(shard2).heartbeat("A", 0, topics=("missing",))
    assert r.error_code == 0
    assert r.assignment == HeartbeatAssignment(())


def test_assignment_sent_on_full_request_even_if_unchanged() -> None:
    """A full request (rebalance timeout, subscription and owned partitions: what a client sends
    after an error) gets the assignment, as Kafka answers it; names or a regex both count."""
    shard, c = two_member_group()
    r = c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"], topics=("foo",),
                    rebalance_timeout_ms=30_000)
    assert r.assignment is not None and parts(r, shard) == ["foo-0", "foo-1"]
    r = c.heartbeat("B", 2, owned_tps=["foo-2", "foo-3"], subscribed_topic_regex="fo+",
                    rebalance_timeout_ms=30_000)
    # the regex is resolved off the heartbeat path: B's subscription covers nothing until then
    assert r.assignment is not None and parts(r, shard) == []
    c.advance(0)  # the resolution (fo+ covers foo): B's target is foo-2 and foo-3 again
    r = c.heartbeat("B", r.member_epoch, owned_tps=[], subscribed_topic_regex="fo+",
                    rebalance_timeout_ms=30_000)
    r = c.heartbeat("B", r.member_epoch, owned_tps=[], subscribed_topic_regex="fo+",
                    rebalance_timeout_ms=30_000)
    assert r.assignment is not None and parts(r, shard) == ["foo-2", "foo-3"]


def test_assignment_omitted_on_unchanged_acknowledgement() -> None:
    """Owned partitions alone (an acknowledgement, or a partial request) are not a full request:
    no assignment when it did not change (Kafka's rule), nor with a subscription but no
    rebalance timeout, nor with a rebalance timeout but no subscription."""
    _, c = two_member_group()
    assert c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"]).assignment is None
    assert c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"], topics=("foo",)).assignment is None
    assert c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"],
                       rebalance_timeout_ms=30_000).assignment is None


def test_assignment_omitted_on_partial_request_when_unchanged() -> None:
    _, c = two_member_group()
    assert c.heartbeat("A", 2).assignment is None
    assert c.heartbeat("B", 2).assignment is None


def test_assignment_sent_on_partial_request_when_changed() -> None:
    shard, c = two_member_group()
    c.heartbeat("B", -1)
    r = c.heartbeat("A", 2)  # partial, but A's assignment grows to all 4 partitions
    assert r.member_epoch == 3
    assert r.assignment is not None
    assert parts(r, shard) == ["foo-0", "foo-1", "foo-2", "foo-3"]
    # and then not again
    assert c.heartbeat("A", 3).assignment is None


def test_pending_partitions_reported_while_unreleased() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0)
    r = c.heartbeat("B", 0)
    assert r.assignment is not None
    assert r.assignment.topic_partitions == ()
    assert [tp.partitions for tp in r.assignment.pending_topic_partitions] == [(1,)]


# ----------------------------------------------------------------------------- heartbeat interval


def test_heartbeat_interval_in_every_successful_response() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    responses = [
        c.heartbeat("A", 0),
        c.heartbeat("A", 1),
        c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"]),
        c.heartbeat("S", 0, instance_id="s"),
        c.heartbeat("S", -2, instance_id="s"),
        c.heartbeat("A", -1),
    ]
    for r in responses:
        assert r.error_code == 0, r.error_message
        assert r.heartbeat_interval_ms == 5_000


def test_heartbeat_interval_honours_group_override() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    assert c.heartbeat("A", 0).heartbeat_interval_ms == 5_000
    res = c.handle(AlterGroupConfigsRequest("g", (
        AlterGroupConfigOp("group.consumer.heartbeat.interval.ms", "set", "7000"),)))
    assert res.error_code == 0
    assert c.heartbeat("A", 1).heartbeat_interval_ms == 7_000
    assert c.heartbeat("B", 0).heartbeat_interval_ms == 7_000
    assert c.heartbeat("B", -1).heartbeat_interval_ms == 7_000
    # Another group keeps the broker default.
    assert c.heartbeat("X", 0, group_id="other").heartbeat_interval_ms == 5_000


def test_session_timeout_honours_group_override() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.handle(AlterGroupConfigsRequest("g", (
        AlterGroupConfigOp("consumer.session.timeout.ms", "set", "50000"),)))
    c.heartbeat("A", 0)
    assert shard.timers.deadline(("session", "g", "A")) == 50_000
    c.advance(49_999)
    assert "A" in shard.groups["g"].members
    c.advance(1)
    assert "A" not in shard.groups["g"].members


# ----------------------------------------------------------------------------- timeouts


def test_member_not_revoking_is_fenced_after_rebalance_timeout() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0, rebalance_timeout_ms=20_000)
    c.heartbeat("B", 0)
    # A is told to revoke foo-1 and keeps reporting it (never acknowledges).
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 1 and parts(r, shard) == ["foo-0"]
    epoch = shard.groups["g"].group_epoch
    for _ in range(3):  # A keeps its session alive, still owning foo-1
        c.advance(5_000)
        assert c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"]).error_code == 0
        c.heartbeat("B", 2)
    c.advance(4_999)
    assert "A" in shard.groups["g"].members
    out = c.advance(1)  # 20 s after the revocation was requested
    assert out, "the rebalance timeout wrote no record"
    g = shard.groups["g"]
    assert "A" not in g.members
    assert g.group_epoch == epoch + 1
    assert c.heartbeat("A", 1).error_code == E.unknown_member_id
    # B gets everything once it heartbeats.
    r = c.heartbeat("B", 2)
    assert parts(r, shard) == ["foo-0", "foo-1"]


def test_member_acknowledging_revocation_is_not_fenced() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0, rebalance_timeout_ms=20_000)
    c.heartbeat("B", 0)
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    c.advance(5_000)
    assert c.heartbeat("A", 1, owned_tps=["foo-0"]).member_epoch == 2
    assert shard.timers.deadline(("rebalance", "g", "A")) is None
    for _ in range(10):
        c.advance(5_000)
        assert c.heartbeat("A", 2).error_code == 0
        assert c.heartbeat("B", 2).error_code == 0
    assert sorted(shard.groups["g"].members) == ["A", "B"]
    assert shard.groups["g"].state().value == "Stable"


def test_member_unrevoked_again_at_next_epoch_is_still_fenced_after_rebalance_timeout() -> None:
    shard = Shard(metadata=image(foo=6))
    c = Client(shard)
    c.heartbeat("A", 0, rebalance_timeout_ms=10_000)
    c.heartbeat("B", 0)
    # A at epoch 1 is told to revoke foo-3..5 (UNREVOKED_PARTITIONS, rebalance timer armed).
    r = c.heartbeat("A", 1, owned_tps=[f"foo-{p}" for p in range(6)])
    assert r.member_epoch == 1 and parts(r, shard) == ["foo-0", "foo-1", "foo-2"]
    c.advance(2_000)
    c.heartbeat("C", 0)  # epoch 3: A's new target is foo-0, foo-1
    assert tables(shard)["target"][1]["A"] == ["foo-0", "foo-1"]
    # A acknowledges the first revocation; it moves to epoch 2 and must now revoke foo-2.
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.member_epoch == 2 and parts(r, shard) == ["foo-0", "foo-1"]
    assert shard.groups["g"].members["A"].state.name == "UNREVOKED_PARTITIONS"
    entered = c.now
    # A keeps heartbeating but never gives up foo-2; B and C keep their sessions alive.
    while c.now < entered + 10_000:
        c.advance(1_000)
        g = shard.groups["g"]
        if "A" in g.members:
            c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1", "foo-2"])
        c.heartbeat("B", g.members["B"].member_epoch)
        c.heartbeat("C", g.members["C"].member_epoch)
    # Within A's rebalance timeout of being told to revoke foo-2, A is fenced ...
    assert "A" not in shard.groups["g"].members
    # ... and foo-2 reaches C.
    r = c.heartbeat("C", shard.groups["g"].members["C"].member_epoch)
    assert "foo-2" in names(shard.groups["g"].members["C"].assigned_partitions, shard.metadata)


def test_session_expiry_removes_member_and_bumps() -> None:
    shard, c = two_member_group()
    epoch = shard.groups["g"].group_epoch
    for _ in range(9):  # B heartbeats every 5 s, A never again
        c.advance(5_000)
        c.heartbeat("B", 2)
    # A's last heartbeat was at t=0: its session (45 s) ends exactly now.
    assert c.now == 45_000
    assert "A" not in shard.groups["g"].members
    assert shard.groups["g"].group_epoch == epoch + 1
    assert c.heartbeat("A", 2).error_code == E.unknown_member_id
    assert "B" in shard.groups["g"].members
    assert replayed(c.records, shard.metadata).state_digest() == shard.state_digest()


def test_session_not_expired_before_timeout() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    assert c.advance(44_999) == []
    assert "A" in shard.groups["g"].members


# ----------------------------------------------------------------------------- subscription changes


def test_subscription_change_bumps_epoch_and_moves_partitions() -> None:
    shard = Shard(metadata=image(foo=2, bar=2))
    c = Client(shard)
    c.heartbeat("A", 0)
    assert shard.groups["g"].group_epoch == 1
    r = c.heartbeat("A", 1, topics=("bar",), owned_tps=["foo-0", "foo-1"])
    g = shard.groups["g"]
    assert g.group_epoch == 2
    assert g.members["A"].subscribed_topic_names == ("bar",)
    assert r.member_epoch == 1 and parts(r, shard) == []  # revoke foo first
    r = c.heartbeat("A", 1, owned_tps=[])
    assert r.member_epoch == 2 and parts(r, shard) == ["bar-0", "bar-1"]


def test_server_assignor_change_bumps_epoch() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0)
    r = c.heartbeat("A", 1, server_assignor="range")
    assert r.error_code == 0
    assert shard.groups["g"].group_epoch == 2
    assert shard.groups["g"].members["A"].server_assignor == "range"


def test_switch_from_names_to_regex_bumps_epoch() -> None:
    shard = Shard(metadata=image(foo=1, bar=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    r = c.heartbeat("A", 1, subscribed_topic_regex="ba.*")
    m = shard.groups["g"].members["A"]
    assert (m.subscribed_topic_names, m.subscribed_topic_regex) == ((), "ba.*")
    assert shard.groups["g"].group_epoch == 2
    assert r.error_code == 0


def test_regex_subscription_picks_up_topic_created_later() -> None:
    """As Kafka 4: a new topic is matched by the group's next resolution of its regexes, which
    the next heartbeat makes (test_regex_authorization.py), not by the new image itself."""
    shard = Shard(metadata=image(foo=1, other=1))
    c = Client(shard)
    r = c.heartbeat("A", 0, subscribed_topic_regex="foo.*")
    c.advance(0)  # the resolution runs off the heartbeat path
    r = c.heartbeat("A", r.member_epoch)
    assert parts(r, shard) == ["foo-0"]
    res = shard.update_metadata(image(foo=1, other=1, foo2=2), c.now)
    g = shard.groups["g"]
    assert res.records == [] and g.group_epoch == 2
    r = c.heartbeat("A", 2)
    c.advance(0)
    r = c.heartbeat("A", r.member_epoch)
    assert g.group_epoch == 3 and sorted(g.subscription_metadata) == ["foo", "foo2"]
    assert r.member_epoch == 3
    assert parts(r, shard) == ["foo-0", "foo2-0", "foo2-1"]
    # A topic the regex does not match changes nothing.
    shard.update_metadata(image(foo=1, other=1, foo2=2, bar=3), c.now)
    r = c.heartbeat("A", 3)
    c.advance(0)
    assert r.error_code == 0 and g.group_epoch == 3


def test_recreated_topic_bumps_epoch_and_revokes_old_id() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    r = c.heartbeat("A", 0)
    old_id = topic_id("foo")
    assert [tp.topic_id for tp in r.assignment.topic_partitions] == [old_id]
    new_id = UUID(int=0xF00D)
    new_image = shard.metadata.with_topic(TopicMetadata(new_id, "foo", 2))
    res = shard.update_metadata(new_image, c.now)
    assert res.records
    g = shard.groups["g"]
    assert g.group_epoch == 2
    assert g.subscription_metadata["foo"].topic_id == new_id
    # A is told to give up the old id's partitions before it gets the new ones.
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 1
    assert r.assignment is not None
    assert all(tp.topic_id != old_id for tp in r.assignment.topic_partitions)
    assert r.assignment.topic_partitions == ()
    r = c.heartbeat("A", 1, owned_tps=[])
    assert r.member_epoch == 2
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [(new_id, (0, 1))]
    assert old_id not in g.owners


def test_deleted_subscribed_topic_bumps_epoch_and_revokes() -> None:
    shard = Shard(metadata=image(foo=2, bar=1))
    c = Client(shard)
    c.heartbeat("A", 0, topics=("foo", "bar"))
    shard.update_metadata(shard.metadata.without_topic("foo"), c.now)
    g = shard.groups["g"]
    assert g.group_epoch == 2
    assert sorted(g.subscription_metadata) == ["bar"]
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "bar-0"])
    assert r.member_epoch == 1
    assert [tp.topic_id for tp in r.assignment.topic_partitions] == [topic_id("bar")]
    r = c.heartbeat("A", 1, owned_tps=["bar-0"])
    assert r.member_epoch == 2

"""The KIP-848 member's auto-commit request and its reused partial heartbeat (client/consumer.py).

``positions_commit_request`` is what the Java consumer's auto-commit sends (``allConsumed()``:
the position of every owned partition, changed or not) and what it commits before a
revocation; it must be the same request as ``commit_request`` with those offsets. A partial
heartbeat that carries nothing new is reused as is: it must equal the request a fresh build
would give, and any change (owned partitions, subscription, epoch) must give a new one.
"""

from __future__ import annotations

from uuid import UUID

from groupcoord.client.consumer import ClientMemberState, ConsumerMember, to_topic_partitions
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
)
from groupcoord.protocol.errors import ErrorCode

from .support import topic_id

FOO = topic_id("foo")
BAR = topic_id("bar")
NAMES = {FOO: "foo", BAR: "bar"}


def ok(epoch: int, parts: frozenset[tuple[UUID, int]] | None = None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        member_id="m1", member_epoch=epoch, heartbeat_interval_ms=5_000,
        assignment=None if parts is None else HeartbeatAssignment(to_topic_partitions(parts)))


def joined(parts: frozenset[tuple[UUID, int]]) -> ConsumerMember:
    """A member at epoch 1 owning ``parts``, its acknowledgement answered (at t=20)."""
    m = ConsumerMember("g", member_ids=lambda: "m1", rebalance_timeout_ms=30_000)
    m.subscribe(["foo", "bar"], now_ms=0)
    assert m.poll_request(0) is not None
    m.on_response(ok(1, parts), 10)
    assert m.poll_request(10) is not None  # the acknowledgement
    m.on_response(ok(1), 20)
    assert m.state is ClientMemberState.STABLE and m.owned == parts
    return m


OWNED = frozenset([(FOO, 3), (FOO, 0), (BAR, 1), (BAR, 7), (FOO, 2)])


def test_auto_commit_is_the_commit_of_every_owned_position() -> None:
    m = joined(OWNED)
    pos = {tp: 100 + 10 * tp[1] for tp in OWNED}
    auto = m.positions_commit_request(lambda t, p: pos[(t, p)], None, NAMES, "auto")
    assert auto is not None
    assert auto == m.commit_request(pos, NAMES, "auto")
    assert auto.member_id == "m1" and auto.generation_id_or_member_epoch == 1
    assert sorted((t.topic_id, p.partition_index, p.committed_offset) for t in auto.topics
                  for p in t.partitions) == sorted((t, p, o) for (t, p), o in pos.items())
    assert [t.name for t in auto.topics] == [NAMES[t.topic_id] for t in auto.topics]
    assert all(p.committed_metadata == "auto" for t in auto.topics for p in t.partitions)


def test_commit_before_a_revocation_takes_only_owned_partitions_among_those_given() -> None:
    m = joined(OWNED)
    given = frozenset([(FOO, 3), (BAR, 7), (BAR, 9)])  # BAR-9 is not owned
    req = m.positions_commit_request(lambda t, p: 42, given, NAMES, "revoke")
    assert req == m.commit_request({(FOO, 3): 42, (BAR, 7): 42, (BAR, 9): 42}, NAMES, "revoke")
    assert {(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions} == \
        {(FOO, 3), (BAR, 7)}
    assert m.positions_commit_request(lambda t, p: 1, frozenset([(BAR, 9)])) is None


def test_an_int_position_is_every_partitions_position() -> None:
    m = joined(OWNED)
    given = frozenset([(FOO, 3), (BAR, 7), (BAR, 9)])
    for parts in (None, given):
        req = m.positions_commit_request(7_000, parts, NAMES, "auto")
        assert req is not None
        assert req == m.positions_commit_request(lambda t, p: 7_000, parts, NAMES, "auto")
    assert m.positions_commit_request(1, frozenset([(BAR, 9)])) is None


def test_auto_commit_follows_the_owned_set_and_needs_a_membership() -> None:
    fresh = ConsumerMember("g", member_ids=lambda: "m1")
    fresh.subscribe(["foo"], now_ms=0)
    assert fresh.positions_commit_request(lambda t, p: 1) is None  # not in the group yet
    m = joined(OWNED)
    first = m.positions_commit_request(lambda t, p: 1)
    assert first is not None
    # A new assignment revokes FOO-0 and FOO-2: the next auto-commit leaves them out.
    m.poll_request(5_020)
    m.on_response(ok(2, OWNED - {(FOO, 0), (FOO, 2)}), 5_030)
    assert m.owned == OWNED - {(FOO, 0), (FOO, 2)}
    after = m.positions_commit_request(lambda t, p: 2)
    assert after is not None and after.generation_id_or_member_epoch == 2
    assert {(t.topic_id, p.partition_index) for t in after.topics for p in t.partitions} == \
        m.owned


def _fresh_build(m: ConsumerMember) -> ConsumerGroupHeartbeatRequest:
    """What the member would send without reusing its last partial heartbeat."""
    saved = m._last_partial
    m._last_partial = None
    try:
        return m._build()
    finally:
        m._last_partial = saved


def test_an_unchanged_partial_heartbeat_is_reused_and_equals_a_fresh_one() -> None:
    m = joined(OWNED)
    first = m.poll_request(5_020)
    assert first is not None and first.topic_partitions is None and first.member_epoch == 1
    m.on_response(ok(1), 5_030)
    second = m.poll_request(10_030)
    assert second is first  # nothing changed: the same (immutable) request
    assert second == _fresh_build(m)
    assert m.inflight is not None and m.inflight.request is second
    m.on_response(ok(1), 10_040)


def test_any_change_gives_a_new_heartbeat() -> None:
    m = joined(OWNED)
    first = m.poll_request(5_020)
    m.on_response(ok(2), 5_030)  # a new epoch, same assignment
    by_epoch = m.poll_request(10_030)
    assert by_epoch is not first and by_epoch is not None and by_epoch.member_epoch == 2
    assert by_epoch.topic_partitions is None
    m.on_response(ok(2, OWNED | {(FOO, 9)}), 10_040)  # a new partition: acknowledged at once
    by_owned = m.poll_request(10_040)
    assert by_owned is not None and by_owned.topic_partitions == to_topic_partitions(m.owned)
    m.on_response(ok(2), 10_050)
    m.subscribe(["foo"], now_ms=10_060)  # a subscription change goes out at once
    by_sub = m.poll_request(10_060)
    assert by_sub is not None and by_sub.subscribed_topic_names == ("foo",)
    m.on_response(ok(2), 10_070)
    again = m.poll_request(15_070)
    assert again is not None and again is not by_sub and again.subscribed_topic_names is None
    assert again == _fresh_build(m)
    m.on_response(ok(2), 15_080)
    assert m.poll_request(20_080) is again


def test_after_an_error_the_next_heartbeat_is_full_not_reused() -> None:
    m = joined(OWNED)
    partial = m.poll_request(5_020)
    m.on_response(ConsumerGroupHeartbeatResponse(
        error_code=int(ErrorCode.coordinator_not_available), error_message="x"), 5_030)
    full = m.poll_request(6_100)  # coordinator not available: backoff, then a full request
    assert full is not None and full is not partial
    assert full.rebalance_timeout_ms == 30_000 and full.subscribed_topic_names == ("bar", "foo")
    assert full.topic_partitions == to_topic_partitions(OWNED)

"""ConsumerGroupHeartbeat "Request Validation" (KIP-848, Kafka 4.x reading): one test per rule.

Every invalid request must be answered with the rule's exact error code and a non-empty error
message, and must leave the shard untouched: no record written, no timer changed, the same
state digest. Each invalid request differs from a request that is accepted (checked first) by
exactly one field, so a test fails for the rule it names and not for another.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import counter_member_ids
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartitions
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image, owned, topic_id

E = ErrorCode


def _shard() -> Shard:
    """A group "g" with a stable dynamic member A and a stable static member S (instance "s")."""
    shard = Shard(metadata=image(foo=4, bar=2), member_ids=counter_member_ids("gen-"))
    c = Client(shard)
    assert c.heartbeat("A", 0).member_epoch == 1
    assert c.heartbeat("S", 0, instance_id="s").member_epoch == 2
    # A revokes what S is given and both reach epoch 2.
    a = shard.groups["g"].members["A"]
    a_owned = [f"foo-{p}" for p in sorted(a.assigned_partitions[topic_id("foo")])]
    r = c.heartbeat("A", 1, owned_tps=a_owned)
    keep = [f"foo-{p}" for tp in r.assignment.topic_partitions for p in tp.partitions]
    assert c.heartbeat("A", 1, owned_tps=keep).member_epoch == 2
    c.heartbeat("S", 2, instance_id="s")
    assert shard.groups["g"].state().value == "Stable"
    return shard


def join(**kw: Any) -> ConsumerGroupHeartbeatRequest:
    """A valid v1 join of a new dynamic member N."""
    fields: dict[str, Any] = dict(group_id="g", member_id="N", member_epoch=0,
                                  rebalance_timeout_ms=30_000, subscribed_topic_names=("foo",),
                                  topic_partitions=())
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)


def steady(**kw: Any) -> ConsumerGroupHeartbeatRequest:
    """A valid partial heartbeat of A at its current epoch (null fields = unchanged)."""
    fields: dict[str, Any] = dict(group_id="g", member_id="A", member_epoch=2)
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)


def static_leave(**kw: Any) -> ConsumerGroupHeartbeatRequest:
    """A valid temporary leave (-2) of the static member S."""
    fields: dict[str, Any] = dict(group_id="g", member_id="S", member_epoch=-2, instance_id="s")
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)


def assignor(**kw: Any) -> ClientAssignor:
    fields: dict[str, Any] = dict(name="client-range", minimum_version=0, maximum_version=2,
                                  version=1)
    fields.update(kw)
    return ClientAssignor(**fields)


BASELINES = {
    "join": join(),
    "join-regex": join(subscribed_topic_names=None, subscribed_topic_regex="fo.*"),
    "join-v0-without-member-id": join(member_id="", version=0),
    "join-static": join(instance_id="n", rack_id="rack-1"),
    "join-server-assignor": join(server_assignor="range"),
    "join-client-assignors": join(client_assignors=(assignor(),)),
    "join-client-assignor-min-version-minus-one": join(
        client_assignors=(assignor(minimum_version=-1, maximum_version=0, version=-1),)),
    "steady": steady(),
    "steady-with-rebalance-timeout": steady(rebalance_timeout_ms=10_000),
    "steady-regex-only": steady(subscribed_topic_regex="foo|bar"),
    "leave": steady(member_epoch=-1),
    "static-leave": static_leave(),
    # Accepted as Kafka 4.3 accepts them (the KIP-848 text is stricter):
    # RebalanceTimeoutMs is checked on a join only, and only -1 is refused there.
    "leave-rebalance-timeout-zero": steady(member_epoch=-1, rebalance_timeout_ms=0),
    "static-leave-rebalance-timeout-zero": static_leave(rebalance_timeout_ms=0),
    "steady-rebalance-timeout-zero": steady(rebalance_timeout_ms=0),
    "steady-rebalance-timeout-negative": steady(rebalance_timeout_ms=-7),
    "join-rebalance-timeout-zero": join(rebalance_timeout_ms=0),
    # Names and a regex together (their union), an empty name (it matches nothing).
    "join-names-and-regex": join(subscribed_topic_regex="bar.*"),
    "steady-names-and-regex": steady(subscribed_topic_names=("foo",), subscribed_topic_regex="bar.*"),
    "join-empty-name": join(subscribed_topic_names=("foo", "")),
}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_requests_are_accepted(name: str) -> None:
    """The requests the invalid ones are derived from are valid (so each rule is isolated)."""
    shard = _shard()
    res = shard.handle(BASELINES[name], 1_000)
    assert res.response.error_code == 0, res.response.error_message
    assert res.response.error_message is None
    assert res.response.heartbeat_interval_ms > 0


# (rule id, request, expected error code). One entry per validation rule of the spec's list;
# a rule with several sub-cases (e.g. MemberId on join and on a later heartbeat) has one entry
# per sub-case.
CASES: list[tuple[str, ConsumerGroupHeartbeatRequest, int]] = [
    # GroupId must be non-empty.
    ("group-id-empty", join(group_id=""), E.invalid_request),
    ("group-id-blank", steady(group_id="  "), E.invalid_request),
    # MemberId must be non-empty: on a v1 join (the client generates it) and whenever the
    # epoch is not 0 (any version).
    ("member-id-empty-v1-join", join(member_id=""), E.invalid_request),
    ("member-id-blank-v1-join", join(member_id=" "), E.invalid_request),
    ("member-id-empty-v1-heartbeat", steady(member_id=""), E.invalid_request),
    ("member-id-empty-v0-heartbeat", steady(member_id="", version=0), E.invalid_request),
    ("member-id-empty-leave", steady(member_id="", member_epoch=-1), E.invalid_request),
    ("member-id-empty-static-leave", static_leave(member_id=""), E.invalid_request),
    # MemberEpoch must be >= -2 (-1 leave, -2 static temporary leave).
    ("member-epoch-below-minus-two", steady(member_epoch=-3), E.invalid_request),
    ("member-epoch-very-negative", steady(member_epoch=-(2**31)), E.invalid_request),
    # -2 needs an InstanceId.
    ("static-leave-without-instance-id", static_leave(instance_id=None), E.invalid_request),
    # InstanceId, if provided, must be non-empty.
    ("instance-id-empty", join(instance_id=""), E.invalid_request),
    ("instance-id-blank-heartbeat", steady(member_id="S", instance_id=" "), E.invalid_request),
    # RackId, if provided, must be non-empty.
    ("rack-id-empty", join(rack_id=""), E.invalid_request),
    ("rack-id-empty-heartbeat", steady(rack_id=""), E.invalid_request),
    # RebalanceTimeoutMs must be provided (not -1) in the first heartbeat (epoch 0).
    ("rebalance-timeout-missing-on-join", join(rebalance_timeout_ms=-1), E.invalid_request),
    # TopicPartitions must be set, and an empty list, on a join.
    ("topic-partitions-null-on-join", join(topic_partitions=None), E.invalid_request),
    ("topic-partitions-non-empty-on-join",
     join(topic_partitions=(TopicPartitions(topic_id("foo"), (0,)),)), E.invalid_request),
    # SubscribedTopicNames or SubscribedTopicRegex must be given on a join.
    ("subscription-missing-on-join", join(subscribed_topic_names=None), E.invalid_request),
    # SubscribedTopicRegex must be a valid (RE2) regular expression.
    ("regex-unbalanced", join(subscribed_topic_names=None, subscribed_topic_regex="(foo"),
     E.invalid_regular_expression),
    ("regex-lookahead-not-re2", join(subscribed_topic_names=None, subscribed_topic_regex="(?=foo)f.*"),
     E.invalid_regular_expression),
    ("regex-backreference-not-re2", join(subscribed_topic_names=None, subscribed_topic_regex=r"(f)\1"),
     E.invalid_regular_expression),
    ("regex-invalid-on-heartbeat", steady(subscribed_topic_regex="[foo"), E.invalid_regular_expression),
    # ServerAssignor and ClientAssignors cannot be used together.
    ("server-and-client-assignors",
     join(server_assignor="range", client_assignors=(assignor(),)), E.invalid_request),
    # Assignor.Name must be non-empty.
    ("client-assignor-name-empty", join(client_assignors=(assignor(name=""),)), E.invalid_request),
    ("client-assignor-name-empty-second",
     join(client_assignors=(assignor(), assignor(name=" "))), E.invalid_request),
    # Assignor.MinimumVersion must be >= -1.
    ("client-assignor-min-version-below-minus-one",
     join(client_assignors=(assignor(minimum_version=-2, version=0),)), E.invalid_request),
    # Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion.
    ("client-assignor-max-version-negative",
     join(client_assignors=(assignor(minimum_version=-1, maximum_version=-1, version=-1),)),
     E.invalid_request),
    ("client-assignor-max-below-min",
     join(client_assignors=(assignor(minimum_version=3, maximum_version=2, version=2),)),
     E.invalid_request),
    # Assignor.Version must be within [MinimumVersion, MaximumVersion].
    ("client-assignor-version-below-min",
     join(client_assignors=(assignor(minimum_version=1, maximum_version=2, version=0),)),
     E.invalid_request),
    ("client-assignor-version-above-max",
     join(client_assignors=(assignor(minimum_version=1, maximum_version=2, version=3),)),
     E.invalid_request),
    # An unknown ServerAssignor is UNSUPPORTED_ASSIGNOR (spec "Server Side Mode").
    ("server-assignor-unknown-on-join", join(server_assignor="sticky"), E.unsupported_assignor),
    ("server-assignor-unknown-on-heartbeat", steady(server_assignor="nope"),
     E.unsupported_assignor),
]


def upstream(rule: str) -> str:
    """The upstream method a rule follows (the test id names it): Kafka's
    ``GroupMetadataManager`` (``GMM``; apache/kafka 4.0-SNAPSHOT ``1eb7644``, the snapshot the
    ``fetch`` tool gives, read for 4.3's behaviour), or the KIP-848 text where Kafka has no such
    request field."""
    if rule.startswith("regex-"):
        # 4.0 refused every regex; 4.1+ compiles it with RE2J in consumerGroupHeartbeat
        return "GMM.consumerGroupHeartbeat(RE2J)"
    if rule.startswith(("client-assignor", "server-and-client")):
        return "KIP-848.ClientAssignors"  # client-side assignors are not in Kafka 4.x
    return "GMM.throwIfConsumerGroupHeartbeatRequestIsInvalid"


@pytest.mark.parametrize(("request_", "code"), [(r, c) for _, r, c in CASES],
                         ids=[f"{name}@{upstream(name)}" for name, _, _ in CASES])
def test_invalid_request_is_rejected_without_side_effects(
        request_: ConsumerGroupHeartbeatRequest, code: int) -> None:
    """One rule each; the test id names the rule and the upstream method it follows
    (:func:`upstream`)."""
    shard = _shard()
    before = shard.state_digest()
    deadline = shard.next_deadline()
    res = shard.handle(request_, 1_000)
    assert res.response.error_code == code, res.response.error_message
    assert isinstance(res.response.error_message, str) and res.response.error_message.strip()
    assert res.response.assignment is None
    assert res.records == []
    assert res.timers == []
    assert shard.state_digest() == before
    assert shard.next_deadline() == deadline


def test_rule_ids_are_unique() -> None:
    names = [name for name, _, _ in CASES]
    assert len(names) == len(set(names))


def test_invalid_join_does_not_create_the_group() -> None:
    shard = Shard(metadata=image(foo=1))
    res = shard.handle(join(group_id="new", rebalance_timeout_ms=-1), 0)
    assert res.response.error_code == E.invalid_request
    assert res.response.error_message
    assert res.records == [] and res.timers == []
    assert "new" not in shard.groups


def test_invalid_heartbeat_does_not_refresh_the_session() -> None:
    """A rejected request is not a heartbeat: it must not extend the member's session."""
    shard = _shard()
    c = Client(shard)
    session_deadline = shard.timers.deadline(("session", "g", "A"))
    assert session_deadline is not None
    c.now = session_deadline - 1
    r = c.heartbeat("A", 2, subscribed_topic_regex="(")
    assert r.error_code == E.invalid_regular_expression
    assert shard.timers.deadline(("session", "g", "A")) == session_deadline
    c.advance(1)
    assert "A" not in shard.groups["g"].members


def test_unsupported_assignor_message_lists_the_supported_ones() -> None:
    shard = Shard(metadata=image(foo=1), config=CoordinatorConfig(consumer_assignors=("range",)))
    # "uniform" exists in the code base but is not enabled by group.consumer.assignors.
    res = shard.handle(join(server_assignor="uniform"), 0)
    assert res.response.error_code == E.unsupported_assignor
    assert "range" in res.response.error_message
    assert res.records == []
    assert shard.groups == {}


def test_invalid_regex_message_names_the_regex() -> None:
    shard = _shard()
    res = shard.handle(join(subscribed_topic_names=None, subscribed_topic_regex="(foo"), 0)
    assert res.response.error_code == E.invalid_regular_expression
    assert "(foo" in res.response.error_message


def test_empty_topic_partitions_list_on_join_is_the_only_valid_form() -> None:
    """Same join, TopicPartitions = [] accepted, [foo-0] rejected: the list content matters."""
    shard = _shard()
    bad = shard.handle(join(topic_partitions=owned("foo-0")), 0)
    assert bad.response.error_code == E.invalid_request and bad.records == []
    good = shard.handle(replace(join(), topic_partitions=()), 0)
    assert good.response.error_code == 0 and good.records


def test_leave_with_rebalance_timeout_zero_frees_the_partitions_at_once() -> None:
    """@platformatic/kafka leaves with RebalanceTimeoutMs 0: the member is gone at once and its
    partitions go to the others, not after a session timeout (Kafka 4.3 accepts this leave)."""
    shard = _shard()
    c = Client(shard)
    res = shard.handle(steady(member_epoch=-1, rebalance_timeout_ms=0), 1_000)
    assert res.response.error_code == 0 and res.response.member_epoch == -1
    assert "A" not in shard.groups["g"].members
    c.now = 1_000
    r = c.heartbeat("S", 2, instance_id="s")
    owned_now = {(tp.topic_id, p) for tp in r.assignment.topic_partitions for p in tp.partitions}
    assert len(owned_now) == 4  # foo-0..3 (the group subscribes to foo), all S's now


def test_static_member_restarts_after_a_leave_with_rebalance_timeout_zero() -> None:
    """A static member that leaves (-1) with RebalanceTimeoutMs 0 and comes back with its
    instance id and a new member id is let in (no UNRELEASED_INSTANCE_ID)."""
    shard = _shard()
    left = shard.handle(static_leave(member_epoch=-1, rebalance_timeout_ms=0), 1_000)
    assert left.response.error_code == 0
    back = shard.handle(join(member_id="S2", instance_id="s"), 1_001)
    assert back.response.error_code == 0, back.response.error_message
    assert shard.groups["g"].static_member("s").member_id == "S2"


def test_static_leave_of_v0_without_member_id_is_fenced_as_upstream() -> None:
    """v0 lets an empty MemberId through validation on a static leave (-2); the leave then
    finds the instance id held by another member id: FENCED_INSTANCE_ID, as Kafka answers."""
    shard = _shard()
    res = shard.handle(static_leave(member_id="", version=0), 1_000)
    assert res.response.error_code == E.fenced_instance_id
    assert res.records == []


def test_refused_heartbeat_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    shard = _shard()
    with caplog.at_level(logging.DEBUG, logger="groupcoord.coordinator.shard"):
        shard.handle(join(rebalance_timeout_ms=-1), 1_000)
    [rec] = [r for r in caplog.records if "refused" in r.getMessage()]
    assert rec.levelno == logging.DEBUG
    msg = rec.getMessage()
    for part in ("[g]", "ConsumerGroupHeartbeatRequest", "'N'", "INVALID_REQUEST",
                 "RebalanceTimeoutMs must be provided in first request."):
        assert part in msg, msg

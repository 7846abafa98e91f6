"""Regex subscriptions resolved as Kafka 4 resolves them (``GroupMetadataManager.
maybeUpdateRegularExpressions`` / ``refreshRegularExpressions`` /
``filterTopicDescribeAuthorizedTopics``), in the coordinator core:

- a regex covers only the matching topics the resolving heartbeat's principal may DESCRIBE (the
  ``describable_topics`` the server passes); nothing describable is no error, an empty
  assignment;
- the resolution is recorded (ConsumerGroupRegularExpression, type 16), replayed, and deleted
  once no member subscribes to the regex;
- it is resolved again by a heartbeat when topics were created, when
  ``group.consumer.regex.refresh.interval.ms`` has passed (what picks up a change of ACLs), and
  after a load; otherwise it stands (a change of ACLs alone changes nothing before that);
- it is the group's, made with the principal of the heartbeat that resolved it (Kafka's too);
- it is off the heartbeat path (Kafka resolves on an executor): the heartbeat schedules it and
  goes on with what is recorded; the timer (fired by ``Client.advance(0)``, as the server's
  runtime fires it at once) records it and bumps the epoch; the next heartbeat brings the
  regex's partitions.
"""

from __future__ import annotations

from collections.abc import Collection

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.records import (
    ConsumerGroupRegularExpressionValue,
    Record,
    RecordType,
    RegexKey,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image, names

INTERVAL = 60_000


class Acl:
    """A principal's DESCRIBE permissions, changeable (the server asks its authorizer)."""

    def __init__(self, *topics: str) -> None:
        self.topics = set(topics)
        self.asked: list[list[str]] = []

    def __call__(self, candidates: Collection[str]) -> list[str]:
        self.asked.append(list(candidates))
        return [t for t in candidates if t in self.topics]


def _shard(**topics: int) -> Shard:
    return Shard(config=CoordinatorConfig(consumer_regex_refresh_interval_ms=INTERVAL),
                 metadata=image(**topics))


def _parts(r: ConsumerGroupHeartbeatResponse, shard: Shard) -> list[str]:
    assert r.error_code == 0, r
    assert r.assignment is not None
    return names({tp.topic_id: frozenset(tp.partitions) for tp in r.assignment.topic_partitions},
                 shard.metadata)


def _regex_records(records: list[Record]) -> list[tuple[str, tuple[str, ...] | None]]:
    out = []
    for rec in records:
        if rec.key.type is RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
            assert isinstance(rec.key, RegexKey)
            v = rec.value
            assert v is None or isinstance(v, ConsumerGroupRegularExpressionValue)
            out.append((rec.key.regex, None if v is None else v.topic_names))
    return out


def _join(c: Client, member: str, regex: str, acl: Acl | None = None
          ) -> ConsumerGroupHeartbeatResponse:
    """``member`` joins subscribing to ``regex``; the resolution runs (the timer); the next
    heartbeat's response, which carries the regex's partitions."""
    r = c.heartbeat(member, 0, subscribed_topic_regex=regex, describable_topics=acl)
    assert r.error_code == 0, r
    c.advance(0)
    return c.heartbeat(member, r.member_epoch, describable_topics=acl)


def test_the_resolution_is_off_the_heartbeat_path() -> None:
    """The heartbeat that brings a regex new to the group resolves nothing itself (Kafka's
    ``maybeUpdateRegularExpressions`` hands it to an executor): a member subscribing to the
    regex and a literal topic is assigned the literal topic first, the regex's topics after
    the resolution (librdkafka's test 0045 ``resubscribe_with_regex`` expects exactly that)."""
    shard = _shard(orders=2, orders_eu=1, payments=1)
    c = Client(shard)
    r = c.heartbeat("A", 0, topics=["payments"], subscribed_topic_regex="orders.*")
    assert _parts(r, shard) == ["payments-0"]
    assert shard.groups["g"].resolved_regexes == {} and _regex_records(c.records) == []
    epoch = shard.groups["g"].group_epoch
    c.advance(0)  # the resolution's timer, due at the heartbeat's time
    assert _regex_records(c.records) == [("orders.*", ("orders", "orders_eu"))]
    assert shard.groups["g"].group_epoch == epoch + 1
    r = c.heartbeat("A", r.member_epoch)
    assert _parts(r, shard) == ["orders-0", "orders-1", "orders_eu-0", "payments-0"]


def test_a_regex_covers_only_the_topics_the_principal_may_describe() -> None:
    shard = _shard(orders=2, orders_eu=3, payments=1)
    c = Client(shard)
    acl = Acl("orders", "payments")
    r = _join(c, "A", "orders.*", acl)
    assert _parts(r, shard) == ["orders-0", "orders-1"]  # not orders_eu's partitions
    assert acl.asked == [["orders", "orders_eu"]]  # the matches, each asked once
    g = shard.groups["g"]
    assert g.resolved_regexes == {"orders.*": frozenset({"orders"})}
    assert sorted(g.subscription_metadata) == ["orders"]
    assert _regex_records(c.records) == [("orders.*", ("orders",))]
    # the same member, told nothing new: nothing is resolved again
    r = c.heartbeat("A", r.member_epoch)
    c.advance(0)
    assert r.error_code == 0 and len(acl.asked) == 1


def test_nothing_describable_is_no_error_but_an_empty_assignment() -> None:
    shard = _shard(orders=2, orders_eu=3)
    c = Client(shard)
    r = c.heartbeat("A", 0, subscribed_topic_regex="orders.*", describable_topics=Acl())
    assert r.error_code == 0 and r.member_epoch == 1 and _parts(r, shard) == []
    c.advance(0)
    r = c.heartbeat("A", r.member_epoch)
    assert r.error_code == 0 and r.assignment is None  # still nothing: no new assignment
    g = shard.groups["g"]
    assert g.resolved_regexes == {"orders.*": frozenset()} and g.subscription_metadata == {}
    # without an authorizer (None) every match stands
    c2 = Client(_shard(orders=2, orders_eu=1), group_id="g2")
    r = _join(c2, "A", "orders.*")
    assert _parts(r, c2.shard) == ["orders-0", "orders-1", "orders_eu-0"]


def test_a_change_of_acls_reaches_the_group_at_the_next_refresh_interval() -> None:
    shard = _shard(orders=2, orders_eu=2)
    c = Client(shard)
    acl = Acl("orders")
    r = _join(c, "A", "orders.*", acl)
    assert _parts(r, shard) == ["orders-0", "orders-1"]
    epoch = shard.groups["g"].group_epoch
    acl.topics = {"orders_eu"}  # DESCRIBE on orders revoked, on orders_eu granted
    c.now += INTERVAL  # not yet past the interval: the resolution stands
    r = c.heartbeat("A", r.member_epoch, describable_topics=acl)
    c.advance(0)
    assert r.error_code == 0 and shard.groups["g"].group_epoch == epoch and len(acl.asked) == 1
    c.now += 1
    r = c.heartbeat("A", r.member_epoch, describable_topics=acl)
    c.advance(0)
    r = c.heartbeat("A", r.member_epoch, describable_topics=acl)
    g = shard.groups["g"]
    assert len(acl.asked) == 2 and g.group_epoch == epoch + 1
    assert g.resolved_regexes == {"orders.*": frozenset({"orders_eu"})}
    # orders is revoked first (the member still holds it), then orders_eu assigned; a response
    # carries the assignment only when it changed (Kafka's rule), so keep the last one sent
    last = r
    for _ in range(2):
        r = c.heartbeat("A", r.member_epoch, describable_topics=acl, owned_tps=())
        last = r if r.assignment is not None else last
    assert _parts(last, shard) == ["orders_eu-0", "orders_eu-1"]


def test_a_new_topic_is_resolved_by_the_next_heartbeat_with_its_principal() -> None:
    shard = _shard(orders=1, other=1)
    c = Client(shard)
    acl = Acl("orders", "orders_us")
    r = _join(c, "A", "orders.*", acl)
    assert _parts(r, shard) == ["orders-0"]
    res = shard.update_metadata(image(orders=1, other=1, orders_eu=2, orders_us=2), c.now)
    g = shard.groups["g"]
    assert res.records == [] and g.group_epoch == 2  # not resolved yet: nothing changes
    r = c.heartbeat("A", 2, describable_topics=acl)
    c.advance(0)
    r = c.heartbeat("A", r.member_epoch, describable_topics=acl)
    assert g.group_epoch == 3 and r.member_epoch == 3
    assert _parts(r, shard) == ["orders-0", "orders_us-0", "orders_us-1"]  # not orders_eu
    # a deleted topic leaves at once (the resolution covers existing topics only)
    shard.update_metadata(image(orders=1, other=1, orders_eu=2), c.now)
    assert sorted(g.subscription_metadata) == ["orders"] and g.group_epoch == 4


def test_the_resolution_is_recorded_replayed_and_deleted_with_its_last_subscriber() -> None:
    shard = _shard(orders=2, orders_eu=1, payments=1)
    c = Client(shard)
    acl = Acl("orders", "payments")
    _join(c, "A", "orders.*", acl)
    rb = _join(c, "B", "pay.*", acl)
    assert rb.error_code == 0
    for rec in c.records:  # the binary form round-trips
        if rec.key.type is RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
            assert Record.decode(*rec.encode()) == rec
    replayed = Shard(metadata=shard.metadata)
    for rec in c.records:
        replayed.replay(rec)
    assert replayed.groups["g"].resolved_regexes == {"orders.*": frozenset({"orders"}),
                                                     "pay.*": frozenset({"payments"})}
    assert replayed.groups["g"].digest() == shard.groups["g"].digest()
    # B switches to names: its regex's resolution is deleted; A leaves: the group's too
    c.records.clear()
    c.heartbeat("B", rb.member_epoch, topics=["payments"], subscribed_topic_regex="")
    assert _regex_records(c.records) == [("pay.*", None)]
    c.heartbeat("A", -1)
    assert ("orders.*", None) in _regex_records(c.records)
    assert shard.groups["g"].resolved_regexes == {}


def test_the_resolution_is_the_groups_made_with_the_resolving_heartbeats_principal() -> None:
    """Kafka resolves a group's regexes once for the group, with the context of the member
    whose heartbeat triggered the resolution; members of one group are one application, one
    principal, in practice. Here: B, who may describe nothing, shares A's resolution until a
    resolution triggered by B's heartbeat (the refresh interval) replaces it."""
    shard = _shard(orders=2)
    c = Client(shard)
    r = _join(c, "A", "orders.*", Acl("orders"))
    nobody = Acl()
    rb = c.heartbeat("B", 0, subscribed_topic_regex="orders.*", describable_topics=nobody)
    c.advance(0)
    assert rb.error_code == 0 and nobody.asked == []  # resolved already: not asked
    assert shard.groups["g"].resolved_regexes == {"orders.*": frozenset({"orders"})}
    c.now += INTERVAL + 1
    rb = c.heartbeat("B", rb.member_epoch, describable_topics=nobody)
    c.advance(0)
    assert nobody.asked == [["orders"]]
    assert shard.groups["g"].resolved_regexes == {"orders.*": frozenset()}
    assert r.error_code == 0


def test_refresh_interval_below_kafkas_minimum_is_refused() -> None:
    import pytest

    from groupcoord.protocol.errors import CoordinatorError

    with pytest.raises(CoordinatorError) as e:
        CoordinatorConfig.from_properties({"group.consumer.regex.refresh.interval.ms": "9999"})
    assert e.value.code == ErrorCode.invalid_config
    assert "group.consumer.regex.refresh.interval.ms must be at least 10000" in e.value.message
    cfg = CoordinatorConfig.from_properties({"group.consumer.regex.refresh.interval.ms": "10000"})
    assert cfg.consumer_regex_refresh_interval_ms == 10_000


def test_a_failover_resolves_the_regexes_again() -> None:
    """After a coordinator failover (a shard rebuilt from the log, ``Shard.on_loaded``) the
    group's regexes are resolved again by the first heartbeat, although no topic was created
    and the refresh interval has not passed: what the old coordinator knew of its last
    resolution is soft state, as in Kafka (the module docstring's "after a load"). Here the
    principal's ACLs changed before the failover; the new coordinator applies them."""
    shard = _shard(orders=2, orders_eu=1)
    c = Client(shard)
    acl = Acl("orders")
    r = _join(c, "A", "orders.*", acl)
    assert _parts(r, shard) == ["orders-0", "orders-1"]
    acl.topics = {"orders", "orders_eu"}  # DESCRIBE on orders_eu granted
    r = c.heartbeat("A", r.member_epoch, describable_topics=acl)
    c.advance(0)
    assert len(acl.asked) == 1  # not due on the old coordinator
    rebuilt = _shard(orders=2, orders_eu=1)
    rebuilt.replay_all(Record.decode(*rec.encode()) for rec in c.records)
    rebuilt.on_loaded(c.now)
    c2 = Client(rebuilt, now=c.now)
    assert rebuilt.groups["g"].resolved_regexes == {"orders.*": frozenset({"orders"})}
    r = c2.heartbeat("A", r.member_epoch, describable_topics=acl)
    assert r.error_code == 0
    c2.advance(0)
    assert len(acl.asked) == 2
    assert rebuilt.groups["g"].resolved_regexes == {"orders.*": frozenset({"orders",
                                                                          "orders_eu"})}
    assert names(rebuilt.groups["g"].target_assignment["A"], rebuilt.metadata) == [
        "orders-0", "orders-1", "orders_eu-0"]

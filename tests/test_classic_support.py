"""Test support for classic groups: a shard driven like classic clients drive a broker, with
deferred responses collected from ``Result.completions``; plus a few tests of the support itself.

``Harness.send`` hands the shard a fresh token per request; a request answered later shows up as
``Call.response`` once a completion with its token arrives (each request is answered exactly
once: checked). ``Harness.rebuild`` is a failover: a new shard replays every record (through
the binary codec) and runs its load duties.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import Any

from kio.schema.consumer_protocol_subscription.v0 import (
    ConsumerProtocolSubscription as SubscriptionV0,
)
from kio.schema.consumer_protocol_subscription.v3 import (
    ConsumerProtocolSubscription as SubscriptionV3,
)
from kio.serial import entity_writer
from kio.static.primitive import i32

from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.classic.model import ClassicGroup, subscribed_topics
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.result import DEFERRED
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import EMPTY_IMAGE, MetadataImage
from groupcoord.protocol.errors import ErrorCode

E = ErrorCode

SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str, version: int = 0) -> bytes:
    """ConsumerProtocolSubscription bytes: int16 version, then the struct (v0 or v3)."""
    buf = io.BytesIO()
    if version == 0:
        entity_writer(SubscriptionV0)(buf, SubscriptionV0(topics=topics, user_data=None))
    else:
        entity_writer(SubscriptionV3)(buf, SubscriptionV3(
            topics=topics, user_data=None, owned_partitions=(), generation_id=i32(-1),
            rack_id=None))
    return version.to_bytes(2, "big", signed=True) + buf.getvalue()


def protocols(*names: str, topics: tuple[str, ...] = ("foo",)) -> tuple[JoinGroupProtocol, ...]:
    meta = subscription(*topics)
    return tuple(JoinGroupProtocol(n, meta) for n in names)


@dataclass
class Call:
    """One request sent to the shard; ``response`` stays DEFERRED until it is answered."""

    token: int
    request: Any
    response: Any = DEFERRED

    @property
    def done(self) -> bool:
        return self.response is not DEFERRED

    @property
    def r(self) -> Any:
        assert self.done, f"request {self.request!r} is still pending"
        return self.response


class Harness:
    """A shard, a clock, the log, and every request's response."""

    def __init__(self, config: CoordinatorConfig | None = None,
                 metadata: MetadataImage = EMPTY_IMAGE, now: int = 0) -> None:
        self.config = config or CoordinatorConfig()
        self.metadata = metadata
        self.shard = Shard(config=self.config, metadata=metadata)
        self.now = now
        self.records: list[Record] = []
        self.calls: dict[int, Call] = {}
        self._tokens = itertools.count(1)

    # ---------------------------------------------------------------- driving

    def send(self, request: Any) -> Call:
        call = Call(next(self._tokens), request)
        self.calls[call.token] = call
        res = self.shard.handle(request, self.now, call.token)
        if res.response is not DEFERRED:
            call.response = res.response
        self._absorb(res.records, res.completions)
        return call

    def advance(self, ms: int) -> None:
        """Move the clock ``ms`` on, firing each timer at its own deadline (as a driver that
        sleeps until ``next_deadline()`` does)."""
        target = self.now + ms
        while True:
            deadline = self.shard.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            for res in self.shard.expire_timers(self.now):
                self._absorb(res.records, res.completions)
        self.now = target

    def advance_to(self, t: int) -> None:
        self.advance(t - self.now)

    def _absorb(self, records: list[Record], completions: list[tuple[Any, Any]]) -> None:
        self.records.extend(records)
        for token, response in completions:
            call = self.calls[token]
            assert not call.done, f"request {call.request!r} answered twice"
            call.response = response
        for g in self.shard.groups.values():
            if isinstance(g, ClassicGroup):
                check_live_view(g)

    def rebuild(self) -> Shard:
        """A failover: a new shard from the log (through the codec), load duties run."""
        shard = Shard(config=self.config, metadata=self.metadata)
        for rec in self.records:
            shard.replay(Record.decode(*rec.encode()))
        shard.on_loaded(self.now)
        return shard

    def fail_over(self) -> None:
        """Continue on a rebuilt shard (pending requests are lost, as on a real failover)."""
        self.shard = self.rebuild()
        for call in self.calls.values():
            if not call.done:
                call.response = None

    def group(self, group_id: str = "g") -> ClassicGroup:
        g = self.shard.groups[group_id]
        assert isinstance(g, ClassicGroup)
        return g

    # ---------------------------------------------------------------- classic client calls

    def join(self, member_id: str = "", *, group: str = "g", instance: str | None = None,
             names: tuple[str, ...] = ("range",), protos: tuple[JoinGroupProtocol, ...] | None = None,
             version: int = 9, session_ms: int = SESSION_MS, rebalance_ms: int = REBALANCE_MS,
             client_id: str = "client", protocol_type: str = "consumer") -> Call:
        return self.send(JoinGroupRequest(
            group_id=group, session_timeout_ms=session_ms, member_id=member_id,
            protocol_type=protocol_type, protocols=protocols(*names) if protos is None else protos,
            rebalance_timeout_ms=rebalance_ms, group_instance_id=instance, client_id=client_id,
            client_host="/10.0.0.1", version=version))

    def join_new(self, **kw: Any) -> Call:
        """A dynamic member's first JoinGroup (v4+: MEMBER_ID_REQUIRED, then again with the id)."""
        first = self.join(**kw)
        if first.done and first.r.error_code == E.member_id_required:
            return self.join(first.r.member_id, **kw)
        return first

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             *, group: str = "g", instance: str | None = None, version: int = 5,
             protocol_type: str | None = "consumer", protocol_name: str | None = "range") -> Call:
        return self.send(SyncGroupRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=tuple(SyncGroupAssignment(m, a) for m, a in (assignments or {}).items()),
            version=version))

    def heartbeat(self, member_id: str, generation: int, *, group: str = "g",
                  instance: str | None = None) -> HeartbeatResponse:
        return self.send(HeartbeatRequest(group, generation, member_id, instance)).r

    def leave(self, *members: tuple[str, str | None] | str, group: str = "g",
              version: int = 5) -> LeaveGroupResponse:
        idents = tuple(LeaveGroupMember(m) if isinstance(m, str) else LeaveGroupMember(*m)
                       for m in members)
        return self.send(LeaveGroupRequest(group, idents, version=version)).r

    # ---------------------------------------------------------------- whole rounds

    def form(self, n: int, *, static: bool = False, version: int = 9,
             names: tuple[str, ...] = ("range",)) -> Round:
        """``n`` members join a new group, the leader assigns ``b"A:<member>"`` to each, all
        sync: a Stable group at the returned generation."""
        joins = []
        for i in range(n):
            if static:
                joins.append(self.join(instance=f"i{i}", client_id=f"c{i}", version=version,
                                       names=names))
            else:
                joins.append(self.join_new(client_id=f"c{i}", version=version, names=names))
        self.advance_until(lambda: all(j.done for j in joins))
        return self.complete_round(joins)

    def complete_round(self, joins: list[Call]) -> Round:
        """Given answered JoinGroups of one generation: the leader syncs, then the others."""
        responses: list[JoinGroupResponse] = [j.r for j in joins]
        assert all(r.error_code == 0 for r in responses), responses
        generation = responses[0].generation_id
        leader = responses[0].leader
        members = [r.member_id for r in responses]
        instances = {r.member_id: j.request.group_instance_id for r, j in zip(responses, joins,
                                                                              strict=True)}
        assignments = {m: f"A:{m}".encode() for m in members}
        syncs = {leader: self.sync(leader, generation, assignments, instance=instances[leader])}
        for m in members:
            if m != leader:
                syncs[m] = self.sync(m, generation, instance=instances[m])
        for m, call in syncs.items():
            resp: SyncGroupResponse = call.r
            assert resp.error_code == 0 and resp.assignment == assignments[m], resp
        return Round(generation, leader, members, instances)

    def advance_until(self, done: Any, step: int = 500, limit: int = 120_000) -> None:
        start = self.now
        while not done():
            assert self.now - start < limit, "condition never reached"
            self.advance(step)


def check_live_view(g: ClassicGroup) -> None:
    """The bookkeeping of a classic group's live view agrees with its members."""
    members = g.members.values()
    assert g.num_awaiting_join == sum(m.awaiting_join is not None for m in members)
    assert g.static_members == {m.instance_id: m.member_id for m in members
                                if m.instance_id is not None}
    counts: dict[str, int] = {}
    for m in members:
        for name in m.protocol_names():
            counts[name] = counts.get(name, 0) + 1
    assert g.supported_protocols == counts
    assert (g.leader_id is None) == (not g.members) and (g.leader_id is None or g.leader_id in g.members)
    assert g.pending_sync_members <= set(g.members)
    assert not (g.pending_join_members & set(g.members))
    assert g.committed is not None
    if g.state.value in ("Stable", "CompletingRebalance"):
        assert g.protocol_name is not None
        assert all(g.protocol_name in m.protocol_names() for m in members)
    if g.state.value == "Empty":
        assert not g.members


@dataclass
class Round:
    generation: int
    leader: str
    members: list[str]
    instances: dict[str, str | None]

    @property
    def followers(self) -> list[str]:
        return [m for m in self.members if m != self.leader]


# ------------------------------------------------------------------------ tests of the support


def test_subscription_bytes_decode_in_every_version() -> None:
    assert subscribed_topics(subscription("a", "b")) == {"a", "b"}
    assert subscribed_topics(subscription("a", "b", version=3)) == {"a", "b"}


def test_every_request_is_answered_once() -> None:
    h = Harness()
    rnd = h.form(3)
    assert all(c.done for c in h.calls.values())
    assert len(rnd.members) == 3


def test_rebuild_replays_through_the_codec() -> None:
    h = Harness()
    h.form(2)
    assert h.rebuild().state_digest() == h.shard.state_digest()

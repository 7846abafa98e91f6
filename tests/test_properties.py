"""Property tests: random operation sequences on one shard, invariants I1-I4 and I6
checked after every step (docs/design.md "Invariants").

One consumer group ``g`` on one shard, topics ``foo``, ``bar`` and ``baz`` (``baz`` absent at
first). The state machine drives up to four simulated KIP-848 clients that behave like real ones:
each remembers its member epoch and the assignment of the last response that carried one, takes
newly assigned partitions at once and, when told to revoke, either acknowledges (reports the
reduced owned set), keeps reporting the old set, or reports nothing (null). Besides well-behaved
heartbeats there are lost responses, heartbeats with random owned sets and stale epochs, crash
and restart under the same member id, static temporary leaves (-2) and rejoins under a new member
id, leaves (-1), subscription changes (names and RE2 regexes, one invalid), metadata changes
(partitions added, topic deleted, created, recreated under a new id), offset commits with
current, stale and fenced epochs, group deletion, time jumps with ``expire_timers`` and fail-over
(a shard rebuilt from the log, then ``on_loaded``).

The client model: a client *owns* (consumes) a set of partitions. It never owns a partition it
told the coordinator it does not own (a heartbeat that reports a random owned set makes the
client drop every partition missing from it). A fenced client (FENCED_MEMBER_EPOCH /
UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) drops everything, as does a client that leaves or
restarts. A client whose member the coordinator removed without telling it (session or rebalance
timeout, lost response) keeps consuming until it hears of it, so the client-view checks only
cover clients whose member the coordinator still has at a non-negative epoch.

Checked after every step: I1 (coordinator view, client view, and no partition released from
a live client that did not acknowledge it), I2 (whenever group epoch == assignment epoch), I3,
I4 (a fresh shard fed the whole log through Record.encode/decode), the timers the timeouts rest
on; I6 and the member-epoch checks of heartbeats are checked on every commit and heartbeat.

Hypothesis prints the failing sequence of rules as a reproducible program.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import re2
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.consumer.assignment_epochs import commit_check
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import REBALANCE, SESSION, Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import ErrorCode

GROUP = "g"
TOPIC_NAMES = ("foo", "bar", "baz")
#: RE2 subscriptions; the last one is invalid (INVALID_REGULAR_EXPRESSION).
REGEXES = ("foo", "ba.*", "b.*z", ".*", "f.o|baz", "[a-z]+r", "(")
SLOTS = 4
MAX_PARTITIONS = 6

TP = tuple[UUID, int]

_E = ErrorCode

#: Errors a well-formed client heartbeat may receive.
HEARTBEAT_ERRORS = {
    int(_E.unknown_member_id), int(_E.fenced_member_epoch), int(_E.fenced_instance_id),
    int(_E.unreleased_instance_id), int(_E.invalid_regular_expression),
}
#: Errors that must leave the shard untouched (no record).
NO_RECORD_ERRORS = {
    int(_E.unknown_member_id), int(_E.fenced_instance_id), int(_E.unreleased_instance_id),
    int(_E.invalid_regular_expression), int(_E.stale_member_epoch),
}

Sub = tuple[str, Any]  # ("names", tuple[str, ...]) | ("regex", str)

subscriptions = st.one_of(
    st.frozensets(st.sampled_from(TOPIC_NAMES)).map(
        lambda s: ("names", tuple(sorted(s)))),
    st.sampled_from(REGEXES).map(lambda r: ("regex", r)),
)
#: How a client reports its owned partitions: "ack" reports what it still owns after revoking
#: what it was told to revoke; "old" reports what it owns without revoking; "null" sends null.
behaviours = st.sampled_from(("ack", "old", "null"))
lost = st.sampled_from((False, False, False, True))


@dataclass(slots=True)
class SimClient:
    """One simulated consumer (a slot: it may restart under new member ids)."""

    slot: int
    static: bool = False
    member_id: str = ""
    incarnation: int = 0
    joined: bool = False  # the client believes it is a member
    epoch: int = 0
    owned: set[TP] = field(default_factory=set)
    assigned: set[TP] | None = None  # the assignment of the last response that had one
    sub: Sub = ("names", ("foo",))
    #: A static member that left temporarily (-2): it comes back under a new member id.
    left_static: bool = False

    @property
    def instance_id(self) -> str | None:
        return f"i{self.slot}" if self.static else None

    def drop_all(self) -> None:
        self.owned = set()
        self.assigned = None
        self.joined = False
        self.epoch = 0


def tps_of(owned: Iterable[TP]) -> tuple[TopicPartitions, ...]:
    by_topic: dict[UUID, list[int]] = {}
    for t, p in owned:
        by_topic.setdefault(t, []).append(p)
    return tuple(TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(by_topic.items(), key=lambda kv: kv[0].int))


def flat(tps: Iterable[TopicPartitions]) -> set[TP]:
    return {(tp.topic_id, p) for tp in tps for p in tp.partitions}


def held(member: Any) -> set[TP]:
    return set(member.owned_partitions())


def rebuild(config: CoordinatorConfig, image: MetadataImage, log: list[tuple[bytes, bytes | None]],
            member_ids: Any) -> Shard:
    """A fresh shard fed every logged record through Record.decode."""
    shard = Shard(config=config, metadata=image, member_ids=member_ids)
    for k, v in log:
        shard.replay(Record.decode(k, v))
    return shard


class ShardMachine(RuleBasedStateMachine):
    #: Known src bug (see test_static_member_left_temporarily_survives_failover): off here so
    #: the random runs keep looking for other failures; turn on once shard.on_loaded is fixed.
    check_static_rebalance_timer = True

    def __init__(self) -> None:
        super().__init__()
        self.config = CoordinatorConfig()
        ids = itertools.count(1)
        # One id source across fail-overs: generated (v0) member ids are never reused.
        self.member_ids = lambda: f"gen-{next(ids)}"
        self.tid_counter = itertools.count(1)
        self.image = MetadataImage.of([self._new_topic("foo", 3), self._new_topic("bar", 2)])
        self.shard = Shard(config=self.config, metadata=self.image, member_ids=self.member_ids)
        self.now = 0
        self.log: list[tuple[bytes, bytes | None]] = []
        self.clients = [SimClient(slot) for slot in range(SLOTS)]
        self.epochs: dict[str, tuple[int, int]] = {}  # group -> (group epoch, assignment epoch)
        self.member_epochs: dict[str, int] = {}
        self.rejoined: set[str] = set()  # member ids that (re)joined at epoch 0 in this step

    # ------------------------------------------------------------------ plumbing

    def _new_topic(self, name: str, partitions: int) -> TopicMetadata:
        return TopicMetadata(UUID(int=next(self.tid_counter)), name, partitions)

    def _log(self, results: Result[Any] | Iterable[Result[Any]]) -> list[Record]:
        if isinstance(results, Result):
            results = [results]
        out = []
        for res in results:
            for rec in res.records:
                self.log.append(rec.encode())
                out.append(rec)
        return out

    def _handle(self, request: Any) -> tuple[Any, list[Record]]:
        res = self.shard.handle(request, self.now)
        return res.response, self._log(res)

    def _group(self) -> Any:
        return self.shard.groups.get(GROUP)

    def _member(self, member_id: str) -> Any:
        g = self._group()
        return None if g is None or not member_id else g.members.get(member_id)

    def _live(self, c: SimClient) -> bool:
        """The coordinator still has the client's member at a non-negative epoch."""
        m = self._member(c.member_id)
        return m is not None and m.member_epoch >= 0

    def _joined(self) -> list[SimClient]:
        return [c for c in self.clients if c.joined]

    def _not_joined(self) -> list[SimClient]:
        return [c for c in self.clients if not c.joined]

    def _universe(self) -> list[TP]:
        """Every partition of the image plus every partition a client owns (sorted)."""
        u = {(t.topic_id, p) for t in self.image.by_name.values() for p in range(t.num_partitions)}
        for c in self.clients:
            u |= c.owned
        return sorted(u, key=lambda tp: (tp[0].int, tp[1]))

    def _heartbeat(self, c: SimClient, epoch: int, owned: set[TP] | None, lose: bool = False,
                   **kw: Any) -> ConsumerGroupHeartbeatResponse:
        """Send one heartbeat from ``c``; apply the response to the client unless ``lose``."""
        if epoch == 0:
            self.rejoined.add(c.member_id)
        expected = self._expected_epoch_check(c, epoch, owned)
        req = ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id=c.member_id, member_epoch=epoch,
            instance_id=c.instance_id,
            topic_partitions=None if owned is None else tps_of(owned), **kw)
        resp, records = self._handle(req)
        assert isinstance(resp, ConsumerGroupHeartbeatResponse)
        if resp.error_code:
            assert resp.error_code in HEARTBEAT_ERRORS, (
                f"unexpected heartbeat error {resp.error_code}: {resp.error_message}")
            assert resp.error_message, "an error response must carry a message"
            if resp.error_code in NO_RECORD_ERRORS:
                assert records == [], f"error {resp.error_code} wrote records {records}"
            if resp.error_code == _E.fenced_member_epoch and epoch == 0:
                # a join under a member id the group has at a later epoch (a stale duplicate,
                # as upstream): refused, nothing changes
                assert records == [], f"a refused join wrote records {records}"
                assert self._member(c.member_id) is not None
            elif resp.error_code == _E.fenced_member_epoch:
                assert self._member(c.member_id) is None, "a fenced member must be removed"
        if expected is not None and resp.error_code != _E.invalid_regular_expression:
            assert resp.error_code == expected, (
                f"heartbeat of {c.member_id} at epoch {epoch} (owned {owned}) answered "
                f"{resp.error_code} ({resp.error_message}), expected {expected}")
        if lose:
            return resp
        self._apply_response(c, resp, epoch)
        return resp

    def _expected_epoch_check(self, c: SimClient, epoch: int, owned: set[TP] | None) -> int | None:
        """The error (0: none) a heartbeat at ``epoch`` > 0 must get by the member checks (spec
        "request handling" steps 2-3 and the lost-response rule recorded in shard.py)."""
        if epoch <= 0:
            return None
        g = self._group()
        if c.static:
            mid = None if g is None else g.static_members.get(c.instance_id or "")
            if mid is None:
                return int(_E.unknown_member_id)
            if mid != c.member_id:
                return int(_E.fenced_instance_id)
        m = self._member(c.member_id)
        if m is None:
            return int(_E.unknown_member_id)
        if epoch == m.member_epoch:
            return 0
        if epoch > m.member_epoch:
            return int(_E.fenced_member_epoch)
        assigned = {(t, p) for t, ps in m.assigned_partitions.items() for p in ps}
        if epoch == m.previous_member_epoch and owned is not None and owned <= assigned:
            return 0  # the response that moved the member to its epoch was lost
        return int(_E.fenced_member_epoch)

    def _apply_response(self, c: SimClient, resp: ConsumerGroupHeartbeatResponse,
                        sent_epoch: int) -> None:
        code = resp.error_code
        if code in (_E.unknown_member_id, _E.fenced_member_epoch):
            c.drop_all()  # rejoins later with the same member id at epoch 0
            return
        if code == _E.fenced_instance_id:
            c.drop_all()
            c.member_id = ""  # a new incarnation next time
            return
        if code:  # unreleased instance id / invalid regex: nothing changed for the client
            return
        if sent_epoch < 0:
            return
        if resp.member_id:
            c.member_id = resp.member_id
        member = self._member(c.member_id)
        assert member is not None, f"successful heartbeat but no member {c.member_id}"
        assert resp.member_epoch == member.member_epoch, (
            f"response epoch {resp.member_epoch} != coordinator's {member.member_epoch}")
        c.joined = True
        c.epoch = resp.member_epoch
        if resp.assignment is not None:
            a = flat(resp.assignment.topic_partitions)
            assert a == set(
                (t, p) for t, ps in member.assigned_partitions.items() for p in ps), (
                "the response assignment differs from the member's assigned partitions")
            new = a - c.owned
            # I1, client view: a partition is given only once its former owner let it go.
            for other in self.clients:
                if other is c or not self._live(other):
                    continue
                clash = new & other.owned
                assert not clash, (
                    f"I1: {sorted(clash)} given to {c.member_id} while {other.member_id} "
                    f"(epoch {other.epoch}) still owns them")
            c.owned |= new
            c.assigned = a

    def _report(self, c: SimClient, behaviour: str) -> set[TP] | None:
        if behaviour == "null":
            return None
        if behaviour == "ack" and c.assigned is not None:
            c.owned &= c.assigned
        return set(c.owned)

    def _join(self, c: SimClient, sub: Sub, assignor: str | None, rebalance_timeout: int,
              v0: bool, lose: bool) -> None:
        version = 1
        if not c.member_id:
            c.incarnation += 1
            if v0 and not c.static:
                version = 0
            else:
                c.member_id = f"m{c.slot}.{c.incarnation}"
        kind, value = sub
        resp = self._heartbeat(
            c, 0, set(), lose,
            rebalance_timeout_ms=rebalance_timeout, server_assignor=assignor, version=version,
            subscribed_topic_names=value if kind == "names" else None,
            subscribed_topic_regex=value if kind == "regex" else None)
        if not lose and resp.error_code == 0:
            c.sub = sub
            c.left_static = False

    # ------------------------------------------------------------------ rules: clients

    @initialize(subs=st.lists(subscriptions, min_size=1, max_size=3),
                statics=st.lists(st.booleans(), min_size=3, max_size=3))
    def start(self, subs: list[Sub], statics: list[bool]) -> None:
        """One to three clients join one after the other."""
        self._check_all()
        for c, sub, static in zip(self.clients, subs, statics, strict=False):
            c.static = static
            self._join(c, sub, None, 30_000, False, False)
            self._check_all()

    @precondition(lambda self: any(not c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), static=st.booleans(), sub=subscriptions,
          assignor=st.sampled_from((None, "uniform", "range")),
          rebalance_timeout=st.sampled_from((30_000, 10_000)), v0=st.booleans(), lose=lost)
    def join(self, i: int, static: bool, sub: Sub, assignor: str | None, rebalance_timeout: int,
             v0: bool, lose: bool) -> None:
        """A client joins (epoch 0): a fresh slot, a fenced client, or a static member back."""
        cands = self._not_joined()
        c = cands[i % len(cands)]
        if c.left_static:
            c.member_id = ""  # the restarted instance: same instance id, new member id
        elif not c.member_id or not self._member(c.member_id):
            if c.static != static:
                c.member_id = ""
            c.static = static
        self._join(c, sub, assignor, rebalance_timeout, v0, lose)

    @precondition(lambda self: any(c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), behaviour=behaviours, lose=lost)
    def heartbeat(self, i: int, behaviour: str, lose: bool) -> None:
        """A regular heartbeat at the client's epoch."""
        cands = self._joined()
        c = cands[i % len(cands)]
        self._heartbeat(c, c.epoch, self._report(c, behaviour), lose)

    @precondition(lambda self: any(c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), delta=st.integers(-3, 2),
          owned=st.none() | st.frozensets(st.integers(0, 15), max_size=6), lose=lost)
    def rogue_heartbeat(self, i: int, delta: int, owned: frozenset[int] | None, lose: bool) -> None:
        """A heartbeat with a shifted (stale or future) epoch and a random owned set."""
        cands = self._joined()
        c = cands[i % len(cands)]
        report: set[TP] | None = None
        if owned is not None:
            u = self._universe()
            report = {u[k] for k in owned if k < len(u)}
            c.owned &= report  # a client never consumes what it says it does not own
        self._heartbeat(c, max(1, c.epoch + delta), report, lose)

    @precondition(lambda self: any(c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), sub=subscriptions, behaviour=behaviours,
          assignor=st.sampled_from((None, "uniform", "range")))
    def change_subscription(self, i: int, sub: Sub, behaviour: str, assignor: str | None) -> None:
        """A heartbeat with a new subscription (and maybe a new server assignor)."""
        cands = self._joined()
        c = cands[i % len(cands)]
        kind, value = sub
        resp = self._heartbeat(
            c, c.epoch, self._report(c, behaviour), server_assignor=assignor,
            subscribed_topic_names=value if kind == "names" else None,
            subscribed_topic_regex=value if kind == "regex" else None)
        if resp.error_code == 0:
            c.sub = sub

    @precondition(lambda self: any(c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), temporary=st.booleans())
    def leave(self, i: int, temporary: bool) -> None:
        """Leave for good (-1) or, for a static member, temporarily (-2)."""
        cands = self._joined()
        c = cands[i % len(cands)]
        epoch = -2 if temporary and c.static else -1
        c.owned = set()  # the consumer stops consuming before it leaves
        resp = self._heartbeat(c, epoch, None)
        c.drop_all()
        if resp.error_code == 0 and epoch == -2:
            c.left_static = True
        elif resp.error_code in (0, _E.fenced_instance_id):
            c.member_id = ""

    @precondition(lambda self: any(c.joined for c in self.clients))
    @rule(i=st.integers(0, SLOTS - 1), sub=subscriptions, lose=lost)
    def restart(self, i: int, sub: Sub, lose: bool) -> None:
        """The client crashes and rejoins at epoch 0 under the same member id."""
        cands = self._joined()
        c = cands[i % len(cands)]
        c.drop_all()
        self._join(c, sub, None, 30_000, False, lose)

    # ------------------------------------------------------------------ rules: offsets

    @rule(i=st.integers(0, SLOTS - 1), epoch=st.sampled_from(("member", "admin")) | st.integers(-2, 2),
          partitions=st.frozensets(st.integers(0, 15), min_size=1, max_size=3))
    def commit(self, i: int, epoch: Any, partitions: frozenset[int]) -> None:
        """OffsetCommit at the member's epoch, at the client's epoch shifted by -2..2, or as an
        admin (no member id, epoch -1)."""
        cands = [c for c in self.clients if c.member_id]
        if epoch == "admin" or not cands:
            self._commit("", -1, partitions)
            return
        c = cands[i % len(cands)]
        member = self._member(c.member_id)
        if epoch == "member":
            sent = member.member_epoch if member is not None else c.epoch
        else:
            sent = c.epoch + epoch
        self._commit(c.member_id, sent, partitions)

    def _commit(self, member_id: str, epoch: int, partitions: frozenset[int]) -> None:
        group = self._group()
        member = self._member(member_id)
        expected: int = 0
        if not member_id and epoch < 0:
            if group is not None and group.members:
                expected = _E.unknown_member_id
        elif member is None:
            expected = _E.unknown_member_id
        elif epoch > member.member_epoch:
            expected = _E.fenced_member_epoch
        elif epoch < member.member_epoch and (epoch < 0 or member.classic is not None):
            expected = _E.stale_member_epoch
        older = member is not None and 0 <= epoch < member.member_epoch \
            and member.classic is None
        names = sorted((t.name, p) for t in self.image.by_name.values()
                       for p in range(t.num_partitions + 1))  # one beyond the last: an error
        chosen = sorted({names[k % len(names)] for k in partitions}) if names else [("foo", 0)]
        by_topic: dict[str, list[int]] = {}
        for n, p in chosen:
            by_topic.setdefault(n, []).append(p)
        req = OffsetCommitRequest(
            GROUP, tuple(OffsetCommitTopic(n, tuple(OffsetCommitPartition(p, 100 + p) for p in ps))
                         for n, ps in sorted(by_topic.items())),
            generation_id_or_member_epoch=epoch, member_id=member_id)
        before = self.shard.state_digest()
        held = commit_check(member, epoch) if older else None
        resp, records = self._handle(req)
        if held is not None:
            # I6 under KIP-1251 (Kafka 4.3): an older epoch is checked per partition: accepted
            # where the member has held the partition since that epoch, else STALE_MEMBER_EPOCH.
            assert resp.error_code == 0, resp.error_message
            accepted = 0
            for t in resp.topics:
                meta = self.image.by_name.get(t.name)
                for pr in t.partitions:
                    if meta is None or pr.partition_index >= meta.num_partitions:
                        continue
                    want = 0 if held(meta.topic_id, pr.partition_index) else _E.stale_member_epoch
                    assert pr.error_code == want, (
                        f"I6: commit by {member_id!r} at epoch {epoch} for {t.name}-"
                        f"{pr.partition_index} answered {pr.error_code}, expected {want}")
                    accepted += pr.error_code == 0
            assert len(records) == accepted
        elif expected:
            # I6: a stale or fenced commit is rejected with the spec's error and writes nothing.
            assert resp.error_code == expected, (
                f"I6: commit by {member_id!r} at epoch {epoch} answered {resp.error_code}, "
                f"expected {expected}")
            assert all(pr.error_code == expected for t in resp.topics for pr in t.partitions)
            assert records == [], f"I6: rejected commit wrote {records}"
            assert self.shard.state_digest() == before
        else:
            assert resp.error_code == 0, f"commit failed: {resp.error_message}"
            ok = [pr for t in resp.topics for pr in t.partitions if pr.error_code == 0]
            valid = [(n, p) for n, p in chosen
                     if n in self.image.by_name and p < self.image.by_name[n].num_partitions]
            assert len(ok) == len(valid) == len(records)

    # ------------------------------------------------------------------ rules: metadata

    def _set_image(self, image: MetadataImage) -> None:
        self.image = image
        self._log(self.shard.update_metadata(image, self.now))

    @rule(change=st.sampled_from(("add_partitions", "delete", "create", "recreate")),
          i=st.integers(0, 2), n=st.integers(1, 4))
    def change_metadata(self, change: str, i: int, n: int) -> None:
        """A new topic image: ``n`` partitions added (up to 6), a topic deleted, a missing topic
        created with ``n`` partitions, or a topic recreated under a new id with ``n``."""
        existing = sorted(self.image.by_name)
        missing = [name for name in TOPIC_NAMES if name not in self.image.by_name]
        if change == "create" or not existing:
            if not missing:
                change = "recreate"
            else:
                self._set_image(self.image.with_topic(self._new_topic(missing[i % len(missing)], n)))
                return
        t = self.image.by_name[existing[i % len(existing)]]
        if change == "add_partitions":
            grown = TopicMetadata(t.topic_id, t.name, min(MAX_PARTITIONS, t.num_partitions + n))
            self._set_image(self.image.with_topic(grown))
        elif change == "delete":
            self._set_image(self.image.without_topic(t.name))
        else:
            self._set_image(self.image.with_topic(self._new_topic(t.name, n)))

    # ------------------------------------------------------------------ rules: time, admin

    @rule(ms=st.sampled_from((500, 2_000, 5_000, 11_000, 31_000, 46_000)))
    def advance(self, ms: int) -> None:
        """Time passes: session and rebalance timeouts fire."""
        self.now += ms
        self._log(self.shard.expire_timers(self.now))

    @precondition(lambda self: GROUP in self.shard.offsets or (
        GROUP in self.shard.groups and not self.shard.groups[GROUP].members))
    @rule()
    def delete_group(self) -> None:
        resp, records = self._handle(DeleteGroupsRequest((GROUP,)))
        (r,) = resp.results
        if r.error_code:
            assert r.error_code in (_E.non_empty_group, _E.group_id_not_found), r
            assert records == []
        else:
            assert self._group() is None

    @rule()
    def failover(self) -> None:
        """The shard is reloaded from its log by a new coordinator, which runs its load duties."""
        self.shard = rebuild(self.config, self.image, self.log, self.member_ids)
        self._log(self.shard.on_loaded(self.now))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def invariants_hold(self) -> None:
        self._check_all()

    def _check_all(self) -> None:
        self._check_i1_coordinator()
        self._check_i1_clients()
        self._check_i2()
        self._check_i3()
        self._check_i4()
        self._check_timers()
        self.rejoined = set()

    def _check_i1_coordinator(self) -> None:
        for gid, g in self.shard.groups.items():
            holder: dict[TP, str] = {}
            for mid, m in g.members.items():
                both = {(t, p) for t, ps in m.assigned_partitions.items() for p in ps} & {
                    (t, p) for t, ps in m.partitions_pending_revocation.items() for p in ps}
                assert not both, f"I1: {mid} has {sorted(both)} both assigned and revoking"
                for tp in held(m):
                    assert tp not in holder, (
                        f"I1: {tp} held by {holder[tp]} and {mid} in group {gid}")
                    holder[tp] = mid
            index = {(t, p): mid for t, ps in g.owners.items() for p, mid in ps.items()}
            assert index == holder, f"owners index out of sync: {index} != {holder}"

    def _check_i1_clients(self) -> None:
        live = [c for c in self.clients if self._live(c)]
        for a, b in itertools.combinations(live, 2):
            clash = a.owned & b.owned
            assert not clash, f"I1 (client view): {a.member_id} and {b.member_id} both own {clash}"
        for c in live:
            m = self._member(c.member_id)
            extra = c.owned - held(m)
            assert not extra, (
                f"I1: the coordinator released {sorted(extra)} from {c.member_id} (epoch "
                f"{m.member_epoch}, {m.state.name}) but the client never acknowledged it")

    def _check_i2(self) -> None:
        g = self._group()
        if g is None:
            return
        assert set(g.target_assignment) <= set(g.members), (
            f"I2: target for non-members {set(g.target_assignment) - set(g.members)}")
        if not g.members or g.group_epoch != g.assignment_epoch:
            return
        # A regex covers the topics of the group's recorded resolution (made by a heartbeat, as
        # Kafka's: a topic created since is covered from the next one on), all of them matches.
        for rx, resolved in g.resolved_regexes.items():
            assert all(re2.fullmatch(rx, n) is not None for n in resolved), (rx, resolved)
        subscribers: dict[str, set[str]] = {}
        for mid, m in g.members.items():
            for name in self.image.by_name:
                if name in m.subscribed_topic_names or (
                        m.subscribed_topic_regex
                        and name in g.resolved_regexes.get(m.subscribed_topic_regex, ())):
                    subscribers.setdefault(name, set()).add(mid)
        expected = {(self.image.by_name[n].topic_id, p)
                    for n in subscribers for p in range(self.image.by_name[n].num_partitions)}
        seen: dict[TP, str] = {}
        for mid, a in g.target_assignment.items():
            for t, ps in a.items():
                for p in ps:
                    tp = (t, p)
                    assert tp not in seen, f"I2: {tp} assigned to {seen[tp]} and {mid}"
                    seen[tp] = mid
                    assert tp in expected, f"I2: {tp} of {mid} is not a subscribed partition"
                    name = self.image.by_id[t].name
                    assert mid in subscribers[name], f"I2: {mid} does not subscribe to {name}"
        missing = expected - set(seen)
        assert not missing, f"I2: partitions {sorted(missing)} not assigned at epoch {g.group_epoch}"

    def _check_i3(self) -> None:
        epochs: dict[str, tuple[int, int]] = {}
        member_epochs: dict[str, int] = {}
        for gid, g in self.shard.groups.items():
            assert g.assignment_epoch <= g.group_epoch, (
                f"I3: assignment epoch {g.assignment_epoch} > group epoch {g.group_epoch}")
            before = self.epochs.get(gid)
            if before is not None:
                assert g.group_epoch >= before[0], f"I3: group epoch {before[0]} -> {g.group_epoch}"
                assert g.assignment_epoch >= before[1], (
                    f"I3: assignment epoch {before[1]} -> {g.assignment_epoch}")
            epochs[gid] = (g.group_epoch, g.assignment_epoch)
            for mid, m in g.members.items():
                if m.member_epoch < 0:
                    continue
                assert m.member_epoch <= g.assignment_epoch, (
                    f"I3: member {mid} epoch {m.member_epoch} > assignment epoch "
                    f"{g.assignment_epoch}")
                old = self.member_epochs.get(mid)
                if old is not None and mid not in self.rejoined:
                    assert m.member_epoch >= old, f"I3: member {mid} epoch {old} -> {m.member_epoch}"
                member_epochs[mid] = m.member_epoch
        self.epochs = epochs
        self.member_epochs = member_epochs

    def _check_timers(self) -> None:
        """Timers match the state (what I5 and the spec's timeouts rest on): every member has a
        session timer; a member that must revoke has a rebalance timer for its current epoch; a
        static member that left temporarily (-2) is removed by its session timeout only."""
        for gid, g in self.shard.groups.items():
            for mid, m in g.members.items():
                assert (SESSION, gid, mid) in self.shard.timers, f"member {mid} has no session timer"
                key = (REBALANCE, gid, mid)
                armed = key in self.shard.timers and self.shard.timers.payload(key) == m.member_epoch
                if m.member_epoch >= 0 and m.state is MemberState.UNREVOKED_PARTITIONS:
                    assert armed, f"member {mid} must revoke at epoch {m.member_epoch} but has no timer"
                elif m.member_epoch < 0 and self.check_static_rebalance_timer:
                    assert not (armed and m.state is MemberState.UNREVOKED_PARTITIONS), (
                        f"static member {mid} left temporarily (epoch {m.member_epoch}) but its "
                        f"rebalance timer will fence it before its session timeout")

    def _check_i4(self) -> None:
        replica = rebuild(self.config, self.image, self.log, self.member_ids)
        assert replica.state_digest() == self.shard.state_digest(), (
            "I4: the shard rebuilt from the log differs from the live shard")


ShardMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestShardProperties = ShardMachine.TestCase


# ---------------------------------------------------------------------------------------------
# Known src bug, minimised from a ShardMachine failure (the machine runs with this check off).


def _static_member_left_while_revoking(failover: bool) -> ShardMachine:
    """A static member must revoke (its topic was deleted), then leaves temporarily (-2)."""
    state = ShardMachine()
    state.check_static_rebalance_timer = True
    state.start(subs=[("names", ("foo",))], statics=[True, False, False])
    state.invariants_hold()
    state.change_metadata(change="delete", i=1, n=1)  # foo deleted: the member must revoke it
    state.invariants_hold()
    state.heartbeat(behaviour="ack", i=0, lose=False)  # UNREVOKED_PARTITIONS
    state.invariants_hold()
    state.leave(i=0, temporary=True)  # epoch -2
    state.invariants_hold()
    if failover:
        state.failover()
        state.invariants_hold()
    state.advance(31_000)  # past the rebalance timeout (30 s), within the session timeout (45 s)
    state.invariants_hold()
    return state


def test_static_member_left_temporarily_survives_rebalance_timeout() -> None:
    state = _static_member_left_while_revoking(failover=False)
    assert state.shard.groups[GROUP].members["m0.1"].member_epoch == -2


def test_static_member_left_temporarily_survives_failover() -> None:
    state = _static_member_left_while_revoking(failover=True)
    assert state.shard.groups[GROUP].members["m0.1"].member_epoch == -2

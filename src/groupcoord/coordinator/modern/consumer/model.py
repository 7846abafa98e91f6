"""Consumer groups on the KIP-848 protocol: the in-memory model rebuilt from records.

Implements the spec's data model ("Consumer Group", "Members", "Target Assignment", "Current
Member Assignment"): group epoch, members with their subscriptions, the subscribed topics'
metadata, the target assignment and its epoch, each member's current assignment (epoch,
previous epoch, reconciliation state, assigned partitions, partitions pending revocation).
Nothing here is changed except by ``Shard.replay``.

The group and member bases, the group states and the members' reconciliation states are every
new-protocol group's (``modern/group.py``, ``modern/member.py``).

Online migration (KIP-848 "Supporting Online Consumer Group Upgrade"): a member may use the classic protocol
inside a consumer group; it then carries :class:`ClassicMemberMetadata` (session timeout, supported
protocols), persisted in its member metadata record. The group counts its classic members so conversions can
ask whether every member (but one) uses the classic protocol.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any
from uuid import UUID

from groupcoord.coordinator.assignors.target_index import TargetIndex
from groupcoord.coordinator.group import PartitionCheck, check_member_epoch_offset_request
from groupcoord.coordinator.modern.consumer.assignment_epochs import commit_check
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import MemberState, ModernGroupMember
from groupcoord.coordinator.records import Assignment, ClassicMemberMetadata, ClientAssignor
from groupcoord.coordinator.topics import TopicMetadata

#: The empty assignment, shared: a member with nothing assigned, pending revocation or carried
#: (KIP-1251 assignment epochs) holds this one object rather than an empty dict of its own
#: (mappings are read-only by contract; memory per member).
EMPTY: Mapping[UUID, frozenset[int]] = {}
NO_EPOCHS: Mapping[UUID, Mapping[int, int]] = EMPTY  # type: ignore[assignment]


def _empty() -> Mapping[UUID, Any]:
    return EMPTY

#: ``str`` of topic ids by ``id()``, shared by the digests of one group (a checkpoint digests
#: every group twice, and ``str(UUID)`` costs several times a dict lookup, ``UUID.__hash__``
#: included). Each entry keeps its UUID alive, so an ``id`` in the memo names that UUID only.
TopicIdStrs = dict[int, tuple[UUID, str]]


def topic_id_str(topic_id: UUID, strs: TopicIdStrs) -> str:
    """``str(topic_id)``, through the memo ``strs``."""
    hit = strs.get(id(topic_id))
    if hit is None:
        hit = strs[id(topic_id)] = (topic_id, str(topic_id))
    return hit[1]


def assignment_digest(a: Assignment, strs: TopicIdStrs | None = None) -> list[tuple[str, list[int]]]:
    """``sorted((str(t), sorted(ps)) for t, ps in a.items() if ps)``, with ``str(t)`` from the
    memo ``strs`` when given."""
    if strs is None:
        return sorted((str(t), sorted(ps)) for t, ps in a.items() if ps)
    return sorted((topic_id_str(t, strs), sorted(ps)) for t, ps in a.items() if ps)


@dataclass(slots=True, frozen=True)
class ConsumerGroupMember(ModernGroupMember):
    """One member: its subscription (member metadata) and its current assignment."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    client_assignors: tuple[ClientAssignor, ...] = ()
    # current assignment
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=_empty)
    partitions_pending_revocation: Assignment = field(default_factory=_empty)
    #: Set when the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat).
    classic: ClassicMemberMetadata | None = None
    #: KIP-1251: the epoch at which it was given each partition it holds, for the partitions
    #: where that differs from ``member_epoch`` (``modern/consumer/assignment_epochs.py``).
    assignment_epochs: Mapping[UUID, Mapping[int, int]] = field(default_factory=_empty)

    def digest(self, strs: TopicIdStrs | None = None) -> tuple[Any, ...]:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor,
                self.rebalance_timeout_ms, self.client_assignors, self.member_epoch,
                self.previous_member_epoch, self.state.name,
                assignment_digest(self.assigned_partitions, strs),
                assignment_digest(self.partitions_pending_revocation, strs),
                None if self.classic is None else self.classic.to_list())

    def owned_partitions(self) -> Iterator[tuple[UUID, int]]:
        """Every partition the coordinator considers held by this member."""
        for t, ps in self.assigned_partitions.items():
            for p in ps:
                yield t, p
        for t, ps in self.partitions_pending_revocation.items():
            for p in ps:
                yield t, p


_MEMBER_FIELDS = tuple(f.name for f in fields(ConsumerGroupMember))
_member_values = attrgetter(*_MEMBER_FIELDS)
_I_EPOCH, _I_PREVIOUS, _I_STATE, _I_ASSIGNED, _I_REVOKING, _I_EPOCHS = map(
    _MEMBER_FIELDS.index, ("member_epoch", "previous_member_epoch", "state", "assigned_partitions",
                           "partitions_pending_revocation", "assignment_epochs"))


def with_current_assignment(member: ConsumerGroupMember, member_epoch: int,
                            previous_member_epoch: int, state: MemberState,
                            assigned: Assignment, revoking: Assignment,
                            assignment_epochs: Mapping[UUID, Mapping[int, int]] | None = None,
                            ) -> ConsumerGroupMember:
    """``dataclasses.replace(member, ...)`` of the current-assignment fields, in half its
    time (reconciliation and the replay of current-assignment records build one per change).
    ``assignment_epochs`` None keeps the member's."""
    values = list(_member_values(member))
    if assignment_epochs is not None:
        values[_I_EPOCHS] = assignment_epochs
    values[_I_EPOCH] = member_epoch
    values[_I_PREVIOUS] = previous_member_epoch
    values[_I_STATE] = state
    values[_I_ASSIGNED] = assigned
    values[_I_REVOKING] = revoking
    return ConsumerGroupMember(*values)


def joining(member: ConsumerGroupMember, assigned: Assignment) -> ConsumerGroupMember:
    """A joining member as it stands for reconciliation: fresh (epoch 0), or inheriting a
    replaced static member's partitions (``assigned``)."""
    return replace(member, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                   assigned_partitions=assigned or EMPTY, partitions_pending_revocation=EMPTY,
                   assignment_epochs=NO_EPOCHS)


class ConsumerGroup(ModernGroup[ConsumerGroupMember]):
    """A consumer group's state. Mutated only by the shard's replay of records."""

    group_type = "consumer"
    protocol_type = "consumer"
    converted_to_classic_when_empty = True

    __slots__ = ("assignment_timestamp_ms", "assignor_input", "classic_members", "owners",
                 "resolved_regexes", "subscribed_names", "subscribed_regexes",
                 "subscription_metadata", "target_assignment", "target_index")

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.subscription_metadata: dict[str, TopicMetadata] = {}  # topic name -> metadata
        #: When the target was last computed (0: not recorded); assignment batching.
        self.assignment_timestamp_ms = 0
        self.target_assignment: dict[str, Assignment] = {}
        #: ``target_assignment`` inverted (partition -> member), kept by ``set_target``: what
        #: the server-side assignor reads instead of every member's target.
        self.target_index = TargetIndex()
        #: topic id -> partition -> member id currently holding it (assigned or revoking).
        self.owners: dict[UUID, dict[int, str]] = {}
        #: How many members subscribe to each topic name / each regex (derived from members).
        self.subscribed_names: Counter[str] = Counter()
        self.subscribed_regexes: Counter[str] = Counter()
        #: What each subscribed regex resolved to (topic names; ``subscription.py``), as recorded.
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        #: How many members use the classic protocol (derived from members).
        self.classic_members = 0
        #: Soft state of the target computation (``modern/consumer/target_assignment.py``
        #: ``AssignorInput``): never replayed, not in the digest.
        self.assignor_input: object = None

    # ------------------------------------------------------------------ queries

    def digest(self) -> Any:
        strs: TopicIdStrs = {}  # str(topic id) once per topic for the whole digest
        d = {
            "type": self.group_type,
            "epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "subscription_metadata": sorted((t.name, str(t.topic_id), t.num_partitions)
                                            for t in self.subscription_metadata.values()),
            "members": {mid: m.digest(strs) for mid, m in sorted(self.members.items())},
            "static": dict(sorted(self.static_members.items())),
            "target": {mid: assignment_digest(a, strs)
                       for mid, a in sorted(self.target_assignment.items())},
            "owners": self._owners_digest(strs),
        }
        if self.resolved_regexes:
            d["regexes"] = sorted((rx, sorted(ts)) for rx, ts in self.resolved_regexes.items())
        return d

    def _owners_digest(self, strs: TopicIdStrs | None = None) -> list[tuple[str, int, str]]:
        """``sorted((str(topic_id), partition, member_id) ...)`` built per topic: one ``str``
        of a UUID per topic, not per partition (a checkpoint digests every group twice), and
        the partitions of a topic sorted as ints (unique keys: the order of the tuples)."""
        strs = {} if strs is None else strs
        return [(name, p, ps[p])
                for name, ps in sorted((topic_id_str(t, strs), ps) for t, ps in self.owners.items())
                for p in sorted(ps)]

    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        check_member_epoch_offset_request(self.members, group_id, member_id, epoch, committing,
                                          'member')

    def older_epoch_commit_check(self, member_id: str, epoch: int) -> PartitionCheck | None:
        """A commit from a member not using the classic protocol at an epoch older than its own
        is checked per partition (``assignment_epochs.commit_check``) instead of refused as a
        whole."""
        member = self.members.get(member_id)
        if member is None or member.classic is not None or not 0 <= epoch < member.member_epoch:
            return None
        return commit_check(member, epoch)

    def is_subscribed_to(self, topic: str) -> bool:
        return bool(self.members) and topic in self.subscription_metadata

    def owner_of(self, topic_id: UUID, partition: int) -> str | None:
        ps = self.owners.get(topic_id)
        return None if ps is None else ps.get(partition)

    def target_of(self, member_id: str) -> Assignment:
        return self.target_assignment.get(member_id, EMPTY)

    def all_classic_except(self, member_ids: set[str]) -> bool:
        """Whether every member outside ``member_ids`` uses the classic protocol."""
        inside = [self.members[mid] for mid in member_ids if mid in self.members]
        classic_inside = sum(1 for m in inside if m.classic is not None)
        return self.classic_members - classic_inside == len(self.members) - len(inside)

    # ------------------------------------------------------------------ replay helpers

    def shared(self, value: Any, attr: str, old: ConsumerGroupMember | None) -> Any:
        """``value`` (of the member field ``attr``: its subscribed topic names, client id or
        host), or an equal object the group already holds: the member's own (``old``) or the
        last member's. Members of a group mostly subscribe alike and many share a host or
        client id, so they share one object (a 100-topic subscription: 840 bytes and 100
        strings a member) instead of one each from every decoded request or record."""
        if old is not None:
            mine = getattr(old, attr)
            if mine == value:
                return mine
        last = next(reversed(self.members.values()), None)
        if last is not None:
            theirs = getattr(last, attr)
            if theirs == value:
                return theirs
        return value

    def set_target(self, member_id: str, partitions: Assignment) -> None:
        """A target-member record: ``member_id``'s target partitions (the index follows)."""
        self.target_assignment[member_id] = partitions
        self.target_index.put(member_id, partitions)

    def remove_target(self, member_id: str) -> None:
        """A target-member tombstone."""
        self.target_assignment.pop(member_id, None)
        self.target_index.remove(member_id)

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, keeping the derived state (owners, subscription counts,
        static and classic members) in step. What a replacement leaves as it was is not
        touched: a member-metadata record keeps the assignment mappings (the same objects), a
        current-assignment record the subscription, so neither pays for the other's part
        (a member holding 100,000 partitions, a subscription to 100 topics)."""
        old = self.members.get(member.member_id)
        same_holding = same_subscription = False
        if old is not None:
            same_holding = (old.assigned_partitions is member.assigned_partitions
                            and old.partitions_pending_revocation
                            is member.partitions_pending_revocation)
            same_subscription = (old.subscribed_topic_names == member.subscribed_topic_names
                                 and old.subscribed_topic_regex == member.subscribed_topic_regex)
            if not same_holding:
                self._release(old)
            if old.classic is not None:
                self.classic_members -= 1
            if not same_subscription:
                self._unsubscribe(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if member.classic is not None:
            self.classic_members += 1
        if not same_holding:
            self._hold(member)
        if not same_subscription:
            self.subscribed_names.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex:
                self.subscribed_regexes[member.subscribed_topic_regex] += 1

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._release(old)
        if old.classic is not None:
            self.classic_members -= 1
        self._unsubscribe(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _unsubscribe(self, m: ConsumerGroupMember) -> None:
        names = self.subscribed_names
        for n in m.subscribed_topic_names:
            names[n] -= 1
            if names[n] <= 0:
                del names[n]
        rx = m.subscribed_topic_regex
        if rx:
            self.subscribed_regexes[rx] -= 1
            if self.subscribed_regexes[rx] <= 0:
                del self.subscribed_regexes[rx]

    def _hold(self, m: ConsumerGroupMember) -> None:
        """Record ``m`` as the owner of its partitions (assigned and pending revocation), topic
        by topic (one lookup of the topic id per topic, not per partition)."""
        owners = self.owners
        mid = m.member_id
        for held in (m.assigned_partitions, m.partitions_pending_revocation):
            for t, ps in held.items():
                if not ps:
                    continue
                by_partition = owners.get(t)
                if by_partition is None:
                    owners[t] = dict.fromkeys(ps, mid)
                else:
                    by_partition.update(dict.fromkeys(ps, mid))

    def _release(self, m: ConsumerGroupMember) -> None:
        """Forget ``m`` as the owner of its partitions (those another member took over stay)."""
        owners = self.owners
        mid = m.member_id
        for held in (m.assigned_partitions, m.partitions_pending_revocation):
            for t, ps in held.items():
                by_partition = owners.get(t)
                if by_partition is None or not ps:
                    continue
                get = by_partition.get
                for p in ps:
                    if get(p) == mid:
                        del by_partition[p]
                if not by_partition:
                    del owners[t]

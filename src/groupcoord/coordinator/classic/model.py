"""Classic groups (JoinGroup / SyncGroup): the in-memory model of one group.

Modelled on Kafka's ``ClassicGroup`` / ``ClassicGroupMember``. A classic group has two layers:

- The **committed** view: the last :class:`ClassicGroupMetadataValue` replayed for the group
  (generation, protocol type and name, leader, state timestamp, members with their timeouts,
  subscription for the selected protocol and assignment). It changes only through
  ``Shard.replay`` and is everything that survives a failover; ``digest()`` is this view, so a
  live shard and a shard rebuilt from its log digest equal (invariant I4).
- The **live** view the protocol runs on: the state machine (Empty, PreparingRebalance,
  CompletingRebalance, Stable), members joining or leaving mid-rebalance, every protocol each
  member supports, pending JoinGroup / SyncGroup requests (``Waiter``), members that were sent
  MEMBER_ID_REQUIRED, members that still owe a SyncGroup. As upstream, this is soft state: the
  manager (``classic/handlers.py``) changes it directly, it is rebuilt from the committed view on
  load (Stable with the committed members, or Empty), and clients retry what was pending.

Replaying a record of the group outside the manager's own appends (a log load) rebuilds the live
view from the record; the manager's own appends update the committed view and the members'
assignments only.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from groupcoord.coordinator.classic.messages import JoinGroupProtocol, JoinGroupResponseMember
from groupcoord.coordinator.group import BaseTimestamp, Group, commit_timestamp
from groupcoord.coordinator.records import ClassicGroupMemberMetadata, ClassicGroupMetadataValue
from groupcoord.protocol.consumer_protocol import decode_subscription
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

log = logging.getLogger(__name__)

_E = ErrorCode

#: The protocol type of Kafka consumers (the embedded ConsumerProtocol).
CONSUMER_PROTOCOL_TYPE = "consumer"


class ClassicGroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = ClassicGroupState

#: The states a group may come from into each state (upstream ClassicGroupState).
VALID_PREVIOUS_STATES: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY,
                        _S.DEAD}),
}


@dataclass(slots=True, eq=False)
class Waiter:
    """A JoinGroup or SyncGroup request answered later: the driver's token of that request.

    Compared by identity (two requests may carry equal tokens, e.g. ``None`` in tests)."""

    token: Hashable | None


def subscribed_topics(metadata: bytes) -> frozenset[str]:
    """The topics of ConsumerProtocolSubscription bytes (any version). Raises ValueError
    (ConsumerProtocolError) if malformed."""
    return frozenset(decode_subscription(metadata).topics)


@dataclass(slots=True, eq=False)
class ClassicGroupMember:
    """One member of the live view (upstream ClassicGroupMember)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: In the member's order of preference.
    protocols: tuple[JoinGroupProtocol, ...]
    assignment: bytes = b""
    awaiting_join: Waiter | None = None
    awaiting_sync: Waiter | None = None
    #: Joined in the current rebalance and never completed a join: may expire while waiting.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    def protocol_names(self) -> set[str]:
        return {p.name for p in self.protocols}

    def metadata(self, protocol_name: str | None) -> bytes:
        for p in self.protocols:
            if p.name == protocol_name:
                return p.metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def matches(self, protocols: tuple[JoinGroupProtocol, ...]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """A member waiting in a rebalance needs no heartbeat, unless it is new."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def to_join_response_member(self, protocol_name: str | None) -> JoinGroupResponseMember:
        return JoinGroupResponseMember(self.member_id, self.instance_id,
                                       self.metadata(protocol_name))


class ClassicGroup(Group):
    """A classic group: the committed view (replayed) and the live view (soft state)."""

    group_type = "classic"

    __slots__ = ("committed", "current_state_timestamp", "generation_id", "group_id",
                 "leader_id", "members", "members_version", "new_member_added",
                 "num_awaiting_join", "pending_join_members", "pending_sync_members",
                 "previous_state",
                 "protocol_name", "protocol_type", "state", "static_members",
                 "supported_protocols")

    def __init__(self, group_id: str, now: int) -> None:
        self.group_id = group_id
        self.committed: ClassicGroupMetadataValue | None = None
        self.state = _S.EMPTY
        self.previous_state = _S.DEAD
        self.current_state_timestamp = now
        self.generation_id = 0
        #: "" until a first member joins (upstream: Optional.empty()).
        self.protocol_type = ""
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        #: Members in join order (a removed leader is replaced by the first remaining member).
        self.members: dict[str, ClassicGroupMember] = {}
        #: Bumped by every change of ``members`` (``add``, ``remove``, ``replace_static_member``):
        #: soft state for observers that look at the members after every call, never replayed.
        self.members_version = 0
        self.static_members: dict[str, str] = {}  # instance id -> member id
        #: Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
        self.pending_join_members: set[str] = set()
        #: Members of the current generation that have not sent SyncGroup yet.
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        #: protocol name -> number of members supporting it.
        self.supported_protocols: dict[str, int] = {}
        #: A member joined during the initial rebalance: extend the initial delay.
        self.new_member_added = False

    # ------------------------------------------------------------------ replay

    @classmethod
    def from_record(cls, group_id: str, value: ClassicGroupMetadataValue) -> ClassicGroup:
        """The group as a log load rebuilds it (upstream's replay of GroupMetadataValue)."""
        g = cls(group_id, value.current_state_timestamp)
        g.committed = value
        g.generation_id = value.generation
        g.protocol_type = value.protocol_type
        g.protocol_name = value.protocol_name
        for m in value.members:
            rebalance_timeout = m.session_timeout_ms if m.rebalance_timeout_ms == -1 \
                else m.rebalance_timeout_ms
            protocols = () if value.protocol_name is None else (
                JoinGroupProtocol(value.protocol_name, m.subscription or b""),)
            g.add(ClassicGroupMember(m.member_id, m.instance_id, m.client_id, m.client_host,
                                     rebalance_timeout, m.session_timeout_ms,
                                     value.protocol_type, protocols, m.assignment))
        if value.leader in g.members:
            g.leader_id = value.leader
        g.state = _S.STABLE if g.members else _S.EMPTY
        return g

    def apply_committed(self, value: ClassicGroupMetadataValue) -> None:
        """The manager's own append: the committed view and the assignments it persisted."""
        self.committed = value
        for m in value.members:
            live = self.members.get(m.member_id)
            if live is not None:
                live.assignment = m.assignment

    def metadata_value(self, assignments: dict[str, bytes] | None = None) -> ClassicGroupMetadataValue:
        """The live group as a record value (``assignments`` default to the members' own)."""
        members = tuple(
            ClassicGroupMemberMetadata(
                m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms,
                None if self.protocol_name is None else m.metadata(self.protocol_name),
                m.assignment if assignments is None else assignments.get(m.member_id, b""))
            for m in self.members.values())
        return ClassicGroupMetadataValue(self.protocol_type, self.generation_id, self.protocol_name,
                                         self.leader_id, self.current_state_timestamp, members)

    # ------------------------------------------------------------------ Group interface

    def state_name(self) -> str:
        return self.state.value

    def offset_expiration_base(self) -> BaseTimestamp | None:
        """Kafka's ``ClassicGroup.offsetExpirationCondition``: offsets of a group without a
        protocol type, or of a Stable consumer group, from their commit timestamps; of an Empty
        group, from the time it became empty; in a rebalance, none."""
        if not self.protocol_type:
            return commit_timestamp
        if self.state is _S.EMPTY:
            became_empty = self.current_state_timestamp
            return lambda v: became_empty
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.state is _S.STABLE:
            return commit_timestamp
        return None

    def is_empty(self) -> bool:
        return self.state is _S.EMPTY

    def digest(self) -> Any:
        c = self.committed
        assert c is not None, f"classic group {self.group_id} was never persisted"
        return {
            "type": self.group_type,
            "protocol_type": c.protocol_type,
            "generation": c.generation,
            "protocol": c.protocol_name,
            "leader": c.leader,
            "state_timestamp": c.current_state_timestamp,
            "members": [m.to_list() for m in c.members],
        }

    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        """Upstream ClassicGroup.validateOffsetCommit; a classic OffsetFetch is never refused
        (upstream only refuses a Dead group, which this model never holds)."""
        if not committing:
            return
        if epoch < 0 and self.state is _S.EMPTY:
            return  # admin client or a consumer without group management
        if epoch >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id)
            if epoch != self.generation_id:
                raise CoordinatorError(_E.illegal_generation,
                                       f"Generation {epoch} is not the generation "
                                       f"{self.generation_id} of group {group_id}.")
        else:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"Group {group_id} is {self.state.value}: a commit needs a "
                                   f"member id and a generation.")
        if self.state is _S.COMPLETING_REBALANCE:
            raise CoordinatorError(_E.rebalance_in_progress,
                                   f"Group {group_id} is completing a rebalance.")

    def validate_transactional_offset_commit(self, group_id: str, member_id: str,
                                             generation_id: int,
                                             group_instance_id: str | None) -> None:
        """Upstream ClassicGroup.validateOffsetCommit with ``isTransactional``: the member and
        its generation are checked when given, the group's state is not (no
        REBALANCE_IN_PROGRESS, no UNKNOWN_MEMBER_ID for a request without member)."""
        if generation_id < 0 and self.state is _S.EMPTY:
            return
        if generation_id >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise CoordinatorError(_E.illegal_generation,
                                       f"Generation {generation_id} is not the generation "
                                       f"{self.generation_id} of group {group_id}.")

    def validate_offset_delete(self) -> None:
        """Kafka's ``ClassicGroup.validateOffsetDelete``: a group with members (Stable,
        PreparingRebalance, CompletingRebalance) that does not use the consumer protocol
        type cannot tell which topics it consumes: NON_EMPTY_GROUP for the whole request."""
        if self.state is not _S.EMPTY and self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise CoordinatorError(_E.non_empty_group,
                                   f"Group {self.group_id} is not empty and does not use the "
                                   f"consumer protocol type.")

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member's ConsumerProtocolSubscription names ``topic`` (protocol type
        "consumer" only; the selected protocol's metadata, else each member's first protocol).
        When some subscription cannot be decoded the topics are unknown and, as Kafka's
        ``ClassicGroup.isSubscribedToTopic`` answers, every topic counts as subscribed (the
        offsets are kept)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        topics: set[str] = set()
        try:
            for m in self.members.values():
                raw = (m.metadata(self.protocol_name)
                       if self.protocol_name in m.protocol_names() else
                       (m.protocols[0].metadata if m.protocols else b""))
                topics |= subscribed_topics(raw)
        except ValueError as e:
            log.warning("[%s] cannot decode a consumer subscription: %s", self.group_id, e)
            return True
        return topic in topics

    # ------------------------------------------------------------------ queries

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID unless ``member_id`` is a member (and the
        static member of ``instance_id`` when given)."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise CoordinatorError(_E.unknown_member_id,
                                       f"Instance id {instance_id} is unknown in group "
                                       f"{self.group_id}.")
            if existing != member_id:
                raise CoordinatorError(_E.fenced_instance_id,
                                       f"Static member {member_id} with instance id "
                                       f"{instance_id} was fenced by member {existing}.")
        if member_id not in self.members:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"Member {member_id} is not a member of group "
                                   f"{self.group_id}.")

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[_S.PREPARING_REBALANCE]

    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout of the members."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a member with these protocols may join: any type and protocol into an empty
        group; else the group's type and a protocol every member supports."""
        names = set(names)
        if self.state is _S.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(p, 0) == n for p in names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol among those all members support;
        the most votes win, ties going to the smallest name."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        n = len(self.members)
        candidates = {p for p, count in self.supported_protocols.items() if count == n}
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return min(votes, key=lambda p: (-votes[p], p))

    def join_response_members(self) -> tuple[JoinGroupResponseMember, ...]:
        """All members with their metadata for the selected protocol (the leader's view)."""
        return tuple(m.to_join_response_member(self.protocol_name) for m in self.members.values())

    def not_yet_rejoined(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    # ------------------------------------------------------------------ live-view changes

    def transition_to(self, target: ClassicGroupState, now: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise AssertionError(f"group {self.group_id}: illegal transition "
                                 f"{self.state.value} -> {target.value}")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now

    def add(self, member: ClassicGroupMember, waiter: Waiter | None = None) -> None:
        if member.instance_id is not None:
            if member.instance_id in self.static_members:
                raise AssertionError(f"instance id {member.instance_id} is already a member")
            self.static_members[member.instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.members_version += 1
        self._count_protocols(member, +1)
        member.awaiting_join = waiter
        if waiter is not None:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.members_version += 1
            self._count_protocols(member, -1)
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.instance_id is not None and \
                    self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: ClassicGroupMember, protocols: tuple[JoinGroupProtocol, ...],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      waiter: Waiter | None) -> Waiter | None:
        """New protocols and timeouts, and the member's pending JoinGroup; returns the pending
        JoinGroup this one supersedes, if any."""
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self.set_join_waiter(member, waiter)

    def set_join_waiter(self, member: ClassicGroupMember, waiter: Waiter | None) -> Waiter | None:
        """Park (or clear, with None) the member's JoinGroup; returns the one it replaces."""
        old = member.awaiting_join
        if old is None and waiter is not None:
            self.num_awaiting_join += 1
        elif old is not None and waiter is None:
            self.num_awaiting_join -= 1
        member.awaiting_join = waiter
        return old

    def replace_static_member(self, instance_id: str, old_member_id: str,
                              new_member_id: str) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        """Give the static member ``old_member_id`` the id ``new_member_id``, keeping its place,
        its metadata and its assignment; returns (old, new). The caller fences the old id's
        pending requests (returned on the old member)."""
        old = self.members[old_member_id]
        new = ClassicGroupMember(new_member_id, old.instance_id, old.client_id, old.client_host,
                                 old.rebalance_timeout_ms, old.session_timeout_ms,
                                 old.protocol_type, old.protocols, old.assignment)
        if old.awaiting_join is not None:
            self.num_awaiting_join -= 1
        self.members = {(new_member_id if mid == old_member_id else mid):
                        (new if mid == old_member_id else m) for mid, m in self.members.items()}
        self.members_version += 1
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return old, new

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else elect the first member that did; False when the
        group has no leader or no member rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                log.info("[%s] leader %s did not rejoin in time; member %s is the new leader",
                         self.group_id, self.leader_id, m.member_id)
                self.leader_id = m.member_id
                return True
        return False

    def init_next_generation(self, now: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(_S.COMPLETING_REBALANCE, now)
        else:
            self.protocol_name = None
            self.transition_to(_S.EMPTY, now)
        self.pending_sync_members.clear()

    def _count_protocols(self, member: ClassicGroupMember, delta: int) -> None:
        counts = self.supported_protocols
        for name in member.protocol_names():
            n = counts.get(name, 0) + delta
            if n:
                counts[name] = n
            else:
                counts.pop(name, None)


__all__ = ["CONSUMER_PROTOCOL_TYPE", "ClassicGroup", "ClassicGroupMember", "ClassicGroupState",
           "Waiter", "subscribed_topics"]

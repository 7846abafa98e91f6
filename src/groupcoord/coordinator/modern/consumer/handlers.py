"""Consumer groups on the KIP-848 protocol: the handlers, replay and timers of the group type.

Implements KIP-848's "ConsumerGroupHeartbeat API", "Static Membership", "Group Epoch - Trigger
a rebalance", "Assignment Epoch - Compute the group assignment", "Member Epoch -
Reconciliation", "Fail Over" and "ConsumerGroupDescribe API", with these choices where the
spec's diff text leaves two readings:

- A heartbeat with epoch != 0 for a group that does not exist answers UNKNOWN_MEMBER_ID (as
  Kafka 4.x; librdkafka treats GROUP_ID_NOT_FOUND in a heartbeat as fatal).
- FENCED_MEMBER_EPOCH removes the member from the group (spec, request handling step 3), so
  the member's rejoin at epoch 0 finds no member and joins afresh. A join at epoch 0 under a
  member id the group has at a later epoch (not the lost-response case) is a stale duplicate of
  an earlier join: FENCED_MEMBER_EPOCH and nothing changes (as upstream); the member's answer
  to its own request in flight stands. Only a member using the classic protocol joining on the
  new one (online migration, below) is fenced and re-added in the same request.
- The lost-response case: a smaller epoch equal to the member's previous epoch is accepted
  when the owned partitions it reports are a subset of its assigned partitions.
- SubscribedTopicNames and SubscribedTopicRegex may both be set in one request (the member
  subscribes to their union, as Kafka 4.3 accepts; see ``_validate_heartbeat``), and a name may
  be empty (it matches no topic); on a join (epoch 0) at least one of them must be non-null.
- A static member replaced by a new member id (after a temporary leave, epoch -2) hands its
  current and target assignment to the new id without a group epoch bump, unless the new
  member's subscription differs.
- The rebalance timeout is armed while a member is in UNREVOKED_PARTITIONS, afresh for each
  epoch at which it must revoke; when it fires, the member is fenced.
- Client-side assignment (KIP-848 "Client-Side Assignor", ``modern/client_assignment.py`` and
  ``modern/consumer/client_assignment.py``): a group whose members all advertise client
  assignors gets its target from a chosen member (PrepareAssignment / InstallAssignment), not
  from a server assignor; a change of a member's client assignors (list, ranges, reason, version
  or metadata) bumps the group epoch.
- Regular expressions (KIP-848 "Regex Based Subscription", as Kafka 4 resolves them:
  ``GroupMetadataManager.maybeUpdateRegularExpressions`` / ``refreshRegularExpressions``): a
  group's regexes are resolved together, by a heartbeat of one of its members, with that
  heartbeat's principal: a regex covers the matching topics that principal may DESCRIBE
  (``subscription.resolve_regexes``). The resolution is recorded (ConsumerGroupRegularExpression,
  one record per regex, a tombstone once no member subscribes to it) and the group epoch is
  bumped when it changes. A heartbeat resolves again when a member brings a regex the group has
  not resolved, when topics were created since the last resolution, when
  ``group.consumer.regex.refresh.interval.ms`` (default 10 minutes) has passed since it, and
  after a load (fail-over). So a change of ACLs alone reaches a group at its next resolution,
  as in Kafka. Kafka resolves on an executor and never twice within 10 s; ours resolves in the
  heartbeat itself and has no such floor: the triggers above are rare, and the first heartbeat
  after a new topic picks it up. A regex that resolves to nothing (nothing matches, or nothing
  the principal may describe) is no error: the member gets an empty assignment.
- Online migration (KIP-848, ``modern/consumer/migration.py``, ``modern/consumer/classic_members.py``): a
  heartbeat at epoch 0 for a non-empty classic group of protocol type ``consumer`` converts it when
  ``group.consumer.migration.policy`` allows the upgrade (else GROUP_ID_NOT_FOUND, as before);
  the conversion is written even if the joining member is then refused (e.g.
  GROUP_MAX_SIZE_REACHED): the group keeps working with its classic members. A static member
  joining with the instance id of a member that uses the classic protocol replaces it at once
  (upstream: no temporary leave needed when either side uses the classic protocol). Removing
  members (leave, session or rebalance timeout, classic LeaveGroup) converts the group back to a
  classic group when only classic members remain and the policy allows the downgrade; a member
  fenced for a wrong epoch in a heartbeat never triggers it (it rejoins at once).

The heartbeat, leave, fence, upgrade/downgrade and reconciliation-write flow is the one every
new-protocol group type shares (``modern/group_manager.py``'s ``NewProtocolGroupManager``,
connect groups use it too); this module supplies the consumer group's records, request validation,
subscription metadata and server-side target assignment, and what its heartbeat and describe answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from uuid import UUID

from groupcoord.coordinator.assignors.base import PartitionAssignor
from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.config import CoordinatorConfig, GroupConfig
from groupcoord.coordinator.modern.consumer.assignment_epochs import carried_epochs
from groupcoord.coordinator.modern.consumer.classic_members import ClassicMembers
from groupcoord.coordinator.modern.consumer.client_assignment import ConsumerClientAssignment
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    HeartbeatAssignment,
    TopicPartitions,
)
from groupcoord.coordinator.modern.consumer.migration import (
    MigrationError,
    Upgrade,
    classic_to_consumer,
    consumer_to_classic,
    current_assignment_value,
    downgrade_refusal,
    member_metadata_value,
    upgrade_refusal,
)
from groupcoord.coordinator.modern.consumer.model import (
    EMPTY,
    NO_EPOCHS,
    ConsumerGroup,
    ConsumerGroupMember,
    joining,
    with_current_assignment,
)
from groupcoord.coordinator.modern.consumer.reconciliation import reconcile
from groupcoord.coordinator.modern.consumer.target_assignment import (
    preferred_server_assignor,
    target_assignment_records,
)
from groupcoord.coordinator.modern.group_manager import NewProtocolGroupManager
from groupcoord.coordinator.modern.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
)
from groupcoord.coordinator.modern.subscription import (
    compile_regex,
    resolve_regexes,
    subscribed_topics,
)
from groupcoord.coordinator.records import (
    Assignment,
    ClassicGroupMetadataValue,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    MemberKey,
    Record,
    RecordType,
    RegexKey,
    current_assignment_record,
    current_assignment_tombstone,
    group_epoch_record,
    group_epoch_tombstone,
    member_metadata_record,
    member_metadata_tombstone,
    partition_metadata_record,
    partition_metadata_tombstone,
    regex_record,
    regex_tombstone,
    target_assignment_metadata_record,
    target_assignment_metadata_tombstone,
    target_member_record,
    target_member_tombstone,
)
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

SESSION = "session"
REBALANCE = "rebalance"

_E = ErrorCode

CONSUMER_RECORD_TYPES = (
    RecordType.CONSUMER_GROUP_METADATA,
    RecordType.CONSUMER_GROUP_PARTITION_METADATA,
    RecordType.CONSUMER_GROUP_MEMBER_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
)


def _err(code: ErrorCode, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


def _topic_order(kv: tuple[UUID, frozenset[int]]) -> int:
    return kv[0].int  # the order of the topic ids' bytes (big-endian), without building them


def _sorted_tps(a: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(a.items(), key=_topic_order) if ps)


def _same_assignment(a: Assignment, b: Assignment) -> bool:
    """Whether two assignments hold the same partitions (empty topics ignored): equal mappings
    compare set by set, and a converged member shares its target's sets, so this is cheap."""
    if a is b or a == b:
        return True
    return {t: ps for t, ps in a.items() if ps} == {t: ps for t, ps in b.items() if ps}


def _minus(a: Assignment, b: Assignment) -> dict[UUID, frozenset[int]]:
    out = {}
    for t, ps in a.items():
        rest = ps - b.get(t, frozenset())
        if rest:
            out[t] = rest
    return out


class ConsumerGroupManager(NewProtocolGroupManager[ConsumerGroup, ConsumerGroupMember,
                                                   ConsumerGroupHeartbeatRequest,
                                                   ConsumerGroupHeartbeatResponse]):
    """The consumer group type of one shard: registers its handlers, records and timers."""

    group_class = ConsumerGroup
    response_class = ConsumerGroupHeartbeatResponse
    session_kind = SESSION
    metadata_record_type = RecordType.CONSUMER_GROUP_METADATA
    rebalance_kind = REBALANCE
    noun = "member"
    group_noun = "consumer group"
    left_group = "the consumer group"
    keeps_departed_targets = False
    forgets_classic_first = False

    def __init__(self, shard: ShardContext) -> None:
        self.shard = shard
        shard.register_handler(ConsumerGroupHeartbeatRequest, self._heartbeat)
        shard.register_handler(ConsumerGroupDescribeRequest, self._consumer_group_describe)
        for rtype in CONSUMER_RECORD_TYPES:
            shard.register_replayer(rtype, self.replay)
        shard.register_timer(SESSION, self._session_expired)
        shard.register_timer(REBALANCE, self._rebalance_timed_out)
        # Client-side assignment (KIP-848 "Client-Side Assignor"): Prepare/InstallAssignment handlers,
        # assigner deadlines.
        self.client = ConsumerClientAssignment(shard)
        # Online migration (KIP-848 "Supporting Online Consumer Group Upgrade"): classic members inside
        # consumer groups.
        self.classic_members = self.classic_bridge = ClassicMembers(self)
        # Regular expressions (module docstring), soft state as Kafka's: bumped when a topic
        # image brings new names; per group, (that count, time) of its last resolution.
        self._new_topics_seen = 0
        self._topic_names: frozenset[str] = frozenset()
        self._regexes_resolved: dict[str, tuple[int, int]] = {}

    # ------------------------------------------------------------------ shard plumbing

    @property
    def config(self) -> CoordinatorConfig:
        return self.shard.config

    @property
    def metadata(self) -> MetadataImage:
        return self.shard.metadata

    @property
    def assignors(self) -> Mapping[str, PartitionAssignor]:
        return self.shard.assignors

    def group_config(self, group_id: str) -> GroupConfig:
        return self.shard.group_config(group_id)

    # ------------------------------------------------------------------ replay

    def replay(self, record: Record) -> None:
        group: ConsumerGroup | None = self._replay_group(record)
        if group is None:
            return
        key = record.key
        value = record.value
        rtype = key.type
        if rtype is RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
            assert isinstance(key, RegexKey)
            if value is None:
                group.resolved_regexes.pop(key.regex, None)
            else:
                assert isinstance(value, ConsumerGroupRegularExpressionValue)
                group.resolved_regexes[key.regex] = frozenset(value.topic_names)
        elif rtype is RecordType.CONSUMER_GROUP_PARTITION_METADATA:
            group.subscription_metadata = (
                {} if value is None else {t.name: t for t in value.topics})  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = 0 if value is None else value.assignment_epoch  # type: ignore[union-attr]
            group.assignment_timestamp_ms = (
                0 if value is None else value.assignment_timestamp_ms)  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            assert isinstance(key, MemberKey)
            if value is None:
                group.remove_target(key.member_id)
            else:
                group.set_target(key.member_id, value.partitions)  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_MEMBER_METADATA:
            assert isinstance(key, MemberKey)
            if value is None:
                group.remove_member(key.member_id)
                return
            v: ConsumerGroupMemberMetadataValue = value  # type: ignore[assignment]
            existing = group.members.get(key.member_id)
            old = existing or ConsumerGroupMember(key.member_id)
            share = group.shared
            group.put_member(replace(
                old, instance_id=v.instance_id, rack_id=v.rack_id,
                client_id=share(v.client_id, "client_id", existing),
                client_host=share(v.client_host, "client_host", existing),
                subscribed_topic_names=share(v.subscribed_topic_names, "subscribed_topic_names",
                                             existing),
                subscribed_topic_regex=v.subscribed_topic_regex, server_assignor=v.server_assignor,
                rebalance_timeout_ms=v.rebalance_timeout_ms, client_assignors=v.client_assignors,
                classic=v.classic_member))
        elif rtype is RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            assert isinstance(key, MemberKey)
            old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
            if value is None:
                group.put_member(with_current_assignment(
                    old, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, MemberState.STABLE,
                    EMPTY, EMPTY))
                return
            a: ConsumerGroupCurrentMemberAssignmentValue = value  # type: ignore[assignment]
            assigned = a.assigned_partitions
            target = group.target_assignment.get(key.member_id)
            if not assigned:
                assigned = EMPTY
            elif target is not None and assigned is not target and assigned == target:
                # a converged member read back from the log: its target's mapping, not a copy
                assigned = target
            group.put_member(with_current_assignment(
                old, a.member_epoch, a.previous_member_epoch, MemberState(a.state),
                assigned, a.partitions_pending_revocation or EMPTY,
                a.assignment_epochs or NO_EPOCHS))

    # ------------------------------------------------------------------ timers and lifecycle

    def on_metadata_update(self) -> None:
        """A new topic image: bump the epoch of every group whose subscribed topics changed."""
        names = self.metadata.by_name.keys()
        if not names <= self._topic_names:  # new topics: regexes are resolved again
            self._new_topics_seen += 1
        self._topic_names = frozenset(names)
        for gid in sorted(self.shard.groups):
            group = self.shard.groups[gid]
            if isinstance(group, ConsumerGroup) and group.members:
                self._maybe_update_subscription_metadata(group, force_bump=False)

    def _on_group_loaded(self, group: ConsumerGroup) -> None:
        """Load duties ("Fail Over") besides the timers: re-check metadata and regexes, compute
        a pending target assignment."""
        if group.members:
            self._maybe_update_subscription_metadata(group, force_bump=False)
            if group.group_epoch > group.assignment_epoch:
                self._compute_target_assignment(group, dict(group.members),
                                                dict(group.target_assignment))

    def delete_group(self, group: ConsumerGroup) -> None:
        """Tombstones for an empty consumer group (its offsets are the shard's business)."""
        gid = group.group_id
        self.client.forget(gid)  # drop the group's client-side assignment soft state
        for mid in sorted(group.target_assignment):
            self.append(target_member_tombstone(gid, mid))
        self.append(target_assignment_metadata_tombstone(gid))
        self.append(partition_metadata_tombstone(gid))
        for rx in sorted(group.resolved_regexes):
            self.append(regex_tombstone(gid, rx))
        self._regexes_resolved.pop(gid, None)
        self.append(group_epoch_tombstone(gid))

    # ------------------------------------------------------------------ heartbeat

    def _validate_heartbeat(self, r: ConsumerGroupHeartbeatRequest) -> None:
        """ConsumerGroupHeartbeat "Request Validation" as Kafka 4.3 ships it
        (``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``), in its order
        and with its messages, then the KIP-848 client-assignor rules Kafka never shipped.

        Where the KIP-848 text is stricter than Kafka, clients are written against Kafka, so we
        accept what Kafka accepts:

        - RebalanceTimeoutMs is checked on a join (epoch 0) only, and there only -1 ("not
          provided") is refused. A leave (-1, -2) or a steady heartbeat carries whatever the
          client sends: @platformatic/kafka leaves with 0. A non-positive value never replaces
          the member's timeout (``_apply_request``); a member that joined with 0 has no time to
          revoke, as upstream.
        - SubscribedTopicNames and SubscribedTopicRegex may both be set (the member subscribes
          to their union) and a name may be empty (it matches no topic).
        - MemberId is required from v1 on, and below v1 whenever the epoch is above 0 or -1.
        """
        # (a null InstanceId or RackId is fine; an empty or blank one is not)
        epoch = r.member_epoch
        if (r.version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) \
                and (not r.member_id or not r.member_id.strip()):
            raise _err(_E.invalid_request, "MemberId can't be empty.")
        if not r.group_id or not r.group_id.strip():
            raise _err(_E.invalid_request, "GroupId can't be empty.")
        if r.instance_id is not None and not r.instance_id.strip():
            raise _err(_E.invalid_request, "InstanceId can't be empty.")
        if r.rack_id is not None and not r.rack_id.strip():
            raise _err(_E.invalid_request, "RackId can't be empty.")
        if epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise _err(_E.invalid_request,
                           "RebalanceTimeoutMs must be provided in first request.")
            if r.topic_partitions is None or len(r.topic_partitions) != 0:
                raise _err(_E.invalid_request, "TopicPartitions must be empty when (re-)joining.")
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise _err(_E.invalid_request, "Either SubscribedTopicNames or "
                                               "SubscribedTopicRegex must be non-null when "
                                               "(re-)joining.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if r.instance_id is None:
                raise _err(_E.invalid_request, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _err(_E.invalid_request, "MemberEpoch is invalid.")
        if r.subscribed_topic_regex:
            compile_regex(r.subscribed_topic_regex)
        if r.server_assignor is not None and r.client_assignors:
            raise _err(_E.invalid_request, "ServerAssignor and ClientAssignors cannot be used together.")
        for a in r.client_assignors or ():
            if not a.name or not a.name.strip():
                raise _err(_E.invalid_request, "Assignor.Name must be non-empty.")
            if a.minimum_version < -1:
                raise _err(_E.invalid_request, "Assignor.MinimumVersion must be >= -1.")
            if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
                raise _err(_E.invalid_request,
                           "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion.")
            if not a.minimum_version <= a.version <= a.maximum_version:
                raise _err(_E.invalid_request, "Assignor.Version must be within "
                                               "[Assignor.MinimumVersion, Assignor.MaximumVersion].")
        if r.server_assignor is not None and (
                r.server_assignor not in self.config.consumer_assignors
                or r.server_assignor not in self.assignors):
            raise _err(_E.unsupported_assignor,
                       f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                       f"{', '.join(self.config.consumer_assignors)}.")

    def _replaces_at_once(self, group: ConsumerGroup, member_id: str,
                          r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupMember | None:
        # Online migration: a static member that used the classic protocol is replaced at once.
        assert r.instance_id is not None
        static = group.static_member(r.instance_id)
        if static is not None and static.classic is not None and static.member_id != member_id:
            return static
        return None

    def _refuses_classic(self, existing: ConsumerGroupMember,
                         r: ConsumerGroupHeartbeatRequest) -> bool:
        # Online migration: a classic member joining (epoch 0) on the new protocol is fenced and rejoins.
        return r.member_epoch != 0

    def _downgrades_when_fenced(self, r: ConsumerGroupHeartbeatRequest) -> bool:
        return False  # a member fenced for its epoch rejoins at once

    def _fenced_epoch_message(self, r: ConsumerGroupHeartbeatRequest,
                              existing: ConsumerGroupMember) -> str:
        return (f"The consumer group member has a "
                f"{'greater' if r.member_epoch > existing.member_epoch else 'smaller'} "
                f"member epoch ({r.member_epoch}) than the one known by the group "
                f"coordinator ({existing.member_epoch}). The member must abandon all its "
                f"partitions and rejoin.")

    def _reports_subset(self, member: ConsumerGroupMember,
                        r: ConsumerGroupHeartbeatRequest) -> bool:
        if r.topic_partitions is None:
            return False
        assigned = member.assigned_partitions
        for tp in r.topic_partitions:
            ps = assigned.get(tp.topic_id)
            if ps is None and tp.partitions:
                return False
            if ps is not None and not ps.issuperset(tp.partitions):
                return False
        return True

    def _replacement(self, member_id: str,
                     replaced: ConsumerGroupMember | None) -> ConsumerGroupMember:
        if replaced is not None:
            return ConsumerGroupMember(member_id, assigned_partitions=replaced.assigned_partitions)
        return ConsumerGroupMember(member_id)

    def _apply_request(self, m: ConsumerGroupMember, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupMember:
        """The member with the request's non-null fields applied (null = unchanged)."""
        changes: dict[str, Any] = {}
        if r.instance_id is not None and r.instance_id != m.instance_id:
            changes["instance_id"] = r.instance_id
        if r.rack_id is not None and r.rack_id != m.rack_id:
            changes["rack_id"] = r.rack_id
        if r.rebalance_timeout_ms > 0 and r.rebalance_timeout_ms != m.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = r.rebalance_timeout_ms
        if r.server_assignor is not None and r.server_assignor != m.server_assignor:
            changes["server_assignor"] = r.server_assignor
        if r.client_assignors is not None and r.client_assignors != m.client_assignors:
            changes["client_assignors"] = r.client_assignors
        if r.subscribed_topic_names is not None:
            names = tuple(sorted(set(r.subscribed_topic_names)))
            if names != m.subscribed_topic_names:
                changes["subscribed_topic_names"] = names
            if r.subscribed_topic_regex is None and m.subscribed_topic_regex and names:
                changes["subscribed_topic_regex"] = None
        if r.subscribed_topic_regex is not None:
            regex = r.subscribed_topic_regex or None
            if regex != m.subscribed_topic_regex:
                changes["subscribed_topic_regex"] = regex
            if regex and r.subscribed_topic_names is None and m.subscribed_topic_names:
                changes["subscribed_topic_names"] = ()
        if r.client_id != m.client_id:
            changes["client_id"] = r.client_id
        if r.client_host != m.client_host:
            changes["client_host"] = r.client_host
        return replace(m, **changes) if changes else m

    def _inputs_changed(self, updated: ConsumerGroupMember, reference: ConsumerGroupMember) -> bool:
        return (updated.subscribed_topic_names != reference.subscribed_topic_names
                or updated.subscribed_topic_regex != reference.subscribed_topic_regex
                or updated.server_assignor != reference.server_assignor
                # client-side assignment: a changed client assignor (reason, metadata, ...) asks for a
                # rebalance
                or updated.client_assignors != reference.client_assignors)

    def _handover_record(self, group: ConsumerGroup, member_id: str,
                         replaced: ConsumerGroupMember) -> Record:
        return target_member_record(group.group_id, member_id, group.target_of(replaced.member_id))

    def _metadata_value(self, m: ConsumerGroupMember) -> ConsumerGroupMemberMetadataValue:
        return member_metadata_value(m)

    def _member_metadata_record(self, group_id: str, m: ConsumerGroupMember) -> Record:
        return member_metadata_record(group_id, m.member_id, member_metadata_value(m))

    def _bump(self, group: ConsumerGroup) -> None:
        # a new member or a changed subscription: the subscribed topics may differ too
        self._maybe_update_subscription_metadata(group, force_bump=True)

    def _request_target(self, group: ConsumerGroup) -> None:
        """KIP-848 "Target Assignment": a heartbeat that finds the group epoch ahead of the
        target computes a new one, at most once per ``group.consumer.assignment.interval.ms``
        counted from the end of the last computation (Kafka 4.3's assignment batching,
        GroupMetadataManager's maybeUpdateTargetAssignment; the end is the time
        TargetAssignmentBuilder stamps, :meth:`Shard.finished_at` here):
        within the interval the heartbeat goes on with the current target, and a later
        heartbeat of any member computes the target for every epoch bump since. A join storm
        of N members then costs one assignor run per interval instead of N. The first target
        of a group (none recorded) is computed at once; so is every target of a group using a
        client-side assignor (the chosen member computes it)."""
        if group.group_epoch <= group.assignment_epoch:
            return
        interval = self.config.consumer_assignment_interval_ms
        if (interval > 0 and group.assignment_timestamp_ms > 0
                and self.shard.now < group.assignment_timestamp_ms + interval
                and self.client.assignor(group) is None):
            return
        self._compute_target_assignment(group, dict(group.members),
                                        dict(group.target_assignment))

    def _joining(self, current: ConsumerGroupMember,
                 base: ConsumerGroupMember) -> ConsumerGroupMember:
        return joining(current, base.assigned_partitions)

    def _owned(self, r: ConsumerGroupHeartbeatRequest) -> tuple[TopicPartitions, ...] | None:
        return r.topic_partitions

    def _heartbeat_assignment(self, group: ConsumerGroup, r: ConsumerGroupHeartbeatRequest,
                              existing: ConsumerGroupMember | None,
                              reconciled: ConsumerGroupMember) -> HeartbeatAssignment | None:
        """The response's assignment, as Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``
        decides: on a join (epoch 0), on a *full* request (RebalanceTimeoutMs, a subscription
        (names or regex) and TopicPartitions all set: what a client sends after an error), or
        when the member's assigned partitions changed; otherwise none (null). A heartbeat that
        only reports what the member owns (an acknowledgement) gets none when nothing changed:
        the member already has it (a join storm's acknowledgements would otherwise carry every
        member's partitions back once more). One addition to Kafka's rule: a request at the
        member's previous epoch (the lost-response case, accepted when its owned partitions are
        a subset of its assignment) gets the assignment too, full or not: the member evidently
        missed the response that moved it on (Kafka's clients resend a full request then, which
        gets it anyway)."""
        before = existing.assigned_partitions if existing is not None else None
        full = (r.member_epoch == 0
                or (existing is not None and r.member_epoch != existing.member_epoch)
                or (r.rebalance_timeout_ms != -1 and r.topic_partitions is not None
                    and (r.subscribed_topic_names is not None
                         or r.subscribed_topic_regex is not None)))
        if not (full or before != reconciled.assigned_partitions):
            return None
        pending: tuple[TopicPartitions, ...] = ()
        if reconciled.state is MemberState.UNRELEASED_PARTITIONS:
            pending = _sorted_tps(_minus(group.target_of(reconciled.member_id),
                                         reconciled.assigned_partitions))
        return HeartbeatAssignment(
            _sorted_tps(reconciled.assigned_partitions),
            pending)

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   owned: tuple[TopicPartitions, ...] | None) -> ConsumerGroupMember:
        epoch = group.assignment_epoch
        if member.member_epoch < 0 or member.is_reconciled_to(epoch):
            return member
        updated = reconcile(member, epoch, group.target_of(member.member_id), group.owner_of, owned,
                            group.owners.get)
        if updated is not member:
            self._write_current_assignment(group, updated)
        return updated

    def _current_assignment_record(self, group_id: str, m: ConsumerGroupMember) -> Record:
        value = current_assignment_value(m)
        # KIP-1251: the epoch at which it got each partition it holds
        group = self.shard.groups.get(group_id)
        old = group.members.get(m.member_id) if isinstance(group, ConsumerGroup) else None
        value.assignment_epochs = carried_epochs(old, m) or None
        return current_assignment_record(group_id, m.member_id, value)

    def _temporary_leave_record(self, group_id: str, member: ConsumerGroupMember) -> Record:
        value = ConsumerGroupCurrentMemberAssignmentValue(
            # Nothing is pending revocation any more: the member keeps its assigned
            # partitions, and no rebalance timeout applies to it.
            LEAVE_GROUP_STATIC_MEMBER_EPOCH, member.member_epoch, int(MemberState.STABLE),
            member.assigned_partitions, {})
        kept = with_current_assignment(member, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                       member.member_epoch, MemberState.STABLE,
                                       member.assigned_partitions, {})
        value.assignment_epochs = carried_epochs(member, kept) or None
        return current_assignment_record(group_id, member.member_id, value)

    # ------------------------------------------------------------------ remove, fence, migrate

    def _removal_records(self, group: ConsumerGroup, member_id: str,
                         keep_target: bool) -> list[Record]:
        gid = group.group_id
        records = [current_assignment_tombstone(gid, member_id)]
        if not keep_target and member_id in group.target_assignment:
            records.append(target_member_tombstone(gid, member_id))
        records.append(member_metadata_tombstone(gid, member_id))
        return records

    def _after_removal(self, group: ConsumerGroup) -> None:
        self._maybe_update_subscription_metadata(group, force_bump=True)

    def _downgrade_refusal(self, group: ConsumerGroup, leaving: set[str]) -> str | None:
        return downgrade_refusal(group, leaving, self.config)

    def _to_classic(self, group: ConsumerGroup, leaving: set[str]) -> ClassicGroupMetadataValue:
        return consumer_to_classic(group, leaving, self.metadata, self.shard.now)

    def _upgrade_refusal(self, classic: ClassicGroup) -> str | None:
        return upgrade_refusal(classic, self.config)

    def _convert_classic(self, classic: ClassicGroup) -> Upgrade:
        return classic_to_consumer(classic, self.metadata)

    def _malformed(self, e: MigrationError) -> str:
        return f"its embedded consumer protocol is malformed ({e})"

    def _log_upgrade(self, classic: ClassicGroup, upgrade: Upgrade) -> None:
        log.info("[%s] upgrading the classic group at generation %d to a consumer group",
                 classic.group_id, classic.generation_id)

    # ------------------------------------------------------------------ target assignment

    def _refresh_subscriptions(self, group: ConsumerGroup, r: ConsumerGroupHeartbeatRequest,
                               now: int) -> bool:
        """Resolve the group's regular expressions with this heartbeat's principal when they
        are due (module docstring, "Regular expressions"); True if a resolution changed."""
        regexes = group.subscribed_regexes
        if not regexes:
            return False
        gid = group.group_id
        last = self._regexes_resolved.get(gid)
        if (last is not None and last[0] == self._new_topics_seen
                and now <= last[1] + self.config.consumer_regex_refresh_interval_ms
                and all(rx in group.resolved_regexes for rx in regexes)):
            return False
        resolved = resolve_regexes(sorted(regexes), self.metadata, r.describable_topics)
        self._regexes_resolved[gid] = (self._new_topics_seen, now)
        changed = False
        for rx in sorted(resolved):
            if group.resolved_regexes.get(rx) != resolved[rx]:
                self.append(regex_record(gid, rx, resolved[rx], now))
                log.info("[%s] regular expression %r resolved for member %s to %d topics", gid,
                         rx, r.member_id, len(resolved[rx]))
                changed = True
        return changed

    def _maybe_update_subscription_metadata(self, group: ConsumerGroup, force_bump: bool) -> None:
        """Recompute the subscribed topics' metadata (a regex: its recorded resolution); bump the
        epoch when it or ``force_bump``. Resolutions of regexes no member subscribes to any
        more are deleted."""
        gid = group.group_id
        for rx in sorted(group.resolved_regexes):
            if rx not in group.subscribed_regexes:
                self.append(regex_tombstone(gid, rx))
        metadata: dict[str, TopicMetadata] = subscribed_topics(
            group.subscribed_names, None, self.metadata)
        by_name = self.metadata.by_name
        for rx in sorted(group.subscribed_regexes):
            for n in group.resolved_regexes.get(rx, ()):
                t = by_name.get(n)
                if t is not None:
                    metadata[n] = t
        bump = force_bump
        if metadata != group.subscription_metadata:
            self.append(partition_metadata_record(group.group_id, metadata))
            bump = True
        if bump:
            self.append(group_epoch_record(group.group_id, group.group_epoch + 1))
            log.info("[%s] bumped group epoch to %d", group.group_id, group.group_epoch)

    def _compute_target_assignment(self, group: ConsumerGroup,
                                   members: dict[str, ConsumerGroupMember],
                                   previous: dict[str, Assignment]) -> None:
        # Client-side assignment (KIP-848 "Client-Side Assignor"): a group whose members all advertise a
        # common client assignor asks a chosen member for its target instead of running a server assignor.
        if self.client.assignor(group) is not None:
            self.client.request(group)
            return
        self.client.cancel(group.group_id)
        default = self.config.consumer_assignors[0]
        name = preferred_server_assignor(members.values(), default)
        assignor = self.assignors[name]
        batching = self.config.consumer_assignment_interval_ms > 0
        _, records = target_assignment_records(group, members, previous, group.group_epoch,
                                               assignor, self.shard.now if batching else 0)
        if batching and records:
            # Kafka's TargetAssignmentBuilder stamps the time the computation *finished*, and
            # the next one waits the interval from there (the runtime's clock; the event's time
            # where computing takes no time). Without batching records stay as they were (0).
            last = records[-1]
            if last.key.type is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA \
                    and isinstance(last.value, ConsumerGroupTargetAssignmentMetadataValue):
                records[-1] = target_assignment_metadata_record(
                    group.group_id, last.value.assignment_epoch, self.shard.finished_at())
        for rec in records:
            self.append(rec)

    def _consumer_group_describe(self, r: ConsumerGroupDescribeRequest,
                                 now: int) -> ConsumerGroupDescribeResponse:
        out = []
        for gid in r.group_ids:
            if not gid:  # as Kafka's GroupCoordinatorService: INVALID_GROUP_ID for that group
                out.append(DescribedGroup(gid, _E.invalid_group_id, "The group id can't be empty."))
                continue
            try:
                group = self._group(gid)
            except CoordinatorError as e:  # a group of another type: an error for that group
                out.append(DescribedGroup(gid, e.code, e.message))
                continue
            if group is None:
                out.append(DescribedGroup(gid, _E.group_id_not_found,
                                          f"Group {gid} not found."))
                continue
            default = self.config.consumer_assignors[0]
            members = []
            for mid in sorted(group.members):
                m = group.members[mid]
                # A converged member's target is its assignment, described once.
                assigned = DescribedAssignment(_sorted_tps(m.assigned_partitions))
                target = group.target_of(mid)
                members.append(DescribedMember(
                    member_id=mid, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=assigned,
                    target_assignment=(assigned if _same_assignment(target, m.assigned_partitions)
                                       else DescribedAssignment(_sorted_tps(target))),
                    member_type=0 if m.classic is not None else 1))  # 0 = classic (online migration)
            out.append(DescribedGroup(
                gid, group_state=group.state().value, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                # the client-side assignor when the group uses one
                assignor_name=(self.client.assignor(group)
                               or preferred_server_assignor(group.members.values(), default)),
                members=tuple(members)))
        return ConsumerGroupDescribeResponse(tuple(out))

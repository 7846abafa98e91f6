"""Online migration between classic consumer groups and consumer groups (KIP-848 "Supporting Online Consumer
Group Upgrade").

KIP-848 "Supporting Online Consumer Group Upgrade" and "Kafka Consumer Migration": when the first
member using the new protocol joins a classic group of protocol type ``consumer``, the group is
converted to a consumer group whose epoch starts at the classic generation; when the last
new-protocol member leaves and the remaining (classic) members fit a classic group, it is
converted back. ``group.consumer.migration.policy`` (bidirectional, upgrade, downgrade,
disabled) allows either direction; empty groups always convert (handled by the managers, which
delete an empty group of the other type).

The policy checks and the classic group value are the shared rules of ``modern/migration.py``
(connect groups use them too), with :data:`CONSUMER_MIGRATION`. This module is pure: it turns one
group into the records (or the record value) of the other type and says whether a conversion is
allowed. The managers (``modern/consumer/handlers.py``, ``classic/handlers.py``) append them, move timers
and answer pending requests.

Upgrade (classic -> consumer), as upstream's ``ConsumerGroup.fromClassicGroup``: every member of
the classic group's live view becomes a consumer-group member at member epoch = previous member
epoch = generation, STABLE, carrying its classic metadata (session timeout, supported
protocols); its subscription (topics, rack) is decoded from its metadata for the selected
protocol (else its first protocol), its assigned partitions from its current classic assignment
(ConsumerProtocolAssignment; topics unknown to the metadata image and partition ids out of
range are dropped, and a partition claimed by two members stays with the first, so invariant I1
holds). The target assignment is that same assignment at epoch = generation. Malformed embedded
protocol bytes refuse the upgrade (upstream answers GROUP_ID_NOT_FOUND).

Downgrade (consumer -> classic), as upstream's ``ClassicGroup.fromConsumerGroup``: generation =
group epoch, protocol type ``consumer``, the protocol chosen by the classic vote among the
protocols every remaining member supports, the first member (by member id) as leader, each
member's *current* assigned partitions encoded as its assignment (upstream encodes the target
assignment; the current one never gives a partition to two members while a reconciliation is
under way). The caller then starts a classic rebalance.

A classic static member replacing the last new-protocol static member also downgrades
(``modern/consumer/classic_members.py``; ``leaving`` is then empty: the joiner already took the replaced
member's place). Not implemented: custom client-side assignors during a migration (the spec's
version ``-1`` of the assignor metadata).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.classic.model import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern import migration as gm
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.modern.migration import (
    DOWNGRADE_POLICIES,
    UPGRADE_POLICIES,
    MigrationError,
    classic_metadata,
)
from groupcoord.coordinator.modern.subscription import subscribed_topics
from groupcoord.coordinator.records import (
    Assignment,
    ClassicGroupMetadataValue,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    Record,
    classic_group_metadata_tombstone,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    partition_metadata_record,
    target_assignment_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.consumer_protocol import (
    LATEST_VERSION,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)

#: Consumer groups as the shared migration rules (``modern/migration.py``) speak of them.
CONSUMER_MIGRATION = gm.MigrationKind(
    setting="group.consumer.migration.policy", config_field="consumer_migration_policy",
    protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_noun="consumer protocol", noun="member",
    new_protocol_members="members using the consumer protocol")


def upgrade_enabled(config: CoordinatorConfig) -> bool:
    return CONSUMER_MIGRATION.upgrade_enabled(config)


def downgrade_enabled(config: CoordinatorConfig) -> bool:
    return CONSUMER_MIGRATION.downgrade_enabled(config)


# ---------------------------------------------------------------------- conversions of values


def names_to_ids(partitions: dict[str, list[int]], image: MetadataImage) -> dict[UUID, frozenset[int]]:
    """``{topic name: partitions}`` as an assignment by topic id; unknown topics and partition
    ids out of range are dropped."""
    out: dict[UUID, frozenset[int]] = {}
    for name, ps in partitions.items():
        t = image.by_name.get(name)
        if t is None:
            continue
        kept = frozenset(p for p in ps if 0 <= p < t.num_partitions)
        if kept:
            out[t.topic_id] = kept
    return out


def ids_to_names(a: Assignment, image: MetadataImage) -> dict[str, list[int]]:
    """An assignment by topic id as ``{topic name: sorted partitions}`` (topics the image no
    longer has are dropped)."""
    out: dict[str, list[int]] = {}
    for tid, ps in a.items():
        t = image.by_id.get(tid)
        if t is not None and ps:
            out[t.name] = sorted(ps)
    return out


def protocols_of(member: ConsumerGroupMember) -> tuple[JoinGroupProtocol, ...]:
    assert member.classic is not None
    return tuple(JoinGroupProtocol(n, m) for n, m in member.classic.supported_protocols)


def assignment_bytes(member: ConsumerGroupMember, protocol_name: str | None,
                     partitions: Assignment, image: MetadataImage) -> bytes:
    """``partitions`` encoded as the member's ConsumerProtocolAssignment, in the version of its
    subscription for ``protocol_name`` (capped at the newest we know)."""
    version = LATEST_VERSION
    if member.classic is not None:
        for name, meta in member.classic.supported_protocols:
            if name == protocol_name and len(meta) >= 2:
                version = max(0, min(int.from_bytes(meta[:2], "big", signed=True), LATEST_VERSION))
                break
    return encode_assignment(ids_to_names(partitions, image), version=version)


# ---------------------------------------------------------------------- upgrade


@dataclass(slots=True, frozen=True)
class Upgrade:
    """The consumer group a classic group becomes: its records, and its members."""

    records: list[Record]
    members: list[ConsumerGroupMember]


def upgrade_refusal(group: ClassicGroup, config: CoordinatorConfig) -> str | None:
    """Why a non-empty classic group may not become a consumer group (None: it may)."""
    return gm.upgrade_refusal(CONSUMER_MIGRATION, group, config)


def classic_to_consumer(group: ClassicGroup, image: MetadataImage) -> Upgrade:
    """The records converting ``group`` to a consumer group (the classic tombstone first).
    Raises MigrationError when a member's embedded protocol bytes do not decode."""
    gid = group.group_id
    generation = group.generation_id
    members: list[ConsumerGroupMember] = []
    held: set[tuple[UUID, int]] = set()
    for m in group.members.values():
        raw = (m.metadata(group.protocol_name) if group.protocol_name in m.protocol_names()
               else (m.protocols[0].metadata if m.protocols else b""))
        try:
            sub = decode_subscription(raw)
            current = decode_assignment(m.assignment).partitions if m.assignment else {}
        except ConsumerProtocolError as e:
            raise MigrationError(f"member {m.member_id}: {e}") from None
        assigned: dict[UUID, frozenset[int]] = {}
        for tid, ps in names_to_ids(current, image).items():
            mine = frozenset(p for p in ps if (tid, p) not in held)
            held.update((tid, p) for p in mine)
            if mine:
                assigned[tid] = mine
        members.append(ConsumerGroupMember(
            m.member_id, instance_id=m.instance_id, rack_id=sub.rack_id, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=tuple(sorted(set(sub.topics))),
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            classic=classic_metadata(m.session_timeout_ms, m.protocols),
            member_epoch=generation, previous_member_epoch=generation, state=MemberState.STABLE,
            assigned_partitions=assigned))
    names = {n for cm in members for n in cm.subscribed_topic_names}
    records = [classic_group_metadata_tombstone(gid), group_epoch_record(gid, generation),
               partition_metadata_record(gid, subscribed_topics(names, None, image))]
    for cm in members:
        records.append(member_metadata_record(gid, cm.member_id, member_metadata_value(cm)))
        records.append(target_member_record(gid, cm.member_id, cm.assigned_partitions))
        records.append(current_assignment_record(gid, cm.member_id, current_assignment_value(cm)))
    records.append(target_assignment_metadata_record(gid, generation))
    return Upgrade(records, members)


def member_metadata_value(m: ConsumerGroupMember) -> ConsumerGroupMemberMetadataValue:
    return ConsumerGroupMemberMetadataValue(
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
        m.subscribed_topic_regex, m.server_assignor, m.rebalance_timeout_ms, m.client_assignors,
        m.classic)


def current_assignment_value(m: ConsumerGroupMember) -> ConsumerGroupCurrentMemberAssignmentValue:
    return ConsumerGroupCurrentMemberAssignmentValue(
        m.member_epoch, m.previous_member_epoch, int(m.state), m.assigned_partitions,
        m.partitions_pending_revocation)


# ---------------------------------------------------------------------- downgrade


def downgrade_refusal(group: ConsumerGroup, leaving: set[str],
                      config: CoordinatorConfig) -> str | None:
    """Why ``group`` stays a consumer group once ``leaving`` are gone (None: it converts)."""
    return gm.downgrade_refusal(CONSUMER_MIGRATION, group, leaving, config)


def consumer_to_classic(group: ConsumerGroup, leaving: set[str], image: MetadataImage,
                        now: int) -> ClassicGroupMetadataValue:
    """The classic group ``group`` becomes once ``leaving`` are gone (every remaining member
    uses the classic protocol). Raises MigrationError when the members share no protocol."""
    remaining = [group.members[mid] for mid in sorted(group.members) if mid not in leaving]
    return gm.to_classic(CONSUMER_MIGRATION, group, remaining, now,
                         lambda m, protocol: assignment_bytes(m, protocol, m.assigned_partitions,
                                                              image))


__all__ = ["CONSUMER_MIGRATION", "DOWNGRADE_POLICIES", "UPGRADE_POLICIES", "MigrationError",
           "Upgrade",
           "assignment_bytes", "classic_metadata", "classic_to_consumer", "consumer_to_classic",
           "current_assignment_value", "downgrade_enabled", "downgrade_refusal", "ids_to_names",
           "member_metadata_value", "names_to_ids", "protocols_of", "upgrade_enabled",
           "upgrade_refusal"]

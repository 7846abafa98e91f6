"""Online migration between a classic group and a new-protocol group: what both group types share.

KIP-848 "Supporting Online Consumer Group Upgrade" / "Kafka Consumer Migration" (consumer groups)
and the Connect draft's "Migration To the New Protocol" (connect groups) convert a non-empty
classic group when the first member on the new protocol joins it, and convert it back when the
last one leaves and the remaining (classic) members fit a classic group. This module holds what
the two conversions share, parametrised by a :class:`MigrationKind`:

- the migration policy (``group.consumer.migration.policy``, ``group.connect.migration.policy``:
  bidirectional, upgrade, downgrade, disabled) and why a conversion is refused
  (:func:`upgrade_refusal`, :func:`downgrade_refusal`): the policy, the classic group's protocol
  type, the group size caps (``group.consumer.max.size`` for the new-protocol group,
  ``group.max.size`` for the classic one), members on the new protocol remaining;
- the classic group a new-protocol group becomes (:func:`to_classic`): generation = group epoch,
  the protocol chosen by the classic vote among the protocols every remaining member supports,
  the first remaining member (by member id) as leader, each member's metadata for that protocol
  as it last joined and the assignment its group type encodes for it.

Not here: decoding the embedded protocols and building the new-protocol group's records
(``modern/consumer/migration.py`` for consumer groups, ``modern/connect/migration.py`` for
connect groups), nor applying anything (the managers do). Pure: no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import ModernGroupMember
from groupcoord.coordinator.records import (
    ClassicGroupMemberMetadata,
    ClassicGroupMetadataValue,
    ClassicMemberMetadata,
)

UPGRADE_POLICIES = frozenset({"bidirectional", "upgrade"})
DOWNGRADE_POLICIES = frozenset({"bidirectional", "downgrade"})


class MigrationError(ValueError):
    """A group that cannot be converted (the reason is the message)."""


@dataclass(slots=True, frozen=True)
class MigrationKind:
    """One new-protocol group type as the migration speaks of it."""

    #: The policy setting (``group.consumer.migration.policy``) and its ``CoordinatorConfig`` field.
    setting: str
    config_field: str
    #: The classic protocol type of the groups it converts, and how refusals name its protocol.
    protocol_type: str
    protocol_noun: str
    #: How refusals name the members ("member", "worker") and those on the new protocol.
    noun: str
    new_protocol_members: str

    def policy(self, config: CoordinatorConfig) -> str:
        policy: str = getattr(config, self.config_field)
        return policy

    def upgrade_enabled(self, config: CoordinatorConfig) -> bool:
        return self.policy(config) in UPGRADE_POLICIES

    def downgrade_enabled(self, config: CoordinatorConfig) -> bool:
        return self.policy(config) in DOWNGRADE_POLICIES


M = TypeVar("M", bound=ModernGroupMember)


def classic_metadata(session_timeout_ms: int,
                     protocols: Iterable[JoinGroupProtocol]) -> ClassicMemberMetadata:
    """What a member using the classic protocol keeps inside a new-protocol group."""
    return ClassicMemberMetadata(session_timeout_ms, tuple((p.name, p.metadata) for p in protocols))


def upgrade_refusal(kind: MigrationKind, group: ClassicGroup, config: CoordinatorConfig) -> str | None:
    """Why a non-empty classic group may not become a group of ``kind`` (None: it may)."""
    if not kind.upgrade_enabled(config):
        return f"the online upgrade is disabled ({kind.setting}={kind.policy(config)})"
    if group.protocol_type != kind.protocol_type:
        return f"it uses protocol type {group.protocol_type!r}, not the {kind.protocol_noun}"
    if len(group.members) > config.consumer_max_size:
        return f"its {len(group.members)} members exceed group.consumer.max.size"
    return None


def downgrade_refusal(kind: MigrationKind, group: ModernGroup[Any], leaving: set[str],
                      config: CoordinatorConfig) -> str | None:
    """Why ``group`` stays a group of ``kind`` once ``leaving`` are gone (None: it converts)."""
    remaining = len(group.members) - sum(1 for mid in leaving if mid in group.members)
    if remaining <= 0:
        return "it becomes empty"
    if not group.all_classic_except(leaving):
        return f"{kind.new_protocol_members} remain"
    if not kind.downgrade_enabled(config):
        return f"the online downgrade is disabled ({kind.setting}={kind.policy(config)})"
    if remaining > config.classic_max_size:
        return f"its {remaining} members exceed group.max.size"
    return None


def to_classic(kind: MigrationKind, group: ModernGroup[Any], remaining: list[M], now: int,
               assignment: Callable[[M, str], bytes]) -> ClassicGroupMetadataValue:
    """The classic group ``group`` becomes with ``remaining`` (its members that stay, by member
    id, every one using the classic protocol); ``assignment(member, protocol)`` encodes a
    member's assignment. Raises MigrationError when they share no protocol."""
    live = ClassicGroup(group.group_id, now)
    for m in remaining:
        assert m.classic is not None, f"{kind.noun} {m.member_id} does not use the classic protocol"
        live.add(ClassicGroupMember(
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic.session_timeout_ms, kind.protocol_type,
            tuple(JoinGroupProtocol(n, meta) for n, meta in m.classic.supported_protocols)))
    if not live.members or not any(c == len(live.members)
                                   for c in live.supported_protocols.values()):
        raise MigrationError(f"the remaining {kind.noun}s support no common protocol")
    protocol = live.select_protocol()
    members = tuple(
        ClassicGroupMemberMetadata(
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic.session_timeout_ms, live.members[m.member_id].metadata(protocol),
            assignment(m, protocol))
        for m in remaining if m.classic is not None)
    return ClassicGroupMetadataValue(kind.protocol_type, group.group_epoch, protocol,
                                     remaining[0].member_id, now, members)


__all__ = ["DOWNGRADE_POLICIES", "UPGRADE_POLICIES", "MigrationError", "MigrationKind",
           "classic_metadata", "downgrade_refusal", "to_classic", "upgrade_refusal"]

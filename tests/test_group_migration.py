"""The migration rules both new-protocol group types share (``modern/migration.py``).

KIP-848 "Supporting Online Consumer Group Upgrade": ``group.consumer.migration.policy`` is one of
bidirectional, upgrade, downgrade, disabled, and allows the upgrade (classic -> consumer) and the
downgrade (consumer -> classic) accordingly; the Connect draft's "Migration To the New Protocol"
has the same for connect groups (``group.connect.migration.policy``, ours). Each policy is read
from its own setting: a consumer policy never governs a connect group, nor the reverse.
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.connect.migration import CONNECT_MIGRATION
from groupcoord.coordinator.modern.connect.model import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.modern.consumer.migration import CONSUMER_MIGRATION
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.migration import (
    MigrationError,
    MigrationKind,
    classic_metadata,
    downgrade_refusal,
    to_classic,
    upgrade_refusal,
)
from groupcoord.coordinator.records import ClassicMemberMetadata

POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
KINDS = (CONSUMER_MIGRATION, CONNECT_MIGRATION)


def _config(kind: MigrationKind, policy: str, other: str = "bidirectional",
            consumer_max_size: int = 1_000, classic_max_size: int = 1_000) -> CoordinatorConfig:
    """``policy`` for ``kind``, ``other`` for the other group type."""
    consumer = kind is CONSUMER_MIGRATION
    return CoordinatorConfig(consumer_migration_policy=policy if consumer else other,
                             connect_migration_policy=other if consumer else policy,
                             consumer_max_size=consumer_max_size,
                             classic_max_size=classic_max_size)


def _classic_group(protocol_type: str, members: int) -> ClassicGroup:
    g = ClassicGroup("g", 0)
    g.protocol_type = protocol_type
    for i in range(members):
        g.add(ClassicGroupMember(f"m{i}", None, "c", "h", 30_000, 10_000, protocol_type,
                                 (JoinGroupProtocol("p", b""),)))
    return g


def _classic(*protocols: str) -> ClassicMemberMetadata:
    return classic_metadata(10_000, [JoinGroupProtocol(p, p.encode()) for p in protocols])


def _group(kind: MigrationKind,
           members: dict[str, ClassicMemberMetadata | None]) -> ConsumerGroup | ConnectGroup:
    """A group of ``kind`` at epoch 7 whose members use the classic protocol where given."""
    if kind is CONSUMER_MIGRATION:
        cg = ConsumerGroup("g")
        for mid, classic in members.items():
            cg.put_member(ConsumerGroupMember(mid, classic=classic))
        cg.group_epoch = 7
        return cg
    wg = ConnectGroup("g")
    for mid, classic in members.items():
        wg.put_member(ConnectGroupMember(mid, classic=classic))
    wg.group_epoch = 7
    return wg


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.protocol_type)
@pytest.mark.parametrize("policy", POLICIES)
def test_the_policy_allows_each_direction(kind: MigrationKind, policy: str) -> None:
    # The other type's policy is the opposite extreme: it must not matter.
    other = "disabled" if policy == "bidirectional" else "bidirectional"
    cfg = _config(kind, policy, other)
    up = upgrade_refusal(kind, _classic_group(kind.protocol_type, 2), cfg)
    group = _group(kind, {"a": _classic("p"), "b": None})
    down = downgrade_refusal(kind, group, {"b"}, cfg)
    assert (up is None) == (policy in ("bidirectional", "upgrade"))
    assert (down is None) == (policy in ("bidirectional", "downgrade"))
    if up is not None:
        assert up == f"the online upgrade is disabled ({kind.setting}={policy})"
    if down is not None:
        assert down == f"the online downgrade is disabled ({kind.setting}={policy})"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.protocol_type)
def test_upgrade_refusals(kind: MigrationKind) -> None:
    other_type = "connect" if kind.protocol_type == "consumer" else "consumer"
    assert upgrade_refusal(kind, _classic_group(other_type, 1), _config(kind, "bidirectional")) == (
        f"it uses protocol type {other_type!r}, not the {kind.protocol_noun}")
    too_many = _config(kind, "bidirectional", consumer_max_size=2)
    assert upgrade_refusal(kind, _classic_group(kind.protocol_type, 3), too_many) == (
        "its 3 members exceed group.consumer.max.size")
    assert upgrade_refusal(kind, _classic_group(kind.protocol_type, 2), too_many) is None


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.protocol_type)
def test_downgrade_refusals(kind: MigrationKind) -> None:
    cfg = _config(kind, "bidirectional")
    group = _group(kind, {"a": _classic("p"), "b": _classic("p"), "n": None})
    assert downgrade_refusal(kind, group, {"a", "b", "n"}, cfg) == "it becomes empty"
    assert downgrade_refusal(kind, group, {"a"}, cfg) == f"{kind.new_protocol_members} remain"
    assert downgrade_refusal(kind, group, {"n"}, cfg) is None
    small = _config(kind, "bidirectional", classic_max_size=1)
    assert downgrade_refusal(kind, group, {"n"}, small) == "its 2 members exceed group.max.size"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.protocol_type)
def test_to_classic_votes_and_leads_with_the_first_member(kind: MigrationKind) -> None:
    # b prefers p2, c prefers p1, d prefers p2: p2 has the most votes among the common ones.
    group = _group(kind, {"d": _classic("p2", "p1"), "b": _classic("p2", "p1"),
                          "c": _classic("p1", "p2")})
    remaining = [group.members[mid] for mid in sorted(group.members)]
    value = to_classic(kind, group, remaining, 123,
                       lambda m, protocol: f"{m.member_id}:{protocol}".encode())
    assert (value.protocol_type, value.generation, value.protocol_name, value.leader) == (
        kind.protocol_type, 7, "p2", "b")
    assert [(m.member_id, m.subscription, m.assignment) for m in value.members] == [
        ("b", b"p2", b"b:p2"), ("c", b"p2", b"c:p2"), ("d", b"p2", b"d:p2")]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.protocol_type)
def test_to_classic_without_a_common_protocol(kind: MigrationKind) -> None:
    group = _group(kind, {"a": _classic("p1"), "b": _classic("p2")})
    remaining = [group.members[mid] for mid in sorted(group.members)]
    with pytest.raises(MigrationError, match=f"the remaining {kind.noun}s support no common"):
        to_classic(kind, group, remaining, 0, lambda m, p: b"")

"""Client-side assignment for consumer groups (KIP-848 "Client-Side Assignor"): the
ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment handlers on the machinery every
new-protocol group type shares (``modern/client_assignment.py``, whose docstring holds the
choices), with a consumer group's snapshot (its members' subscribed topic ids, every partition of
the subscribed topics) and STALE_MEMBER_EPOCH for a member epoch mismatch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from groupcoord.coordinator.modern.client_assignment import (
    ClientAssignment,
    Snapshot,
    assignor_in,
    check_ids,
    successor,
    validate_install,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    PreparedAssignor,
    PreparedMember,
    PreparedTopic,
    TopicPartitions,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.modern.subscription import subscribed_topic_ids
from groupcoord.coordinator.records import (
    Assignment,
    target_assignment_metadata_record,
    target_member_record,
    target_member_tombstone,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

_E = ErrorCode

#: Timer kind of the consumer groups' assigner deadlines.
CONSUMER_ASSIGNMENT = "consumer-assignment"


def _tps(a: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(a.items(), key=lambda kv: kv[0].bytes) if ps)


def _assignment(tps: Iterable[TopicPartitions]) -> dict[UUID, frozenset[int]]:
    out: dict[UUID, frozenset[int]] = {}
    for tp in tps:
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out


class ConsumerClientAssignment(ClientAssignment):
    """Client-side assignment for consumer groups: KIP-848's ConsumerGroupPrepareAssignment and
    ConsumerGroupInstallAssignment handlers (STALE_MEMBER_EPOCH for a member epoch mismatch)."""

    def __init__(self, shard: ShardContext) -> None:
        super().__init__(shard, CONSUMER_ASSIGNMENT, self._consumer_group, _E.stale_member_epoch)
        shard.register_handler(ConsumerGroupPrepareAssignmentRequest, self._prepare)
        shard.register_handler(ConsumerGroupInstallAssignmentRequest, self._install)
        shard.register_error_response(
            ConsumerGroupPrepareAssignmentRequest,
            lambda r, e: ConsumerGroupPrepareAssignmentResponse(error_code=e.code,
                                                                error_message=e.message))
        shard.register_error_response(
            ConsumerGroupInstallAssignmentRequest,
            lambda r, e: ConsumerGroupInstallAssignmentResponse(error_code=e.code,
                                                                error_message=e.message))

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        g = self.shard.groups.get(group_id)
        return g if isinstance(g, ConsumerGroup) else None

    def _existing(self, group_id: str) -> ConsumerGroup:
        g = self.shard.groups.get(group_id)
        if g is None:
            raise CoordinatorError(_E.group_id_not_found, f"Group {group_id} not found.")
        if not isinstance(g, ConsumerGroup):
            raise CoordinatorError(_E.group_id_not_found,
                                   f"Group {group_id} is not a consumer group (it is a "
                                   f"{g.group_type} group).")
        return g

    def _prepare(self, r: ConsumerGroupPrepareAssignmentRequest,
                 now: int) -> ConsumerGroupPrepareAssignmentResponse:
        check_ids(r.group_id, r.member_id, r.member_epoch)
        group = self._existing(r.group_id)
        self.check_request(group, r.member_id, r.member_epoch)
        name = self.assignor(group)
        assert name is not None  # a computation is outstanding only in client mode
        metadata = group.subscription_metadata
        members = []
        scopes: dict[str, frozenset[Any]] = {}
        for mid in sorted(group.members):
            m = group.members[mid]
            ids = subscribed_topic_ids(m.subscribed_topic_names, m.subscribed_topic_regex, metadata,
                                       group.resolved_regexes)
            scopes[mid] = ids
            a = assignor_in(m.client_assignors, name)
            assert a is not None
            members.append(PreparedMember(
                mid, m.member_epoch, m.instance_id, m.rack_id,
                tuple(sorted(ids, key=lambda u: u.bytes)),
                PreparedAssignor(a.reason, a.version, a.metadata), _tps(group.target_of(mid))))
        topics = tuple(PreparedTopic(t.topic_id, t.name, t.num_partitions)
                       for _, t in sorted(metadata.items()))
        items = frozenset((t.topic_id, p) for t in metadata.values()
                          for p in range(t.num_partitions))
        self.remember(group, Snapshot(
            r.member_id, group.group_epoch, name,
            {mid: m.instance_id for mid, m in group.members.items()}, items, scopes,
            scope_of=lambda item: item[0]))
        return ConsumerGroupPrepareAssignmentResponse(
            group_epoch=group.group_epoch, assignor_name=name, members=tuple(members),
            topics=topics)

    def _install(self, r: ConsumerGroupInstallAssignmentRequest,
                 now: int) -> ConsumerGroupInstallAssignmentResponse:
        check_ids(r.group_id, r.member_id, r.member_epoch)
        group = self._existing(r.group_id)
        self.check_request(group, r.member_id, r.member_epoch)
        snapshot = self.snapshot_for_install(group, r.member_id, r.group_epoch)
        gid = group.group_id
        if r.error:
            log.warning("[%s] member %s's assignor failed with error %d at epoch %d; the target "
                        "assignment is kept", gid, r.member_id, r.error, snapshot.group_epoch)
            self.failed(group, snapshot)
            return ConsumerGroupInstallAssignmentResponse()
        names = {t.topic_id: t.name for t in group.subscription_metadata.values()}

        def show(item: tuple[UUID, int]) -> str:
            return f"{names.get(item[0], str(item[0]))}-{item[1]}"

        validate_install(
            snapshot,
            [(m.member_id, [(tp.topic_id, p) for tp in m.topic_partitions for p in tp.partitions])
             for m in r.members],
            allow_unassigned=False, show=show)
        listed = {m.member_id: m for m in r.members}
        targets: dict[str, dict[UUID, frozenset[int]]] = {}
        for mid in sorted(snapshot.members):
            to = successor(group, snapshot, mid)
            if to is not None:
                im = listed.get(mid)
                targets[to] = _assignment(im.topic_partitions) if im is not None else {}
        for mid in sorted(group.target_assignment):
            if mid not in targets:
                self.shard.append(target_member_tombstone(gid, mid))
        for mid in sorted(targets):
            old = group.target_assignment.get(mid)
            if old is None or {t: ps for t, ps in old.items() if ps} != targets[mid]:
                self.shard.append(target_member_record(gid, mid, targets[mid]))
        self.shard.append(target_assignment_metadata_record(gid, snapshot.group_epoch))
        log.info("[%s] member %s installed the target assignment of epoch %d", gid, r.member_id,
                 snapshot.group_epoch)
        self.installed(group)
        return ConsumerGroupInstallAssignmentResponse()

"""Client-side partition assignors for consumer group members (KIP-848 "Client-Side Assignor").

Implements the consumer's ``PartitionAssignor`` interface of KIP-848's "Consumer API" Javadoc:
a unique ``name``, a supported metadata version range (``minimum_version``,
``maximum_version``), the ``metadata()`` the member advertises with it (reason, version, bytes),
and ``assign(group) -> Assignment`` (:class:`ClientSideAssignment`: an error, and per member
its partitions, metadata version and bytes). A :class:`~groupcoord.client.consumer.ConsumerMember`
given ``local_assignors`` advertises them in its heartbeat (``ClientAssignors``); when the
coordinator chooses it (``ShouldComputeAssignment``) it sends ConsumerGroupPrepareAssignment, runs
the group's assignor (:func:`compute_install`) and sends ConsumerGroupInstallAssignment.

Built in: :class:`ClientSideUniformAssignor` and :class:`ClientSideRangeAssignor` run the
coordinator's server-side ``uniform`` and ``range`` assignors (``coordinator/assignors/``) on the
member, so a group can move its assignment computation to a client without changing the result;
their names are ``uniform`` and ``range`` with version range [0-0] (the coordinator only matches
client assignors against client assignors, so the names do not clash with its server-side ones).

The group an assignor sees is the PrepareAssignment response (:class:`AssignmentSpec`: group
epoch, members with subscribed topic ids, their reason/metadata for the selected assignor and
their current target partitions; topics with name and partition count). A raised exception or a
non-zero ``ClientSideAssignment.error`` is reported in the Install's Error field: the coordinator keeps the
current target for that epoch.

Not here: ``onAssignment`` callbacks (the member does not learn which assignor installed its
target), KIP-268 metadata-version negotiation beyond picking the highest version every member
supports (:func:`common_version`), and assignors that keep state across rounds (the built-ins
read stickiness from the current targets, as the server-side ones do).

The classes are named ``ClientSide...`` (KIP-848 calls the interface ``PartitionAssignor`` on
both sides): the coordinator's server-side ``PartitionAssignor``, ``UniformAssignor`` and
``RangeAssignor`` (``coordinator/assignors/``) are other classes, with another interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from uuid import UUID

from groupcoord.coordinator import assignors as server
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    InstalledMember,
    PreparedMember,
    PreparedTopic,
    TopicPartitions,
)
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.coordinator.topics import TopicMetadata

__all__ = [
    "ASSIGNOR_ERROR",
    "AssignmentSpec",
    "AssignorMetadata",
    "ClientSideAssignment",
    "ClientSideAssignor",
    "ClientSideRangeAssignor",
    "ClientSideUniformAssignor",
    "MemberAssignment",
    "ServerAssignorAdapter",
    "advertised",
    "common_version",
    "compute_install",
]

#: The Install's Error when the assignor cannot compute (any non-zero value keeps the target).
ASSIGNOR_ERROR = 1


@dataclass(slots=True, frozen=True)
class AssignorMetadata:
    """What a member advertises with an assignor (KIP-848 ``PartitionAssignor.Metadata``)."""

    reason: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(slots=True, frozen=True)
class AssignmentSpec:
    """The group an assignor computes for (KIP-848 ``PartitionAssignor.Group``): the
    PrepareAssignment response, members and topics keyed by id."""

    group_epoch: int
    assignor_name: str
    members: Mapping[str, PreparedMember]
    topics: Mapping[UUID, PreparedTopic]

    @classmethod
    def of(cls, p: ConsumerGroupPrepareAssignmentResponse) -> AssignmentSpec:
        return cls(p.group_epoch, p.assignor_name, {m.member_id: m for m in p.members},
                   {t.topic_id: t for t in p.topics})


@dataclass(slots=True, frozen=True)
class MemberAssignment:
    """One member's result: its partitions (topic id -> partition ids) and metadata."""

    partitions: Mapping[UUID, frozenset[int]] = field(default_factory=dict)
    version: int = 0
    metadata: bytes = b""


@dataclass(slots=True, frozen=True)
class ClientSideAssignment:
    """An assignor's result (KIP-848 ``PartitionAssignor.Assignment``): ``error`` non-zero means
    no assignment (the coordinator keeps the current target)."""

    members: Mapping[str, MemberAssignment] = field(default_factory=dict)
    error: int = 0


@runtime_checkable
class ClientSideAssignor(Protocol):
    """KIP-848's client-side ``PartitionAssignor``."""

    @property
    def name(self) -> str: ...

    @property
    def minimum_version(self) -> int: ...

    @property
    def maximum_version(self) -> int: ...

    def metadata(self) -> AssignorMetadata: ...

    def assign(self, group: AssignmentSpec) -> ClientSideAssignment: ...


def advertised(assignor: ClientSideAssignor) -> ClientAssignor:
    """The heartbeat's ClientAssignors entry of ``assignor``."""
    md = assignor.metadata()
    return ClientAssignor(assignor.name, assignor.minimum_version, assignor.maximum_version,
                          md.reason, md.version, md.metadata)


def common_version(group: AssignmentSpec, maximum: int) -> int:
    """The highest metadata version every member reported, capped at ``maximum``."""
    versions = [m.assignor.metadata_version for m in group.members.values()]
    return min([maximum, *versions])


class ServerAssignorAdapter:
    """A server-side assignor (``coordinator/assignors/``) run as a client-side one: the
    PrepareAssignment response becomes its :class:`~groupcoord.coordinator.assignors.GroupSpec`
    (subscriptions by topic id, current targets for stickiness), its result the Install.
    ``reason`` may be raised by the application to ask for a new assignment (KIP-848: a
    non-zero reason or a metadata change triggers a reassignment)."""

    minimum_version = 0
    maximum_version = 0

    def __init__(self, assignor: server.PartitionAssignor, *, reason: int = 0) -> None:
        self._assignor = assignor
        self.reason = reason

    @property
    def name(self) -> str:
        return self._assignor.name

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(self.reason, self.maximum_version, b"")

    def assign(self, group: AssignmentSpec) -> ClientSideAssignment:
        members = {
            mid: server.MemberSubscription(
                mid, frozenset(m.subscribed_topic_ids),
                {tp.topic_id: frozenset(tp.partitions) for tp in m.topic_partitions},
                m.instance_id, m.rack_id)
            for mid, m in group.members.items()}
        topics = {tid: TopicMetadata(tid, t.topic_name, t.num_partitions)
                  for tid, t in group.topics.items()}
        try:
            result = self._assignor.assign(server.GroupSpec(members, topics))
        except server.PartitionAssignorError:
            return ClientSideAssignment(error=ASSIGNOR_ERROR)
        return ClientSideAssignment({mid: MemberAssignment(dict(a)) for mid, a in result.items()})


class ClientSideUniformAssignor(ServerAssignorAdapter):
    """The ``uniform`` assignor, computed on the member."""

    def __init__(self, *, reason: int = 0) -> None:
        super().__init__(server.UniformAssignor(), reason=reason)


class ClientSideRangeAssignor(ServerAssignorAdapter):
    """The ``range`` assignor, computed on the member."""

    def __init__(self, *, reason: int = 0) -> None:
        super().__init__(server.RangeAssignor(), reason=reason)


def _tps(partitions: Mapping[UUID, frozenset[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(partitions.items(), key=lambda kv: kv[0].bytes) if ps)


def compute_install(assignors: Mapping[str, ClientSideAssignor],
                    p: ConsumerGroupPrepareAssignmentResponse, group_id: str, member_id: str,
                    member_epoch: int) -> ConsumerGroupInstallAssignmentRequest:
    """Run the group's assignor (``p.assignor_name``) on a PrepareAssignment response: the
    Install to send. An unknown assignor, an exception or a non-zero error gives an Install
    with Error set (the coordinator keeps the current target)."""
    failed = ConsumerGroupInstallAssignmentRequest(group_id, member_id, member_epoch,
                                                   p.group_epoch, error=ASSIGNOR_ERROR)
    assignor = assignors.get(p.assignor_name)
    if assignor is None:
        return failed
    try:
        result = assignor.assign(AssignmentSpec.of(p))
    except Exception:  # an application's assignor: any failure is the assignor's error
        return failed
    if result.error:
        return ConsumerGroupInstallAssignmentRequest(group_id, member_id, member_epoch,
                                                     p.group_epoch, error=result.error)
    members = tuple(InstalledMember(mid, _tps(a.partitions), a.version, a.metadata)
                    for mid, a in sorted(result.members.items()))
    return ConsumerGroupInstallAssignmentRequest(group_id, member_id, member_epoch,
                                                 p.group_epoch, members=members)

"""Requests and responses of the classic group protocol, as the coordinator core sees them.

JoinGroup (API key 11, v0-v9), SyncGroup (14, v0-v5), Heartbeat (12, v0-v4), LeaveGroup (13,
v0-v5) and DescribeGroups (15, v0-v6). Field names are the snake_case of the upstream schemas
(times in ms as plain ints). Every request carries the API ``version`` it arrived with, because
the coordinator's behaviour depends on it (MEMBER_ID_REQUIRED from JoinGroup v4, static
membership from v5, KIP-814 SkipAssignment from v9, per-member LeaveGroup results from v3,
mandatory SyncGroup protocol type and name from v5, GROUP_ID_NOT_FOUND in DescribeGroups from
v6), plus ``client_id`` / ``client_host`` from the request header and the connection.

The wire edge converts these to and from kio entities: fields a version does not carry are left
at their defaults on the way in and dropped on the way out (a ``None`` protocol name goes out as
``""`` before JoinGroup v7, LeaveGroup v0-v2 carry a single member id in ``members[0]`` and answer
with the top-level ``error_code`` only).
"""

from __future__ import annotations

from dataclasses import dataclass

#: JoinGroup versions (see the module docstring).
JOIN_MEMBER_ID_REQUIRED_VERSION = 4
JOIN_STATIC_MEMBERSHIP_VERSION = 5
JOIN_SKIP_ASSIGNMENT_VERSION = 9
#: LeaveGroup answers per member from this version; below, only the top-level error.
LEAVE_BATCH_VERSION = 3
#: SyncGroup requires ProtocolType and ProtocolName from this version.
SYNC_PROTOCOL_REQUIRED_VERSION = 5
#: DescribeGroups reports GROUP_ID_NOT_FOUND (with a message) from this version.
DESCRIBE_ERROR_VERSION = 6

# ----------------------------------------------------------------------------- JoinGroup


@dataclass(slots=True, frozen=True)
class JoinGroupProtocol:
    """One protocol a member supports (``name`` = assignor) with its metadata bytes."""

    name: str
    metadata: bytes = b""


@dataclass(slots=True, frozen=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    member_id: str = ""
    protocol_type: str = ""
    protocols: tuple[JoinGroupProtocol, ...] = ()
    #: v1+; v0 uses the session timeout (as upstream's JoinGroupRequest does).
    rebalance_timeout_ms: int = -1
    #: v5+ (ignored below v5).
    group_instance_id: str | None = None
    #: v8+ (logged only).
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 9


@dataclass(slots=True, frozen=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None = None
    metadata: bytes = b""


@dataclass(slots=True, frozen=True)
class JoinGroupResponse:
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    #: v9+ (KIP-814): the leader must not compute an assignment, only collect its own.
    skip_assignment: bool = False
    member_id: str = ""
    #: Non-empty for the leader only.
    members: tuple[JoinGroupResponseMember, ...] = ()


# ----------------------------------------------------------------------------- SyncGroup


@dataclass(slots=True, frozen=True)
class SyncGroupAssignment:
    member_id: str
    assignment: bytes = b""


@dataclass(slots=True, frozen=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    #: v3+.
    group_instance_id: str | None = None
    #: v5+ (required from v5).
    protocol_type: str | None = None
    protocol_name: str | None = None
    #: The leader's assignments (empty for followers, and for a KIP-814 leader).
    assignments: tuple[SyncGroupAssignment, ...] = ()
    client_id: str = ""
    client_host: str = ""
    version: int = 5


@dataclass(slots=True, frozen=True)
class SyncGroupResponse:
    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# ----------------------------------------------------------------------------- Heartbeat


@dataclass(slots=True, frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    #: v3+.
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 4


@dataclass(slots=True, frozen=True)
class HeartbeatResponse:
    error_code: int = 0


# ----------------------------------------------------------------------------- LeaveGroup


@dataclass(slots=True, frozen=True)
class LeaveGroupMember:
    #: ``""`` with an instance id: an administrative removal of that static member.
    member_id: str
    group_instance_id: str | None = None
    #: v5+ (logged only).
    reason: str | None = None


@dataclass(slots=True, frozen=True)
class LeaveGroupRequest:
    group_id: str
    #: v0-v2: exactly one member (the request's MemberId); v3+: a batch.
    members: tuple[LeaveGroupMember, ...]
    client_id: str = ""
    client_host: str = ""
    version: int = 5


@dataclass(slots=True, frozen=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None = None
    error_code: int = 0


@dataclass(slots=True, frozen=True)
class LeaveGroupResponse:
    #: Below v3, the error of the single member when the request as a whole succeeded.
    error_code: int = 0
    members: tuple[LeaveGroupMemberResponse, ...] = ()


# ----------------------------------------------------------------------------- DescribeGroups


@dataclass(slots=True, frozen=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False
    client_id: str = ""
    client_host: str = ""
    version: int = 6


@dataclass(slots=True, frozen=True)
class DescribedClassicMember:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    #: The metadata for the group's protocol; empty unless the group is Stable.
    member_metadata: bytes = b""
    member_assignment: bytes = b""


@dataclass(slots=True, frozen=True)
class DescribedClassicGroup:
    group_id: str
    error_code: int = 0
    #: v6+.
    error_message: str | None = None
    group_state: str = ""
    protocol_type: str = ""
    #: The selected protocol (assignor) when Stable, else empty.
    protocol_data: str = ""
    members: tuple[DescribedClassicMember, ...] = ()
    authorized_operations: int = -(2**31)


@dataclass(slots=True, frozen=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedClassicGroup, ...]

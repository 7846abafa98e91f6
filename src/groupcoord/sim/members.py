"""The requests and responses of every simulated member type, as the simulator sees them.

One table per question the simulation asks about a message it carries between a process and
the coordinator, keyed by the message's type, shared by every protocol of ``sim/``
(``consumer``, ``connect``, ``classic``, ``classic-connect``), so that the driving code of
:class:`groupcoord.sim.consumer.ConsumerSimulation` serves them all without per-protocol copies:

- :func:`describe_request`: the statistic a request counts towards and its trace line
  (``hb>``, ``prepare>``, ``install>``, ``join>``, ``sync>``, ``leave>``);
- :func:`loading_response`: the answer a coordinator that is still loading gives a request
  (COORDINATOR_LOAD_IN_PROGRESS, or any other code), in the request's own response type;
- :func:`assign_response_kind`: whether a response answers an assigner's PrepareAssignment
  or InstallAssignment (consumer and connect groups), and its trace label;
- :func:`heartbeat_detail`: the trace text of a heartbeat response (None: nothing worth a line);
- :func:`in_flight` and :func:`fatal_reason`: the member's requests in flight and why it stopped.

Requests an unknown type (none today) fall back as the consumer simulation always did: no trace
line, a ConsumerGroupHeartbeat error answer.

Not here: what a protocol checks about a message (the invariants stay with each simulation), the
network (``sim.network``), the coordinator (``sim.coordinator``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    PartitionResult,
    TopicResult,
)
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
)
from groupcoord.protocol.errors import error_name

#: (statistic, trace event, epoch column, resource column) of a request sent.
Described = tuple[str, str, int | str, str]


# ----------------------------------------------------------------------------- requests sent


def _heartbeat(req: Any, assignment: object) -> Described:
    """A KIP-848-style heartbeat: ``full`` when it carries the whole state (a join, a
    rejoin), ``owned`` when only what the member owns, nothing when neither changed."""
    return ("heartbeats", "hb>", req.member_epoch, "" if assignment is None else
            ("full" if req.rebalance_timeout_ms > 0 else "owned"))


def _install(req: Any, delay_ms: int = 0) -> Described:
    """An assigner's Install: the group epoch, the KIP-415 delay (connect groups), an error."""
    return ("installs", "install>", req.member_epoch, f"group epoch {req.group_epoch}"
            + (f", delay {delay_ms} ms" if delay_ms else "")
            + (f", error {req.error}" if req.error else ""))


def _prepare(req: Any) -> Described:
    return ("prepares", "prepare>", req.member_epoch, "")


def _classic(stat: str, kind: str) -> Callable[[Any], Described]:
    def describe(req: Any) -> Described:
        extra = "leader" if isinstance(req, SyncGroupRequest) and req.assignments else ""
        epoch = req.generation_id if isinstance(req, SyncGroupRequest | HeartbeatRequest) else ""
        return (stat, f"{kind}>", epoch, extra)
    return describe


_DESCRIBE: dict[type, Callable[[Any], Described]] = {
    ConsumerGroupHeartbeatRequest: lambda r: _heartbeat(r, r.topic_partitions),
    ConnectGroupHeartbeatRequest: lambda r: _heartbeat(r, r.connectors_and_tasks),
    ConsumerGroupPrepareAssignmentRequest: _prepare,
    ConnectGroupPrepareAssignmentRequest: _prepare,
    ConsumerGroupInstallAssignmentRequest: _install,
    ConnectGroupInstallAssignmentRequest: lambda r: _install(r, r.scheduled_rebalance_delay_ms),
    JoinGroupRequest: _classic("joins", "join"),
    SyncGroupRequest: _classic("syncs", "sync"),
    HeartbeatRequest: _classic("heartbeats", "hb"),
    LeaveGroupRequest: _classic("leaves", "leave"),
}


def describe_request(req: object) -> Described | None:
    """The statistic and trace line of a group request a process sends (None: an offset
    commit, traced by the commit itself)."""
    d = _DESCRIBE.get(type(req))
    return None if d is None else d(req)


# ----------------------------------------------------------------------------- error answers


def _commit_error(req: OffsetCommitRequest, code: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(tuple(
        TopicResult(t.name, tuple(PartitionResult(pp.partition_index, code)
                                  for pp in t.partitions), t.topic_id)
        for t in req.topics), code)


def _loading(cls: Callable[..., Any]) -> Callable[[Any, int], Any]:
    return lambda _req, code: cls(error_code=code, error_message="loading")


_ERRORS: dict[type, Callable[[Any, int], Any]] = {
    OffsetCommitRequest: _commit_error,
    ConsumerGroupHeartbeatRequest: _loading(ConsumerGroupHeartbeatResponse),
    ConsumerGroupPrepareAssignmentRequest: _loading(ConsumerGroupPrepareAssignmentResponse),
    ConsumerGroupInstallAssignmentRequest: _loading(ConsumerGroupInstallAssignmentResponse),
    ConnectGroupHeartbeatRequest: _loading(ConnectGroupHeartbeatResponse),
    ConnectGroupPrepareAssignmentRequest: _loading(ConnectGroupPrepareAssignmentResponse),
    ConnectGroupInstallAssignmentRequest: _loading(ConnectGroupInstallAssignmentResponse),
    JoinGroupRequest: lambda req, code: JoinGroupResponse(code, member_id=req.member_id),
    SyncGroupRequest: lambda _req, code: SyncGroupResponse(code),
    HeartbeatRequest: lambda _req, code: HeartbeatResponse(code),
    LeaveGroupRequest: lambda _req, code: LeaveGroupResponse(code),
}


def loading_response(req: object, code: int) -> Any:
    """The answer with error ``code`` (COORDINATOR_LOAD_IN_PROGRESS: the coordinator is still
    loading) to ``req``, in the request's response type."""
    return _ERRORS.get(type(req), _ERRORS[ConsumerGroupHeartbeatRequest])(req, code)


# ----------------------------------------------------------------------------- answers received

_ASSIGN_KIND: dict[type, str] = {
    ConsumerGroupPrepareAssignmentResponse: "prepare<",
    ConnectGroupPrepareAssignmentResponse: "prepare<",
    ConsumerGroupInstallAssignmentResponse: "install<",
    ConnectGroupInstallAssignmentResponse: "install<",
}


def assign_response_kind(resp: object) -> str | None:
    """``prepare<`` / ``install<`` for the answer to an assigner's request, else None."""
    return _ASSIGN_KIND.get(type(resp))


def _consumer_heartbeat(body: ConsumerGroupHeartbeatResponse, before: int) -> str | None:
    a = body.assignment
    if a is None and body.member_epoch == before:
        return None
    return "" if a is None else (
        f"{sum(len(tp.partitions) for tp in a.topic_partitions)} assigned, "
        f"{sum(len(tp.partitions) for tp in a.pending_topic_partitions)} pending")


def _connect_heartbeat(body: ConnectGroupHeartbeatResponse, before: int) -> str | None:
    a = body.assignment
    if a is None and body.member_epoch == before and not body.should_compute_assignment:
        return None
    ct, pend = (a.connectors_and_tasks, a.pending_connectors_and_tasks) if a is not None \
        else (None, None)
    return ("" if ct is None or pend is None else
            f"{len(ct.connectors) + len(ct.tasks)} assigned, "
            f"{len(pend.connectors) + len(pend.tasks)} pending") \
        + (" compute" if body.should_compute_assignment else "")


_HEARTBEAT: dict[type, Callable[[Any, int], str | None]] = {
    ConsumerGroupHeartbeatResponse: _consumer_heartbeat,
    ConnectGroupHeartbeatResponse: _connect_heartbeat,
}


def heartbeat_detail(body: Any, before: int) -> str | None:
    """The trace text of a successful KIP-848-style heartbeat response (``before``: the
    member's epoch before it): what it assigns, or None when it changes nothing."""
    return _HEARTBEAT[type(body)](body, before)


# ----------------------------------------------------------------------------- members


def in_flight(member: Any) -> list[int]:
    """Correlation ids of the member's requests in flight: its group request, and an
    assigner's Prepare or Install (members without assigner duties have none)."""
    return [x.correlation_id for x in (member.inflight, member.assign_inflight) if x is not None]


def fatal_reason(error: tuple[int, str | None] | str | None) -> str:
    """Why a member stopped: the error's name (a ``(code, message)`` pair) or the message."""
    if error is None or isinstance(error, tuple):
        return error_name(error[0] if error else 0)
    return error

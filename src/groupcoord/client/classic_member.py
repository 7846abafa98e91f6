"""What every sans-IO classic-protocol member shares: configuration, the one request in flight,
and the JoinGroup / SyncGroup / Heartbeat / LeaveGroup requests.

:class:`ClassicMember` is the base of :class:`groupcoord.client.classic_consumer.ClassicConsumerMember`
(protocol type ``consumer``) and :class:`groupcoord.client.connect.classic_worker.ClassicConnectWorker`
(protocol type ``connect``). It holds the settings both send in their requests (group id,
client id and host, the session and rebalance timeouts, the heartbeat interval, the request
timeout, the retry backoff, the request versions), the request in flight with its correlation
id (one group request at a time, as the Java clients send them; a driver hands the answer back
with that id, so a duplicated or stale answer is told apart), and builds the four requests from
that state. The driver interface is the KIP-848 member's (``poll_request``, ``on_response``,
``on_request_failed``, ``next_deadline``, ``last_correlation_id``, ``inflight``,
``assign_inflight``), so one driver (an asyncio loop, the simulator) serves both protocols.

Not here: what a member does with the answers (joining, the leader's assignment, revocations:
each protocol's own), its backoff policy (the consumer's is exponential, the worker's fixed),
offset commits (``client/offset_commits.py``), any IO or clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeaveGroupMember,
    LeaveGroupRequest,
    SyncGroupAssignment,
    SyncGroupRequest,
)

ClassicRequest = JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest
NO_GENERATION = -1


@dataclass(slots=True, frozen=True)
class Inflight:
    """The group request in flight: its correlation id, when it was sent, the request."""

    correlation_id: int
    sent_ms: int
    request: ClassicRequest


class ClassicMember:
    """The state and requests common to the members of classic groups (see the module doc).

    Subclasses set :attr:`protocol_type` and the versions they speak, keep ``member_id``,
    ``generation`` and ``instance_id`` current, and send what :meth:`_send` returns."""

    #: The protocol type of the group (``consumer``, ``connect``).
    protocol_type = ""
    #: A classic member has no assigner duties (the leader's assignments ride on its
    #: SyncGroup): it never has a PrepareAssignment or InstallAssignment in flight.
    assign_inflight: None = None

    def __init__(self, group_id: str, *, client_id: str, client_host: str,
                 session_timeout_ms: int, rebalance_timeout_ms: int, heartbeat_interval_ms: int,
                 request_timeout_ms: int, retry_backoff_ms: int, instance_id: str | None = None,
                 join_version: int = 9, sync_version: int = 5, heartbeat_version: int = 4,
                 leave_version: int = 5) -> None:
        if not group_id:
            raise ValueError("group_id must be non-empty")
        self.group_id = group_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.join_version = join_version
        self.sync_version = sync_version
        self.heartbeat_version = heartbeat_version
        self.leave_version = leave_version
        self.member_id = ""
        self.generation = NO_GENERATION
        self.inflight: Inflight | None = None
        self._correlation = 0
        self._now = 0

    @property
    def member_epoch(self) -> int:
        """The generation (a driver written for the KIP-848 member traces either)."""
        return self.generation

    @property
    def last_correlation_id(self) -> int:
        """The correlation id of the last request :meth:`_send` made the one in flight."""
        return self._correlation

    # ------------------------------------------------------------------ the request in flight

    def _send(self, req: ClassicRequest, now_ms: int) -> ClassicRequest:
        """``req`` becomes the request in flight, under a new correlation id."""
        self._correlation += 1
        self.inflight = Inflight(self._correlation, now_ms, req)
        return req

    def _take_inflight(self, correlation_id: int | None) -> Inflight | None:
        """The request in flight, taken out of flight, when an answer (or a failure) with
        ``correlation_id`` is about it (None: any id); else None and nothing changes."""
        inflight = self.inflight
        if inflight is None or (correlation_id is not None
                                and correlation_id != inflight.correlation_id):
            return None
        self.inflight = None
        return inflight

    def _timed_out(self, now_ms: int) -> Inflight | None:
        """The request in flight, taken out of flight, once its time-out has passed."""
        inflight = self.inflight
        if inflight is None or now_ms < inflight.sent_ms + self._timeout_of(inflight.request):
            return None
        self.inflight = None
        return inflight

    def _timeout_of(self, req: ClassicRequest) -> int:
        """How long an answer may take (JoinGroup and SyncGroup may be parked longer)."""
        return self.request_timeout_ms

    # ------------------------------------------------------------------ requests

    def _join_group(self, protocols: Sequence[JoinGroupProtocol],
                    reason: str | None = None) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
            member_id=self.member_id, protocol_type=self.protocol_type,
            protocols=tuple(protocols), rebalance_timeout_ms=self.rebalance_timeout_ms,
            group_instance_id=self.instance_id, reason=reason, client_id=self.client_id,
            client_host=self.client_host, version=self.join_version)

    def _sync_group(self, protocol_name: str,
                    assignments: tuple[SyncGroupAssignment, ...]) -> SyncGroupRequest:
        return SyncGroupRequest(self.group_id, self.generation, self.member_id, self.instance_id,
                                self.protocol_type, protocol_name, assignments, self.client_id,
                                self.client_host, self.sync_version)

    def _heartbeat(self) -> HeartbeatRequest:
        return HeartbeatRequest(self.group_id, self.generation, self.member_id, self.instance_id,
                                self.client_id, self.client_host, self.heartbeat_version)

    def _leave_group(self, reason: str) -> LeaveGroupRequest:
        return LeaveGroupRequest(self.group_id, (LeaveGroupMember(
            self.member_id, self.instance_id, reason),), self.client_id, self.client_host,
            version=self.leave_version)


__all__ = ["NO_GENERATION", "ClassicMember", "ClassicRequest", "Inflight"]

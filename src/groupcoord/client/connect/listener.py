"""The Connect worker's rebalance callbacks, shared by both worker state machines.

Both the new-protocol worker (:mod:`.worker`, ConnectGroupHeartbeat) and the classic-protocol
worker (:mod:`.classic_worker`, JoinGroup/SyncGroup with the embedded Connect protocol) tell the
application which connectors and tasks to stop and start through this one interface, after
upstream's ``WorkerRebalanceListener`` (``onRevoked`` / ``onAssigned``) plus ``on_lost`` for
work abandoned without a revocation (fencing, a fatal error), as the KIP-848 consumer's
``on_partitions_lost``.

What is here: the :class:`ConnectRebalanceListener` base class (every callback optional) and
:data:`DEFER` (the consumer member's marker, re-exported, not a copy), which ``on_revoked`` may
return to finish stopping the revoked work later (the worker then waits for its
``complete_revocation``). What is not here: starting and stopping real connector/task objects
(a plugin runner implements this interface).
"""

from __future__ import annotations

from groupcoord.client.consumer import DEFER
from groupcoord.protocol.connect_protocol import ConnectorTaskId

__all__ = ["DEFER", "ConnectRebalanceListener", "Connectors", "Tasks"]

#: The argument types of the callbacks: sorted, without duplicates.
Connectors = tuple[str, ...]
Tasks = tuple[ConnectorTaskId, ...]


class ConnectRebalanceListener:
    """The application's callbacks for the work a worker runs (subclass and override).

    - ``on_revoked(connectors, tasks)``: stop these; return :data:`DEFER` to complete later;
    - ``on_assigned(connectors, tasks)``: start these (never in the same step as a revocation);
    - ``on_lost(connectors, tasks)``: these are no longer the worker's (fenced or failed): stop
      them without any acknowledgement to the group.
    """

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> object:
        return None

    def on_assigned(self, connectors: Connectors, tasks: Tasks) -> None:
        return None

    def on_lost(self, connectors: Connectors, tasks: Tasks) -> None:
        return None

"""The Kafka Connect worker's side of the group protocol, pure and sans-IO (KIP-415).

- :mod:`.model`: connector/task ids, assignments, worker metadata, the configuration snapshot;
- :mod:`.protocol`: the Connect embedded protocol's bytes (KIP-415 "Connect protocol's format",
  v0 ``default`` / v1 ``compatible`` / v2 ``sessioned``, protocol type ``connect``);
- :mod:`.assignors`: the leader's Eager and Incremental Cooperative assignors (KIP-415
  "Deferred Resolution of Imbalance", ``scheduled.rebalance.max.delay.ms``);
- :mod:`.listener`: the worker's rebalance callbacks (``on_revoked`` / ``on_assigned`` /
  ``on_lost`` with connectors and tasks), shared by both workers;
- :mod:`.worker`: the sans-IO worker of a ``connect`` group on the new protocol
  (ConnectGroupHeartbeat, Prepare/Install when chosen to compute the assignment).
"""

from __future__ import annotations

from groupcoord.client.connect.assignors import (
    DEFAULT_MAX_DELAY_MS,
    ConnectGroupAssignment,
    CooperativeLeaderState,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    apply_assignment,
    decode_members,
    revoking_backoff_ms,
)
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import DEFER, ConnectRebalanceListener
from groupcoord.client.connect.worker import ConnectWorker
from groupcoord.protocol.connect_protocol import (
    CONFIG_MISMATCH,
    CONNECT_PROTOCOL_TYPE,
    CONNECT_PROTOCOL_V0,
    CONNECT_PROTOCOL_V1,
    CONNECT_PROTOCOL_V2,
    CONNECTOR_TASK,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
    ConnectProtocolCompatibility,
    ConnectProtocolError,
    WorkerMetadata,
    decode_assignment,
    decode_worker_metadata,
    encode_assignment,
    encode_worker_metadata,
    join_protocols,
)

__all__ = [
    "CONFIG_MISMATCH",
    "CONNECTOR_TASK",
    "CONNECT_PROTOCOL_TYPE",
    "CONNECT_PROTOCOL_V0",
    "CONNECT_PROTOCOL_V1",
    "CONNECT_PROTOCOL_V2",
    "DEFAULT_MAX_DELAY_MS",
    "DEFER",
    "NO_ERROR",
    "ConfigSnapshot",
    "ConnectAssignment",
    "ConnectGroupAssignment",
    "ConnectProtocolCompatibility",
    "ConnectProtocolError",
    "ConnectRebalanceListener",
    "ConnectWorker",
    "ConnectorTaskId",
    "ConnectorsAndTasks",
    "CooperativeLeaderState",
    "EagerAssignor",
    "IncrementalCooperativeAssignor",
    "WorkerMetadata",
    "apply_assignment",
    "decode_assignment",
    "decode_members",
    "decode_worker_metadata",
    "encode_assignment",
    "encode_worker_metadata",
    "join_protocols",
    "revoking_backoff_ms",
]

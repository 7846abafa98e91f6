"""Several brokers in one process (``groupcoord serve --brokers N``): who leads what.

One server process, one coordinator runtime and one set of topics, served on N ports, one per
broker, node ids 0..N-1 (optional racks). :class:`BrokerSet` decides, for every request, whether
the broker it reached is the right one, as a Kafka cluster would answer:

- **partition leaders** are spread over the brokers: partition ``p`` of a topic prefers broker
  ``(h + p) % N`` (``h`` a stable hash of the topic name), and is led by the first live broker
  from there (a broker taken down hands its partitions to the next; when it comes back it leads
  them again, as an immediate preferred-leader election would). Produce, Fetch and ListOffsets
  to another broker are answered NOT_LEADER_OR_FOLLOWER for every partition;
- **group coordinators**: a group lives in coordinator shard ``partitionFor(groupId)`` (the
  runtime's shards are the ``__consumer_offsets`` partitions: Kafka's ``abs(hash(groupId)) %
  numPartitions`` with Java's ``String.hashCode``); shard ``i``'s coordinator is broker
  ``i % N``, or another one it was moved to, or the first live broker after it. Group requests
  to another broker are answered NOT_COORDINATOR; FindCoordinator names the coordinator;
- **transaction coordinators**: a transactional id lives in partition ``partitionFor(id)`` of
  the transaction log, whose coordinator is chosen as a shard's (its own moves); transaction
  requests to another broker are answered NOT_COORDINATOR;
- **leader epochs**: one generation for the whole cluster, bumped at every change of leaders or
  coordinators, given as every partition's leader epoch in Metadata (never going backwards, so
  clients that compare epochs, KIP-320, take the new leaders).

When a shard's coordinator changes, the new broker loads the groups from the record log (the
runtime reloads the shard: COORDINATOR_LOAD_IN_PROGRESS meanwhile, pending JoinGroup / SyncGroup
answered NOT_COORDINATOR), as a Kafka coordinator loading a ``__consumer_offsets`` partition.

Approximations: a request naming groups or partitions of several brokers is refused as a whole
(Kafka answers each group or partition); ListGroups lists every group on every broker; there is
one replica per partition (replicas and ISR are the leader).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["BrokerInfo", "BrokerSet"]


@dataclass
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class BrokerSet:
    """The brokers of one server and who leads what (module doc)."""

    brokers: list[BrokerInfo]
    num_shards: int
    #: Brokers taken down (connections to them closed at once; their ports stay bound).
    down: set[int] = field(default_factory=set)
    #: Shards whose coordinator was moved: shard -> broker.
    moved: dict[int, int] = field(default_factory=dict)
    #: Bumped at every change of leaders or coordinators (the leader epoch in Metadata).
    generation: int = 0
    #: Transaction-log partitions whose coordinator was moved: partition -> broker.
    txn_moved: dict[int, int] = field(default_factory=dict)

    @property
    def ids(self) -> list[int]:
        return [b.node_id for b in self.brokers]

    def live(self) -> list[BrokerInfo]:
        return [b for b in self.brokers if b.node_id not in self.down]

    def info(self, node_id: int) -> BrokerInfo:
        return self.brokers[node_id]

    def _first_live_from(self, start: int) -> int:
        n = len(self.brokers)
        for k in range(n):
            b = (start + k) % n
            if b not in self.down:
                return b
        return start % n  # every broker is down: nobody answers anyway

    def leader(self, topic: str, partition: int) -> int:
        h = zlib.crc32(topic.encode())
        return self._first_live_from(h + partition)

    def coordinator_of_shard(self, shard: int) -> int:
        return self._first_live_from(self.moved.get(shard, shard))

    def transaction_coordinator(self, partition: int) -> int:
        """The broker coordinating the transactional ids of transaction-log ``partition``: as a
        shard's, broker ``partition % N`` or the one it was moved to, else the next live one."""
        return self._first_live_from(self.txn_moved.get(partition, partition))

    def owners(self) -> list[int]:
        return [self.coordinator_of_shard(i) for i in range(self.num_shards)]

    def controller(self) -> int:
        live = self.live()
        return live[0].node_id if live else 0

    def check_broker(self, node_id: int) -> int:
        if node_id not in self.ids:
            raise ValueError(f"no broker {node_id} (brokers are 0..{len(self.brokers) - 1})")
        return node_id

    def changed_shards(self, before: Iterable[int]) -> list[int]:
        """The shards whose coordinator differs from ``before`` (a list of owners)."""
        return [i for i, (a, b) in enumerate(zip(before, self.owners(), strict=True)) if a != b]

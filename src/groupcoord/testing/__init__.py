"""groupcoord as a Kafka test double: an embedded server with a control plane (docs/testing.md).

- :func:`embedded_cluster` / :func:`async_embedded_cluster`: start a server on free ports
  (memory storage, short group timings, ``brokers=N`` brokers), with topics declared up front,
  and yield a :class:`Cluster` (``bootstrap_servers``, ``control``, ``create_topic``,
  ``restart``);
- :class:`Control`: inject errors and latency, drop connections, expire a member's session,
  fail the next record-log append, move a group's coordinator, take a broker down and up; in
  process or over the wire (:meth:`Control.connect`);
- the pytest plugin ``groupcoord.testing.plugin`` (entry point ``pytest11``): the fixtures
  ``kafka_cluster`` and ``kafka_bootstrap``, and the marker ``groupcoord(topics=..., config=...)``.

Importing this package starts nothing and imports no server code until a cluster is started.
"""

from groupcoord.testing.cluster import (
    TEST_PROPERTIES,
    Cluster,
    Control,
    ControlError,
    async_embedded_cluster,
    embedded_cluster,
)

__all__ = ["TEST_PROPERTIES", "Cluster", "Control", "ControlError", "async_embedded_cluster",
           "embedded_cluster"]

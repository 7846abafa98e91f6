"""Metadata and FindCoordinator, served from the :class:`TopicRegistry`: one node, id 0, leader
of every partition at leader epoch 0 (or the brokers of ``server/brokers.py``).

Upstream behaviour kept (Kafka's ``KafkaApis`` and the protocol guide):

- Metadata: v0 empty topic list = all topics, v1+ null = all; v10+ carries topic ids; a topic
  asked for by id only (v12+, librdkafka's consumer) is looked up by id (UNKNOWN_TOPIC_ID if
  unknown). Topics are auto-created only if ``auto.create.topics.enable=true`` (default false
  here, unlike Kafka) and the request allows it (v4+), with ``num.partitions`` partitions.
- FindCoordinator: key type 0 (GROUP) is answered with this node; key type 1 (TRANSACTION) with
  the broker leading the id's transaction-log partition; v4+ batches keys. Other key types
  (share groups) are not served: INVALID_REQUEST.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import encode_entity
from groupcoord.protocol.errors import CoordinatorError
from groupcoord.protocol.fast import UniformPartitions, metadata_response
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import (
    LEADER_EPOCH,
    NO_OPS,
    NODE_ID,
    RT,
    ApiFamily,
    BrokerState,
    E,
    Op,
    RequestContext,
)
from groupcoord.server.security.acls import CLUSTER_NAME
from groupcoord.server.topic_registry import validate_topic_name

METADATA_CACHE_SIZE = 512


class MetadataApis(ApiFamily):
    """Metadata (from a cache of encoded responses) and FindCoordinator."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.host = broker.host
        self.port = broker.port
        self.auto_create = broker.auto_create
        self.default_partitions = broker.default_partitions
        self._metadata_cache: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self.handlers = {
            ApiKey.METADATA: self.metadata,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
        }

    def brokers_changed(self) -> None:
        """Leaders or coordinators changed (``server/brokers.py``): cached Metadata is stale."""
        self._metadata_cache.clear()

    def _partition_entries(self, name: str, n: int) -> Sequence[dict[str, Any]]:
        bs = self.brokers
        if bs is None:  # one broker leads all: encoded without a dict each (protocol/fast.py)
            return UniformPartitions(n, NODE_ID, LEADER_EPOCH)
        topic = self.registry.get(name)
        rf = 1 if topic is None else min(topic.replication_factor, len(bs.brokers))
        ids = bs.ids
        out = []
        for p in range(n):
            leader = bs.leader(name, p)
            # The leader and the next brokers, as many as the replication factor; every replica
            # is in sync (one copy of the data serves them all).
            replicas = tuple(ids[(leader + k) % len(ids)] for k in range(rf))
            out.append({"error_code": 0, "partition_index": p, "leader_id": leader,
                        "leader_epoch": LEADER_EPOCH + bs.generation, "replica_nodes": replicas,
                        "isr_nodes": tuple(r for r in replicas if r not in bs.down),
                        "offline_replicas": tuple(r for r in replicas if r in bs.down)})
        return out

    def _address(self, node_id: int, listener: str, host: str, port: int) -> tuple[str, int]:
        """The address of ``node_id`` on ``listener`` (default: ``host``, ``port``)."""
        return self.broker.endpoints.get(listener, {}).get(node_id, (host, port))

    def _broker_entries(self, listener: str = "PLAINTEXT") -> tuple[list[dict[str, Any]], int]:
        """Metadata's brokers (the live ones, at their address on ``listener``) and controller
        id."""
        bs = self.brokers
        if bs is None:
            host, port = self._address(NODE_ID, listener, self.host, self.port)
            return [{"node_id": NODE_ID, "host": host, "port": port, "rack": None}], NODE_ID
        out = []
        for b in bs.live():
            host, port = self._address(b.node_id, listener, b.host, b.port)
            out.append({"node_id": b.node_id, "host": host, "port": port, "rack": b.rack})
        return out, bs.controller()

    def metadata(self, body: Any, ctx: RequestContext) -> Any:
        """Metadata, answered from a cache of encoded responses while the topics do not change:
        librdkafka refreshes metadata often (every consumer, on every assignment change), and a
        response for hundreds of partitions is costly to encode in Python."""
        requested = body.topics
        key = (ctx.api_version, ctx.listener,
               None if requested is None else tuple(
                   (getattr(t, "name", None), getattr(t, "topic_id", None)) for t in requested),
               self.auto_create and bool(getattr(body, "allow_auto_topic_creation", True)),
               ctx.principal, ctx.client_host, self.authorizer.store.generation,
               bool(getattr(body, "include_topic_authorized_operations", False)),
               bool(getattr(body, "include_cluster_authorized_operations", False)),
               self.registry.generation)
        cached = self._metadata_cache.get(key)
        if cached is not None:
            self._metadata_cache.move_to_end(key)
            return cached
        topics, rest = self._metadata(body, ctx)
        # the topics array by hand (protocol/fast.py): kio takes seconds for 100,000 partitions
        raw = metadata_response(ctx.api_version, encode_entity(self._resp(ctx, topics=(), **rest)),
                                topics) or encode_entity(self._resp(ctx, topics=topics, **rest))
        if self.registry.generation == key[-1]:  # nothing was auto-created meanwhile
            self._metadata_cache[key] = raw
            if len(self._metadata_cache) > METADATA_CACHE_SIZE:
                self._metadata_cache.popitem(last=False)
        return raw

    def _metadata(self, body: Any,
                  ctx: RequestContext) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The response's topics, and its other fields."""
        v = ctx.api_version
        requested = body.topics
        all_topics = requested is None or (v == 0 and not requested)
        allow_auto = bool(getattr(body, "allow_auto_topic_creation", True))
        out: list[dict[str, Any]] = []
        created = False
        topic_ops = bool(getattr(body, "include_topic_authorized_operations", False))

        def described(name: str, tid: UUID, n: int) -> dict[str, Any]:
            md = self._topic_metadata(name, tid, n)
            if topic_ops:
                md["topic_authorized_operations"] = self.authorizer.authorized_operations(
                    ctx.principal, ctx.client_host, RT.TOPIC, name)
            return md

        def refused(name: str | None, tid: UUID | None) -> dict[str, Any]:
            return {"error_code": E.topic_authorization_failed, "name": name, "topic_id": tid,
                    "partitions": ()}

        if all_topics:  # the topics the principal may not describe are left out, as Kafka
            wanted: Sequence[Any] = [t for t in self.registry
                                     if self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]
            for t in wanted:
                out.append(described(t.name, t.topic_id, t.num_partitions))
        else:
            for req in requested:
                name = getattr(req, "name", None)
                tid = getattr(req, "topic_id", None)
                if not name and tid is not None and tid.int != 0:
                    topic = self.registry.by_id.get(tid)
                    if topic is None:
                        out.append({"error_code": E.unknown_topic_id, "name": None, "topic_id": tid,
                                    "partitions": ()})
                    elif not self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, topic.name):
                        out.append(refused(None, tid))
                    else:
                        out.append(described(topic.name, topic.topic_id, topic.num_partitions))
                    continue
                name = name or ""
                if not self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
                    out.append(refused(name, None))
                    continue
                topic = self.registry.get(name)
                if topic is None and self.auto_create and allow_auto:
                    if not (self._cluster_allowed(ctx, Op.CREATE)
                            or self._allowed(ctx, Op.CREATE, RT.TOPIC, name)):
                        out.append(refused(name, None))
                        continue
                    try:
                        topic = self.registry.create(name, self.default_partitions)
                        created = True
                    except CoordinatorError as e:
                        out.append({"error_code": e.code, "name": name, "topic_id": None,
                                    "partitions": ()})
                        continue
                if topic is None:
                    try:
                        validate_topic_name(name)
                        code = E.unknown_topic_or_partition
                    except CoordinatorError as e:
                        code = ErrorCode(e.code)
                    out.append({"error_code": code, "name": name, "topic_id": None, "partitions": ()})
                else:
                    out.append(described(topic.name, topic.topic_id, topic.num_partitions))
        if created:
            self._topics_changed()
        brokers, controller = self._broker_entries(ctx.listener)
        cluster_ops = NO_OPS
        if getattr(body, "include_cluster_authorized_operations", False):
            cluster_ops = self.authorizer.authorized_operations(
                ctx.principal, ctx.client_host, RT.CLUSTER, CLUSTER_NAME)
        return out, dict(throttle_time=0, brokers=brokers, cluster_id=self.registry.cluster_id,
                         controller_id=controller, cluster_authorized_operations=cluster_ops,
                         error_code=0)

    def _topic_metadata(self, name: str, tid: UUID, n: int) -> dict[str, Any]:
        return {"error_code": 0, "name": name, "topic_id": tid, "is_internal": False,
                "partitions": self._partition_entries(name, n),
                "topic_authorized_operations": NO_OPS}

    def find_coordinator(self, body: Any, ctx: RequestContext) -> Any:
        def entry(key: str, key_type: int) -> dict[str, Any]:
            if key_type == 1:  # TRANSACTION (KIP-98): server/apis/transactions.py
                return self._transaction_coordinator(key, ctx)
            if key_type != 0:
                return {"key": key, "node_id": -1, "host": "", "port": -1,
                        "error_code": E.invalid_request,
                        "error_message": f"Unsupported coordinator key type {key_type}: this broker "
                                         f"coordinates groups (0) and transactions (1)."}
            if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, key):
                return {"key": key, "node_id": -1, "host": "", "port": -1,
                        "error_code": E.group_authorization_failed,
                        "error_message": f"Not authorized to describe the group {key!r}."}
            if self.brokers is not None:  # the leader of the group's __consumer_offsets partition
                b = self.brokers.info(self.brokers.coordinator_of_shard(self.runtime.shard_of(key)))
                host, port = self._address(b.node_id, ctx.listener, b.host, b.port)
                return {"key": key, "node_id": b.node_id, "host": host, "port": port,
                        "error_code": 0, "error_message": None}
            host, port = self._address(NODE_ID, ctx.listener, self.host, self.port)
            return {"key": key, "node_id": NODE_ID, "host": host, "port": port,
                    "error_code": 0, "error_message": None}

        key_type = int(getattr(body, "key_type", 0))
        if ctx.api_version >= 4:
            return self._resp(ctx, throttle_time=0,
                              coordinators=[entry(k, key_type) for k in body.coordinator_keys])
        e = entry(body.key, key_type)
        return self._resp(ctx, throttle_time=0, **{k: v for k, v in e.items() if k != "key"})

    def _transaction_coordinator(self, key: str, ctx: RequestContext) -> dict[str, Any]:
        """FindCoordinator for a transactional id (key type 1): DESCRIBE on the TRANSACTIONAL_ID
        (Kafka's ``KafkaApis``), then the broker leading the id's transaction-log partition."""
        if not self._allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, key):
            return {"key": key, "node_id": -1, "host": "", "port": -1,
                    "error_code": E.transactional_id_authorization_failed,
                    "error_message": f"Not authorized to describe the transactional id {key!r}."}
        txns = self.broker.transactions
        if txns is None:
            return {"key": key, "node_id": -1, "host": "", "port": -1,
                    "error_code": E.coordinator_not_available,
                    "error_message": "The transaction coordinator is not running."}
        node = NODE_ID
        host, port = self.host, self.port
        if self.brokers is not None:
            b = self.brokers.info(self.brokers.transaction_coordinator(
                txns.coordinator.partition_of(key)))
            node, host, port = b.node_id, b.host, b.port
        host, port = self._address(node, ctx.listener, host, port)
        return {"key": key, "node_id": node, "host": host, "port": port,
                "error_code": 0, "error_message": None}

"""One handler per Kafka API: kio entities in, kio entities out (the shape of kfake / KafkaApis).

A handler may also return the encoded response body as ``bytes`` (the ConsumerGroupHeartbeat
response, encoded by ``protocol/fast.py`` on the hot path).

Group APIs are converted to the coordinator's own messages (``coordinator/messages.py``) and run
on the group's shard through :class:`CoordinatorRuntime`; requests naming several groups are
split by shard and answered in the request's order. Broker APIs (Metadata, FindCoordinator,
CreateTopics, DeleteTopics, CreatePartitions, Produce, Fetch, ListOffsets, DescribeConfigs /
IncrementalAlterConfigs of TOPIC and BROKER) are served here from the :class:`TopicRegistry`:
one node, id 0, leader of every partition at leader epoch 0.

Upstream behaviour kept (Kafka's ``KafkaApis`` and the protocol guide):

- Metadata: v0 empty topic list = all topics, v1+ null = all; v10+ carries topic ids; a topic
  asked for by id only (v12+, librdkafka's consumer) is looked up by id (UNKNOWN_TOPIC_ID if
  unknown). Topics are auto-created only if ``auto.create.topics.enable=true`` (default false
  here, unlike Kafka) and the request allows it (v4+), with ``num.partitions`` partitions.
- FindCoordinator: key type 0 (GROUP) is answered with this node; v4+ batches keys. Other key
  types (transactions, share groups) are not served: INVALID_REQUEST.
- Produce with ``acks=0`` gets no response at all. Batches must be message format v2 with a good
  CRC (CORRUPT_MESSAGE otherwise).
- Fetch: sessionless only (KIP-227): a full request gets session id 0, so the client keeps
  sending full requests; an incremental one gets FETCH_SESSION_ID_NOT_FOUND. The response waits
  up to MaxWaitMs for MinBytes, woken by produces. Read committed = read uncommitted (no
  transactions).
- Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups) run on the
  group's shard like the rest; JoinGroup and SyncGroup may be answered later
  (``CoordinatorRuntime.handle_deferrable`` gives a future): the handler then returns an
  awaitable, and the connection answers its later requests only after it, in order (Kafka too
  mutes a connection while one of its requests is in flight). JoinGroup below v7 answers a
  missing protocol name as ``""`` (the field is not nullable there); LeaveGroup v0-v2 carry the
  one member id of the request.
- InitProducerId (KIP-98; what an idempotent producer, the default of kafka-python 3 and
  librdkafka, asks first): a new producer id at epoch 0 from :class:`ProducerIdAllocator` (blocks
  reserved in the data directory, never re-issued after a restart), whatever id and epoch a v3+
  request carries (Kafka also gives a non-transactional producer a fresh id). A transactional id
  gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED: this broker has no transaction coordinator (and
  FindCoordinator for transactions is INVALID_REQUEST). Produce stores idempotent batches as
  sent (producer id, epoch and sequence stay in the batch header); sequences are not checked, so
  a batch retried after a lost response is stored twice (Kafka would detect the duplicate).
- The extension APIs of the specs (API keys 1000+) are ``server/extension_apis.py``.
- DescribeConfigs / IncrementalAlterConfigs: resource type GROUP is 16 in the KIP-848 text and
  32 in Apache Kafka's ``ConfigResource.Type`` (16 is CLIENT_METRICS there); both are served as
  GROUP and answered with the type the client sent.
- Authorization (docs/acls.md has the table of what each API requires): every handler asks
  ``self.authorizer`` (``server/security/authorizer.py``) about ``ctx.principal`` from
  ``ctx.client_host`` before it changes or shows anything, as Kafka's ``KafkaApis`` does; the
  APIs about one group named by ``group_id`` are checked in :meth:`KafkaApis.handle` from
  :data:`GROUP_API_ACLS`. A refused request, or the refused part of one, reaches no coordinator
  and writes no record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode

from groupcoord.coordinator import messages as m
from groupcoord.coordinator.classic import messages as cm
from groupcoord.coordinator.modern.consumer import messages as cgm
from groupcoord.coordinator.modern.subscription import TopicFilter
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.protocol import fast
from groupcoord.protocol.codec import build, encode_entity, response_class, to_ms
from groupcoord.protocol.errors import CoordinatorError
from groupcoord.protocol.fast import UniformPartitions, metadata_response
from groupcoord.protocol.versions import API_VERSIONS, ApiKey
from groupcoord.server.brokers import BrokerSet
from groupcoord.server.extension_apis import ExtensionApis
from groupcoord.server.partition_log import InvalidRecords, ProducerStateError
from groupcoord.server.producer_ids import ProducerIdAllocator
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.security.acl_apis import AclApis
from groupcoord.server.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from groupcoord.server.security.apis import SecurityApis
from groupcoord.server.security.authorizer import Authorizer
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.topic_registry import TopicRegistry, validate_topic_name
from groupcoord.storage.log import LogError

log = logging.getLogger(__name__)

E = ErrorCode
NO_OPS = -(2**31)  # authorized operations not requested
NODE_ID = 0
LEADER_EPOCH = 0
METADATA_CACHE_SIZE = 512

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP_SPEC = 16
RESOURCE_GROUP_UPSTREAM = 32
GROUP_RESOURCE_TYPES = (RESOURCE_GROUP_SPEC, RESOURCE_GROUP_UPSTREAM)

# ConfigSource (DescribeConfigs v1+) and ConfigType (v3+) values of upstream's ConfigResource.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_GROUP = 8
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5

TOPIC_DEFAULTS: dict[str, tuple[str, int]] = {
    "cleanup.policy": ("delete", TYPE_STRING),
    "compression.type": ("producer", TYPE_STRING),
    "message.timestamp.type": ("CreateTime", TYPE_STRING),
    "retention.ms": ("-1", TYPE_LONG),
    "max.message.bytes": ("1048588", TYPE_INT),
}


@dataclass(slots=True, frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    client_id: str
    client_host: str
    #: The authenticated principal ("User:NAME"); "User:ANONYMOUS" on a listener without SASL or
    #: client certificates, as Kafka's default principal builder names it.
    principal: str = "User:ANONYMOUS"
    #: The name of the listener the request came in on (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    listener: str = "PLAINTEXT"


Handler = Callable[[Any, RequestContext], Any]

Op = AclOperation
RT = ResourceType

#: The APIs about one group named by the request's ``group_id``, and the operation on that
#: GROUP each requires (Kafka's ``KafkaApis``; KIP-848 "ACLs"). The extension APIs are member
#: actions like a heartbeat (READ), except ConnectGroupConfig, which changes the connectors
#: of the group (ALTER, our choice: docs/acls.md).
GROUP_API_ACLS: dict[int, AclOperation] = {
    ApiKey.JOIN_GROUP: Op.READ,
    ApiKey.SYNC_GROUP: Op.READ,
    ApiKey.HEARTBEAT: Op.READ,
    ApiKey.LEAVE_GROUP: Op.READ,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Op.READ,
    ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: Op.READ,
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: Op.READ,
    ApiKey.CONNECT_GROUP_HEARTBEAT: Op.READ,
    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: Op.READ,
    ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: Op.READ,
    ApiKey.CONNECT_GROUP_CONFIG: Op.ALTER,
}


class KafkaApis:
    """The handlers. ``handle`` returns a kio response, None (no response: acks=0), or an
    awaitable of one (a Fetch waiting for data)."""

    def __init__(self, registry: TopicRegistry, runtime: CoordinatorRuntime,
                 host: str, port: int, broker_configs: dict[str, str] | None = None,
                 producer_ids: ProducerIdAllocator | None = None,
                 credentials: CredentialStore | None = None) -> None:
        self.registry = registry
        self.producer_ids = producer_ids or ProducerIdAllocator(
            registry.data_dir, persist=not registry.in_memory)
        self.runtime = runtime
        self.host = host
        self.port = port
        self.broker_configs = dict(broker_configs or {})
        self.auto_create = self.broker_configs.get("auto.create.topics.enable", "false").lower() == "true"
        self.default_partitions = int(self.broker_configs.get("num.partitions", "1"))
        self._data_waiters: list[asyncio.Future[None]] = []
        self._metadata_cache: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self.handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.consumer_group_describe,
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.SYNC_GROUP: self.sync_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.OFFSET_DELETE: self.offset_delete,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
            ApiKey.DESCRIBE_CONFIGS: self.describe_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
        }
        #: Who may do what (``server/security/``); the server sets the real one. This default,
        #: with no ACLs and allow.everyone.if.no.acl.found, allows everything.
        self.authorizer = Authorizer()
        #: (principal, host) -> (the authorizer it asks, its topic filter): one filter per
        #: client rather than one closure built on every ConsumerGroupHeartbeat.
        self._topic_filters: dict[tuple[str, str], tuple[Authorizer, TopicFilter]] = {}
        self.extensions = ExtensionApis(
            runtime, self._resp,
            describable=lambda ctx, g: self._allowed(ctx, Op.DESCRIBE, RT.GROUP, g))
        self.handlers.update(self.extensions.handlers)
        #: SASL after authentication, SCRAM credentials (``server/security/apis.py``).
        self.security = SecurityApis(credentials or CredentialStore(None, persist=False), self._resp)
        self.handlers.update(self.security.handlers)
        self.handlers[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS] = self._describe_scram
        self.handlers[ApiKey.ALTER_USER_SCRAM_CREDENTIALS] = self._alter_scram
        #: Advertised (host, port) per listener name and node id, set by the server: a client is
        #: told the addresses of the listener it connected on. Empty: ``host``/``port`` (and
        #: the brokers' own) for every listener.
        self.endpoints: dict[str, dict[int, tuple[str, int]]] = {}
        self.handlers.update(AclApis(lambda: self.authorizer, self._resp).handlers)
        #: The control plane's ``run(command, args)`` (``server/control.py``), set by the server.
        self.control: Callable[[str, dict[str, Any]], Any] | None = None
        #: Several brokers (``server/brokers.py``), set by the server; None: one broker.
        self.brokers: BrokerSet | None = None
        self.handlers[ApiKey.GROUPCOORD_CONTROL] = self.groupcoord_control
        missing = set(API_VERSIONS) ^ set(self.handlers)
        if missing:  # the advertised table and the handlers must be the same set
            raise AssertionError(f"advertised APIs without handlers or vice versa: {missing}")

    def handle(self, body: Any, ctx: RequestContext) -> Any:
        op = GROUP_API_ACLS.get(ctx.api_key)
        if op is not None:
            refused = self._refuse_group_api(body, ctx, op)
            if refused is not None:
                return refused
        return self.handlers[ctx.api_key](body, ctx)

    # ================================================================== authorization

    def _allowed(self, ctx: RequestContext, op: AclOperation, rtype: ResourceType,
                 name: str) -> bool:
        return self.authorizer.authorize(ctx.principal, ctx.client_host, op, rtype, name)

    def _cluster_allowed(self, ctx: RequestContext, op: AclOperation) -> bool:
        return self._allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME)

    def _describe_scram(self, body: Any, ctx: RequestContext) -> Any:
        """DescribeUserScramCredentials needs DESCRIBE on the CLUSTER (Kafka's ``KafkaApis``)."""
        if not self._cluster_allowed(ctx, Op.DESCRIBE):
            return self._resp(ctx, throttle_time=0, error_code=E.cluster_authorization_failed,
                              error_message="Not authorized to describe SCRAM credentials "
                                            "(DESCRIBE on the CLUSTER).", results=())
        return self.security.describe_user_scram_credentials(body, ctx)

    def _alter_scram(self, body: Any, ctx: RequestContext) -> Any:
        """AlterUserScramCredentials needs ALTER on the CLUSTER (Kafka's ``KafkaApis``); refused,
        every user named gets CLUSTER_AUTHORIZATION_FAILED and nothing changes."""
        if not self._cluster_allowed(ctx, Op.ALTER):
            users = dict.fromkeys(str(x.name) for x in (*body.deletions, *body.upsertions))
            return self._resp(ctx, throttle_time=0, results=[
                {"user": u, "error_code": E.cluster_authorization_failed,
                 "error_message": "Not authorized to alter SCRAM credentials (ALTER on the "
                                  "CLUSTER)."} for u in users])
        return self.security.alter_user_scram_credentials(body, ctx)

    def _refuse_group_api(self, body: Any, ctx: RequestContext, op: AclOperation) -> Any | None:
        """The answer to a one-group request the principal may not make (GROUP_AUTHORIZATION_
        FAILED), or None. ConsumerGroupHeartbeat also needs DESCRIBE on every topic it names
        (Kafka 4's ``KafkaApis``: TOPIC_AUTHORIZATION_FAILED naming the topics)."""
        code, message = 0, None
        if not self._allowed(ctx, op, RT.GROUP, body.group_id):
            code = E.group_authorization_failed
            message = f"Not authorized to {op.name} the group {body.group_id!r}."
        elif ctx.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT and body.subscribed_topic_names:
            denied = sorted(set(self.authorizer.denied(
                ctx.principal, ctx.client_host, Op.DESCRIBE, RT.TOPIC,
                body.subscribed_topic_names)))
            if denied:
                code = E.topic_authorization_failed
                message = f"Not authorized to describe the topics {denied}."
        if not code:
            return None
        if ctx.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            return fast.consumer_group_heartbeat_response(int(code), message, None, 0, 0, None)
        if ctx.api_key == ApiKey.LEAVE_GROUP and ctx.api_version >= cm.LEAVE_BATCH_VERSION:
            return self._resp(ctx, throttle_time=0, error_code=code, members=())
        return self._resp(ctx, throttle_time=0, throttle_time_ms=0, error_code=code,
                          error_message=message)

    def _resp(self, ctx: RequestContext, values: dict[str, Any] | None = None, **kw: Any) -> Any:
        cls = response_class(ctx.api_key, ctx.api_version)
        assert cls is not None
        return build(cls, values, **kw)

    # ================================================================== ApiVersions

    def api_versions(self, body: Any, ctx: RequestContext) -> Any:
        return self._resp(ctx, error_code=0, api_keys=api_version_entries(), throttle_time=0)

    def groupcoord_control(self, body: Any, ctx: RequestContext) -> Any:
        """GroupcoordControl (API 1010, ours): a control plane command (``server/control.py``).
        Bad JSON, an unknown command or bad arguments: INVALID_REQUEST with a one-line message.
        Requires CLUSTER_ACTION on the CLUSTER (what Kafka asks of broker-to-broker requests: the
        control plane injects faults and moves brokers, docs/acls.md)."""
        if not self._cluster_allowed(ctx, Op.CLUSTER_ACTION):
            return self._resp(ctx, throttle_time_ms=0, error_code=E.cluster_authorization_failed,
                              error_message="Not authorized: the control plane requires "
                                            "CLUSTER_ACTION on the CLUSTER.", result="null")
        if self.control is None:
            return self._resp(ctx, throttle_time_ms=0, error_code=E.cluster_authorization_failed,
                              error_message="this server has no control plane", result="null")
        try:
            args = json.loads(body.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError(f"Arguments must be a JSON object, got {body.arguments!r}")
            result = self.control(body.command, args)
        except ValueError as e:  # ControlError, json.JSONDecodeError
            return self._resp(ctx, throttle_time_ms=0, error_code=E.invalid_request,
                              error_message=str(e), result="null")
        return self._resp(ctx, throttle_time_ms=0, error_code=0, error_message=None,
                          result=json.dumps(result, default=str))

    # ================================================================== topics / metadata

    def _topics_changed(self) -> None:
        self.runtime.update_metadata(self.registry.image())

    def brokers_changed(self) -> None:
        """Leaders or coordinators changed (``server/brokers.py``): cached Metadata is stale."""
        self._metadata_cache.clear()

    def _partition_entries(self, name: str, n: int) -> Sequence[dict[str, Any]]:
        bs = self.brokers
        if bs is None:  # one broker leads all: encoded without a dict each (protocol/fast.py)
            return UniformPartitions(n, NODE_ID, LEADER_EPOCH)
        out = []
        for p in range(n):
            leader = bs.leader(name, p)
            out.append({"error_code": 0, "partition_index": p, "leader_id": leader,
                        "leader_epoch": LEADER_EPOCH + bs.generation, "replica_nodes": (leader,),
                        "isr_nodes": (leader,), "offline_replicas": ()})
        return out

    def _address(self, node_id: int, listener: str, host: str, port: int) -> tuple[str, int]:
        """The address of ``node_id`` on ``listener`` (default: ``host``, ``port``)."""
        return self.endpoints.get(listener, {}).get(node_id, (host, port))

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
            if key_type != 0:
                return {"key": key, "node_id": -1, "host": "", "port": -1,
                        "error_code": E.invalid_request,
                        "error_message": f"Unsupported coordinator key type {key_type}: this broker "
                                         f"only coordinates groups (0)."}
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

    def create_topics(self, body: Any, ctx: RequestContext) -> Any:
        """CreateTopics: CREATE on the CLUSTER or the TOPIC. A created topic's configs (every
        effective config, sorted by name), partition count and replication factor (v5+) are
        answered only to a principal with DESCRIBE_CONFIGS on the topic; to another the topic
        is created (error code 0, its id) but ``topic_config_error_code`` is
        TOPIC_AUTHORIZATION_FAILED and those fields stay empty / -1, as Kafka's
        ``ControllerApis.createTopics`` and ``ReplicationControlManager.createTopic`` answer."""
        results = []
        names = [t.name for t in body.topics]
        validate_only = bool(getattr(body, "validate_only", False))
        changed = False
        for t in body.topics:
            res: dict[str, Any] = {"name": t.name, "topic_id": None, "error_code": 0,
                                   "error_message": None, "num_partitions": -1,
                                   "replication_factor": -1, "configs": ()}
            try:
                if names.count(t.name) > 1:
                    raise CoordinatorError(E.invalid_request,
                                           f"Create topics request from client contains multiple "
                                           f"entries for topic {t.name}.")
                if not (self._cluster_allowed(ctx, Op.CREATE)
                        or self._allowed(ctx, Op.CREATE, RT.TOPIC, t.name)):
                    raise CoordinatorError(E.topic_authorization_failed,
                                           "Not authorized to create the topic (CREATE on the "
                                           "CLUSTER or the TOPIC).")
                count = int(t.num_partitions)
                if t.assignments:
                    if count != -1:
                        raise CoordinatorError(E.invalid_request, "Both numPartitions or "
                                               "replicationFactor and replicasAssignments were set.")
                    count = len(t.assignments)
                    if any(tuple(a.broker_ids) != (NODE_ID,) for a in t.assignments):
                        raise CoordinatorError(E.invalid_replica_assignment,
                                               "Replica assignments must name broker 0 only.")
                configs = {c.name: c.value for c in t.configs if c.value is not None}
                topic = self.registry.create(t.name, count, int(t.replication_factor), configs,
                                             validate_only)
                res["topic_id"] = topic.topic_id
                if self._allowed(ctx, Op.DESCRIBE_CONFIGS, RT.TOPIC, t.name):
                    res.update(num_partitions=topic.num_partitions, replication_factor=1,
                               configs=_created_topic_configs(topic.configs))
                else:
                    res["topic_config_error_code"] = E.topic_authorization_failed
                changed = changed or not validate_only
            except CoordinatorError as e:
                res.update(error_code=e.code, error_message=e.message)
            results.append(res)
        if changed:
            self._topics_changed()
        return self._resp(ctx, throttle_time=0, topics=results)

    def delete_topics(self, body: Any, ctx: RequestContext) -> Any:
        """DeleteTopics, authorized as Kafka's ``ControllerApis.deleteTopics``: DELETE on the
        CLUSTER allows every topic; otherwise a topic named by name that the principal may not
        DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether or not it exists, one it may describe
        but that does not exist is UNKNOWN_TOPIC_OR_PARTITION, and an existing one needs
        DELETE on it. A topic named by id: an unknown id is UNKNOWN_TOPIC_ID, and a refusal
        names the topic only to whoever may describe it. A topic with neither a name nor an id,
        or with both, is INVALID_REQUEST (as Kafka's controller answers), and so is a name or
        an id given twice: answered once ("Duplicate topic name." / "Duplicate topic id."),
        that topic left as it is. (Kafka shuffles its answers; these keep the request's order.)"""
        if ctx.api_version >= 6:
            wanted = [(t.name, t.topic_id) for t in body.topics]
        else:
            wanted = [(n, None) for n in body.topic_names]
        given = Counter((name, tid) if tid is not None and tid.int != 0 else (name, None)
                        for name, tid in wanted if (name is None) != (tid is None or tid.int == 0))
        results = []
        changed = False
        cluster = self._cluster_allowed(ctx, Op.DELETE)
        for name, tid in wanted:
            res: dict[str, Any] = {"name": name, "topic_id": tid, "error_code": 0, "error_message": None}
            try:
                by_id = tid is not None and tid.int != 0
                key = (name, tid if by_id else None)
                count = given.get(key, 0)
                if count > 1:
                    given[key] = 0  # answered once
                    raise CoordinatorError(E.invalid_request, "Duplicate topic id." if by_id
                                           else "Duplicate topic name.")
                if count == 0 and key in given:
                    continue  # a duplicate already answered
                if (name is None) != by_id:
                    raise CoordinatorError(E.invalid_request, (
                        "You may not specify both topic name and topic id." if by_id else
                        "Neither topic name nor id were specified."))
                if by_id:
                    topic = self.registry.by_id.get(tid)
                    if topic is None:
                        raise CoordinatorError(E.unknown_topic_id, f"Topic id {tid} does not exist.")
                    name = topic.name
                    # a topic named by id: its name only to whoever may describe it (Kafka's
                    # ControllerApis.deleteTopics), else the refusal would reveal it
                    if cluster or self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
                        res["name"] = name
                elif not cluster and not self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, name or ""):
                    raise CoordinatorError(E.topic_authorization_failed,
                                           "Not authorized to describe the topic.")
                elif self.registry.get(name or "") is None:
                    raise CoordinatorError(E.unknown_topic_or_partition,
                                           f"Topic '{name}' does not exist.")
                if not cluster and not self._allowed(ctx, Op.DELETE, RT.TOPIC, name or ""):
                    raise CoordinatorError(E.topic_authorization_failed,
                                           "Not authorized to delete the topic.")
                res["name"] = name
                topic = self.registry.delete(name or "")
                res["topic_id"] = topic.topic_id
                changed = True
            except CoordinatorError as e:
                res.update(error_code=e.code, error_message=e.message)
            results.append(res)
        if changed:
            self._topics_changed()
        return self._resp(ctx, throttle_time=0, responses=results)

    def create_partitions(self, body: Any, ctx: RequestContext) -> Any:
        """CreatePartitions: ALTER on the topic. A name given twice is answered once with
        INVALID_REQUEST "Duplicate topic name." and that topic is not grown (Kafka's
        ``ControllerApis.createPartitions``)."""
        results = []
        changed = False
        given = Counter(t.name for t in body.topics)
        for t in body.topics:
            res: dict[str, Any] = {"name": t.name, "error_code": 0, "error_message": None}
            count = given[t.name]
            if count == 0:
                continue  # a duplicate already answered
            try:
                if count > 1:
                    given[t.name] = 0
                    raise CoordinatorError(E.invalid_request, "Duplicate topic name.")
                if not self._allowed(ctx, Op.ALTER, RT.TOPIC, t.name):
                    raise CoordinatorError(E.topic_authorization_failed,
                                           "Not authorized to alter the topic.")
                self.registry.add_partitions(t.name, int(t.count), bool(body.validate_only))
                changed = changed or not body.validate_only
            except CoordinatorError as e:
                res.update(error_code=e.code, error_message=e.message)
            results.append(res)
        if changed:
            self._topics_changed()
        return self._resp(ctx, throttle_time=0, results=results)

    # ================================================================== data plane

    def produce(self, body: Any, ctx: RequestContext) -> Any:
        acks = int(body.acks)
        responses = []
        appended = False
        for td in body.topic_data:
            parts = []
            writable = self._allowed(ctx, Op.WRITE, RT.TOPIC, td.name)
            for pd in td.partition_data:
                res: dict[str, Any] = {"index": pd.index, "error_code": 0, "base_offset": -1,
                                       "log_append_time": -1, "log_start_offset": -1,
                                       "record_errors": (), "error_message": None}
                plog = self.registry.partition(td.name, int(pd.index))
                if acks not in (-1, 0, 1):
                    res["error_code"] = E.invalid_required_acks
                elif body.transactional_id is not None:
                    res.update(error_code=E.transactional_id_authorization_failed,
                               error_message="Transactions are not supported by this broker.")
                elif not writable:
                    res["error_code"] = E.topic_authorization_failed
                elif plog is None:
                    res["error_code"] = E.unknown_topic_or_partition
                else:
                    try:
                        res["base_offset"] = plog.append(bytes(pd.records or b""))
                        res["log_start_offset"] = plog.log_start_offset
                        appended = True
                    except InvalidRecords as e:
                        res.update(error_code=E.corrupt_message, error_message=str(e))
                    except ProducerStateError as e:
                        res.update(error_code=e.code, error_message=str(e))
                    except (OSError, LogError) as e:
                        log.error("produce to %s-%d failed: %s", td.name, pd.index, e)
                        res.update(error_code=E.kafka_storage_error, error_message=str(e))
                parts.append(res)
            responses.append({"name": td.name, "partition_responses": parts})
        if appended:
            self._wake_fetchers()
        if acks == 0:
            return None
        return self._resp(ctx, responses=responses, throttle_time=0)

    def init_producer_id(self, body: Any, ctx: RequestContext) -> Any:
        if body.transactional_id is not None:
            return self._resp(ctx, throttle_time=0, error_code=E.transactional_id_authorization_failed,
                              producer_id=-1, producer_epoch=-1)
        # KIP-679: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
        if not (self._cluster_allowed(ctx, Op.IDEMPOTENT_WRITE)
                or self.authorizer.authorize_any(ctx.principal, ctx.client_host, Op.WRITE,
                                                 RT.TOPIC)):
            return self._resp(ctx, throttle_time=0, error_code=E.cluster_authorization_failed,
                              producer_id=-1, producer_epoch=-1)
        try:
            pid = self.producer_ids.allocate()
        except OSError as e:
            log.error("cannot reserve producer ids: %s", e)
            return self._resp(ctx, throttle_time=0, error_code=E.kafka_storage_error,
                              producer_id=-1, producer_epoch=-1)
        return self._resp(ctx, throttle_time=0, error_code=0, producer_id=pid, producer_epoch=0)

    def _wake_fetchers(self) -> None:
        waiters, self._data_waiters = self._data_waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def fetch(self, body: Any, ctx: RequestContext) -> Any:
        v = ctx.api_version
        if v >= 7 and int(body.session_epoch) > 0:
            return self._resp(ctx, throttle_time=0, error_code=E.fetch_session_id_not_found,
                              session_id=0, responses=())
        resp, total, errors = self._fetch_once(body, ctx)
        max_wait = to_ms(body.max_wait)
        # Kafka answers once MinBytes are there; we answer as soon as any data (or an error) is.
        if total > 0 or errors or int(body.min_bytes) <= 0 or max_wait <= 0:
            return resp
        return self._fetch_wait(body, ctx, max_wait)

    async def _fetch_wait(self, body: Any, ctx: RequestContext, max_wait_ms: int) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000.0
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            fut: asyncio.Future[None] = loop.create_future()
            self._data_waiters.append(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                break
            finally:
                if not fut.done() or fut.cancelled():
                    with contextlib.suppress(ValueError):
                        self._data_waiters.remove(fut)
            resp, total, errors = self._fetch_once(body, ctx)
            if total > 0 or errors:
                return resp
        return self._fetch_once(body, ctx)[0]

    def _fetch_once(self, body: Any, ctx: RequestContext) -> tuple[Any, int, bool]:
        """(response, bytes of records, whether some partition has an error)."""
        v = ctx.api_version
        max_bytes = int(getattr(body, "max_bytes", 2**31 - 1))
        total = 0
        errors = False
        responses = []
        # A fetch with a replica id >= 0 is a follower's (Kafka's FetchRequest.isFromFollower):
        # CLUSTER_ACTION on the CLUSTER instead of READ on each topic, else every partition
        # TOPIC_AUTHORIZATION_FAILED (KafkaApis.handleFetchRequest). It is then served as a
        # consumer's: this broker has no followers.
        replica = (getattr(getattr(body, "replica_state", None), "replica_id", -1) if v >= 15
                   else getattr(body, "replica_id", -1))
        follower = int(replica) >= 0
        replicable = follower and self._cluster_allowed(ctx, Op.CLUSTER_ACTION)
        for ft in body.topics:
            if v >= 13:
                topic = self.registry.by_id.get(ft.topic_id)
                unknown = E.unknown_topic_id
                readable = topic is None or self._allowed(ctx, Op.READ, RT.TOPIC, topic.name)
            else:
                topic = self.registry.get(ft.topic)
                unknown = E.unknown_topic_or_partition
                readable = self._allowed(ctx, Op.READ, RT.TOPIC, ft.topic)
            if follower:
                readable = replicable
            parts = []
            for fp in ft.partitions:
                pi = int(fp.partition)
                res: dict[str, Any] = {"partition_index": pi, "error_code": 0,
                                       "high_watermark": -1, "last_stable_offset": -1,
                                       "log_start_offset": -1, "aborted_transactions": (),
                                       "preferred_read_replica": -1, "records": b""}
                if not readable:
                    res["error_code"] = E.topic_authorization_failed
                    errors = True
                    parts.append(res)
                    continue
                if topic is None or not 0 <= pi < topic.num_partitions:
                    res["error_code"] = unknown if topic is None else E.unknown_topic_or_partition
                    errors = True
                    parts.append(res)
                    continue
                plog = topic.partitions[pi]
                try:
                    hw = plog.high_watermark
                    res.update(high_watermark=hw, last_stable_offset=hw,
                               log_start_offset=plog.log_start_offset)
                    offset = int(fp.fetch_offset)
                    if offset < plog.log_start_offset or offset > hw:
                        res["error_code"] = E.offset_out_of_range
                        errors = True
                    elif offset < hw:
                        budget = min(int(fp.partition_max_bytes), max(max_bytes - total, 0))
                        data = plog.read(offset, budget) if (budget > 0 or total == 0) else b""
                        res["records"] = data
                        total += len(data)
                except (OSError, LogError) as e:  # unreadable partition file
                    log.error("fetch from %s-%d failed: %s", topic.name, pi, e)
                    res["error_code"] = E.kafka_storage_error
                    errors = True
                parts.append(res)
            responses.append({"topic": getattr(ft, "topic", ""), "topic_id": getattr(ft, "topic_id", None),
                              "partitions": parts})
        resp = self._resp(ctx, throttle_time=0, error_code=0, session_id=0, responses=responses)
        return resp, total, errors

    def offset_for_leader_epoch(self, body: Any, ctx: RequestContext) -> Any:
        """OffsetForLeaderEpoch (KIP-101 / KIP-320), which clients send to validate their
        positions after a leader change (kafka-python refuses to go on without it once leader
        epochs move: several brokers, ``server/brokers.py``). A partition has one replica and
        its log is never truncated, so every epoch ends at the high watermark: the answer is the
        requested epoch (or the current one, if the request names a later one) and the high
        watermark, which tells the client that no record it has seen was lost.

        Authorized as Kafka's ``KafkaApis.handleOffsetForLeaderEpochRequest``: CLUSTER_ACTION on
        the CLUSTER (what a follower broker has) allows every topic, else each topic needs
        DESCRIBE (what KIP-320 lets a consumer use). Kafka does not look at the replica id
        here: a request with a replica id >= 0 and DESCRIBE on the topic is answered too."""
        current = LEADER_EPOCH + (self.brokers.generation if self.brokers is not None else 0)
        topics = []
        cluster = self._cluster_allowed(ctx, Op.CLUSTER_ACTION)
        for t in body.topics:
            topic = self.registry.get(t.topic)
            describable = cluster or self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.topic)
            parts = []
            for p in t.partitions:
                pi = int(p.partition)
                res: dict[str, Any] = {"error_code": 0, "partition": pi, "leader_epoch": -1,
                                       "end_offset": -1}
                if not describable:
                    res["error_code"] = E.topic_authorization_failed
                elif topic is None or not 0 <= pi < topic.num_partitions:
                    res["error_code"] = E.unknown_topic_or_partition
                else:
                    try:
                        res["end_offset"] = topic.partitions[pi].high_watermark
                        res["leader_epoch"] = min(int(p.leader_epoch), current)
                    except (OSError, LogError) as e:  # unreadable or damaged partition file
                        log.error("offset for leader epoch of %s-%d failed: %s", t.topic, pi, e)
                        res["error_code"] = E.kafka_storage_error
                parts.append(res)
            topics.append({"topic": t.topic, "partitions": parts})
        return self._resp(ctx, throttle_time=0, topics=topics)

    def list_offsets(self, body: Any, ctx: RequestContext) -> Any:
        topics = []
        for t in body.topics:
            parts = []
            topic = self.registry.get(t.name)
            describable = self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)
            for p in t.partitions:
                pi = int(p.partition_index)
                res: dict[str, Any] = {"partition_index": pi, "error_code": 0, "timestamp": -1,
                                       "offset": -1, "leader_epoch": LEADER_EPOCH}
                if not describable:
                    res["error_code"] = E.topic_authorization_failed
                    parts.append(res)
                    continue
                if topic is None or not 0 <= pi < topic.num_partitions:
                    res["error_code"] = E.unknown_topic_or_partition
                    parts.append(res)
                    continue
                plog = topic.partitions[pi]
                ts = int(p.timestamp)
                try:
                    if ts == -1:  # LATEST
                        res["offset"] = plog.high_watermark
                    elif ts == -2:  # EARLIEST
                        res["offset"] = plog.log_start_offset
                    elif ts == -3:  # MAX_TIMESTAMP (v7+)
                        found = plog.max_timestamp_offset()
                        if found is not None:
                            res["offset"], res["timestamp"] = found
                    elif ts >= 0:
                        found = plog.offset_for_timestamp(ts)
                        if found is not None:
                            res["offset"], res["timestamp"] = found
                    else:
                        res["error_code"] = E.invalid_request
                except (OSError, LogError) as e:  # unreadable or damaged partition file
                    log.error("list offsets of %s-%d failed: %s", topic.name, pi, e)
                    res.update(error_code=E.kafka_storage_error, offset=-1, timestamp=-1)
                parts.append(res)
            topics.append({"name": t.name, "partitions": parts})
        return self._resp(ctx, throttle_time=0, topics=topics)

    # ================================================================== consumer groups

    def consumer_group_heartbeat(self, body: Any, ctx: RequestContext) -> Any:
        # ClientAssignors (request) and ShouldComputeAssignment (response) are groupcoord's
        # tagged fields on API 68 (protocol/schemas/ConsumerGroupHeartbeat*.json, docs/wire.md).
        tps = body.topic_partitions
        names = body.subscribed_topic_names
        assignors = getattr(body, "client_assignors", None)
        req = cgm.ConsumerGroupHeartbeatRequest(
            group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
            instance_id=body.instance_id, rack_id=body.rack_id,
            rebalance_timeout_ms=to_ms(body.rebalance_timeout),
            subscribed_topic_names=None if names is None else tuple(names),
            subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
            server_assignor=body.server_assignor,
            client_assignors=None if assignors is None else tuple(
                ClientAssignor(a.name, int(a.minimum_version), int(a.maximum_version),
                               int(a.reason), int(a.version), bytes(a.metadata))
                for a in assignors),
            topic_partitions=None if tps is None else tuple(
                cgm.TopicPartitions(tp.topic_id, tuple(tp.partitions)) for tp in tps),
            client_id=ctx.client_id, client_host=ctx.client_host, version=ctx.api_version,
            describable_topics=self._describable_topics(ctx))
        r: cgm.ConsumerGroupHeartbeatResponse = self.runtime.handle_group(body.group_id, req)
        a = r.assignment
        return fast.consumer_group_heartbeat_response(
            int(r.error_code), r.error_message, r.member_id, r.member_epoch,
            r.heartbeat_interval_ms,
            None if a is None else [(tp.topic_id, tp.partitions) for tp in a.topic_partitions],
            should_compute_assignment=r.should_compute_assignment)

    def _describable_topics(self, ctx: RequestContext) -> TopicFilter:
        """The topics of the given ones ``ctx``'s principal may DESCRIBE: what a regex
        subscription may resolve to (Kafka's ``filterTopicDescribeAuthorizedTopics``; the
        coordinator calls it only when it resolves the group's regexes). Built once per
        principal and host, and again when the server replaces its authorizer: every
        heartbeat carries it (the authorizer's own cache follows ACL changes)."""
        key = (ctx.principal, ctx.client_host)
        authorizer = self.authorizer
        cached = self._topic_filters.get(key)
        if cached is not None and cached[0] is authorizer:
            return cached[1]
        authorize = authorizer.authorize
        principal, host = key

        def describable(names: Collection[str]) -> list[str]:
            return [n for n in names if authorize(principal, host, Op.DESCRIBE, RT.TOPIC, n)]

        if len(self._topic_filters) >= 4096:  # many short-lived clients: start over
            self._topic_filters.clear()
        self._topic_filters[key] = (authorizer, describable)
        return describable

    def consumer_group_describe(self, body: Any, ctx: RequestContext) -> Any:
        """ConsumerGroupDescribe, its response encoded by ``protocol/fast.py`` (kio's generic
        writers took seconds for a group of 10,000 members, each listing its assignment and
        target with topic names)."""
        ids = list(body.group_ids)
        include_ops = bool(body.include_authorized_operations)
        found: dict[str, cgm.DescribedGroup] = {}
        for gid in ids:
            if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, gid):
                found[gid] = cgm.DescribedGroup(
                    gid, error_code=E.group_authorization_failed,
                    error_message=f"Not authorized to describe the group {gid!r}.")
        for shard, gids in self.runtime.group_ids_by_shard(
                [g for g in ids if g not in found]).items():
            r: cgm.ConsumerGroupDescribeResponse = self.runtime.handle(
                shard, cgm.ConsumerGroupDescribeRequest(tuple(gids), include_ops))
            for g in r.groups:
                found[g.group_id] = self._hide_undescribable_topics(g, ctx)
        by_id = self.registry.image().by_id

        def name_of(topic_id: Any) -> str:
            meta = by_id.get(topic_id)
            return meta.name if meta else ""

        groups = [found[gid] for gid in ids]
        ops = [self._group_ops(ctx, g.group_id, include_ops and not g.error_code,
                               g.authorized_operations) for g in groups]
        return fast.consumer_group_describe_response(ctx.api_version, groups, ops,
                                                     fast.DescribedTopics(name_of))

    def _group_ops(self, ctx: RequestContext, group_id: str, include: bool, given: int) -> int:
        """A described group's ``authorized_operations``: the principal's, when asked for."""
        if not include:
            return given
        return self.authorizer.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP,
                                                     group_id)

    def _hide_undescribable_topics(self, g: cgm.DescribedGroup,
                                   ctx: RequestContext) -> cgm.DescribedGroup:
        """A described consumer group whose members subscribe to or are assigned topics the
        principal may not describe is answered TOPIC_AUTHORIZATION_FAILED instead (Kafka 4's
        ``KafkaApis.handleConsumerGroupDescribe``: describing the group must not reveal them)."""
        if g.error_code:
            return g
        by_id = self.registry.image().by_id
        names: set[str] = set()
        for mb in g.members:
            names.update(mb.subscribed_topic_names)
            for a in (mb.assignment, mb.target_assignment):
                for tp in a.topic_partitions:
                    meta = by_id.get(tp.topic_id)
                    if meta is not None:
                        names.add(meta.name)
        if all(self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, n) for n in names):
            return g
        return cgm.DescribedGroup(g.group_id, error_code=E.topic_authorization_failed,
                                  error_message="The group has subscribed or assigned topics "
                                                "which are not authorized.")

    def list_groups(self, body: Any, ctx: RequestContext) -> Any:
        req = m.ListGroupsRequest(tuple(getattr(body, "states_filter", ()) or ()),
                                  tuple(getattr(body, "types_filter", ()) or ()))
        listed: list[m.ListedGroup] = []
        error = 0
        for i in range(self.runtime.num_shards):
            r: m.ListGroupsResponse = self.runtime.handle(i, req)
            if r.error_code and not error:
                error = r.error_code
            listed.extend(r.groups)
        if not self._cluster_allowed(ctx, Op.DESCRIBE):  # only the groups it may describe
            listed = [g for g in listed if self._allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
        listed.sort(key=lambda g: g.group_id)
        return self._resp(ctx, throttle_time=0, error_code=error, groups=[
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.group_state,
             "group_type": g.group_type} for g in listed])

    def delete_groups(self, body: Any, ctx: RequestContext) -> Any:
        ids = list(body.groups_names)
        found: dict[str, m.DeletableGroupResult] = {}
        for gid in ids:
            if not self._allowed(ctx, Op.DELETE, RT.GROUP, gid):
                found[gid] = m.DeletableGroupResult(gid, E.group_authorization_failed)
        for shard, gids in self.runtime.group_ids_by_shard(
                [g for g in ids if g not in found]).items():
            r: m.DeleteGroupsResponse = self.runtime.handle(shard, m.DeleteGroupsRequest(tuple(gids)))
            for res in r.results:
                found[res.group_id] = res
        return self._resp(ctx, throttle_time=0, results=[
            {"group_id": g, "error_code": found[g].error_code} for g in ids])

    # ================================================================== classic groups

    def _deferrable(self, group_id: str, request: Any, ctx: RequestContext,
                    convert: Callable[[Any, RequestContext], Any]) -> Any:
        """Run a request the core may answer later: the kio response, or an awaitable of it."""
        r = self.runtime.handle_deferrable(group_id, request)
        if isinstance(r, asyncio.Future):
            return self._answer_later(r, ctx, convert)
        return convert(r, ctx)

    @staticmethod
    async def _answer_later(fut: asyncio.Future[Any], ctx: RequestContext,
                            convert: Callable[[Any, RequestContext], Any]) -> Any:
        return convert(await fut, ctx)

    def join_group(self, body: Any, ctx: RequestContext) -> Any:
        """JoinGroup v0-v9: answered when the join phase of the group completes."""
        rebalance = getattr(body, "rebalance_timeout", None)  # v1+
        req = cm.JoinGroupRequest(
            group_id=body.group_id, session_timeout_ms=to_ms(body.session_timeout),
            member_id=body.member_id or "", protocol_type=body.protocol_type,
            protocols=tuple(cm.JoinGroupProtocol(p.name, bytes(p.metadata))
                            for p in body.protocols),
            rebalance_timeout_ms=-1 if rebalance is None else to_ms(rebalance),
            group_instance_id=getattr(body, "group_instance_id", None),
            reason=getattr(body, "reason", None),
            client_id=ctx.client_id, client_host=ctx.client_host, version=ctx.api_version)
        return self._deferrable(body.group_id, req, ctx, self._join_group_response)

    def _join_group_response(self, r: cm.JoinGroupResponse, ctx: RequestContext) -> Any:
        name = r.protocol_name
        if name is None and ctx.api_version < 7:
            name = ""
        return self._resp(
            ctx, throttle_time=0, error_code=r.error_code, generation_id=r.generation_id,
            protocol_type=r.protocol_type, protocol_name=name, leader=r.leader,
            skip_assignment=r.skip_assignment, member_id=r.member_id,
            members=[{"member_id": mb.member_id, "group_instance_id": mb.group_instance_id,
                      "metadata": mb.metadata} for mb in r.members])

    def sync_group(self, body: Any, ctx: RequestContext) -> Any:
        """SyncGroup v0-v5: a follower's is answered when the leader brings the assignment."""
        req = cm.SyncGroupRequest(
            group_id=body.group_id, generation_id=int(body.generation_id),
            member_id=body.member_id, group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple(cm.SyncGroupAssignment(a.member_id, bytes(a.assignment))
                              for a in body.assignments),
            client_id=ctx.client_id, client_host=ctx.client_host, version=ctx.api_version)
        return self._deferrable(body.group_id, req, ctx, self._sync_group_response)

    def _sync_group_response(self, r: cm.SyncGroupResponse, ctx: RequestContext) -> Any:
        return self._resp(ctx, throttle_time=0, error_code=r.error_code,
                          protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                          assignment=r.assignment)

    def heartbeat(self, body: Any, ctx: RequestContext) -> Any:
        req = cm.HeartbeatRequest(
            group_id=body.group_id, generation_id=int(body.generation_id),
            member_id=body.member_id, group_instance_id=getattr(body, "group_instance_id", None),
            client_id=ctx.client_id, client_host=ctx.client_host, version=ctx.api_version)
        r: cm.HeartbeatResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time=0, error_code=r.error_code)

    def leave_group(self, body: Any, ctx: RequestContext) -> Any:
        if ctx.api_version >= cm.LEAVE_BATCH_VERSION:
            members = tuple(cm.LeaveGroupMember(mb.member_id, mb.group_instance_id,
                                                getattr(mb, "reason", None))
                            for mb in body.members)
        else:
            members = (cm.LeaveGroupMember(body.member_id),)
        req = cm.LeaveGroupRequest(body.group_id, members, client_id=ctx.client_id,
                                   client_host=ctx.client_host, version=ctx.api_version)
        r: cm.LeaveGroupResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time=0, error_code=r.error_code, members=[
            {"member_id": mb.member_id, "group_instance_id": mb.group_instance_id,
             "error_code": mb.error_code} for mb in r.members])

    def describe_groups(self, body: Any, ctx: RequestContext) -> Any:
        """DescribeGroups: split by shard, answered in the request's order."""
        ids = list(body.groups)
        include_ops = bool(getattr(body, "include_authorized_operations", False))
        found: dict[str, cm.DescribedClassicGroup] = {}
        for gid in ids:
            if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, gid):
                found[gid] = cm.DescribedClassicGroup(
                    gid, error_code=E.group_authorization_failed,
                    error_message=f"Not authorized to describe the group {gid!r}.")
        for shard, gids in self.runtime.group_ids_by_shard(
                [g for g in ids if g not in found]).items():
            r: cm.DescribeGroupsResponse = self.runtime.handle(shard, cm.DescribeGroupsRequest(
                tuple(gids), include_ops, ctx.client_id, ctx.client_host, ctx.api_version))
            for g in r.groups:
                found[g.group_id] = g
        return self._resp(ctx, throttle_time=0, groups=[{
            "error_code": g.error_code, "error_message": g.error_message, "group_id": gid,
            "group_state": g.group_state, "protocol_type": g.protocol_type,
            "protocol_data": g.protocol_data,
            "authorized_operations": self._group_ops(ctx, gid, include_ops and not g.error_code,
                                                     g.authorized_operations),
            "members": [{"member_id": mb.member_id, "group_instance_id": mb.group_instance_id,
                         "client_id": mb.client_id, "client_host": mb.client_host,
                         "member_metadata": mb.member_metadata,
                         "member_assignment": mb.member_assignment} for mb in g.members]}
            for gid in ids for g in (found[gid],)])

    # ================================================================== offsets

    def _topic_name(self, t: Any) -> str | None:
        """The name of a request's topic given by name or (v10+ of the offset APIs) by id;
        None for an id of no topic."""
        name: str | None = getattr(t, "name", None)
        tid = getattr(t, "topic_id", None)
        if not name and tid is not None and tid.int != 0:
            topic = self.registry.by_id.get(tid)
            return None if topic is None else topic.name
        return name or ""

    def _split_topics(self, ctx: RequestContext, op: AclOperation,
                      topics: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """(allowed, refused) topics of a request for ``op`` on each TOPIC; a topic id of no
        topic is left to the coordinator, which answers it."""
        allowed: list[Any] = []
        refused: list[Any] = []
        for t in topics:
            name = self._topic_name(t)
            (refused if name is not None and not self._allowed(ctx, op, RT.TOPIC, name)
             else allowed).append(t)
        return allowed, refused

    @staticmethod
    def _refused_partitions(topics: Sequence[Any], code: int) -> list[dict[str, Any]]:
        return [{"name": getattr(t, "name", ""), "topic_id": getattr(t, "topic_id", None),
                 "partitions": [{"partition_index": p.partition_index, "error_code": code}
                                for p in t.partitions]} for t in topics]

    def offset_commit(self, body: Any, ctx: RequestContext) -> Any:
        """OffsetCommit: READ on the GROUP (else GROUP_AUTHORIZATION_FAILED for every
        partition) and READ on each TOPIC (else TOPIC_AUTHORIZATION_FAILED for its partitions;
        the other topics are committed), as Kafka."""
        if not self._allowed(ctx, Op.READ, RT.GROUP, body.group_id):
            return self._resp(ctx, throttle_time=0, topics=self._refused_partitions(
                body.topics, E.group_authorization_failed))
        topics, refused = self._split_topics(ctx, Op.READ, body.topics)
        denied = self._refused_partitions(refused, E.topic_authorization_failed)
        if refused and not topics:
            return self._resp(ctx, throttle_time=0, topics=denied)
        retention = getattr(body, "retention_time", None)
        req = m.OffsetCommitRequest(
            group_id=body.group_id,
            # v10 (KIP-848's topic ids, Kafka 4.1+) names topics by id only.
            topics=tuple(m.OffsetCommitTopic(getattr(t, "name", ""), tuple(
                m.OffsetCommitPartition(int(p.partition_index), int(p.committed_offset),
                                        int(getattr(p, "committed_leader_epoch", -1)),
                                        p.committed_metadata)
                for p in t.partitions), getattr(t, "topic_id", None)) for t in topics),
            generation_id_or_member_epoch=int(body.generation_id_or_member_epoch),
            member_id=body.member_id or "",
            group_instance_id=getattr(body, "group_instance_id", None),
            retention_time_ms=-1 if retention is None else to_ms(retention),
            api_version=ctx.api_version)
        r: m.OffsetCommitResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time=0, topics=denied + [
            {"name": t.name, "topic_id": t.topic_id,
             "partitions": [{"partition_index": p.partition_index,
                             "error_code": p.error_code} for p in t.partitions]}
            for t in r.topics])

    def _offset_fetch_group(self, ctx: RequestContext, group_id: str, topics: Any,
                            member_id: str | None, member_epoch: int,
                            require_stable: bool) -> m.OffsetFetchResponse:
        """One group's offsets: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED) and on
        each TOPIC, as Kafka: a topic asked for by name and not describable gets
        TOPIC_AUTHORIZATION_FAILED for its partitions; when all are asked for, such topics are
        left out."""
        if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, group_id):
            return m.OffsetFetchResponse(group_id, error_code=E.group_authorization_failed)
        refused: list[Any] = []
        if topics is not None:
            topics, refused = self._split_topics(ctx, Op.DESCRIBE, topics)
        denied = tuple(m.FetchedTopic(getattr(t, "name", ""), tuple(
            m.FetchedPartition(int(p), error_code=E.topic_authorization_failed)
            for p in t.partition_indexes), getattr(t, "topic_id", None)) for t in refused)
        if refused and not topics:
            return m.OffsetFetchResponse(group_id, denied)
        req = m.OffsetFetchRequest(
            group_id=group_id,
            topics=None if topics is None else tuple(
                m.OffsetFetchTopic(getattr(t, "name", ""), tuple(int(p) for p in t.partition_indexes),
                                   getattr(t, "topic_id", None)) for t in topics),
            member_id=member_id, member_epoch=member_epoch, require_stable=require_stable)
        r: m.OffsetFetchResponse = self.runtime.handle_group(group_id, req)
        if topics is None:
            kept = tuple(t for t in r.topics if self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name))
            if len(kept) != len(r.topics):
                r = m.OffsetFetchResponse(r.group_id, kept, r.error_code, r.error_message)
        elif denied:
            r = m.OffsetFetchResponse(r.group_id, r.topics + denied, r.error_code,
                                      r.error_message)
        return r

    @staticmethod
    def _fetched_topics(r: m.OffsetFetchResponse, requested: Any, per_partition_error: bool) -> list[Any]:
        if r.error_code and per_partition_error and requested is not None:
            return [{"name": t.name, "topic_id": getattr(t, "topic_id", None), "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": "", "error_code": r.error_code} for p in t.partition_indexes]}
                for t in requested]
        return [{"name": t.name, "topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition_index, "committed_offset": p.committed_offset,
             "committed_leader_epoch": p.committed_leader_epoch, "metadata": p.metadata,
             "error_code": p.error_code} for p in t.partitions]} for t in r.topics]

    def offset_fetch(self, body: Any, ctx: RequestContext) -> Any:
        v = ctx.api_version
        stable = bool(getattr(body, "require_stable", False))
        if v >= 8:
            groups = []
            for g in body.groups:
                r = self._offset_fetch_group(ctx, g.group_id, g.topics,
                                             getattr(g, "member_id", None),
                                             int(getattr(g, "member_epoch", -1)), stable)
                groups.append({"group_id": g.group_id, "error_code": r.error_code,
                               "topics": self._fetched_topics(r, g.topics, False)})
            return self._resp(ctx, throttle_time=0, groups=groups)
        r = self._offset_fetch_group(ctx, body.group_id, body.topics, None, -1, stable)
        return self._resp(ctx, throttle_time=0, error_code=r.error_code,
                          topics=self._fetched_topics(r, body.topics, v < 2))

    def offset_delete(self, body: Any, ctx: RequestContext) -> Any:
        """OffsetDelete: DELETE on the GROUP (else GROUP_AUTHORIZATION_FAILED, nothing
        deleted) and READ on each TOPIC (else TOPIC_AUTHORIZATION_FAILED for its partitions)."""
        if not self._allowed(ctx, Op.DELETE, RT.GROUP, body.group_id):
            return self._resp(ctx, error_code=E.group_authorization_failed, throttle_time=0,
                              topics=())
        topics, refused = self._split_topics(ctx, Op.READ, body.topics)
        denied = self._refused_partitions(refused, E.topic_authorization_failed)
        if refused and not topics:
            return self._resp(ctx, error_code=0, throttle_time=0, topics=denied)
        req = m.OffsetDeleteRequest(body.group_id, tuple(
            m.OffsetFetchTopic(t.name, tuple(int(p.partition_index) for p in t.partitions))
            for t in topics))
        r: m.OffsetDeleteResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, error_code=r.error_code, throttle_time=0, topics=denied + [
            {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                             "error_code": p.error_code} for p in t.partitions]}
            for t in r.topics])

    # ================================================================== configs

    def _config_refusal(self, ctx: RequestContext, rtype: int, name: str,
                        op: AclOperation) -> dict[str, Any] | None:
        """The error of a config resource the principal may not describe / alter (``op`` on
        the GROUP, TOPIC, or the CLUSTER for a BROKER), or None."""
        if rtype in GROUP_RESOURCE_TYPES:
            target, code = (RT.GROUP, name), E.group_authorization_failed
        elif rtype == RESOURCE_TOPIC:
            target, code = (RT.TOPIC, name), E.topic_authorization_failed
        elif rtype == RESOURCE_BROKER:
            target, code = (RT.CLUSTER, CLUSTER_NAME), E.cluster_authorization_failed
        else:
            return None
        if self._allowed(ctx, op, *target):
            return None
        return {"error_code": code, "error_message": f"Not authorized: {op.name} is required on "
                                                     f"the {target[0].name}."}

    def describe_configs(self, body: Any, ctx: RequestContext) -> Any:
        results = []
        for res in body.resources:
            rtype = int(res.resource_type)
            name = res.resource_name
            keys = None if res.configuration_keys is None else list(res.configuration_keys)
            out: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                                   "resource_name": name, "configs": ()}
            refused = self._config_refusal(ctx, rtype, name, Op.DESCRIBE_CONFIGS)
            if refused is not None:
                out.update(refused)
            elif rtype in GROUP_RESOURCE_TYPES:
                r: m.DescribeGroupConfigsResponse = self.runtime.handle_group(
                    name, m.DescribeGroupConfigsRequest(name, tuple(keys) if keys else None))
                out.update(error_code=r.error_code, error_message=r.error_message, configs=[
                    _config_entry(c.name, c.value, SOURCE_DEFAULT if c.is_default else SOURCE_GROUP,
                                  c.is_default, TYPE_INT) for c in r.configs])
            elif rtype == RESOURCE_TOPIC:
                topic = self.registry.get(name)
                if topic is None:
                    out.update(error_code=E.unknown_topic_or_partition,
                               error_message=f"Topic '{name}' does not exist.")
                else:
                    entries = {k: _config_entry(k, val, SOURCE_DEFAULT, True, typ)
                               for k, (val, typ) in TOPIC_DEFAULTS.items()}
                    for k, val in topic.configs.items():
                        entries[k] = _config_entry(k, val, SOURCE_DYNAMIC_TOPIC, False, TYPE_STRING)
                    out["configs"] = [entries[k] for k in sorted(entries) if not keys or k in keys]
            elif rtype == RESOURCE_BROKER:
                if name not in ("", str(NODE_ID)):
                    out.update(error_code=E.invalid_request,
                               error_message=f"Unexpected broker id {name!r}: this is broker 0.")
                else:
                    out["configs"] = [
                        _config_entry(k, val, SOURCE_STATIC_BROKER, False, TYPE_STRING)
                        for k, val in sorted(self.broker_configs.items()) if not keys or k in keys]
            else:
                out.update(error_code=E.invalid_request,
                           error_message=f"Unsupported resource type {rtype}.")
            results.append(out)
        return self._resp(ctx, throttle_time=0, results=results)

    def incremental_alter_configs(self, body: Any, ctx: RequestContext) -> Any:
        ops = {0: "set", 1: "delete", 2: "append", 3: "subtract"}
        responses = []
        for res in body.resources:
            rtype = int(res.resource_type)
            name = res.resource_name
            out: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                                   "resource_name": name}
            refused = self._config_refusal(ctx, rtype, name, Op.ALTER_CONFIGS)
            if refused is not None:
                out.update(refused)
            elif rtype in GROUP_RESOURCE_TYPES:
                req = m.AlterGroupConfigsRequest(name, tuple(
                    m.AlterGroupConfigOp(c.name, ops.get(int(c.config_operation), "?"), c.value)
                    for c in res.configs), bool(body.validate_only))
                r: m.AlterGroupConfigsResponse = self.runtime.handle_group(name, req)
                out.update(error_code=r.error_code, error_message=r.error_message)
            elif rtype == RESOURCE_TOPIC:
                topic = self.registry.get(name)
                if topic is None:
                    out.update(error_code=E.unknown_topic_or_partition,
                               error_message=f"Topic '{name}' does not exist.")
                else:
                    bad = [c.name for c in res.configs if int(c.config_operation) not in (0, 1)]
                    if bad:
                        out.update(error_code=E.invalid_request,
                                   error_message=f"Only SET and DELETE are supported: {bad}")
                    elif not body.validate_only:
                        for c in res.configs:
                            if int(c.config_operation) == 0 and c.value is not None:
                                topic.configs[c.name] = c.value
                            else:
                                topic.configs.pop(c.name, None)
                        self.registry.save()
            else:
                out.update(error_code=E.invalid_request,
                           error_message=f"Altering resource type {rtype} is not supported.")
            responses.append(out)
        return self._resp(ctx, throttle_time=0, responses=responses)


def _created_topic_configs(configs: dict[str, str]) -> list[dict[str, Any]]:
    """The configs of a new topic in CreateTopics' response (v5+): the defaults, overridden
    by the request's (``DescribeConfigs``' sources), sorted by name."""
    entries = {k: (val, SOURCE_DEFAULT) for k, (val, _typ) in TOPIC_DEFAULTS.items()}
    entries.update((k, (val, SOURCE_DYNAMIC_TOPIC)) for k, val in configs.items())
    return [{"name": k, "value": entries[k][0], "read_only": False,
             "config_source": entries[k][1], "is_sensitive": False} for k in sorted(entries)]


def _config_entry(name: str, value: str | None, source: int, is_default: bool,
                  config_type: int) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": False, "config_source": source,
            "is_default": is_default, "is_sensitive": False, "synonyms": (),
            "config_type": config_type, "documentation": None}


def api_version_entries() -> list[dict[str, int]]:
    return [{"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted(API_VERSIONS.items())]


def unsupported_version_response(api_key: int, version: int) -> Any | None:
    """A response of (key, version) saying UNSUPPORTED_VERSION, if its schema is known and has a
    top-level error code; None otherwise."""
    return error_response_entity(api_key, version, E.unsupported_version)


def error_response_entity(api_key: int, version: int, code: int) -> Any | None:
    cls = response_class(api_key, version)
    if cls is None or "error_code" not in cls.__dataclass_fields__:
        return None
    values: dict[str, Any] = {"error_code": code}
    if api_key == ApiKey.API_VERSIONS:
        values["api_keys"] = api_version_entries()
    return build(cls, values)


AwaitableResponse = Awaitable[Any]

"""What every API family of the Kafka API edge shares: the request's context, the broker's
state the handlers see, and :class:`ApiFamily`, the base of a family.

A family (``server/apis/metadata.py``, ``groups.py``, ...) is a class built from the
:class:`BrokerState` whose ``handlers`` maps each API key it serves to a handler
``(body, ctx) -> response``; the dispatcher (``server/apis/dispatcher.py``) joins the families'
tables. Adding a family is a module with such a class and one line in the dispatcher's
``FAMILIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import build, response_class
from groupcoord.server.brokers import BrokerSet
from groupcoord.server.producer_ids import ProducerIdAllocator
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from groupcoord.server.security.authorizer import Authorizer
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.share_partitions import SharePartitionManager
from groupcoord.server.topic_registry import TopicRegistry
from groupcoord.server.transaction_runtime import TransactionRuntime

E = ErrorCode
Op = AclOperation
RT = ResourceType
NO_OPS = -(2**31)  # authorized operations not requested
NODE_ID = 0
LEADER_EPOCH = 0


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
    #: The connection the request came on (a number unique while it is open; 0: none), so that
    #: state bound to a connection (share sessions, KIP-932) goes when it closes.
    connection: int = 0
    #: The broker (node id) the connection reached (``server/brokers.py``; 0 with one broker).
    broker: int = 0


Handler = Callable[[Any, RequestContext], Any]


class BrokerState:
    """The broker as its API handlers see it: the topics, the coordinator runtime, the
    advertised address and configs, and what the server sets after construction (the
    authorizer, the listeners' endpoints, the control plane, the broker set)."""

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
        #: ``fetch.max.bytes``: the most a Fetch response holds, whatever the request asks.
        self.fetch_max_bytes = int(self.broker_configs.get("fetch.max.bytes", "57671680"))
        #: SCRAM credentials (``server/apis/authentication.py``).
        self.credentials = credentials or CredentialStore(None, persist=False)
        #: Who may do what (``server/security/``); the server sets the real one. This default,
        #: with no ACLs and allow.everyone.if.no.acl.found, allows everything.
        self.authorizer = Authorizer()
        #: Advertised (host, port) per listener name and node id, set by the server: a client is
        #: told the addresses of the listener it connected on. Empty: ``host``/``port`` (and
        #: the brokers' own) for every listener.
        self.endpoints: dict[str, dict[int, tuple[str, int]]] = {}
        #: The control plane's ``run(command, args)`` (``server/control.py``), set by the server.
        self.control: Callable[[str, dict[str, Any]], Any] | None = None
        #: Several brokers (``server/brokers.py``), set by the server; None: one broker.
        self.brokers: BrokerSet | None = None
        #: The transaction coordinator (``server/transaction_runtime.py``), set by the server;
        #: None: the transaction APIs answer COORDINATOR_NOT_AVAILABLE.
        self.transactions: TransactionRuntime | None = None
        #: Called after a produce appended records (waiting share fetches, KIP-932).
        self.on_append: list[Callable[[], None]] = []
        #: The share partitions and their durable state (``server/share_partitions.py``), set
        #: by the server; None: the share family keeps them in memory.
        self.share_partitions: SharePartitionManager | None = None


class ApiFamily:
    """The base of an API family: ``handlers`` (API key -> handler), the :class:`BrokerState`,
    and the checks and response building every handler uses. ``authorizer``, ``brokers``,
    ``endpoints`` and ``control`` are read from the broker state on each use: the server sets
    them after the families are built."""

    def __init__(self, broker: BrokerState) -> None:
        self.broker = broker
        self.registry = broker.registry
        self.runtime = broker.runtime
        self.handlers: dict[int, Handler] = {}

    @property
    def authorizer(self) -> Authorizer:
        return self.broker.authorizer

    @property
    def brokers(self) -> BrokerSet | None:
        return self.broker.brokers

    def _allowed(self, ctx: RequestContext, op: AclOperation, rtype: ResourceType,
                 name: str) -> bool:
        return self.broker.authorizer.authorize(ctx.principal, ctx.client_host, op, rtype, name)

    def _cluster_allowed(self, ctx: RequestContext, op: AclOperation) -> bool:
        return self._allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME)

    def _describe_groups(self, ctx: RequestContext, group_ids: list[str],
                         refused: Callable[[str], Any],
                         describe: Callable[[tuple[str, ...]], Any]) -> dict[str, Any]:
        """A describe API of a group type, by group id: DESCRIBE on each group (``refused(id)``
        is its answer otherwise), the others described on their shards (``describe(ids)`` is
        the shard's request)."""
        found = {gid: refused(gid) for gid in group_ids
                 if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, gid)}
        for shard, gids in self.runtime.group_ids_by_shard(
                [g for g in group_ids if g not in found]).items():
            for g in self.runtime.handle(shard, describe(tuple(gids))).groups:
                found[g.group_id] = g
        return found

    def _may_describe_topics(self, ctx: RequestContext, names: Iterable[str],
                             topic_ids: Iterable[Any]) -> bool:
        """Whether the principal may DESCRIBE every topic a described group names: by name, and
        by id for the assigned ones (an id no longer in the image names nothing). Describing a
        group must not reveal topics the principal may not describe (Kafka 4's
        ``KafkaApis.handleConsumerGroupDescribe`` / ``handleShareGroupDescribe``)."""
        by_id = self.registry.image().by_id
        every = set(names)
        for t in topic_ids:
            meta = by_id.get(t)
            if meta is not None:
                every.add(meta.name)
        return all(self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, n) for n in every)

    def _group_ops(self, ctx: RequestContext, group_id: str, include: bool, given: int) -> int:
        """A described group's ``authorized_operations``: the principal's, when asked for."""
        if not include:
            return given
        return self.authorizer.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP,
                                                     group_id)

    def _topic_names(self) -> Callable[[Any], str]:
        """A topic id's name in the current image ("" for an id no longer there)."""
        by_id = self.registry.image().by_id

        def name_of(topic_id: Any) -> str:
            meta = by_id.get(topic_id)
            return meta.name if meta else ""
        return name_of

    def _resp(self, ctx: RequestContext, values: dict[str, Any] | None = None, **kw: Any) -> Any:
        cls = response_class(ctx.api_key, ctx.api_version)
        assert cls is not None
        return build(cls, values, **kw)

    def _topics_changed(self) -> None:
        """The topics changed: the coordinator's shards get the new topic image, and the share
        state of deleted topics goes (KIP-932)."""
        self.runtime.update_metadata(self.registry.image())
        if self.broker.share_partitions is not None:
            self.broker.share_partitions.keep_topics(set(self.registry.by_id))

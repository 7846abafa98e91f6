"""The Kafka API edge's dispatcher: API key -> the handler of the family that serves it (the
shape of kfake / Kafka's ``KafkaApis``).

Handlers take kio entities and return kio entities; a handler may also return the encoded
response body as ``bytes`` (the ConsumerGroupHeartbeat response, encoded by
``protocol/fast.py`` on the hot path), None (no response: Produce with acks=0), or, for a
response given later, a coroutine or an ``asyncio.Future`` of it (a Fetch waiting for data, a
JoinGroup or SyncGroup the coordinator answers later), which the connection runs as its
request's task itself (``server/connection.py``'s ``Later``): nothing else may await it, and
what a close must undo even before that task has run a step is a future's cancel.

The families, one module each under ``server/apis/`` (:data:`FAMILIES`): ``authentication``
(SaslHandshake, SaslAuthenticate, the SCRAM credential APIs), ``versions`` (ApiVersions),
``metadata`` (Metadata, FindCoordinator), ``topics`` (CreateTopics, DeleteTopics,
CreatePartitions), ``produce_fetch`` (Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch), ``share_data`` (ShareFetch, ShareAcknowledge, the share-group offset
APIs: KIP-932), ``groups`` (consumer and classic group APIs, DescribeGroups, ListGroups,
DeleteGroups), ``offsets`` (OffsetCommit, OffsetFetch, OffsetDelete), ``configs``
(DescribeConfigs, IncrementalAlterConfigs), ``acls`` (CreateAcls, DescribeAcls, DeleteAcls) and
``extensions`` (the extension APIs of the specs, API keys 1000+, docs/wire.md),
``transactions`` (InitProducerId and the transaction coordinator's APIs),
``transaction_partitions`` (DescribeProducers, WriteTxnMarkers: KIP-664) and
``share_groups`` (ShareGroupHeartbeat, ShareGroupDescribe: KIP-932). Adding a family
is a module with an :class:`ApiFamily` subclass and one line in :data:`FAMILIES`.

Authorization (docs/acls.md has the table of what each API requires): every handler asks the
authorizer (``server/security/authorizer.py``) about ``ctx.principal`` from ``ctx.client_host``
before it changes or shows anything, as Kafka's ``KafkaApis`` does; the APIs about one group
named by ``group_id`` are checked in :meth:`KafkaApis.handle` from :data:`GROUP_API_ACLS`. A
refused request, or the refused part of one, reaches no coordinator and writes no record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from groupcoord.protocol.versions import API_VERSIONS, ApiKey
from groupcoord.server.apis.acls import AclApis
from groupcoord.server.apis.authentication import AuthenticationApis
from groupcoord.server.apis.configs import ConfigApis
from groupcoord.server.apis.extensions import ExtensionApis
from groupcoord.server.apis.family import ApiFamily, BrokerState, Handler, RequestContext
from groupcoord.server.apis.groups import GROUP_API_ACLS, GroupApis
from groupcoord.server.apis.metadata import MetadataApis
from groupcoord.server.apis.offsets import OffsetApis
from groupcoord.server.apis.produce_fetch import ProduceFetchApis
from groupcoord.server.apis.share_data import ShareDataApis
from groupcoord.server.apis.share_groups import ShareGroupApis
from groupcoord.server.apis.topics import TopicApis
from groupcoord.server.apis.transaction_partitions import TransactionPartitionApis
from groupcoord.server.apis.transactions import TransactionApis
from groupcoord.server.apis.versions import VersionsApis
from groupcoord.server.brokers import BrokerSet
from groupcoord.server.producer_ids import ProducerIdAllocator
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.security.authorizer import Authorizer
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.share_partitions import SharePartitionManager
from groupcoord.server.topic_registry import TopicRegistry

#: Every API family, each serving the API keys of its ``handlers``.
FAMILIES: tuple[type[ApiFamily], ...] = (
    AuthenticationApis,
    VersionsApis,
    MetadataApis,
    TopicApis,
    ProduceFetchApis,
    GroupApis,
    OffsetApis,
    ConfigApis,
    AclApis,
    ExtensionApis,
    TransactionApis,
    TransactionPartitionApis,
    ShareDataApis,
    ShareGroupApis,
)

AwaitableResponse = Awaitable[Any]


class KafkaApis:
    """The dispatcher. ``handle`` returns a kio response, None (no response: acks=0), or a
    coroutine or future of one (a Fetch waiting for data; module doc). The server sets
    ``authorizer``, ``endpoints``, ``control`` and ``brokers`` after construction; the
    families read them from the shared :class:`BrokerState`."""

    def __init__(self, registry: TopicRegistry, runtime: CoordinatorRuntime,
                 host: str, port: int, broker_configs: dict[str, str] | None = None,
                 producer_ids: ProducerIdAllocator | None = None,
                 credentials: CredentialStore | None = None,
                 share_partitions: SharePartitionManager | None = None) -> None:
        self.broker = BrokerState(registry, runtime, host, port, broker_configs, producer_ids,
                                  credentials)
        self.broker.share_partitions = share_partitions
        self.families = {family: family(self.broker) for family in FAMILIES}
        self.handlers: dict[int, Handler] = {}
        for family in self.families.values():
            twice = set(self.handlers) & set(family.handlers)
            if twice:
                raise AssertionError(f"API keys served by two families: {sorted(twice)}")
            self.handlers.update(family.handlers)
        missing = set(API_VERSIONS) ^ set(self.handlers)
        if missing:  # the advertised table and the handlers must be the same set
            raise AssertionError(f"advertised APIs without handlers or vice versa: {missing}")
        groups = self.families[GroupApis]
        assert isinstance(groups, GroupApis)
        self._refuse_group_api = groups.refuse_group_api
        metadata = self.families[MetadataApis]
        assert isinstance(metadata, MetadataApis)
        self._metadata = metadata
        produce_fetch = self.families[ProduceFetchApis]
        assert isinstance(produce_fetch, ProduceFetchApis)
        self._fetch_now = produce_fetch.fetch_now
        share_data = self.families[ShareDataApis]
        assert isinstance(share_data, ShareDataApis)
        #: The share partitions' API family (KIP-932): the share group type tells it of
        #: members that leave (``ShareDataApis.member_left``).
        self.share_data = share_data
        # the coordinator's removals of share members (session timeout, fencing) release what
        # they had acquired at once (``CoordinatorRuntime.share_member_removed``)
        runtime.share_member_removed = share_data.member_left

    def connection_closed(self, connection: int) -> None:
        """A client connection closed: the share sessions opened on it close (KIP-932)."""
        self.share_data.connection_closed(connection)

    def fetch_now(self, ctx: RequestContext) -> None:
        """Answer the connection's waiting Fetch or ShareFetch now (``ProduceFetchApis.fetch_now``)."""
        if ctx.api_key == ApiKey.SHARE_FETCH:
            self.share_data.fetch_now(ctx)
        else:
            self._fetch_now(ctx)

    def handle(self, body: Any, ctx: RequestContext) -> Any:
        op = GROUP_API_ACLS.get(ctx.api_key)
        if op is not None:
            refused = self._refuse_group_api(body, ctx, op)
            if refused is not None:
                return refused
        return self.handlers[ctx.api_key](body, ctx)

    def brokers_changed(self) -> None:
        """Leaders or coordinators changed (``server/brokers.py``): cached Metadata is stale."""
        self._metadata.brokers_changed()

    @property
    def authorizer(self) -> Authorizer:
        """Who may do what (``server/security/``); the server sets the real one. The default,
        with no ACLs and allow.everyone.if.no.acl.found, allows everything."""
        return self.broker.authorizer

    @authorizer.setter
    def authorizer(self, authorizer: Authorizer) -> None:
        self.broker.authorizer = authorizer

    @property
    def endpoints(self) -> dict[str, dict[int, tuple[str, int]]]:
        """Advertised (host, port) per listener name and node id, set by the server."""
        return self.broker.endpoints

    @endpoints.setter
    def endpoints(self, endpoints: dict[str, dict[int, tuple[str, int]]]) -> None:
        self.broker.endpoints = endpoints

    @property
    def control(self) -> Callable[[str, dict[str, Any]], Any] | None:
        """The control plane's ``run(command, args)`` (``server/control.py``), set by the server."""
        return self.broker.control

    @control.setter
    def control(self, control: Callable[[str, dict[str, Any]], Any] | None) -> None:
        self.broker.control = control

    @property
    def brokers(self) -> BrokerSet | None:
        """Several brokers (``server/brokers.py``), set by the server; None: one broker."""
        return self.broker.brokers

    @brokers.setter
    def brokers(self, brokers: BrokerSet | None) -> None:
        self.broker.brokers = brokers

"""The group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848), the classic
JoinGroup, SyncGroup, Heartbeat, LeaveGroup and DescribeGroups, and ListGroups / DeleteGroups of
every group type (the connect group type's APIs are extensions: ``server/apis/extensions.py``).

They are converted to the coordinator's own messages (``coordinator/messages.py``) and run on
the group's shard through :class:`CoordinatorRuntime`; requests naming several groups are split
by shard and answered in the request's order.

Upstream behaviour kept (Kafka's ``KafkaApis`` and the protocol guide):

- Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups) run on the
  group's shard like the rest; JoinGroup and SyncGroup may be answered later
  (``CoordinatorRuntime.handle_deferrable`` gives a future): the handler then returns a
  future chained to it (a close cancels the runtime's), and the connection answers its later
  requests only after it, in order (Kafka too mutes a connection while one of its requests is
  in flight). JoinGroup below v7 answers a
  missing protocol name as ``""`` (the field is not nullable there); LeaveGroup v0-v2 carry the
  one member id of the request.
- Authorization: the APIs about one group named by ``group_id`` are checked by the dispatcher
  (``KafkaApis.handle``) from :data:`GROUP_API_ACLS` with :meth:`GroupApis.refuse_group_api`,
  before any handler runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

from groupcoord.coordinator import messages as m
from groupcoord.coordinator.classic import messages as cm
from groupcoord.coordinator.modern.consumer import messages as cgm
from groupcoord.coordinator.modern.subscription import TopicFilter
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.protocol import fast
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.security.acls import AclOperation
from groupcoord.server.security.authorizer import Authorizer

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


class GroupApis(ApiFamily):
    """The consumer, classic and every-type group APIs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        #: (principal, host) -> (the authorizer it asks, its topic filter): one filter per
        #: client rather than one closure built on every ConsumerGroupHeartbeat.
        self._topic_filters: dict[tuple[str, str], tuple[Authorizer, TopicFilter]] = {}
        self.handlers = {
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.consumer_group_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.consumer_group_describe,
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.SYNC_GROUP: self.sync_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
        }

    def refuse_group_api(self, body: Any, ctx: RequestContext, op: AclOperation) -> Any | None:
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
        include_ops = bool(body.include_authorized_operations)
        found = self._describe_groups(
            ctx, list(body.group_ids),
            lambda gid: cgm.DescribedGroup(
                gid, error_code=E.group_authorization_failed,
                error_message=f"Not authorized to describe the group {gid!r}."),
            lambda gids: cgm.ConsumerGroupDescribeRequest(gids, include_ops))
        groups = [self._hide_undescribable_topics(found[gid], ctx) for gid in body.group_ids]
        ops = [self._group_ops(ctx, g.group_id, include_ops and not g.error_code,
                               g.authorized_operations) for g in groups]
        return fast.consumer_group_describe_response(ctx.api_version, groups, ops,
                                                     fast.DescribedTopics(self._topic_names()))

    def _hide_undescribable_topics(self, g: cgm.DescribedGroup,
                                   ctx: RequestContext) -> cgm.DescribedGroup:
        """A described consumer group whose members subscribe to or are assigned topics the
        principal may not describe is answered TOPIC_AUTHORIZATION_FAILED instead (Kafka 4's
        ``KafkaApis.handleConsumerGroupDescribe``: describing the group must not reveal them)."""
        if g.error_code or self._may_describe_topics(
                ctx, (n for mb in g.members for n in mb.subscribed_topic_names),
                (tp.topic_id for mb in g.members
                 for a in (mb.assignment, mb.target_assignment) for tp in a.topic_partitions)):
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
        shares = self.broker.share_partitions
        if shares is not None:  # a deleted share group's share state goes too (KIP-932)
            shares.delete_groups([g for g in ids if found[g].error_code == 0])
        return self._resp(ctx, throttle_time=0, results=[
            {"group_id": g, "error_code": found[g].error_code} for g in ids])

    def _deferrable(self, group_id: str, request: Any, ctx: RequestContext,
                    convert: Callable[[Any, RequestContext], Any]) -> Any:
        """Run a request the core may answer later: the kio response, or a future of it."""
        r = self.runtime.handle_deferrable(group_id, request)
        if isinstance(r, asyncio.Future):
            return self._answer_later(r, ctx, convert)
        return convert(r, ctx)

    @staticmethod
    def _answer_later(fut: asyncio.Future[Any], ctx: RequestContext,
                      convert: Callable[[Any, RequestContext], Any]) -> asyncio.Future[Any]:
        """The response of a request the coordinator answers later: ``fut``'s result through
        ``convert``. A future chained to ``fut``, not a coroutine awaiting it: the connection
        runs it as its request's task, and a close cancels it, hence ``fut``, even before
        that task has run a step, so the runtime forgets the request at once
        (``CoordinatorRuntime._forget``) instead of holding it until the group completes it."""
        out: asyncio.Future[Any] = fut.get_loop().create_future()

        def answered(f: asyncio.Future[Any]) -> None:
            if out.done():
                return
            if f.cancelled():
                out.cancel()
                return
            exc = f.exception()
            if exc is not None:
                out.set_exception(exc)
                return
            try:
                out.set_result(convert(f.result(), ctx))
            except Exception as e:  # answered as an internal error by the server
                out.set_exception(e)

        def dropped(o: asyncio.Future[Any]) -> None:
            if o.cancelled():
                fut.cancel()

        fut.add_done_callback(answered)
        out.add_done_callback(dropped)
        return out

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

"""The share group APIs (KIP-932): ShareGroupHeartbeat (API key 76) and ShareGroupDescribe
(API key 77), v1 as Kafka 4.1+ serves them. Converted to the coordinator's messages
(``coordinator/modern/share/messages.py``) and run on the group's shard; ListGroups,
DeleteGroups, DescribeGroups and the GROUP configs serve share groups through the families of
every group type (``groups.py``, ``configs.py``).

Authorization as Kafka 4.x's ``KafkaApis`` (docs/acls.md):

- ShareGroupHeartbeat needs READ on the group (GROUP_AUTHORIZATION_FAILED) and, when it names
  its subscribed topics, DESCRIBE on each of them (TOPIC_AUTHORIZATION_FAILED naming the ones
  refused); nothing reaches the coordinator then.
- ShareGroupDescribe needs DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for that group);
  a described group whose members subscribe to or are assigned topics the principal may not
  DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED instead (describing it must not reveal them).
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.modern.share import messages as sm
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext


class ShareGroupApis(ApiFamily):
    """ShareGroupHeartbeat, ShareGroupDescribe."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.SHARE_GROUP_HEARTBEAT: self.share_group_heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: self.share_group_describe,
        }

    def share_group_heartbeat(self, body: Any, ctx: RequestContext) -> Any:
        names = body.subscribed_topic_names
        if not self._allowed(ctx, Op.READ, RT.GROUP, body.group_id):
            return self._heartbeat_response(ctx, sm.ShareGroupHeartbeatResponse(
                E.group_authorization_failed,
                f"Not authorized to READ the group {body.group_id!r}."))
        if names:
            denied = sorted(set(self.authorizer.denied(ctx.principal, ctx.client_host,
                                                       Op.DESCRIBE, RT.TOPIC, names)))
            if denied:
                return self._heartbeat_response(ctx, sm.ShareGroupHeartbeatResponse(
                    E.topic_authorization_failed,
                    f"Not authorized to describe the topics {denied}."))
        req = sm.ShareGroupHeartbeatRequest(
            group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
            rack_id=body.rack_id, subscribed_topic_names=None if names is None else tuple(names),
            client_id=ctx.client_id, client_host=ctx.client_host)
        r: sm.ShareGroupHeartbeatResponse = self.runtime.handle_group(body.group_id, req)
        return self._heartbeat_response(ctx, r)

    def _heartbeat_response(self, ctx: RequestContext, r: sm.ShareGroupHeartbeatResponse) -> Any:
        a = r.assignment
        return self._resp(
            ctx, throttle_time=0, error_code=r.error_code, error_message=r.error_message,
            member_id=r.member_id, member_epoch=r.member_epoch,
            heartbeat_interval=r.heartbeat_interval_ms,
            assignment=None if a is None else {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(a[t])} for t in sm.topic_ids(a)]})

    def share_group_describe(self, body: Any, ctx: RequestContext) -> Any:
        ids = list(body.group_ids)
        include_ops = bool(body.include_authorized_operations)
        found = self._describe_groups(
            ctx, ids,
            lambda gid: sm.DescribedShareGroup(
                gid, E.group_authorization_failed,
                f"Not authorized to describe the group {gid!r}."),
            lambda gids: sm.ShareGroupDescribeRequest(gids, include_ops))
        name_of = self._topic_names()
        groups = []
        for gid in ids:
            g = self._hide_undescribable_topics(found[gid], ctx)
            ops = self._group_ops(ctx, gid, include_ops and not g.error_code,
                                  g.authorized_operations)
            groups.append({
                "error_code": g.error_code, "error_message": g.error_message, "group_id": gid,
                "group_state": g.group_state, "group_epoch": g.group_epoch,
                "assignment_epoch": g.assignment_epoch, "assignor_name": g.assignor_name,
                "authorized_operations": ops,
                "members": [{
                    "member_id": mb.member_id, "rack_id": mb.rack_id,
                    "member_epoch": mb.member_epoch, "client_id": mb.client_id,
                    "client_host": mb.client_host,
                    "subscribed_topic_names": list(mb.subscribed_topic_names),
                    "assignment": {"topic_partitions": [
                        {"topic_id": t, "topic_name": name_of(t),
                         "partitions": sorted(mb.assignment[t])}
                        for t in sm.topic_ids(mb.assignment)]}}
                    for mb in g.members]})
        return self._resp(ctx, throttle_time=0, groups=groups)

    def _hide_undescribable_topics(self, g: sm.DescribedShareGroup,
                                   ctx: RequestContext) -> sm.DescribedShareGroup:
        if g.error_code or self._may_describe_topics(
                ctx, (n for mb in g.members for n in mb.subscribed_topic_names),
                (t for mb in g.members for t in mb.assignment)):
            return g
        return sm.DescribedShareGroup(g.group_id, E.topic_authorization_failed,
                                      "The group has subscribed or assigned topics which are "
                                      "not authorized.")

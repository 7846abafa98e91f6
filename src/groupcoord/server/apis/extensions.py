"""Handlers of the extension APIs (docs/wire.md): wire entities in, coordinator messages out.

The APIs: ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment (KIP-848's
client-side assignment); ConnectGroupHeartbeat, ConnectGroupPrepareAssignment,
ConnectGroupInstallAssignment, ConnectGroupConfig and ConnectGroupDescribe (the Connect draft);
GroupcoordControl (ours, the control plane).

The wire schemas are the repo's JSON message definitions (``protocol/schemas/``, API keys
1000-1006, ``docs/wire.md``); ``protocol/extensions.py`` makes kio-shaped entities of them. Each
handler converts the request to the coordinator's own dataclasses (``coordinator/messages.py``
for KIP-848's client-side assignment, ``coordinator/modern/connect/messages.py`` for the connect group
type), runs it on the shard owning the group (``CoordinatorRuntime.handle_group``; the group's
shard as ``partitionFor(groupId)`` says, like the consumer group APIs), and converts the answer
back. None of these requests is deferred by the coordinator: every handler answers at once (a
shard still loading answers COORDINATOR_LOAD_IN_PROGRESS through the runtime).
GroupcoordControl (API 1010) runs a command of the server's control plane (``server/control.py``).

Wire choices (the schema files say the same): a connector-task is ``{Connector, Task}``;
ConnectGroupConfig ops are int8 0 = create, 1 = update, 2 = delete (any other value is passed on
as an unknown op, which the coordinator rejects with INVALID_REQUEST); ConnectGroupDescribe splits
its group ids by shard and answers in the request's order.

ClientAssignors / ShouldComputeAssignment on ConsumerGroupHeartbeat are tagged fields of API 68,
mapped by ``server/apis/groups.py`` (docs/wire.md "Tagged fields on ConsumerGroupHeartbeat").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from groupcoord.coordinator.modern.connect import messages as cn
from groupcoord.coordinator.modern.consumer import messages as cgm
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext

__all__ = ["CONFIG_OPS", "ExtensionApis", "cat_from_wire", "cat_to_wire"]

#: ConnectGroupConfig's Op values.
CONFIG_OPS: dict[int, str] = {0: "create", 1: "update", 2: "delete"}

GROUP_AUTHORIZATION_FAILED = 30



def cat_to_wire(c: cn.ConnectorsAndTasks) -> dict[str, Any]:
    return {"connectors": tuple(c.connectors),
            "tasks": [{"connector": t.connector, "task": t.task} for t in c.tasks]}


def cat_from_wire(w: Any) -> cn.ConnectorsAndTasks:
    return cn.ConnectorsAndTasks(tuple(w.connectors),
                                 tuple(cn.ConnectorTaskId(t.connector, int(t.task)) for t in w.tasks))


def _tps_to_wire(tps: Iterable[cgm.TopicPartitions]) -> list[dict[str, Any]]:
    return [{"topic_id": tp.topic_id, "partitions": tuple(tp.partitions)} for tp in tps]


def _tps_from_wire(tps: Iterable[Any]) -> tuple[cgm.TopicPartitions, ...]:
    return tuple(cgm.TopicPartitions(tp.topic_id, tuple(int(p) for p in tp.partitions)) for tp in tps)


def _assignor_to_wire(a: ClientAssignor) -> dict[str, Any]:
    return {"name": a.name, "minimum_version": a.minimum_version,
            "maximum_version": a.maximum_version, "reason": a.reason, "version": a.version,
            "metadata": bytes(a.metadata)}


class ExtensionApis(ApiFamily):
    """The extension handlers; ``handlers`` maps API key -> handler(body, ctx)."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: self.consumer_group_prepare_assignment,
            ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: self.consumer_group_install_assignment,
            ApiKey.CONNECT_GROUP_HEARTBEAT: self.connect_group_heartbeat,
            ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: self.connect_group_prepare_assignment,
            ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: self.connect_group_install_assignment,
            ApiKey.CONNECT_GROUP_CONFIG: self.connect_group_config,
            ApiKey.CONNECT_GROUP_DESCRIBE: self.connect_group_describe,
            ApiKey.GROUPCOORD_CONTROL: self.groupcoord_control,
        }

    # ================================================================== KIP-848 client-side assignment

    def consumer_group_prepare_assignment(self, body: Any, ctx: Any) -> Any:
        r: cgm.ConsumerGroupPrepareAssignmentResponse = self.runtime.handle_group(
            body.group_id, cgm.ConsumerGroupPrepareAssignmentRequest(
                body.group_id, body.member_id, int(body.member_epoch)))
        return self._resp(
            ctx, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
            group_epoch=r.group_epoch, assignor_name=r.assignor_name,
            members=[{"member_id": mb.member_id, "member_epoch": mb.member_epoch,
                      "instance_id": mb.instance_id, "rack_id": mb.rack_id,
                      "subscribed_topic_ids": tuple(mb.subscribed_topic_ids),
                      "assignor": {"reason": mb.assignor.reason,
                                   "metadata_version": mb.assignor.metadata_version,
                                   "metadata_bytes": bytes(mb.assignor.metadata_bytes)},
                      "topic_partitions": _tps_to_wire(mb.topic_partitions)}
                     for mb in r.members],
            topics=[{"topic_id": t.topic_id, "topic_name": t.topic_name,
                     "num_partitions": t.num_partitions} for t in r.topics])

    def consumer_group_install_assignment(self, body: Any, ctx: Any) -> Any:
        req = cgm.ConsumerGroupInstallAssignmentRequest(
            group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
            group_epoch=int(body.group_epoch), error=int(body.error),
            members=tuple(cgm.InstalledMember(mb.member_id, _tps_from_wire(mb.topic_partitions),
                                            int(mb.metadata_version), bytes(mb.metadata_bytes))
                          for mb in body.members))
        r: cgm.ConsumerGroupInstallAssignmentResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time_ms=0, error_code=r.error_code,
                          error_message=r.error_message)

    # ================================================================== connect group type

    def connect_group_heartbeat(self, body: Any, ctx: Any) -> Any:
        assignors = body.client_assignors
        cat = body.connectors_and_tasks
        req = cn.ConnectGroupHeartbeatRequest(
            group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
            instance_id=body.instance_id, rebalance_timeout_ms=int(body.rebalance_timeout_ms),
            server_assignor=body.server_assignor,
            client_assignors=None if assignors is None else tuple(
                ClientAssignor(a.name, int(a.minimum_version), int(a.maximum_version),
                               int(a.reason), int(a.version), bytes(a.metadata))
                for a in assignors),
            connectors_and_tasks=None if cat is None else cat_from_wire(cat),
            url=body.url, client_id=ctx.client_id, client_host=ctx.client_host)
        r: cn.ConnectGroupHeartbeatResponse = self.runtime.handle_group(body.group_id, req)
        a = r.assignment
        return self._resp(
            ctx, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
            member_id=r.member_id, member_epoch=r.member_epoch,
            heartbeat_interval_ms=r.heartbeat_interval_ms,
            assignment=None if a is None else {
                "error": a.error, "connectors_and_tasks": cat_to_wire(a.connectors_and_tasks),
                "pending_connectors_and_tasks": cat_to_wire(a.pending_connectors_and_tasks),
                "metadata_version": a.metadata_version, "metadata_bytes": bytes(a.metadata_bytes)},
            should_compute_assignment=r.should_compute_assignment)

    def connect_group_prepare_assignment(self, body: Any, ctx: Any) -> Any:
        r: cn.ConnectGroupPrepareAssignmentResponse = self.runtime.handle_group(
            body.group_id, cn.ConnectGroupPrepareAssignmentRequest(
                body.group_id, body.member_id, int(body.member_epoch)))
        return self._resp(
            ctx, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
            group_epoch=r.group_epoch, assignment_epoch=r.assignment_epoch,
            assignor_name=r.assignor_name,
            members=[{"member_id": mb.member_id, "member_epoch": mb.member_epoch,
                      "instance_id": mb.instance_id, "url": mb.url,
                      "assignor": {"version": mb.assignor.version, "reason": mb.assignor.reason,
                                   "metadata": bytes(mb.assignor.metadata)},
                      "connectors_and_tasks": cat_to_wire(mb.connectors_and_tasks)}
                     for mb in r.members],
            departed_members=[{"member_id": d.member_id,
                               "connectors_and_tasks": cat_to_wire(d.connectors_and_tasks)}
                              for d in r.departed_members],
            config_offset=r.config_offset,
            connectors=[{"name": c.name, "task_count": c.task_count} for c in r.connectors])

    def connect_group_install_assignment(self, body: Any, ctx: Any) -> Any:
        req = cn.ConnectGroupInstallAssignmentRequest(
            group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
            group_epoch=int(body.group_epoch), error=int(body.error),
            members=tuple(cn.ConnectInstalledMember(
                mb.member_id, cat_from_wire(mb.connectors_and_tasks), int(mb.error),
                int(mb.metadata_version), bytes(mb.metadata_bytes)) for mb in body.members),
            scheduled_rebalance_delay_ms=int(body.scheduled_rebalance_delay_ms))
        r: cn.ConnectGroupInstallAssignmentResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time_ms=0, error_code=r.error_code,
                          error_message=r.error_message)

    def connect_group_config(self, body: Any, ctx: Any) -> Any:
        req = cn.ConnectGroupConfigRequest(body.group_id, tuple(
            cn.ConnectorConfigOp(CONFIG_OPS.get(int(op.op), f"unknown op {int(op.op)}"),
                                 op.connector, int(op.task_count))
            for op in body.ops))
        r: cn.ConnectGroupConfigResponse = self.runtime.handle_group(body.group_id, req)
        return self._resp(ctx, throttle_time_ms=0, error_code=r.error_code,
                          error_message=r.error_message, group_epoch=r.group_epoch,
                          config_offset=r.config_offset)

    def connect_group_describe(self, body: Any, ctx: Any) -> Any:
        ids = list(body.group_ids)
        refused = {g for g in ids if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, g)}
        found: dict[str, cn.DescribedConnectGroup] = {}
        for shard, gids in self.runtime.group_ids_by_shard(
                [g for g in ids if g not in refused]).items():
            r: cn.ConnectGroupDescribeResponse = self.runtime.handle(
                shard, cn.ConnectGroupDescribeRequest(tuple(gids)))
            for g in r.groups:
                found[g.group_id] = g
        return self._resp(ctx, throttle_time_ms=0, groups=[
            {"error_code": GROUP_AUTHORIZATION_FAILED, "group_id": gid,
             "error_message": "Not authorized to describe the group."}
            if gid in refused else _described(found[gid]) for gid in ids])

    def groupcoord_control(self, body: Any, ctx: RequestContext) -> Any:
        """GroupcoordControl (API 1010, ours): a control plane command (``server/control.py``).
        Bad JSON, an unknown command or bad arguments: INVALID_REQUEST with a one-line message.
        Requires CLUSTER_ACTION on the CLUSTER (what Kafka asks of broker-to-broker requests: the
        control plane injects faults and moves brokers, docs/acls.md)."""
        if not self._cluster_allowed(ctx, Op.CLUSTER_ACTION):
            return self._resp(ctx, throttle_time_ms=0, error_code=E.cluster_authorization_failed,
                              error_message="Not authorized: the control plane requires "
                                            "CLUSTER_ACTION on the CLUSTER.", result="null")
        control = self.broker.control
        if control is None:
            return self._resp(ctx, throttle_time_ms=0, error_code=E.cluster_authorization_failed,
                              error_message="this server has no control plane", result="null")
        try:
            args = json.loads(body.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError(f"Arguments must be a JSON object, got {body.arguments!r}")
            result = control(body.command, args)
        except ValueError as e:  # InvalidControlCommand, json.JSONDecodeError
            return self._resp(ctx, throttle_time_ms=0, error_code=E.invalid_request,
                              error_message=str(e), result="null")
        return self._resp(ctx, throttle_time_ms=0, error_code=0, error_message=None,
                          result=json.dumps(result, default=str))


def _described(g: cn.DescribedConnectGroup) -> dict[str, Any]:
    return {
        "error_code": g.error_code, "error_message": g.error_message, "group_id": g.group_id,
        "group_state": g.group_state, "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch, "assignment_error": g.assignment_error,
        "scheduled_rebalance_delay_ms": g.scheduled_rebalance_delay_ms,
        "assignor_name": g.assignor_name, "assigner": g.assigner, "config_offset": g.config_offset,
        "connectors": [{"name": c.name, "task_count": c.task_count} for c in g.connectors],
        "members": [{
            "member_id": mb.member_id, "instance_id": mb.instance_id, "url": mb.url,
            "member_epoch": mb.member_epoch, "state": mb.state, "client_id": mb.client_id,
            "client_host": mb.client_host,
            "client_assignors": [_assignor_to_wire(a) for a in mb.client_assignors],
            "assignment": cat_to_wire(mb.assignment),
            "pending_revocation": cat_to_wire(mb.pending_revocation),
            "target_assignment": cat_to_wire(mb.target_assignment)} for mb in g.members]}

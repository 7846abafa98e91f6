"""CreateTopics, DeleteTopics and CreatePartitions on the :class:`TopicRegistry`, authorized
as Kafka's ``ControllerApis`` (docs/acls.md); DeleteRecords, which moves partitions' log start
offsets (Kafka's ``KafkaApis.handleDeleteRecordsRequest``)."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from groupcoord.protocol.errors import CoordinatorError
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.configs import created_topic_configs
from groupcoord.server.apis.family import NODE_ID, RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.partition_log import OffsetOutOfRange
from groupcoord.storage.log import LogError

log = logging.getLogger(__name__)


class TopicApis(ApiFamily):
    """CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.DELETE_RECORDS: self.delete_records,
        }

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
                    res.update(num_partitions=topic.num_partitions,
                               replication_factor=topic.replication_factor,
                               configs=created_topic_configs(topic.configs))
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

    def delete_records(self, body: Any, ctx: RequestContext) -> Any:
        """DeleteRecords, as Kafka's ``KafkaApis.handleDeleteRecordsRequest`` and
        ``Partition.deleteRecordsOnLeader``: each partition's log start offset moves up to the
        offset given (-1: the high watermark) and the answer is its new low watermark (the log
        start offset). Per partition: TOPIC_AUTHORIZATION_FAILED without DELETE on the topic,
        UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does not exist,
        POLICY_VIOLATION when the topic's ``cleanup.policy`` has no ``delete``,
        OFFSET_OUT_OF_RANGE for an offset above the high watermark (or below 0 other than -1),
        KAFKA_STORAGE_ERROR when the partition or the checkpoint cannot be written; the low
        watermark is -1 on every error. (NOT_LEADER_OR_FOLLOWER with several brokers:
        ``server/routing.py``.) The share partitions of a moved partition move their start
        offset past the deleted records (KIP-932). The timeout is not used: one replica, the
        change is done when answered."""
        default_policy = self.broker.broker_configs.get("log.cleanup.policy", "delete")
        topics = []
        for t in body.topics:
            allowed = self._allowed(ctx, Op.DELETE, RT.TOPIC, t.name)
            topic = self.registry.get(t.name)
            parts = []
            for p in t.partitions:
                pi = int(p.partition_index)
                res: dict[str, Any] = {"partition_index": pi, "low_watermark": -1,
                                       "error_code": 0}
                policy = "" if topic is None else topic.configs.get("cleanup.policy",
                                                                    default_policy)
                if not allowed:
                    res["error_code"] = E.topic_authorization_failed
                elif topic is None or not 0 <= pi < topic.num_partitions:
                    res["error_code"] = E.unknown_topic_or_partition
                elif "delete" not in [x.strip() for x in policy.split(",")]:
                    res["error_code"] = E.policy_violation
                else:
                    try:
                        res["low_watermark"] = self.registry.delete_records(t.name, pi,
                                                                            int(p.offset))
                        shares = self.broker.share_partitions
                        if shares is not None:
                            shares.log_start_moved(topic.topic_id, pi, res["low_watermark"])
                    except OffsetOutOfRange:
                        res["error_code"] = E.offset_out_of_range
                    except CoordinatorError as e:
                        res["error_code"] = e.code
                    except (OSError, LogError) as e:  # unreadable partition file
                        log.error("delete records of %s-%d failed: %s", t.name, pi, e)
                        res["error_code"] = E.kafka_storage_error
                parts.append(res)
            topics.append({"name": t.name, "partitions": parts})
        return self._resp(ctx, throttle_time=0, topics=topics)

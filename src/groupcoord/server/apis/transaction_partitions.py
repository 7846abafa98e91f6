"""The partition leader's side of transaction administration (KIP-664): DescribeProducers and
WriteTxnMarkers, what ``kafka-transactions.sh find-hanging`` and ``abort`` (the Java admin's
``describeProducers`` and ``abortTransaction``) send to a partition's leader.

- DescribeProducers v0: per partition, the active producers of its producer state
  (``server/partition_log.py``): producer id, epoch, last sequence, last timestamp, the
  coordinator epoch of its last marker and the first offset of its open transaction (-1: none).
  READ on the topic (else TOPIC_AUTHORIZATION_FAILED for its partitions, as Kafka's
  ``KafkaApis.handleDescribeProducersRequest``); UNKNOWN_TOPIC_OR_PARTITION for a partition that
  does not exist.
- WriteTxnMarkers v1-v2 (v0 is gone in Kafka 4.x; v2's TransactionVersion is read and ignored:
  only transaction version 1 is served): writes each marker on each partition named, as the
  transaction coordinator does (``TopicRegistry.write_marker``: a producer epoch older than the
  partition's INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's
  TRANSACTION_COORDINATOR_FENCED). CLUSTER_ACTION on the cluster, else every partition
  CLUSTER_AUTHORIZATION_FAILED (Kafka's ``handleWriteTxnMarkersRequest``). Group offsets are not
  partitions here (the transaction coordinator completes them in process), so a marker completes
  data partitions only.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.partition_log import ProducerStateError
from groupcoord.storage.log import LogError

__all__ = ["TransactionPartitionApis"]

log = logging.getLogger(__name__)


class TransactionPartitionApis(ApiFamily):
    """DescribeProducers and WriteTxnMarkers on the partition logs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.DESCRIBE_PRODUCERS: self.describe_producers,
            ApiKey.WRITE_TXN_MARKERS: self.write_txn_markers,
        }

    def describe_producers(self, body: Any, ctx: RequestContext) -> Any:
        topics = []
        for t in body.topics:
            readable = self._allowed(ctx, Op.READ, RT.TOPIC, t.name)
            parts = []
            for index in t.partition_indexes:
                res: dict[str, Any] = {"partition_index": index, "error_code": 0,
                                       "error_message": None, "active_producers": ()}
                plog = self.registry.partition(t.name, int(index)) if readable else None
                if not readable:
                    res["error_code"] = E.topic_authorization_failed
                elif plog is None:
                    res["error_code"] = E.unknown_topic_or_partition
                else:
                    res["active_producers"] = [
                        {"producer_id": p.producer_id, "producer_epoch": p.producer_epoch,
                         "last_sequence": p.last_sequence, "last_timestamp": p.last_timestamp,
                         "coordinator_epoch": p.coordinator_epoch,
                         "current_txn_start_offset": p.current_txn_start_offset}
                        for p in plog.producers()]
                parts.append(res)
            topics.append({"name": t.name, "partitions": parts})
        return self._resp(ctx, throttle_time=0, topics=topics)

    def write_txn_markers(self, body: Any, ctx: RequestContext) -> Any:
        allowed = self._cluster_allowed(ctx, Op.CLUSTER_ACTION)
        now = int(time.time() * 1000)
        markers = []
        for m in body.markers:
            topics = []
            for t in m.topics:
                parts = []
                for index in t.partition_indexes:
                    code = (self._write_marker(m, t.name, int(index), now) if allowed
                            else int(E.cluster_authorization_failed))
                    parts.append({"partition_index": index, "error_code": code})
                topics.append({"name": t.name, "partitions": parts})
            markers.append({"producer_id": m.producer_id, "topics": topics})
        return self._resp(ctx, markers=markers)

    def _write_marker(self, m: Any, topic: str, partition: int, now: int) -> int:
        if self.registry.partition(topic, partition) is None:
            return int(E.unknown_topic_or_partition)
        try:
            self.registry.write_marker(topic, partition, int(m.producer_id),
                                       int(m.producer_epoch), bool(m.transaction_result),
                                       int(m.coordinator_epoch), now)
        except ProducerStateError as e:
            return int(e.code)
        except KeyError:
            return int(E.unknown_topic_or_partition)
        except (OSError, LogError) as e:
            log.error("marker on %s-%d failed: %s", topic, partition, e)
            return int(E.kafka_storage_error)
        return 0

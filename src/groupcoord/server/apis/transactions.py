"""The transaction coordinator's APIs (KIP-98, KIP-360, KIP-588, KIP-664): InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions, on the
transaction runtime (``server/transaction_runtime.py``, the pure core in ``transactions/``).

InitProducerId is served here for both kinds of producer, as Kafka's transaction coordinator
serves it: without a transactional id, an idempotent producer's new id at epoch 0 (from the
durable ``ProducerIdAllocator``; KIP-679: IDEMPOTENT_WRITE on the cluster or WRITE on some topic,
else CLUSTER_AUTHORIZATION_FAILED); with one, the transaction coordinator's producer id and epoch.

Versions (``protocol/versions.py``): the transaction version 1 flow, which every client here uses
(librdkafka, kafka-python, aiokafka; the Java producer too unless the broker finalizes
``transaction.version`` 2, KIP-890): AddPartitionsToTxn 0-3 (v4+ is the brokers' batched
verify-only form, not sent by clients), AddOffsetsToTxn 0-3, EndTxn 0-3 (v5 answers a new epoch:
transaction version 2 only; v4 adds TRANSACTION_ABORTABLE, which this coordinator never answers,
so it is left out with v5), InitProducerId 0-5, DescribeTransactions 0, ListTransactions 0-2.

Errors as Kafka's ``KafkaApis`` answers them: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for
request versions that predate it (AddPartitionsToTxn / AddOffsetsToTxn / EndTxn below v2,
InitProducerId below v4). AddPartitionsToTxn answers per partition: a partition of an unknown
topic UNKNOWN_TOPIC_OR_PARTITION, one the principal may not WRITE TOPIC_AUTHORIZATION_FAILED, and
then every other partition OPERATION_NOT_ATTEMPTED (nothing is added).

Authorization (docs/acls.md): WRITE on the TRANSACTIONAL_ID for InitProducerId with an id,
AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); READ on
the GROUP for AddOffsetsToTxn (GROUP_AUTHORIZATION_FAILED); DESCRIBE on the TRANSACTIONAL_ID for
DescribeTransactions (per id) and ListTransactions (ids the principal may not describe are left
out), and DescribeTransactions shows only the topics the principal may DESCRIBE.
"""

from __future__ import annotations

import datetime
import logging
import re
from typing import Any

from groupcoord.protocol import fast
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.transaction_runtime import TransactionRuntime
from groupcoord.transactions.coordinator import TxnResult

__all__ = ["TransactionApis"]

log = logging.getLogger(__name__)

#: A start time of -1 ("no transaction"): ``build`` reads a negative int as null, which the
#: non-nullable field cannot carry.
NO_START_TIME = datetime.datetime.fromtimestamp(-0.001, tz=datetime.UTC)

#: Below these versions PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
FENCED_SINCE: dict[int, int] = {
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
}


class TransactionApis(ApiFamily):
    """InitProducerId and the transaction coordinator's APIs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.producer_ids = broker.producer_ids
        self.handlers = {
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
            ApiKey.ADD_PARTITIONS_TO_TXN: self.add_partitions_to_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: self.add_offsets_to_txn,
            ApiKey.END_TXN: self.end_txn,
            ApiKey.DESCRIBE_TRANSACTIONS: self.describe_transactions,
            ApiKey.LIST_TRANSACTIONS: self.list_transactions,
        }

    @property
    def transactions(self) -> TransactionRuntime | None:
        return self.broker.transactions

    def _code(self, ctx: RequestContext, result: TxnResult) -> int:
        code = result.error
        if code == E.producer_fenced and ctx.api_version < FENCED_SINCE.get(ctx.api_key, 0):
            return int(E.invalid_producer_epoch)
        return code

    def _may_write(self, ctx: RequestContext, transactional_id: str) -> bool:
        return self._allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, transactional_id)

    def _unavailable(self) -> TxnResult:
        return TxnResult(error=int(E.coordinator_not_available),
                         message="The transaction coordinator is not running.")

    # ------------------------------------------------------------------ InitProducerId

    def init_producer_id(self, body: Any, ctx: RequestContext) -> Any:
        tid = body.transactional_id
        if tid is None:
            return self._idempotent_producer_id(ctx)
        if not self._may_write(ctx, tid):
            return self._resp(ctx, throttle_time=0, producer_id=-1, producer_epoch=-1,
                              error_code=E.transactional_id_authorization_failed)
        runtime = self.transactions
        if runtime is None:
            result = self._unavailable()
        else:
            timeout = to_ms(body.transaction_timeout)
            pid = int(getattr(body, "producer_id", -1))
            epoch = int(getattr(body, "producer_epoch", -1))
            result = runtime.run(lambda c: c.init_producer_id(
                tid, timeout, runtime.clock.now_ms(), pid, epoch))
        if result.error:
            log.debug("InitProducerId %r: %s", tid, result.message)
        return self._resp(ctx, throttle_time=0, error_code=self._code(ctx, result),
                          producer_id=result.producer_id if not result.error else -1,
                          producer_epoch=result.producer_epoch if not result.error else -1)

    def _idempotent_producer_id(self, ctx: RequestContext) -> Any:
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

    # ------------------------------------------------------------------ the transaction

    def add_partitions_to_txn(self, body: Any, ctx: RequestContext) -> Any:
        tid = body.v3_and_below_transactional_id
        pid = int(body.v3_and_below_producer_id)
        epoch = int(body.v3_and_below_producer_epoch)
        wanted = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]
        errors: dict[tuple[str, int], int] = {}
        if not self._may_write(ctx, tid):
            errors = dict.fromkeys(wanted, int(E.transactional_id_authorization_failed))
        else:
            for topic, p in wanted:
                info = self.registry.get(topic)
                if not self._allowed(ctx, Op.WRITE, RT.TOPIC, topic):
                    errors[(topic, p)] = int(E.topic_authorization_failed)
                elif info is None or not 0 <= p < info.num_partitions:
                    errors[(topic, p)] = int(E.unknown_topic_or_partition)
            if errors:
                for tp in wanted:
                    errors.setdefault(tp, int(E.operation_not_attempted))
        if not errors:
            runtime = self.transactions
            if runtime is None:
                result = self._unavailable()
            else:
                result = runtime.run(lambda c: c.add_partitions(tid, pid, epoch, wanted,
                                                                 runtime.clock.now_ms()))
            code = self._code(ctx, result)
            errors = dict.fromkeys(wanted, code)
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, p), code in errors.items():
            by_topic.setdefault(topic, []).append((p, code))
        # encoded by hand (protocol/fast.py): a transaction's hot path
        return fast.add_partitions_to_txn_response(ctx.api_version, by_topic.items())

    def add_offsets_to_txn(self, body: Any, ctx: RequestContext) -> Any:
        tid = body.transactional_id
        if not self._may_write(ctx, tid):
            return fast.throttle_and_error_response(ctx.api_version,
                                                    E.transactional_id_authorization_failed)
        if not self._allowed(ctx, Op.READ, RT.GROUP, body.group_id):
            return fast.throttle_and_error_response(ctx.api_version,
                                                    E.group_authorization_failed)
        runtime = self.transactions
        if runtime is None:
            result = self._unavailable()
        else:
            pid, epoch, group = int(body.producer_id), int(body.producer_epoch), body.group_id
            result = runtime.run(lambda c: c.add_offsets(tid, pid, epoch, group,
                                                         runtime.clock.now_ms()))
        return fast.throttle_and_error_response(ctx.api_version, self._code(ctx, result))

    def end_txn(self, body: Any, ctx: RequestContext) -> Any:
        tid = body.transactional_id
        if not self._may_write(ctx, tid):
            return fast.throttle_and_error_response(ctx.api_version,
                                                    E.transactional_id_authorization_failed)
        runtime = self.transactions
        if runtime is None:
            result = self._unavailable()
        else:
            pid, epoch, commit = int(body.producer_id), int(body.producer_epoch), bool(body.committed)
            # answered once PrepareCommit / PrepareAbort is durable, as Kafka answers it; the
            # markers follow right after the answer (server/transaction_runtime.py)
            result = runtime.run(lambda c: c.end_txn(tid, pid, epoch, commit,
                                                     runtime.clock.now_ms()),
                                 defer_markers=True)
        return fast.throttle_and_error_response(ctx.api_version, self._code(ctx, result))

    # ------------------------------------------------------------------ admin (KIP-664)

    def describe_transactions(self, body: Any, ctx: RequestContext) -> Any:
        runtime = self.transactions
        states = []
        for tid in body.transactional_ids:
            # an error entry carries the schema's defaults (zeros), as Kafka's does
            entry: dict[str, Any] = {"transactional_id": tid, "error_code": 0,
                                     "transaction_state": "", "transaction_timeout": 0,
                                     "transaction_start_time": 0, "producer_id": 0,
                                     "producer_epoch": 0, "topics": ()}
            meta = None if runtime is None else runtime.coordinator.describe(tid)
            if not self._allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, tid):
                entry["error_code"] = E.transactional_id_authorization_failed
            elif runtime is None:
                entry["error_code"] = E.coordinator_not_available
            elif meta is None:
                entry["error_code"] = E.transactional_id_not_found
            else:
                topics: dict[str, list[int]] = {}
                for topic, p in meta.partitions:
                    if self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, topic):
                        topics.setdefault(topic, []).append(p)
                # Kafka's txnStartTimestamp: the current or last transaction's start, -1 if none
                entry.update(transaction_state=meta.state.label,
                             transaction_timeout=meta.timeout_ms,
                             transaction_start_time=(meta.start_ms if meta.start_ms >= 0
                                                     else NO_START_TIME),
                             producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                             topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()])
            states.append(entry)
        return self._resp(ctx, throttle_time=0, transaction_states=states)

    def list_transactions(self, body: Any, ctx: RequestContext) -> Any:
        runtime = self.transactions
        if runtime is None:
            return self._resp(ctx, throttle_time=0, error_code=E.coordinator_not_available,
                              unknown_state_filters=(), transaction_states=())
        pattern = getattr(body, "transactional_id_pattern", None) or None
        try:
            found, unknown = runtime.coordinator.list(
                states=list(body.state_filters), producer_ids=[int(p) for p in body.producer_id_filters],
                min_duration_ms=int(getattr(body, "duration_filter", -1)), pattern=pattern,
                now_ms=runtime.clock.now_ms())
        except re.error:
            return self._resp(ctx, throttle_time=0, error_code=E.invalid_regular_expression,
                              unknown_state_filters=(), transaction_states=())
        return self._resp(ctx, throttle_time=0, error_code=0, unknown_state_filters=unknown,
                          transaction_states=[
                              {"transactional_id": m.transactional_id,
                               "producer_id": m.producer_id,
                               "transaction_state": m.state.label}
                              for m in found
                              if self._allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID,
                                               m.transactional_id)])

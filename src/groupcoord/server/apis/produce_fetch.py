"""The data plane: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, on the partition logs of
the :class:`TopicRegistry` (InitProducerId is the transaction coordinator's:
``server/apis/transactions.py``).

Upstream behaviour kept (Kafka's ``KafkaApis`` and the protocol guide):

- Produce with ``acks=0`` gets no response at all. Batches must be message format v2 with a good
  CRC (CORRUPT_MESSAGE otherwise).
- Fetch: sessionless only (KIP-227): a full request gets session id 0, so the client keeps
  sending full requests; an incremental one gets FETCH_SESSION_ID_NOT_FOUND. The response waits
  up to MaxWaitMs for MinBytes, woken by produces and by transaction markers
  (``TopicRegistry.write_marker``). Every partition carries its LastStableOffset; at
  read_committed (IsolationLevel 1) only batches below it are returned, with the aborted
  transactions overlapping them (Kafka's ``UnifiedLog.read`` / ``collectAbortedTransactions``;
  ``partition_log.py``). The response holds at most ``fetch.max.bytes`` (Kafka's default,
  55 MiB, whatever MaxBytes the request asks), or its first batch when that is larger (KIP-74).
- ListOffsets: LATEST is the last stable offset at read_committed, the high watermark at
  read_uncommitted; a timestamp (or MAX_TIMESTAMP) lookup answers only an offset below that
  bound, else -1 (Kafka's ``Partition.fetchOffsetForTimestamp``).
- Produce checks idempotent and transactional batches against the partition's producer state
  (``partition_log.py``: duplicates, sequences, epochs, transactions); a Produce with a
  transactional id needs WRITE on that TRANSACTIONAL_ID (else every partition
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's ``KafkaApis.handleProduceRequest``); a
  control batch or a transactional batch without producer id is INVALID_RECORD.
- KIP-890 part 1 (Kafka's ``AddPartitionsToTxnManager``, the verify-only AddPartitionsToTxn):
  a transactional batch is appended only if the transaction coordinator has the partition in
  the producer's Ongoing transaction at that producer id and epoch (docs/wire.md
  "Transactional data" lists the errors); so no batch opens a transaction on a partition that
  no marker will ever end. The coordinator is asked in process: one transaction runtime serves
  every broker of the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from groupcoord.protocol import fast
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import LEADER_EPOCH, RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.partition_log import InvalidRecord, InvalidRecords, ProducerStateError, parse_batches
from groupcoord.storage.log import LogError

log = logging.getLogger(__name__)

#: The transaction coordinator's verification errors as Produce answers them (Kafka's
#: ``AddPartitionsToTxnManager`` for clients of the transaction version 1 flow): a partition not
#: in an open transaction INVALID_TXN_STATE (abortable), a fenced epoch INVALID_PRODUCER_EPOCH, a
#: transaction still completing NOT_ENOUGH_REPLICAS (retriable); INVALID_PRODUCER_ID_MAPPING
#: (an id the coordinator never gave this transactional id) as it is.
_PRODUCE_VERIFY_ERRORS: dict[int, int] = {
    int(E.transaction_abortable): int(E.invalid_txn_state),
    int(E.producer_fenced): int(E.invalid_producer_epoch),
    int(E.concurrent_transactions): int(E.not_enough_replicas),
    int(E.coordinator_not_available): int(E.not_enough_replicas),
    int(E.coordinator_load_in_progress): int(E.not_enough_replicas),
    int(E.not_coordinator): int(E.not_enough_replicas),
}


def _transactional_producers(records: Any) -> set[tuple[int, int]]:
    """(producer id, epoch) of the transactional batches of a partition's records (bad records
    yield nothing here: the append refuses them with their own error)."""
    if not records:
        return set()
    try:
        batches = parse_batches(bytes(records), verify_crc=False)
    except InvalidRecords:
        return set()
    return {(b.producer_id, b.producer_epoch) for b in batches
            if b.is_transactional and not b.is_control and b.producer_id >= 0}


class ProduceFetchApis(ApiFamily):
    """Produce and the APIs that read the partition logs; a produce wakes the waiting fetches."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self._data_waiters: list[asyncio.Future[None]] = []
        #: Fetches waiting for data, by ``id`` of their request's context (:meth:`fetch_now`).
        self._waiting_fetches: dict[int, asyncio.Future[None]] = {}
        self.handlers = {
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch,
        }
        if self.registry is not None:  # (a family built without a broker's topics: tests)
            self.registry.marker_listeners.append(self._wake_fetchers)

    def produce(self, body: Any, ctx: RequestContext) -> Any:
        acks = int(body.acks)
        responses: list[tuple[str, list[dict[str, Any]]]] = []
        appended = False
        txn_allowed = body.transactional_id is None or self._allowed(
            ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id)
        refused = self._verify_transactions(body) if txn_allowed else {}
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
                elif not txn_allowed:
                    res.update(error_code=E.transactional_id_authorization_failed,
                               error_message=f"Not authorized to write as transactional id "
                                             f"{body.transactional_id!r}.")
                elif not writable:
                    res["error_code"] = E.topic_authorization_failed
                elif plog is None:
                    res["error_code"] = E.unknown_topic_or_partition
                elif (td.name, int(pd.index)) in refused:
                    code, message = refused[(td.name, int(pd.index))]
                    res.update(error_code=code, error_message=message)
                else:
                    try:
                        res["base_offset"] = plog.append(bytes(pd.records or b""))
                        res["log_start_offset"] = plog.log_start_offset
                        appended = True
                    except InvalidRecord as e:
                        res.update(error_code=E.invalid_record, error_message=str(e))
                    except InvalidRecords as e:
                        res.update(error_code=E.corrupt_message, error_message=str(e))
                    except ProducerStateError as e:
                        res.update(error_code=e.code, error_message=str(e))
                    except (OSError, LogError) as e:
                        log.error("produce to %s-%d failed: %s", td.name, pd.index, e)
                        res.update(error_code=E.kafka_storage_error, error_message=str(e))
                parts.append(res)
            responses.append((td.name, parts))
        if appended:
            self._wake_fetchers()
        if acks == 0:
            return None
        # encoded by hand (protocol/fast.py): every transaction and producer batch answers one
        return fast.produce_response(ctx.api_version, responses)

    def _verify_transactions(self, body: Any) -> dict[tuple[str, int], tuple[int, str]]:
        """KIP-890 part 1 (Kafka's ``AddPartitionsToTxnManager``, verify-only
        AddPartitionsToTxn): the partitions whose transactional batches the transaction
        coordinator does not track, with the error that refuses them, so that no batch opens a
        transaction nothing will ever end (a hanging transaction pins the LSO)."""
        producers: dict[tuple[str, int], set[tuple[int, int]]] = {}
        for td in body.topic_data:
            for pd in td.partition_data:
                found = _transactional_producers(pd.records)
                if found:
                    producers[(td.name, int(pd.index))] = found
        if not producers:
            return {}
        tid = body.transactional_id
        if tid is None:  # KafkaApis: transactional records need an authorized transactional id
            return dict.fromkeys(producers, (int(E.transactional_id_authorization_failed),
                                             "Transactional records need a transactional id."))
        distinct = set().union(*producers.values())
        if len(distinct) > 1:
            return dict.fromkeys(producers, (int(E.invalid_producer_id_mapping),
                                             "Transactional records of more than one producer."))
        ((pid, epoch),) = distinct
        runtime = self.broker.transactions
        if runtime is None:
            return dict.fromkeys(producers, (int(E.not_enough_replicas),
                                             "The transaction coordinator is not running."))
        codes = runtime.coordinator.verify_partitions(tid, pid, epoch, list(producers))
        return {tp: (_PRODUCE_VERIFY_ERRORS.get(code, code),
                     f"Producer {pid} epoch {epoch} has no open transaction of {tid!r} "
                     f"with {tp[0]}-{tp[1]} (AddPartitionsToTxn first); error {code}.")
                for tp, code in codes.items() if code}

    def _wake_fetchers(self) -> None:
        for on_append in self.broker.on_append:
            on_append()
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

    def fetch_now(self, ctx: RequestContext) -> None:
        """The connection of the Fetch waiting with ``ctx`` has another request queued behind
        it: answer that Fetch now with what there is (nothing), as its MaxWaitMs allows (an
        upper bound). Requests on a connection are answered in order, so a long-poll Fetch
        would hold the next one for up to MaxWaitMs: librdkafka sends FindCoordinator on the
        connection it fetches on, and after NOT_COORDINATOR on an OffsetCommit with one broker
        its coordinator look-up answered 500 ms late (fetch.wait.max.ms) kept failing the
        retried commit (docs/testing.md, "What each client does"). Kafka holds the request
        behind the Fetch; answering the Fetch early is the difference."""
        fut = self._waiting_fetches.get(id(ctx))
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def _fetch_wait(self, body: Any, ctx: RequestContext, max_wait_ms: int) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000.0
        now: asyncio.Future[None] = loop.create_future()
        self._waiting_fetches[id(ctx)] = now
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0 or now.done():
                    break
                fut: asyncio.Future[None] = loop.create_future()
                self._data_waiters.append(fut)
                # asyncio.wait on the two futures with a timeout: no task of its own (a
                # wait_for around it ran one per wake-up)
                try:
                    done, _ = await asyncio.wait((fut, now), timeout=remaining,
                                                 return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not fut.done() or fut.cancelled():
                        with contextlib.suppress(ValueError):
                            self._data_waiters.remove(fut)
                if not done:  # MaxWaitMs is over
                    break
                resp, total, errors = self._fetch_once(body, ctx)
                if total > 0 or errors:
                    return resp
        finally:
            if self._waiting_fetches.get(id(ctx)) is now:
                del self._waiting_fetches[id(ctx)]
        return self._fetch_once(body, ctx)[0]

    def _fetch_once(self, body: Any, ctx: RequestContext) -> tuple[Any, int, bool]:
        """(response, bytes of records, whether some partition has an error)."""
        v = ctx.api_version
        # the request's MaxBytes within the broker's fetch.max.bytes, as Kafka's
        # KafkaApis.handleFetchRequest clamps it; the first batch is returned even when it is
        # larger (KIP-74), so a response holds at most fetch.max.bytes or one batch
        max_bytes = min(int(getattr(body, "max_bytes", 2**31 - 1)), self.broker.fetch_max_bytes)
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
        committed = int(getattr(body, "isolation_level", 0)) == 1 and not follower
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
                    lso = plog.last_stable_offset
                    res.update(high_watermark=hw, last_stable_offset=lso,
                               log_start_offset=plog.log_start_offset)
                    offset = int(fp.fetch_offset)
                    if offset < plog.log_start_offset or offset > hw:
                        res["error_code"] = E.offset_out_of_range
                        errors = True
                    elif offset < (lso if committed else hw):
                        budget = min(int(fp.partition_max_bytes), max(max_bytes - total, 0))
                        data = b""
                        if budget > 0 or total == 0:
                            data, end = plog.read_range(offset, budget,
                                                        lso if committed else None)
                            if committed and data:
                                res["aborted_transactions"] = [
                                    {"producer_id": pid, "first_offset": first}
                                    for pid, first in plog.aborted_transactions(offset, end)]
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
        committed = int(getattr(body, "isolation_level", 0)) == 1
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
                    bound = plog.last_stable_offset if committed else plog.high_watermark
                    if ts == -1:  # LATEST
                        res["offset"] = bound
                    elif ts == -2:  # EARLIEST
                        res["offset"] = plog.log_start_offset
                    elif ts == -3:  # MAX_TIMESTAMP (v7+)
                        found = plog.max_timestamp_offset()
                        if found is not None and found[0] < bound:
                            res["offset"], res["timestamp"] = found
                    elif ts >= 0:
                        found = plog.offset_for_timestamp(ts)
                        if found is not None and found[0] < bound:
                            res["offset"], res["timestamp"] = found
                    else:
                        res["error_code"] = E.invalid_request
                except (OSError, LogError) as e:  # unreadable or damaged partition file
                    log.error("list offsets of %s-%d failed: %s", topic.name, pi, e)
                    res.update(error_code=E.kafka_storage_error, offset=-1, timestamp=-1)
                parts.append(res)
            topics.append({"name": t.name, "partitions": parts})
        return self._resp(ctx, throttle_time=0, topics=topics)

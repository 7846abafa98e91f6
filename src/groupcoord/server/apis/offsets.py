"""OffsetCommit, OffsetFetch, OffsetDelete and TxnOffsetCommit: converted to the coordinator's
messages (``coordinator/offsets.py`` and ``coordinator/transactional_offsets.py`` answer them)
and run on the group's shard; the GROUP, each TOPIC and (TxnOffsetCommit) the TRANSACTIONAL_ID
are authorized here, as Kafka's ``KafkaApis``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.coordinator import messages as m
from groupcoord.protocol import fast
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.security.acls import AclOperation


class OffsetApis(ApiFamily):
    """The offset APIs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.OFFSET_DELETE: self.offset_delete,
            ApiKey.TXN_OFFSET_COMMIT: self.txn_offset_commit,
        }

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

    def txn_offset_commit(self, body: Any, ctx: RequestContext) -> Any:
        """TxnOffsetCommit (KIP-98, KIP-447), as Kafka's ``KafkaApis.handleTxnOffsetCommitRequest``:
        WRITE on the TRANSACTIONAL_ID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the
        GROUP (else GROUP_AUTHORIZATION_FAILED), for every partition; READ on each TOPIC (else
        TOPIC_AUTHORIZATION_FAILED for its partitions, the others are committed). Below v2,
        COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE (older producers
        did not know it)."""
        code = 0
        if not self._allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id):
            code = E.transactional_id_authorization_failed
        elif not self._allowed(ctx, Op.READ, RT.GROUP, body.group_id):
            code = E.group_authorization_failed
        if code:
            return self._resp(ctx, throttle_time=0, topics=self._refused_partitions(
                body.topics, code))
        topics, refused = self._split_topics(ctx, Op.READ, body.topics)
        denied = self._refused_partitions(refused, E.topic_authorization_failed)
        if refused and not topics:
            return self._resp(ctx, throttle_time=0, topics=denied)
        unverified = self._unverified_txn_offsets(body)
        if unverified:
            return self._resp(ctx, throttle_time=0, topics=denied + self._refused_partitions(
                topics, unverified))
        req = m.TxnOffsetCommitRequest(
            group_id=body.group_id, transactional_id=body.transactional_id,
            producer_id=int(body.producer_id), producer_epoch=int(body.producer_epoch),
            topics=tuple(m.OffsetCommitTopic(t.name, tuple(
                m.OffsetCommitPartition(int(p.partition_index), int(p.committed_offset),
                                        int(getattr(p, "committed_leader_epoch", -1)),
                                        p.committed_metadata)
                for p in t.partitions)) for t in topics),
            generation_id=int(getattr(body, "generation_id", -1)),
            member_id=getattr(body, "member_id", "") or "",
            group_instance_id=getattr(body, "group_instance_id", None))
        r: m.TxnOffsetCommitResponse = self.runtime.handle_group(body.group_id, req)
        old = ctx.api_version < 2
        # encoded by hand (protocol/fast.py): every transaction with offsets answers one
        return fast.txn_offset_commit_response(ctx.api_version, [
            (d["name"], [(p["partition_index"], p["error_code"]) for p in d["partitions"]])
            for d in denied] + [
            (t.name, [(p.partition_index,
                       E.coordinator_not_available
                       if old and p.error_code == E.coordinator_load_in_progress
                       else p.error_code) for p in t.partitions]) for t in r.topics])

    def _unverified_txn_offsets(self, body: Any) -> int:
        """KIP-890 part 1 for TxnOffsetCommit (Kafka verifies the group's offsets partition
        with the transaction coordinator): 0 if AddOffsetsToTxn added the group to the
        producer's open transaction, else the error (INVALID_TXN_STATE,
        INVALID_PRODUCER_ID_MAPPING; a fenced epoch INVALID_PRODUCER_EPOCH, which every version
        knows; a completing transaction CONCURRENT_TRANSACTIONS, retriable)."""
        runtime = self.broker.transactions
        if runtime is None:
            return int(E.coordinator_not_available)
        result = runtime.coordinator.verify_group(body.transactional_id, int(body.producer_id),
                                                  int(body.producer_epoch), body.group_id)
        if result.error == E.producer_fenced:
            return int(E.invalid_producer_epoch)
        return result.error

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

"""Share partitions over the wire (KIP-932): ShareFetch, ShareAcknowledge, and the share-group
offset admin APIs DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets.

Versions: ShareFetch and ShareAcknowledge v1-v2 (librdkafka 2.16's ShareConsumer sends v1; v2
adds RENEW acknowledgements and ShareAcquireMode: 0, batch-optimised, may pass MaxRecords to end
on a batch boundary; 1, record-limit, never does), DescribeShareGroupOffsets v0-v1,
Alter/DeleteShareGroupOffsets v0: Kafka 4.x's.

ShareFetch (Kafka's ``SharePartitionManager.fetchMessages``):

1. READ on the group (else GROUP_AUTHORIZATION_FAILED for the whole request), then the share
   session (``server/share_sessions.py``): opened, advanced or closed by ShareSessionEpoch.
2. Acknowledgements piggy-backed on the request are applied first, per partition, all or none
   (the partition's AcknowledgeErrorCode says how it went).
3. Records are acquired from the session's partitions (READ on each topic, else
   TOPIC_AUTHORIZATION_FAILED) in a rotating order until MinBytes are there, as Kafka 4.2
   answers a share fetch (with the clients' MinBytes of 1: one partition's records per
   response; librdkafka's share tests rely on it), up to MaxRecords in total and MaxBytes of
   batches (at least one batch, none with MaxBytes 0; at most 1 MiB read from one partition per
   request): each partition answers with the whole log batches that hold
   its acquired records and the AcquiredRecords ranges with their delivery counts; the client
   delivers only the acquired offsets.
4. Nothing acquired, no error, MaxWaitMs > 0 and MinBytes > 0: the request waits, without
   polling, until a produce appends data or records become available again (lock expiry, a
   release), or MaxWaitMs passes; step 3 is tried again each time (step 2 never is).

A full request (epoch 0) is answered with every partition it names; an incremental one with the
partitions that have records, an error or an acknowledgement result. Every change of share
state is written to the share-state log before the response goes (``server/share_partitions.py``).

ShareAcknowledge: READ on the group and on each topic; the session's epoch is checked and
advanced as by ShareFetch (the final epoch -1 closes it after the acknowledgements).

The offset admin APIs follow Kafka's ``KafkaApis``: DescribeShareGroupOffsets needs DESCRIBE on
the group (GROUP_AUTHORIZATION_FAILED for the group otherwise) and DESCRIBE on each topic (a
topic without it is left out of the answer, as Kafka filters it); it reports each partition's
start offset (-1 when it has no state) and, from v1, the lag (the records from the start offset
to the end of the log not yet acknowledged or archived). AlterShareGroupOffsets needs READ on
the group and on each topic; DeleteShareGroupOffsets DELETE on the group and READ on each
topic. Both refuse a group with members (NON_EMPTY_GROUP): its members as the share group's
coordinator describes them, or else the group's open share sessions
(:meth:`ShareDataApis._members`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable
from typing import Any
from uuid import UUID

from groupcoord.coordinator.modern.share.messages import ShareGroupDescribeRequest
from groupcoord.coordinator.share_partitions.partition import DONE, Acknowledgement, SharePartition
from groupcoord.coordinator.share_partitions.records import ShareStateKey
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import (
    LEADER_EPOCH,
    NODE_ID,
    RT,
    ApiFamily,
    BrokerState,
    E,
    Op,
    RequestContext,
)
from groupcoord.server.partition_log import PartitionLog
from groupcoord.server.share_partitions import SharePartitionManager, ShareStateError
from groupcoord.server.share_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSession,
    ShareSessionCache,
    ShareSessionError,
)
from groupcoord.storage.log import LogError
from groupcoord.storage.memory import MemoryLog

log = logging.getLogger(__name__)

_BATCH_HEAD = struct.Struct(">qi")
#: Share-state keys carry the group id with an int16 length (``records.ShareStateKey``).
MAX_GROUP_ID_BYTES = 32767
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
#: Bytes read from one partition's log for one acquisition (at least one batch): a request's
#: MaxBytes may be 2 GiB, and what is read beyond the records acquired is thrown away.
READ_CAP_BYTES = 1 << 20
_LAST_DELTA = struct.Struct(">i")


def batch_ranges(data: bytes) -> list[tuple[int, int, int, int]]:
    """``(base offset, last offset, start, end)`` of each whole record batch in ``data``."""
    out = []
    pos = 0
    n = len(data)
    while pos + 27 <= n:
        base, length = _BATCH_HEAD.unpack_from(data, pos)
        end = pos + 12 + length
        if end > n:
            break
        (delta,) = _LAST_DELTA.unpack_from(data, pos + 23)
        out.append((base, base + delta, pos, end))
        pos = end
    return out


def _leader() -> dict[str, int]:
    return {"leader_id": NODE_ID, "leader_epoch": LEADER_EPOCH}


class ShareDataApis(ApiFamily):
    """ShareFetch, ShareAcknowledge and the share-group offset admin APIs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self._shares: SharePartitionManager | None = None
        self.sessions = ShareSessionCache(int(broker.broker_configs.get(
            "group.share.max.share.sessions", "2000")))
        self._waiters: list[asyncio.Future[None]] = []
        self._waiting: dict[int, asyncio.Future[None]] = {}
        broker.on_append.append(self._wake)
        #: How many members a share group has (AlterShareGroupOffsets and
        #: DeleteShareGroupOffsets need none).
        self.group_members: Callable[[str], int] = self._members
        self.handlers = {
            ApiKey.SHARE_FETCH: self.share_fetch,
            ApiKey.SHARE_ACKNOWLEDGE: self.share_acknowledge,
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: self.describe_offsets,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: self.alter_offsets,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: self.delete_offsets,
        }

    @property
    def shares(self) -> SharePartitionManager:
        """The broker's share partitions (the server makes them with its share-state log; a
        broker built without a server keeps them in memory)."""
        manager = self._shares
        if manager is None:
            manager = self.broker.share_partitions
            if manager is None:
                manager = self.broker.share_partitions = SharePartitionManager(
                    MemoryLog(), self.runtime.clock.now_ms, self.broker.broker_configs)
            manager.on_available.append(self._wake)
            self._shares = manager
        return manager

    def _exists(self, tp: tuple[UUID, int]) -> bool:
        topic = self.registry.by_id.get(tp[0])
        return topic is not None and 0 <= tp[1] < topic.num_partitions

    def _members(self, group_id: str) -> int:
        """The share group's members as its coordinator describes them (none if the group
        does not exist or is another type), or else its open share sessions: a client may
        fetch without having joined (the partition leader does not check membership), and
        resetting the state under it would refuse its acknowledgements."""
        r = self.runtime.handle(self.runtime.shard_of(group_id),
                                ShareGroupDescribeRequest((group_id,)))
        groups = getattr(r, "groups", ())
        members = len(groups[0].members) if groups and not groups[0].error_code else 0
        return members or sum(1 for (g, _m, _b) in self.sessions.sessions if g == group_id)

    def _known(self, group_id: str) -> bool:
        """Whether ``group_id`` is a share group: its coordinator describes it (with or without
        members), or this broker holds share state or share sessions for it (a client may
        fetch without having joined; AlterShareGroupOffsets sets state for a group with no
        member). DescribeShareGroupOffsets and DeleteShareGroupOffsets answer
        GROUP_ID_NOT_FOUND otherwise, as Kafka 4.x does for a group it does not have."""
        r = self.runtime.handle(self.runtime.shard_of(group_id),
                                ShareGroupDescribeRequest((group_id,)))
        groups = getattr(r, "groups", ())
        if groups and not groups[0].error_code:
            return True
        if next(self.shares.of_group(group_id), None) is not None:
            return True
        return any(g == group_id for (g, _m, _b) in self.sessions.sessions)

    def member_left(self, group_id: str, member_id: str) -> None:
        """The member was removed from its share group by the coordinator (its session timed
        out, or it was fenced): its share session closes and what it holds is released at once
        rather than when its locks expire. The share group type calls this. Not for a member
        that leaves by itself (a heartbeat with epoch -1): librdkafka sends that heartbeat and
        its final ShareAcknowledge (epoch -1) at the same moment on two connections, and a
        release winning the race would refuse the final acknowledgements (INVALID_RECORD_STATE)
        and deliver those records again; the final request, or the connection closing,
        releases what is left."""
        self.sessions.close_member(group_id, member_id)
        self.shares.release_member(group_id, member_id)

    def connection_closed(self, connection: int) -> None:
        """The share sessions whose latest request came on ``connection`` close, releasing
        their records (``server/share_sessions.py``)."""
        if connection == 0 or not self.sessions.sessions:
            return
        for session in self.sessions.connection_closed(connection):
            self._release_session(session)

    # ------------------------------------------------------------------ waiting

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def fetch_now(self, ctx: RequestContext) -> None:
        """Answer the ShareFetch waiting with ``ctx`` now (a request is queued behind it on its
        connection; see ``ProduceFetchApis.fetch_now``)."""
        fut = self._waiting.get(id(ctx))
        if fut is not None and not fut.done():
            fut.set_result(None)

    # ------------------------------------------------------------------ sessions

    def _session_error(self, ctx: RequestContext, e: ShareSessionError, **extra: Any) -> Any:
        if e.dropped is not None:
            self._release_session(e.dropped)
        return self._resp(ctx, throttle_time=0, error_code=e.code, error_message=str(e),
                          responses=(), node_endpoints=(), **extra)

    def _release_session(self, session: ShareSession) -> None:
        keys = [ShareStateKey(session.group_id, t, p) for (t, p) in session.partitions]
        self.shares.release_member(session.group_id, session.member_id, keys)

    # ------------------------------------------------------------------ acknowledgements

    def _acknowledge(self, group: str, member: str, topic_id: UUID, partition: int,
                     batches: Any, now: int, readable: bool) -> tuple[int, str | None]:
        if not readable:
            return E.topic_authorization_failed, None
        topic = self.registry.by_id.get(topic_id)
        if topic is None or not 0 <= partition < topic.num_partitions:
            return E.unknown_topic_or_partition, None
        key = ShareStateKey(group, topic_id, partition)
        sp = self.shares.get(key)
        acks = [Acknowledgement(int(b.first_offset), int(b.last_offset),
                                tuple(int(t) for t in b.acknowledge_types)) for b in batches]
        if sp is None:
            return E.invalid_record_state, "the share partition has no state"
        code = sp.acknowledge(member, acks, now)
        if code:
            return code, None
        try:
            self.shares.persist(key)
        except ShareStateError as e:
            return E.kafka_storage_error, str(e)
        if any(t == 2 for a in acks for t in a.types):  # RELEASE: available again
            self._wake()
        return 0, None

    # ------------------------------------------------------------------ ShareFetch

    def share_fetch(self, body: Any, ctx: RequestContext) -> Any:
        group = body.group_id or ""
        member = body.member_id or ""
        epoch = int(body.share_session_epoch)
        lock_ms = self.shares.config(group).lock_duration_ms if group else 0
        extra: dict[str, Any] = {"acquisition_lock_timeout": lock_ms}
        if not group or not member or len(group.encode()) > MAX_GROUP_ID_BYTES:
            return self._resp(ctx, throttle_time=0, error_code=E.invalid_request,
                              error_message="ShareFetch needs a group id (at most 32767 bytes) "
                                            "and a member id",
                              responses=(), node_endpoints=(), **extra)
        if not self._allowed(ctx, Op.READ, RT.GROUP, group):
            return self._resp(ctx, throttle_time=0, error_code=E.group_authorization_failed,
                              responses=(), node_endpoints=(), **extra)
        now = self.shares.now_ms()
        requested: dict[tuple[UUID, int], Any] = {}
        for t in body.topics:
            for p in t.partitions:
                requested[(t.topic_id, int(p.partition_index))] = p.acknowledgement_batches
        # a session keeps the partitions that exist (bounded by them); the others are answered
        # with their error each time they are asked for
        known = [tp for tp in requested if self._exists(tp)]
        try:
            if epoch == INITIAL_EPOCH:
                session, gone = self.sessions.open(group, member, known, now,
                                                   ctx.connection, ctx.broker)
                for old in gone:
                    self._release_session(old)
            else:
                session = self.sessions.use(group, member, epoch, now, ctx.connection,
                                            ctx.broker)
                for tp in known:
                    session.partitions.setdefault(tp, None)
                for ft in body.forgotten_topics_data:
                    for pi in ft.partitions:
                        session.partitions.pop((ft.topic_id, int(pi)), None)
        except ShareSessionError as e:
            return self._session_error(ctx, e, **extra)
        readable: dict[UUID, bool] = {}

        def can_read(topic_id: UUID) -> bool:
            ok = readable.get(topic_id)
            if ok is None:
                topic = self.registry.by_id.get(topic_id)
                ok = readable[topic_id] = topic is None or self._allowed(
                    ctx, Op.READ, RT.TOPIC, topic.name)
            return ok

        parts: dict[tuple[UUID, int], dict[str, Any]] = {}
        for (tid, pi), batches in requested.items():
            if batches:
                code, msg = self._acknowledge(group, member, tid, pi, batches, now, can_read(tid))
                parts[(tid, pi)] = self._part(pi, acknowledge_error_code=code,
                                              acknowledge_error_message=msg)
        if epoch == FINAL_EPOCH:
            closed = self.sessions.close(group, member, ctx.broker)
            if closed is not None:
                self._release_session(closed)
            return self._fetch_response(ctx, parts, extra)
        unknown = False
        for tp in requested:
            if epoch == INITIAL_EPOCH or tp not in session.partitions:
                res = parts.setdefault(tp, self._part(tp[1]))
                if tp not in session.partitions:
                    unknown = True
                    topic = self.registry.by_id.get(tp[0])
                    res["error_code"] = (E.topic_authorization_failed if not can_read(tp[0])
                                         else E.unknown_topic_id if topic is None
                                         else E.unknown_topic_or_partition)
        acquired, errors = self._acquire(body, session, parts, can_read)
        errors = errors or unknown
        max_wait = to_ms(body.max_wait)
        if acquired or errors or int(body.min_bytes) <= 0 or max_wait <= 0 \
                or int(body.max_records) <= 0:
            return self._fetch_response(ctx, parts, extra)
        return self._wait(body, ctx, session, parts, can_read, max_wait, extra)

    async def _wait(self, body: Any, ctx: RequestContext, session: ShareSession,
                    parts: dict[tuple[UUID, int], dict[str, Any]],
                    can_read: Callable[[UUID], bool], max_wait_ms: int,
                    extra: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000.0
        now_fut: asyncio.Future[None] = loop.create_future()
        self._waiting[id(ctx)] = now_fut
        try:
            while not now_fut.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                fut: asyncio.Future[None] = loop.create_future()
                self._waiters.append(fut)
                try:
                    await asyncio.wait((fut, now_fut), timeout=remaining,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not fut.done():
                        fut.cancel()
                        with contextlib.suppress(ValueError):
                            self._waiters.remove(fut)
                if self.sessions.of_member(session.group_id, session.member_id,
                                           session.broker) is not session:
                    break  # closed or replaced meanwhile: fetch nothing more for it
                acquired, errors = self._acquire(body, session, parts, can_read)
                if acquired or errors:
                    break
        finally:
            if self._waiting.get(id(ctx)) is now_fut:
                del self._waiting[id(ctx)]
        return self._fetch_response(ctx, parts, extra)

    @staticmethod
    def _part(pi: int, **kw: Any) -> dict[str, Any]:
        res: dict[str, Any] = {"partition_index": pi, "error_code": 0, "error_message": None,
                               "acknowledge_error_code": 0, "acknowledge_error_message": None,
                               "current_leader": _leader(), "records": b"",
                               "acquired_records": ()}
        res.update(kw)
        return res

    def _fetch_response(self, ctx: RequestContext, parts: dict[tuple[UUID, int], dict[str, Any]],
                        extra: dict[str, Any]) -> Any:
        by_topic: dict[UUID, list[dict[str, Any]]] = {}
        for (tid, _pi), res in parts.items():
            by_topic.setdefault(tid, []).append(res)
        responses = [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()]
        return self._resp(ctx, throttle_time=0, error_code=0, responses=responses,
                          node_endpoints=(), **extra)

    def _acquire(self, body: Any, session: ShareSession,
                 parts: dict[tuple[UUID, int], dict[str, Any]],
                 can_read: Callable[[UUID], bool]) -> tuple[int, bool]:
        """Acquire records for the session's member into ``parts``; (records acquired,
        whether some partition has an error)."""
        max_records = int(body.max_records)
        max_bytes = int(body.max_bytes)
        min_bytes = max(int(body.min_bytes), 1)
        record_limit = int(getattr(body, "share_acquire_mode", 0)) == 1
        group, member = session.group_id, session.member_id
        order = list(session.partitions)
        if not order or max_records <= 0 or max_bytes <= 0:
            return 0, False
        shift = session.epoch % len(order)
        order = order[shift:] + order[:shift]
        total_records = total_bytes = 0
        errors = False
        now = self.shares.now_ms()
        for tid, pi in order:
            if total_records >= max_records:
                break
            topic = self.registry.by_id.get(tid)
            code = 0
            if not can_read(tid):
                code = E.topic_authorization_failed
            elif topic is None:
                code = E.unknown_topic_id
            elif not 0 <= pi < topic.num_partitions:
                code = E.unknown_topic_or_partition
            if code:
                errors = True
                parts.setdefault((tid, pi), self._part(pi))["error_code"] = code
                continue
            assert topic is not None
            key = ShareStateKey(group, tid, pi)
            try:
                plog = topic.partitions[pi]
                sp = self.shares.get_or_init(key, plog)
                window = (sp.start_offset, sp.next_offset)
                got, data = self._acquire_one(sp, plog, member, max_records - total_records,
                                              max(max_bytes - total_bytes, 0), total_bytes == 0,
                                              now, record_limit)
                if got or window != (sp.start_offset, sp.next_offset):  # or archived some
                    self.shares.persist(key)
            except (OSError, LogError, ShareStateError) as e:
                log.error("share fetch of %s from %s-%d failed: %s", group, tid, pi, e)
                errors = True
                res = parts.setdefault((tid, pi), self._part(pi))
                res.update(error_code=E.kafka_storage_error, error_message=str(e))
                continue
            if got:
                res = parts.setdefault((tid, pi), self._part(pi))
                res["records"] = data
                res["acquired_records"] = [
                    {"first_offset": r.first_offset, "last_offset": r.last_offset,
                     "delivery_count": r.delivery_count} for r in got]
                total_records += sum(r.last_offset - r.first_offset + 1 for r in got)
                total_bytes += len(data)
                if total_bytes >= min_bytes:
                    break
        return total_records, errors

    @staticmethod
    def _read_bound(plog: PartitionLog, sp: SharePartition) -> int:
        """The offset acquisition stops at: the high watermark, or with
        ``share.isolation.level=read_committed`` the last stable offset (nothing of an open
        transaction is delivered)."""
        return plog.last_stable_offset if sp.config.read_committed else plog.high_watermark

    @staticmethod
    def _undeliverable(data: bytes, ranges: list[tuple[int, int, int, int]], plog: PartitionLog,
                       read_committed: bool) -> set[int]:
        """Base offsets of the batches no client may be given: control batches, and under
        read_committed the batches of aborted transactions (Kafka's aborted-transactions index:
        a transactional batch of a producer whose transaction from a first offset at or below
        the batch was aborted by a marker after it)."""
        out: set[int] = set()
        aborted: dict[int, list[tuple[int, int]]] | None = None
        for base, _last, start, _end in ranges:
            (attributes,) = _ATTRIBUTES.unpack_from(data, start + 21)
            if attributes & _CONTROL:
                out.add(base)
            elif read_committed and attributes & _TRANSACTIONAL:
                if aborted is None:
                    aborted = {}
                    for pid, first, marker in plog.aborted_index():
                        if marker >= ranges[0][0]:
                            aborted.setdefault(pid, []).append((first, marker))
                (pid,) = _PRODUCER_ID.unpack_from(data, start + 43)
                if any(first <= base < marker for first, marker in aborted.get(pid, ())):
                    out.add(base)
        return out

    def _acquire_one(self, sp: SharePartition, plog: PartitionLog, member: str,
                     max_records: int, max_bytes: int, first: bool, now: int,
                     record_limit: bool = False) -> tuple[list[Any], bytes]:
        if max_bytes <= 0 and not first:  # MaxBytes reached: the first batch only may pass it
            return [], b""
        # records deleted from the log (DeleteRecords) are done: the SPSO moves past them (the
        # caller writes the moved window)
        sp.move_start(plog.log_start_offset)
        offset = sp.fetch_offset()
        bound = self._read_bound(plog, sp)
        if offset is None or offset >= bound:
            return [], b""
        data = plog.read(offset, min(max_bytes, READ_CAP_BYTES))
        ranges = [r for r in batch_ranges(data) if r[0] < bound]
        skip = self._undeliverable(data, ranges, plog, sp.config.read_committed)
        got = sp.acquire(member, [(b, last) for b, last, _s, _e in ranges], max_records, now,
                         record_limit, skip)
        if not got:
            return [], b""
        chunks = []
        i = 0
        for base, last, start, end in ranges:
            while i < len(got) and got[i].last_offset < base:
                i += 1
            if i < len(got) and got[i].first_offset <= last:
                chunks.append(data[start:end])
        return got, b"".join(chunks)

    # ------------------------------------------------------------------ ShareAcknowledge

    def share_acknowledge(self, body: Any, ctx: RequestContext) -> Any:
        group = body.group_id or ""
        member = body.member_id or ""
        epoch = int(body.share_session_epoch)
        extra: dict[str, Any] = {}
        if ctx.api_version >= 2:
            extra["acquisition_lock_timeout"] = (self.shares.config(group).lock_duration_ms
                                                 if group else 0)
        if not group or not member or len(group.encode()) > MAX_GROUP_ID_BYTES:
            return self._resp(ctx, throttle_time=0, error_code=E.invalid_request,
                              error_message="ShareAcknowledge needs a group id (at most 32767 "
                                            "bytes) and a member id",
                              responses=(), node_endpoints=(), **extra)
        if not self._allowed(ctx, Op.READ, RT.GROUP, group):
            return self._resp(ctx, throttle_time=0, error_code=E.group_authorization_failed,
                              responses=(), node_endpoints=(), **extra)
        if epoch == INITIAL_EPOCH:
            return self._resp(ctx, throttle_time=0, error_code=E.invalid_share_session_epoch,
                              error_message="ShareAcknowledge cannot open a share session",
                              responses=(), node_endpoints=(), **extra)
        now = self.shares.now_ms()
        try:
            self.sessions.use(group, member, epoch, now, ctx.connection, ctx.broker)
        except ShareSessionError as e:
            return self._session_error(ctx, e, **extra)
        responses = []
        for t in body.topics:
            topic = self.registry.by_id.get(t.topic_id)
            ok = topic is None or self._allowed(ctx, Op.READ, RT.TOPIC, topic.name)
            ps = []
            for p in t.partitions:
                code, msg = self._acknowledge(group, member, t.topic_id, int(p.partition_index),
                                              p.acknowledgement_batches, now, ok)
                ps.append({"partition_index": int(p.partition_index), "error_code": code,
                           "error_message": msg, "current_leader": _leader()})
            responses.append({"topic_id": t.topic_id, "partitions": ps})
        if epoch == FINAL_EPOCH:
            closed = self.sessions.close(group, member, ctx.broker)
            if closed is not None:
                self._release_session(closed)
        return self._resp(ctx, throttle_time=0, error_code=0, responses=responses,
                          node_endpoints=(), **extra)

    # ------------------------------------------------------------------ offsets admin

    def describe_offsets(self, body: Any, ctx: RequestContext) -> Any:
        groups = []
        for g in body.groups:
            gid = g.group_id
            if not self._allowed(ctx, Op.DESCRIBE, RT.GROUP, gid):
                groups.append({"group_id": gid, "topics": (),
                               "error_code": E.group_authorization_failed})
                continue
            if not self._known(gid):
                groups.append({"group_id": gid, "topics": (), "error_code": E.group_id_not_found,
                               "error_message": f"Group {gid} not found."})
                continue
            names: list[str]
            wanted: dict[str, tuple[int, ...] | None] = {}
            if g.topics is None:  # every topic the group has state for
                ids = sorted({k.topic_id for k, _ in self.shares.of_group(gid)})
                names = sorted(t.name for i in ids if (t := self.registry.by_id.get(i)))
                wanted = dict.fromkeys(names)
            else:
                for t in g.topics:
                    wanted[t.topic_name] = tuple(int(p) for p in t.partitions)
            topics = []
            for name, pis in wanted.items():
                if not self._allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
                    continue
                topic = self.registry.get(name)
                if topic is None:
                    topics.append({"topic_name": name, "topic_id": UUID(int=0), "partitions": [
                        {"partition_index": p, "start_offset": -1, "leader_epoch": -1,
                         "lag": -1, "error_code": E.unknown_topic_or_partition}
                        for p in (pis or ())]})
                    continue
                if pis is None:
                    pis = tuple(k.partition for k, _ in self.shares.of_group(gid)
                                if k.topic_id == topic.topic_id)
                ps = []
                for p in pis:
                    ps.append(self._describe_partition(gid, topic, p))
                topics.append({"topic_name": name, "topic_id": topic.topic_id, "partitions": ps})
            groups.append({"group_id": gid, "topics": topics, "error_code": 0})
        return self._resp(ctx, throttle_time=0, groups=groups)

    def _describe_partition(self, gid: str, topic: Any, p: int) -> dict[str, Any]:
        res: dict[str, Any] = {"partition_index": p, "start_offset": -1,
                               "leader_epoch": LEADER_EPOCH, "lag": -1, "error_code": 0}
        if not 0 <= p < topic.num_partitions:
            res.update(error_code=E.unknown_topic_or_partition, leader_epoch=-1)
            return res
        sp = self.shares.get(ShareStateKey(gid, topic.topic_id, p))
        if sp is None:
            return res
        res["start_offset"] = sp.start_offset
        try:
            hw = topic.partitions[p].high_watermark
        except (OSError, LogError):
            return res
        done = sum(1 for o, r in sp.records.items() if r.state in DONE and o < hw)
        res["lag"] = max(hw - sp.start_offset - done, 0)
        return res

    def _check_admin(self, ctx: RequestContext, gid: str, group_op: Op) -> int:
        if not gid or len(gid.encode()) > MAX_GROUP_ID_BYTES:
            return E.invalid_group_id
        if not self._allowed(ctx, group_op, RT.GROUP, gid):
            return E.group_authorization_failed
        if self.group_members(gid):
            return E.non_empty_group
        return 0

    def alter_offsets(self, body: Any, ctx: RequestContext) -> Any:
        gid = body.group_id
        code = self._check_admin(ctx, gid, Op.READ)
        if code:
            return self._resp(ctx, throttle_time=0, error_code=code, responses=())
        responses = []
        for t in body.topics:
            topic = self.registry.get(t.topic_name)
            readable = self._allowed(ctx, Op.READ, RT.TOPIC, t.topic_name)
            ps = []
            for p in t.partitions:
                pi = int(p.partition_index)
                res: dict[str, Any] = {"partition_index": pi, "error_code": 0}
                if not readable:
                    res["error_code"] = E.topic_authorization_failed
                elif topic is None or not 0 <= pi < topic.num_partitions:
                    res["error_code"] = E.unknown_topic_or_partition
                elif int(p.start_offset) < -1:
                    res.update(error_code=E.invalid_request,
                               error_message="a start offset is >= 0, or -1 for the latest")
                else:
                    try:
                        plog = topic.partitions[pi]
                        start = int(p.start_offset)
                        if start == -1 or start > plog.high_watermark:
                            start = plog.high_watermark
                        start = max(start, plog.log_start_offset)
                        self.shares.reset(ShareStateKey(gid, topic.topic_id, pi), start)
                    except (OSError, LogError, ShareStateError) as e:
                        res.update(error_code=E.kafka_storage_error, error_message=str(e))
                ps.append(res)
            responses.append({"topic_name": t.topic_name,
                              "topic_id": topic.topic_id if topic else UUID(int=0),
                              "partitions": ps})
        self._wake()
        return self._resp(ctx, throttle_time=0, error_code=0, responses=responses)

    def delete_offsets(self, body: Any, ctx: RequestContext) -> Any:
        gid = body.group_id
        code = self._check_admin(ctx, gid, Op.DELETE)
        if not code and not self._known(gid):
            code = E.group_id_not_found
        if code:
            return self._resp(ctx, throttle_time=0, error_code=code, responses=())
        responses = []
        for t in body.topics:
            topic = self.registry.get(t.topic_name)
            res: dict[str, Any] = {"topic_name": t.topic_name,
                                   "topic_id": topic.topic_id if topic else UUID(int=0),
                                   "error_code": 0}
            if not self._allowed(ctx, Op.READ, RT.TOPIC, t.topic_name):
                res["error_code"] = E.topic_authorization_failed
            elif topic is None:
                res["error_code"] = E.unknown_topic_or_partition
            else:
                try:
                    for key, _sp in list(self.shares.of_group(gid)):
                        if key.topic_id == topic.topic_id:
                            self.shares.delete(key)
                except ShareStateError as e:
                    res.update(error_code=E.kafka_storage_error, error_message=str(e))
            responses.append(res)
        return self._resp(ctx, throttle_time=0, error_code=0, responses=responses)

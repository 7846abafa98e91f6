"""Deferred responses in the runtime, in-process (classic JoinGroup / SyncGroup answered later).

``CoordinatorRuntime.handle_deferrable`` gives a future when the core answers ``DEFERRED``; the
future is resolved by a later result's completion (a request of another member, or a timer on
the wall clock), after that result's records are durable. A failed append reloads the shard and
answers its pending requests NOT_COORDINATOR; a cancelled future (its connection closed) is
forgotten and its completion discarded. None of these may leave a request hanging.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from groupcoord.coordinator.classic.messages import (
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.storage.log import Entry, LogError
from groupcoord.storage.memory import MemoryLog

TOPIC = TopicMetadata(uuid.uuid4(), "t", 4)
IMAGE = MetadataImage.of([TOPIC])
SUBSCRIPTION = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)
WAIT_S = 5.0


class FlakyLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__()
        self.fail_next = 0

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise LogError("disk on fire")
        super().append(shard, batch, now_ms)

    def read(self, shard: int) -> Iterator[Entry]:
        return super().read(shard)


def _config(initial_delay_ms: int = 50) -> CoordinatorConfig:
    return CoordinatorConfig.from_properties({
        "group.min.session.timeout.ms": "100",
        "group.initial.rebalance.delay.ms": str(initial_delay_ms)})


def _join(member_id: str = "", instance: str | None = None, rebalance_ms: int = 30_000,
          session_ms: int = 30_000, group: str = "g") -> JoinGroupRequest:
    # v3: no MEMBER_ID_REQUIRED round trip; v5 for a static member
    return JoinGroupRequest(group, session_ms, member_id, "consumer",
                            (JoinGroupProtocol("range", SUBSCRIPTION),), rebalance_ms,
                            instance, client_id="c", version=5 if instance else 3)


def _run(test: Callable[[CoordinatorRuntime, FlakyLog], Awaitable[None]],
         config: CoordinatorConfig | None = None) -> None:
    async def main() -> None:
        log = FlakyLog()
        rt = CoordinatorRuntime(log, 1, config or _config(), IMAGE, lambda: uuid.uuid4().hex[:8])
        rt.start(asyncio.get_running_loop())
        try:
            await test(rt, log)
        finally:
            rt.stop()
    asyncio.run(main())


async def _answer(r: Any) -> Any:
    if isinstance(r, asyncio.Future):
        return await asyncio.wait_for(r, WAIT_S)
    return r


def test_deferred_join_answered_after_its_records_are_durable() -> None:
    async def test(rt: CoordinatorRuntime, log: FlakyLog) -> None:
        fut = rt.handle_deferrable("g", _join())
        assert isinstance(fut, asyncio.Future) and not fut.done()
        assert rt.pending_deferred == 1
        written = log.size(0)
        r: JoinGroupResponse = await _answer(fut)
        assert r.error_code == 0 and r.generation_id == 1 and r.leader == r.member_id
        assert rt.pending_deferred == 0
        assert log.size(0) >= written
        # the leader's SyncGroup completes at once (it brings the assignment)
        s = await _answer(rt.handle_deferrable("g", SyncGroupRequest(
            "g", 1, r.member_id, assignments=(SyncGroupAssignment(r.member_id, b"A"),),
            version=3)))
        assert s.error_code == 0 and s.assignment == b"A"
        assert log.size(0) > written  # the assignment record was written before the answer
    _run(test)


def test_follower_sync_is_completed_by_the_leaders_sync() -> None:
    async def test(rt: CoordinatorRuntime, log: FlakyLog) -> None:
        fa, fb = rt.handle_deferrable("g", _join()), rt.handle_deferrable("g", _join())
        ra, rb = await _answer(fa), await _answer(fb)
        leader, follower = (ra, rb) if ra.leader == ra.member_id else (rb, ra)
        waiting = rt.handle_deferrable("g", SyncGroupRequest("g", 1, follower.member_id,
                                                              version=3))
        assert isinstance(waiting, asyncio.Future) and not waiting.done()
        s = await _answer(rt.handle_deferrable("g", SyncGroupRequest(
            "g", 1, leader.member_id, version=3, assignments=(
                SyncGroupAssignment(leader.member_id, b"L"),
                SyncGroupAssignment(follower.member_id, b"F")))))
        assert s.assignment == b"L"
        assert (await _answer(waiting)).assignment == b"F"
        assert rt.pending_deferred == 0
    _run(test)


def test_failed_append_answers_pending_requests_not_coordinator() -> None:
    async def test(rt: CoordinatorRuntime, log: FlakyLog) -> None:
        pending = rt.handle_deferrable("g", _join())
        assert isinstance(pending, asyncio.Future)
        # another group's commit on the same shard fails to persist: the shard is reloaded
        log.fail_next = 1
        commit = rt.handle_group("other", OffsetCommitRequest(
            "other", (OffsetCommitTopic("t", (OffsetCommitPartition(0, 5),)),)))
        assert commit.topics[0].partitions[0].error_code == ErrorCode.coordinator_not_available
        assert pending.done()
        r = pending.result()
        assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.not_coordinator
        assert rt.pending_deferred == 0
        # the reloaded shard serves again: the member joins anew
        again = await _answer(rt.handle_deferrable("g", _join()))
        assert again.error_code == 0
    _run(test)


def test_cancelled_request_is_forgotten_and_the_group_goes_on() -> None:
    async def test(rt: CoordinatorRuntime, log: FlakyLog) -> None:
        gone = rt.handle_deferrable("g", _join(rebalance_ms=300))
        stays = rt.handle_deferrable("g", _join(rebalance_ms=300))
        assert isinstance(gone, asyncio.Future) and isinstance(stays, asyncio.Future)
        gone.cancel()  # its connection closed
        await asyncio.sleep(0)
        assert rt.pending_deferred == 1
        r = await _answer(stays)  # the completion of the cancelled one is discarded
        assert r.error_code == 0 and rt.pending_deferred == 0
        # the vanished member never syncs: after the sync deadline it is removed, and the
        # survivor's rejoin completes a generation of its own
        if r.leader == r.member_id:
            others = [m.member_id for m in r.members if m.member_id != r.member_id]
            await _answer(rt.handle_deferrable("g", SyncGroupRequest(
                "g", r.generation_id, r.member_id, version=3,
                assignments=(SyncGroupAssignment(r.member_id, b"x"),))))
            assert others
        else:
            sync = rt.handle_deferrable("g", SyncGroupRequest("g", r.generation_id, r.member_id,
                                                               version=3))
            s = await _answer(sync)  # the leader is gone: answered when its sync expires
            assert s.error_code == ErrorCode.rebalance_in_progress
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            rejoin = await _answer(rt.handle_deferrable("g", _join(r.member_id, rebalance_ms=300)))
            if rejoin.error_code == 0 and [m.member_id for m in rejoin.members] == [r.member_id]:
                break
            assert asyncio.get_running_loop().time() < deadline, rejoin
            await asyncio.sleep(0.05)
        assert rejoin.generation_id > r.generation_id and rt.pending_deferred == 0
    _run(test)


def test_join_answered_when_the_rebalance_times_out() -> None:
    async def test(rt: CoordinatorRuntime, log: FlakyLog) -> None:
        fa = rt.handle_deferrable("g", _join(rebalance_ms=400))
        fb = rt.handle_deferrable("g", _join(rebalance_ms=400))
        ra, rb = await _answer(fa), await _answer(fb)
        leader = ra if ra.leader == ra.member_id else rb
        follower = rb if leader is ra else ra
        await _answer(rt.handle_deferrable("g", SyncGroupRequest(
            "g", 1, leader.member_id, version=3,
            assignments=(SyncGroupAssignment(leader.member_id, b"L"),
                         SyncGroupAssignment(follower.member_id, b"F")))))
        await _answer(rt.handle_deferrable("g", SyncGroupRequest("g", 1, follower.member_id,
                                                                  version=3)))
        # the leader rejoins; the follower never does: the join phase ends at the rebalance
        # timeout (400 ms) and the leader is answered with a generation of its own
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        r = await _answer(rt.handle_deferrable("g", _join(leader.member_id, rebalance_ms=400)))
        assert 0.3 <= loop.time() - t0 < WAIT_S
        assert r.error_code == 0 and r.generation_id == 2
        assert [m.member_id for m in r.members] == [leader.member_id]
    _run(test)

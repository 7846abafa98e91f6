"""The runtime tells the share partitions of share members the coordinator removed (KIP-932):
``CoordinatorRuntime.share_member_removed`` is called, once the removal is durable, for a
member whose session timed out or that was fenced, and not for one that left by itself (its
final ShareAcknowledge may still be on its way); and the share settings are read per group
(``CoordinatorRuntime.share_group_config``)."""

from __future__ import annotations

import asyncio
import uuid

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import AlterGroupConfigOp, AlterGroupConfigsRequest
from groupcoord.coordinator.modern.share.messages import ShareGroupHeartbeatRequest
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.runtime import Clock, CoordinatorRuntime
from groupcoord.storage.memory import MemoryLog

from .support import image


class Manual(Clock):
    def __init__(self) -> None:
        super().__init__()
        self.t = 1_000_000

    def now_ms(self) -> int:
        return self.t


def test_removed_members_are_reported_and_voluntary_leaves_are_not() -> None:
    async def main() -> None:
        clock = Manual()
        rt = CoordinatorRuntime(MemoryLog(), 2, CoordinatorConfig(share_assignment_interval_ms=0),
                                image(foo=2), lambda: str(uuid.uuid4()), clock)
        removed: list[tuple[str, str]] = []
        rt.share_member_removed = lambda g, m: removed.append((g, m))
        rt.start(asyncio.get_running_loop())
        try:
            def beat(mid: str, epoch: int, **kw: object) -> object:
                return rt.handle_group("g", ShareGroupHeartbeatRequest("g", mid, epoch, **kw))

            for mid in ("a", "b", "c", "d"):
                assert beat(mid, 0, subscribed_topic_names=("foo",)).error_code == 0
            assert beat("a", -1).error_code == 0  # a leaves by itself: not reported
            assert removed == []
            r = beat("b", 99)  # a wrong epoch: fenced, but b stays (Kafka 4.x)
            assert r.error_code == ErrorCode.fenced_member_epoch
            assert removed == []
            # b catches up (its previous epoch is no longer 0), then rejoins behind its epoch
            assert beat("b", 2).error_code == 0
            r = beat("b", 0, subscribed_topic_names=("foo",))
            assert r.error_code == ErrorCode.fenced_member_epoch
            assert removed == [("g", "b")]
            clock.t += 30_000
            assert beat("c", 3).error_code == 0  # c stays alive, d goes silent
            clock.t += 20_000
            rt.expire_now()  # d's 45 s session ran out
            assert removed == [("g", "b"), ("g", "d")]
            # the share settings are the group's, read from its shard
            assert rt.share_group_config("g").delivery_count_limit == 5
            r2 = rt.handle_group("g", AlterGroupConfigsRequest(
                "g", (AlterGroupConfigOp("share.delivery.count.limit", "set", "3"),)))
            assert r2.error_code == 0
            assert rt.share_group_config("g").delivery_count_limit == 3
            assert rt.share_group_config("other").delivery_count_limit == 5
        finally:
            rt.stop()

    asyncio.run(main())

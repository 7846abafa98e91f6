"""Timers as data (docs/design.md "The core contract").

The core never reads a clock: handlers schedule or cancel named deadlines, and the driver calls
``Shard.expire_timers(now_ms)``. Every change is also reported in ``Result.timers`` so a driver
that keeps its own wake-up schedule (the simulator, the asyncio server) knows the next deadline.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

TimerKey = tuple[Any, ...]


@dataclass(slots=True, unsafe_hash=True)
class TimerChange:
    """Not frozen: one is built per heartbeat (its session deadline), and a frozen dataclass
    pays an ``object.__setattr__`` per field (the simulator's hot path). A value all the same (equality and
    hashing kept): never mutate one."""

    key: TimerKey
    deadline_ms: int | None  # None: cancelled


def _split(t: int | tuple[int, Any]) -> tuple[int, Any]:
    """(deadline, payload) of a stored timer."""
    return (t, None) if type(t) is int else t  # type: ignore[return-value]


class Timers:
    """Named deadlines with a payload; a heap with lazy deletion for expiry order.

    A timer without payload (every member's session timer) is stored as its bare deadline,
    one with a payload as (deadline, payload): a tuple less per member (memory per member)."""

    __slots__ = ("_heap", "_seq", "_timers")

    def __init__(self) -> None:
        self._timers: dict[TimerKey, int | tuple[int, Any]] = {}
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._seq = 0

    def schedule(self, key: TimerKey, deadline_ms: int, payload: Any = None) -> None:
        previous = self._timers.get(key)
        self._timers[key] = deadline_ms if payload is None else (deadline_ms, payload)
        if previous is not None and (
                previous if type(previous) is int else previous[0]) <= deadline_ms:  # type: ignore[index]
            # A deadline pushed later (a session renewed by a heartbeat): the existing heap
            # entry comes up first and is re-filed then, so the heap does not grow.
            return
        self._seq += 1
        heapq.heappush(self._heap, (deadline_ms, self._seq, key))
        if len(self._heap) > 4 * len(self._timers) + 64:
            self._compact()

    def cancel(self, key: TimerKey) -> bool:
        return self._timers.pop(key, None) is not None

    def deadline(self, key: TimerKey) -> int | None:
        t = self._timers.get(key)
        return None if t is None else _split(t)[0]

    def payload(self, key: TimerKey) -> Any:
        t = self._timers.get(key)
        return None if t is None else _split(t)[1]

    def __len__(self) -> int:
        return len(self._timers)

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._timers

    def _refile(self, deadline: int, key: TimerKey) -> None:
        """Pop the heap's top entry; re-file it at its key's later deadline if it moved."""
        heapq.heappop(self._heap)
        t = self._timers.get(key)
        if t is not None and (later := _split(t)[0]) > deadline:
            self._seq += 1
            heapq.heappush(self._heap, (later, self._seq, key))

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap:
            deadline, _, key = heap[0]
            t = self._timers.get(key)
            if t is not None and _split(t)[0] == deadline:
                return deadline
            self._refile(deadline, key)
        return None

    def pop_next_due(self, now_ms: int) -> tuple[TimerKey, Any] | None:
        """Remove and return the earliest timer due at ``now_ms`` (ties: in the order they were filed),
        or None. One at a time: what firing it schedules or cancels decides what is due next."""
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            deadline, _, key = heap[0]
            t = self._timers.get(key)
            if t is not None and (found := _split(t))[0] == deadline:
                heapq.heappop(heap)
                del self._timers[key]
                return key, found[1]
            self._refile(deadline, key)
        return None

    def clear(self) -> None:
        self._timers.clear()
        self._heap.clear()

    def _compact(self) -> None:
        self._heap = [(_split(t)[0], i, k) for i, (k, t) in enumerate(self._timers.items())]
        heapq.heapify(self._heap)
        self._seq = len(self._heap)

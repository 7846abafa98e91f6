"""The simulator's log (``sim/log.py``) reads what an eagerly written byte log reads.

- Random appends, reads and compactions: ``SimLog`` yields the bytes, order and size of a
  :class:`MemoryLog` written with ``Record.encode`` at append time and compacted with a
  tombstone retention of 0.
- Whole simulations of every protocol (random scenarios, failovers): every rebuild reads from
  the ``SimLog`` exactly the bytes a ``MemoryLog`` written eagerly beside it holds. This is
  also the check that no record changes after the coordinator emitted it (a lazily encoded
  record is encoded when first read).
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from groupcoord.coordinator.records import (
    OffsetCommitValue,
    Record,
    group_epoch_record,
    group_epoch_tombstone,
    member_metadata_tombstone,
    offset_commit_record,
    target_assignment_metadata_record,
)
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.sim import engine
from groupcoord.sim.coordinator import SimCoordinator
from groupcoord.sim.log import SimLog
from groupcoord.sim.protocols import protocol_labels
from groupcoord.sim.runner import simulate
from groupcoord.storage.memory import MemoryLog

TOPIC_ID = uuid.UUID(int=7)


def _random_record(rng: random.Random, t: int, shared: dict[Any, Any]) -> Record:
    record = _new_random_record(rng, t)
    # Half the records reuse the key object of an earlier record with an equal key, as the
    # coordinator's offset commits do; the rest have equal keys in distinct objects
    # (``SimLog.compact`` compares by identity first, then by value).
    if rng.random() < 0.5:
        return Record(shared.setdefault(record.key, record.key), record.value)
    return record


def _new_random_record(rng: random.Random, t: int) -> Record:
    group = f"g{rng.randrange(3)}"
    kind = rng.randrange(10)
    if kind < 6:
        value = None if rng.random() < 0.15 else OffsetCommitValue(t, 1, "", t, -1, TOPIC_ID)
        return offset_commit_record(group, f"t{rng.randrange(2)}", rng.randrange(8), value)
    if kind < 8:
        return (group_epoch_tombstone(group) if rng.random() < 0.2
                else group_epoch_record(group, t))
    if kind < 9:
        return member_metadata_tombstone(group, f"m{rng.randrange(4)}")
    return target_assignment_metadata_record(group, t)


@pytest.mark.parametrize("seed", range(20))
def test_reads_sizes_and_compactions_match_an_eager_memory_log(seed: int) -> None:
    rng = random.Random(seed)
    lazy, eager = SimLog(), MemoryLog()
    shared: dict[Any, Any] = {}
    for t in range(400):
        op = rng.random()
        if op < 0.8:
            batch = [_random_record(rng, t, shared) for _ in range(rng.randrange(1, 6))]
            lazy.append(batch)
            eager.append(0, [r.encode() for r in batch], t)
        elif op < 0.9:
            assert list(lazy.read()) == list(eager.read(0))
        else:
            assert lazy.compact() == eager.compact(0, t, 0).removed
        assert lazy.size(0) == eager.size(0)
    assert list(lazy.read()) == list(eager.read(0))
    assert lazy.compact() == eager.compact(0, 400, 0).removed
    assert list(lazy.read()) == list(eager.read(0))


def test_a_read_is_a_snapshot_and_keeps_the_bytes_of_what_it_read() -> None:
    log = SimLog()
    log.append([group_epoch_record("g", 1), group_epoch_record("g", 2)])
    first = log.read()
    log.append([group_epoch_record("g", 3)])
    assert len(list(first)) == 2 and log.size(0) == 3 and log.size(1) == 0
    assert log.compact() == 2
    assert [Record.decode(k, v).value.epoch for k, v in log.read()] == [3]  # type: ignore[union-attr]
    log.append([group_epoch_tombstone("g")])
    assert log.compact() == 2 and log.size(0) == 0 and list(log.read()) == []


class _EagerShadow(SimCoordinator):
    """A SimCoordinator that also writes every record's bytes at once to a MemoryLog and
    requires every rebuild to read the same bytes from both."""

    __slots__ = ("shadow",)
    rebuilds = 0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.shadow = MemoryLog()

    def persist(self, result: Result[Any], now_ms: int) -> None:
        super().persist(result, now_ms)
        if result.records:
            self.shadow.append(0, [r.encode() for r in result.records], now_ms)
        assert self.log.size(0) == self.shadow.size(0)

    def compact(self, now_ms: int) -> int:
        removed = super().compact(now_ms)
        assert removed == self.shadow.compact(0, now_ms, 0).removed
        return removed

    def rebuild(self, image: MetadataImage) -> Shard:
        assert list(self.log.read()) == list(self.shadow.read(0))
        _EagerShadow.rebuilds += 1
        return super().rebuild(image)


@pytest.mark.parametrize("protocol", protocol_labels())
def test_every_rebuild_reads_the_bytes_of_an_eagerly_written_log(
        protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "SimCoordinator", _EagerShadow)
    before = _EagerShadow.rebuilds
    runs = [simulate("random", seed, protocol, checkpoint_every=25) for seed in range(6)]
    runs.append(simulate("coordinator-failover", 1, protocol, checkpoint_every=25))
    assert all(r.ok for r in runs), [r.violation for r in runs if not r.ok]
    assert runs[-1].summary["failovers"] > 0
    assert _EagerShadow.rebuilds - before > 20

"""The coordinator as the simulator runs it: a real :class:`Shard` plus its record log.

The driver contract of docs/design.md "The core contract": every result's records are appended to
the log (a :class:`~groupcoord.sim.log.SimLog`: the records, encoded when read; see there why
not the storage backend's ``MemoryLog``) before the response is sent.
**Failover** drops the shard and rebuilds a new one from the log (``Record.decode`` +
``Shard.replay``), then runs its load duties (``on_loaded``). :meth:`SimCoordinator.rebuild` is
also what the I4 checkpoints compare against the live shard (``state_digest``). A checkpoint
compacts the log first (newest entry per key, tombstones dropped), so every rebuild also checks
that a compacted log replays to the same state.

A *shard factory* builds shards: the default makes a plain :class:`Shard`; tests pass a test
double (a deliberately broken coordinator) through it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from itertools import starmap
from typing import Any

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import MemberIdSource
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.sim.log import SimLog

ShardFactory = Callable[[CoordinatorConfig, MetadataImage, MemberIdSource], Shard]

SHARD_ID = 0


def default_shard_factory(config: CoordinatorConfig, image: MetadataImage,
                          member_ids: MemberIdSource) -> Shard:
    return Shard(SHARD_ID, config, image, member_ids)


def load_shard_factory(spec: str) -> ShardFactory:
    """``module:attribute`` naming a shard factory (or a Shard subclass) for test doubles."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"--shard-factory expects module:attribute, got {spec!r}")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError:
        if os.getcwd() in sys.path:
            raise
        sys.path.insert(0, os.getcwd())  # like ``python -m``: a test double of the checkout
        mod = importlib.import_module(module)
    obj: Any = getattr(mod, attr)
    if isinstance(obj, type) and issubclass(obj, Shard):
        cls = obj
        return lambda config, image, ids: cls(SHARD_ID, config, image, ids)
    if not callable(obj):
        raise ValueError(f"{spec} is not callable")
    factory: ShardFactory = obj
    return factory


class SimCoordinator:
    """One coordinator shard and its log; ``generation`` counts (re)loads."""

    __slots__ = ("config", "factory", "generation", "log", "member_ids", "records_written",
                 "shard", "up")

    def __init__(self, factory: ShardFactory, config: CoordinatorConfig, image: MetadataImage,
                 member_ids: MemberIdSource) -> None:
        self.factory = factory
        self.config = config
        self.member_ids = member_ids
        self.log = SimLog()
        self.shard = factory(config, image, member_ids)
        self.up = True
        self.generation = 0
        self.records_written = 0

    def persist(self, result: Result[Any], now_ms: int) -> None:
        """Append a result's records to the log (before its response goes out)."""
        records = result.records
        if records:
            self.log.append(records)
            self.records_written += len(records)

    def rebuild(self, image: MetadataImage) -> Shard:
        """A new shard replayed from the log (no load duties run yet)."""
        shard = self.factory(self.config, image, self.member_ids)
        shard.replay_all(starmap(Record.decode, self.log.read()))
        return shard

    def compact(self, now_ms: int) -> int:
        """Compact the log (tombstones dropped at once); returns the entries removed.

        ``now_ms`` is the simulated time, at or after every append: with a retention of 0,
        every tombstone that is the newest entry of its key has expired."""
        return self.log.compact()

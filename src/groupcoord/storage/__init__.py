"""Record logs (docs/design.md "storage/"): ``memory`` for tests and simulation, ``sqlite`` (the
embedded default) for a server. See ``storage/log.py`` for the contract."""

from __future__ import annotations

import os

from groupcoord.storage.log import (
    CompactionResult,
    Entry,
    LogError,
    LogStats,
    RecordLog,
    ShardStats,
    replay_entries,
)
from groupcoord.storage.memory import MemoryLog

KINDS = ("sqlite", "memory")
DEFAULT_KIND = "sqlite"


def open_log(kind: str, data_dir: str | os.PathLike[str] | None, *,
             durability: str = "normal") -> RecordLog:
    """Open a record log of ``kind``: ``"memory"`` (``data_dir`` unused) or ``"sqlite"``
    (``<data_dir>/groupcoord.db``, created if missing; ``durability`` as documented in
    ``storage/sqlite.py``). Raises :class:`LogError` for an unknown kind or a log that cannot be
    opened."""
    if kind == "memory":
        return MemoryLog()
    if kind == "sqlite":
        if data_dir is None or not os.fspath(data_dir):
            raise LogError("the sqlite log needs a data directory")
        from groupcoord.storage.sqlite import SqliteLog

        return SqliteLog(data_dir, durability)
    raise LogError(f"unknown log kind {kind!r}; choose one of: {', '.join(KINDS)}")


__all__ = ["DEFAULT_KIND", "KINDS", "CompactionResult", "Entry", "LogError", "LogStats",
           "MemoryLog", "RecordLog", "ShardStats", "open_log", "replay_entries"]

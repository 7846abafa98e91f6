"""The simulator's record log: the records themselves, encoded only when a rebuild reads them.

What the simulator needs from a log is the driver contract of docs/design.md "The core contract"
(every result's records are in the log before its response goes out; a failover reloads the
shard from it) and the I4 check (a shard rebuilt from the log, compacted or not, equals the
live one). Profiling the simulator showed that writing every record through the storage backend
(:class:`~groupcoord.storage.memory.MemoryLog`) cost a fifth of a steady run: each record was
encoded (``Record.encode``) and validated on append, although most of them (offset commits,
~20 a member every 5 s) are superseded by the next commit of their partition and compacted
away before anything reads them.

:class:`SimLog` therefore keeps the :class:`Record` objects in append order and encodes a
record the first time it is read (then keeps its bytes for later reads). A read still yields
what a byte log holds: the ``(key, value)`` bytes of ``Record.encode``, tombstones as
``value is None``, in append order; a rebuild replays ``Record.decode`` of those bytes, so
every checkpoint and failover still puts the codec between the live shard and the rebuilt
one, exactly as before.

**Trade-off** (why not ``MemoryLog``): the simulator no longer drives the storage backend.
What it lost is covered elsewhere: ``MemoryLog``/``SqliteLog`` appends, offsets, compaction
and tombstone retention are tested on their own and with real shards replaying compacted logs
(``tests/test_storage_compaction_groups.py``, ``tests/test_storage_sqlite.py``), and the server
runs them. The simulator's checks are about the coordinator and its records; the log is only
the medium. One thing eager encoding checked implicitly is kept by a test instead: a record
must not change after the coordinator emitted it (the bytes of a lazily encoded record are
those of the record *when read*). ``tests/test_sim_log.py`` runs simulations of every protocol
with a byte log written eagerly beside this one and requires every read to give the same bytes.
Also a consequence: a record that cannot be encoded (a broken coordinator) fails the run at the
next read, i.e. the next checkpoint, failover or the end of the run (which all rebuild), not at
the step that wrote it.

Compaction has the storage layer's semantics (``storage/log.py``) with a tombstone retention
of 0: the newest entry of every key is kept, in append order, and a tombstone that is the
newest entry of its key is dropped. "The same key" is equality of the record keys: the keys
are hashable dataclasses of strings, ints and a :class:`RecordType`, equal exactly when their
encoded key bytes are. Offsets and append times are not kept: nothing in the simulator reads
them (a compaction here always runs at the current simulated time, after every append).

A ``SimLog`` belongs to one simulation and is used from its thread only (no lock).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from operator import attrgetter

from groupcoord.coordinator.records import Record
from groupcoord.storage.log import Entry

_key_of = attrgetter("key")


class SimLog:
    """One shard's log of records; ``size`` counts its entries as a byte log would."""

    __slots__ = ("_encoded", "_records")

    def __init__(self) -> None:
        #: Every entry, oldest first.
        self._records: list[Record] = []
        #: ``Record.encode()`` of ``_records[:len(_encoded)]`` (the prefix read so far).
        self._encoded: list[Entry] = []

    def append(self, records: Sequence[Record]) -> None:
        """Append one result's records (nothing is encoded yet)."""
        self._records.extend(records)

    def read(self) -> Iterator[Entry]:
        """Every entry's ``Record.encode()`` bytes, in append order (records appended while
        iterating are not included)."""
        encoded = self._encoded
        start = len(encoded)
        if start < len(self._records):
            encoded.extend([r.encode() for r in self._records[start:]])
        return iter(encoded[:])

    def size(self, shard: int = 0) -> int:
        """The number of entries (``shard``: ``MemoryLog.size``'s signature; the simulator
        runs shard 0 only)."""
        return len(self._records) if shard == 0 else 0

    def compact(self) -> int:
        """Keep the newest entry of every key unless it is a tombstone; return how many
        entries were removed. Kept entries keep their order (and their bytes, if read)."""
        records = self._records
        # Later indexes overwrite earlier ones: each key maps to its newest entry. Keys are
        # compared in two steps because comparing every entry's key by value costs two
        # Python-level calls (the dataclass ``__hash__`` and ``__eq__``) per entry, and most
        # entries share their key *object* with others (the coordinator builds one key per
        # offset commit partition and reuses it). First by identity (``id``, all in
        # C; every key is alive in ``records`` meanwhile, so ids are unique): the newest entry
        # of every key object. Then by value, over those entries only, in append order: the
        # newest entry of every equal key is the newest of its key objects' newest entries.
        newest_of_object = dict(zip(map(id, map(_key_of, records)), range(len(records)),
                                    strict=True))
        newest = {records[i].key: i for i in sorted(newest_of_object.values())}
        keep = sorted(i for i in newest.values() if records[i].value is not None)
        removed = len(records) - len(keep)
        if removed:
            encoded = self._encoded
            # ``keep`` is ascending and ``_encoded`` a prefix: the kept entries read so far are
            # a prefix of the kept entries.
            self._encoded = [encoded[i] for i in keep[:bisect_left(keep, len(encoded))]]
            self._records = [records[i] for i in keep]
        return removed

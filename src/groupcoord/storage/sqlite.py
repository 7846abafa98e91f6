"""The SQLite record log: the embedded default backend (contract in ``storage/log.py``).

One database file per data directory, ``<data_dir>/groupcoord.db``, in WAL mode. Each shard has
its own table ``log_<shard>(log_offset INTEGER PRIMARY KEY AUTOINCREMENT, key BLOB, value BLOB,
ts INTEGER)``: the offset is the rowid, so reading a shard is one scan of its table in offset
order, and AUTOINCREMENT never reuses an offset, even after compaction removed the newest rows.
``ts`` is the append time in ms (the ``now_ms`` the caller passed to ``append``, else the wall
clock); compaction uses it to age tombstones. CHECK constraints make the database itself refuse
a key that is not a blob or a value that is neither a blob nor NULL.

**Atomicity.** ``append`` writes one batch (one request's records) in one transaction
(``BEGIN IMMEDIATE`` ... ``COMMIT``): all of it or, on any error, nothing (rolled back), and the
call raises :class:`LogError`.

**Group commit** (:meth:`SqliteLog.defer_commits`, what the server turns on): the appends
made on one thread (the server's event loop) are written into one open transaction, each batch
in a savepoint (a batch that fails is undone alone and raises :class:`LogError`, as without group
commit), and committed together by :meth:`SqliteLog.commit`, which the server calls once per
loop iteration before it sends any answer (so an answer still never reports what is not
durable). While a group is open the write lock is held: another thread's append, compaction or
read waits for the commit; a read on the owning thread reads through the writer connection,
which sees the group. A commit that fails rolls the whole group back and reports its shards to
the ``lost`` hook: the caller then reloads what it built on them (and answers none of it).

**Durability** (``durability=``, mapped to SQLite's ``synchronous`` in WAL mode):

- ``"normal"`` (default; ``synchronous=NORMAL``): when ``append`` returns, the batch is in the
  write-ahead log in the operating system's cache, not yet fsynced. It survives a crash of the
  process (``kill -9``): nothing acknowledged is lost. An operating-system crash or a power loss
  can lose the most recent batches (those since the last checkpoint, which fsyncs); the database
  stays consistent and holds a prefix of the appended batches.
- ``"full"`` (``synchronous=FULL``): the write-ahead log is fsynced at every commit, before
  ``append`` returns: an acknowledged batch also survives an OS crash and a power loss (given a
  disk that honours flushes). One fsync per batch: the slowest setting.
- ``"off"`` (``synchronous=OFF``): no fsync at all. Survives a process crash like ``normal``;
  an OS crash or power loss can lose recent batches *and may corrupt the database* (reported
  by the check on the next open). For tests and benchmarks.

**Schema.** A ``meta`` table holds ``schema_version`` (:data:`SCHEMA_VERSION`); the file's
``application_id`` marks it as ours. A newer schema version, a database without our tables, or
a registered shard whose table is missing is refused with a :class:`LogError`.

**Bad data on disk.** Opening checks the header (a file that is not SQLite, or is truncated
below a header, is named as such), then runs ``PRAGMA quick_check`` (``check="quick"``, the
default; it walks every page, so it costs time in proportion to the file: see the benchmarks;
``check="full"`` runs ``integrity_check``, ``check="none"`` skips it). Every SQLite error, on
open, append, read or compaction, becomes a :class:`LogError` naming the file and the problem,
e.g. ``.../groupcoord.db: cannot open: file is not a database (truncated or corrupt?)``. The
quick check also verifies the CHECK constraints, so a loaded row's key and value are bytes;
bytes that do not decode as records are reported by :func:`storage.log.replay_entries`.

**Concurrency.** One process owns a data directory (an advisory ``flock`` on
``groupcoord.lock``; a second opener gets a LogError; the kernel drops the lock when the owner
dies, even by ``kill -9``). Within the process, appends and compaction share one connection
behind a lock and may come from any thread. Every ``read`` opens its own read-only connection,
so it sees a consistent snapshot and never blocks appends (WAL readers do not block the writer).

**Compaction** (:meth:`SqliteLog.compact`, meant to run on a background thread): a read-only
connection scans the shard's ``(offset, key, is-tombstone, ts)`` without blocking anyone and
plans, in memory, which offsets go (superseded entries; then tombstones that are the newest of
their key and older than the retention). The deletions then run in small write transactions of
``compaction_chunk`` rows (default 1000: milliseconds each, ``CompactionResult.max_chunk_ms``
reports the longest; ``benchmarks/replay.py`` measures append latency during a compaction),
pausing ``compaction_pause_s`` between chunks so that appends waiting for the lock get in.
Entries appended after the scan are left alone. Every intermediate state, and the state after a
crash mid-compaction, is a subsequence of the log that replays to the same state (see
``storage/log.py``). Freed pages are reused by later appends; the file does not shrink.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from groupcoord.storage.log import (
    CompactionResult,
    Entry,
    LogError,
    LogStats,
    OffsetEntry,
    ShardStats,
    check_shard,
    superseded_and_expired,
)

try:  # POSIX only; elsewhere the data directory is not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

DB_NAME = "groupcoord.db"
LOCK_NAME = "groupcoord.lock"
SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of a groupcoord database ("gcrl").
APPLICATION_ID = 0x6763726C
DURABILITY = {"normal": "NORMAL", "full": "FULL", "off": "OFF"}
CHECKS = ("quick", "full", "none")
_HEADER = b"SQLite format 3\x00"
_FETCH = 2048


def _table(shard: int) -> str:
    return f"log_{shard}"


class SqliteLog:
    """A record log in ``<data_dir>/groupcoord.db``; see the module docstring."""

    def __init__(self, data_dir: str | os.PathLike[str], durability: str = "normal", *,
                 check: str = "quick", compaction_chunk: int = 1000,
                 compaction_pause_s: float = 0.001) -> None:
        if durability not in DURABILITY:
            raise LogError(f"unknown durability {durability!r}; choose one of: "
                           f"{', '.join(DURABILITY)}")
        if check not in CHECKS:
            raise LogError(f"unknown check {check!r}; choose one of: {', '.join(CHECKS)}")
        if compaction_chunk < 1:
            raise LogError("compaction_chunk must be >= 1")
        self.data_dir = os.fspath(data_dir)
        self.path = os.path.join(self.data_dir, DB_NAME)
        self.durability = durability
        self.compaction_chunk = compaction_chunk
        self.compaction_pause_s = compaction_pause_s
        self._write_lock = threading.Lock()
        self._compaction_lock = threading.Lock()
        self._tables: set[int] = set()
        self._insert_sql: dict[int, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock_file: IO[bytes] | None = None
        #: Group commit (:meth:`defer_commits`): the thread whose appends are deferred, the
        #: hooks, the open group's shards (None: no group open; the write lock is held while
        #: one is) and the shard tables it created.
        self._owner: int | None = None
        self._opened: Callable[[], None] | None = None
        self._lost: Callable[[list[int]], None] | None = None
        self._group: set[int] | None = None
        self._group_created: set[int] = set()
        try:
            os.makedirs(self.data_dir, exist_ok=True)
        except OSError as e:
            raise LogError(f"{self.data_dir}: cannot create the data directory: "
                           f"{e.strerror or e}") from e
        self._lock_file = self._lock_data_dir()
        try:
            self._check_header()
            self._conn = self._connect()
            self._configure(self._conn, check)
            self._init_schema(self._conn)
        except sqlite3.Error as e:
            self._abandon()
            raise self._error("cannot open", e) from e
        except BaseException:
            self._abandon()
            raise
        log.info("opened %s (durability=%s, %d shard logs)", self.path, durability,
                 len(self._tables))

    @property
    def location(self) -> str:
        return self.path

    # ------------------------------------------------------------------ open

    def _lock_data_dir(self) -> IO[bytes] | None:
        if fcntl is None:  # pragma: no cover
            return None
        path = os.path.join(self.data_dir, LOCK_NAME)
        try:
            f = open(path, "ab")  # noqa: SIM115 - held open for the life of the log
        except OSError as e:
            raise LogError(f"{path}: cannot open the lock file: {e.strerror or e}") from e
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            f.close()
            raise LogError(f"{self.path}: the data directory {self.data_dir} is in use by another "
                           f"log (another process, or a log not closed)") from e
        return f

    def _check_header(self) -> None:
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return
        except OSError as e:
            raise LogError(f"{self.path}: cannot open: {e.strerror or e}") from e
        if size == 0:
            return  # SQLite treats an empty file as a new database
        try:
            with open(self.path, "rb") as f:
                head = f.read(100)
        except OSError as e:
            raise LogError(f"{self.path}: cannot open: {e.strerror or e}") from e
        magic = head[:len(_HEADER)]
        if magic != _HEADER[:len(magic)]:
            raise LogError(f"{self.path}: file is not a database (no SQLite header: truncated, "
                           f"overwritten or not a groupcoord log?)")
        if size < 100:
            raise LogError(f"{self.path}: file is not a database (truncated: {size} bytes, "
                           f"shorter than the 100-byte SQLite header)")

    def _connect(self, readonly: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None,
                               check_same_thread=False, cached_statements=512)
        if readonly:
            conn.execute("PRAGMA query_only=1")
        return conn

    def _configure(self, conn: sqlite3.Connection, check: str) -> None:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LogError(f"{self.path}: cannot switch to WAL mode (journal mode is {mode})")
        conn.execute(f"PRAGMA synchronous={DURABILITY[self.durability]}")
        if check != "none":
            pragma = "quick_check" if check == "quick" else "integrity_check"
            problems = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}(20)")]
            if problems != ["ok"]:
                detail = "; ".join(p.replace("\n", "; ") for p in problems)[:600]
                raise LogError(f"{self.path}: database is corrupt ({pragma} failed: {detail})")

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if not tables - {"sqlite_sequence"}:
            if app_id not in (0, APPLICATION_ID):
                raise LogError(f"{self.path}: not a groupcoord log (application_id {app_id:#x})")
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.executemany("INSERT INTO meta (name, value) VALUES (?, ?)", [
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("created_ms", str(time.time_ns() // 1_000_000)),
                ])
                conn.execute("CREATE TABLE shards (shard INTEGER PRIMARY KEY, "
                             "created_ms INTEGER NOT NULL)")
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise
            return
        if app_id != APPLICATION_ID or "meta" not in tables:
            raise LogError(f"{self.path}: not a groupcoord log (application_id {app_id:#x}, "
                           f"tables: {', '.join(sorted(tables)) or 'none'})")
        row = conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone()
        try:
            version = int(row[0]) if row is not None else None
        except (TypeError, ValueError):
            version = None
        if version is None:
            raise LogError(f"{self.path}: the meta table has no valid schema_version "
                           f"({None if row is None else row[0]!r})")
        if version > SCHEMA_VERSION:
            raise LogError(f"{self.path}: schema version {version} is newer than this groupcoord "
                           f"supports ({SCHEMA_VERSION}); run a newer groupcoord or use another "
                           f"data directory")
        if version < 1:
            raise LogError(f"{self.path}: unknown schema version {version}")
        # (migrations from older schema versions go here)
        if "shards" not in tables:
            raise LogError(f"{self.path}: the shards table is missing (schema version {version})")
        for (shard,) in conn.execute("SELECT shard FROM shards ORDER BY shard"):
            if type(shard) is not int or shard < 0:
                raise LogError(f"{self.path}: the shards table holds an invalid shard {shard!r}")
            if _table(shard) not in tables:
                raise LogError(f"{self.path}: the table {_table(shard)} of shard {shard} is missing")
            self._tables.add(shard)

    def _abandon(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _error(self, what: str, e: BaseException) -> LogError:
        msg = str(e) or type(e).__name__
        low = msg.lower()
        hint = ""
        if "not a database" in low or "malformed" in low:
            hint = " (truncated or corrupt?)"
        elif "locked" in low or "busy" in low:
            hint = " (in use by another process?)"
        return LogError(f"{self.path}: {what}: {msg}{hint}")

    def _writer(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LogError(f"{self.path}: the log is closed")
        return self._conn

    # ------------------------------------------------------------------ append

    def _create_shard(self, conn: sqlite3.Connection, shard: int, now_ms: int) -> None:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_table(shard)} ("
            "log_offset INTEGER PRIMARY KEY AUTOINCREMENT, "
            "key BLOB NOT NULL CHECK (typeof(key) = 'blob'), "
            "value BLOB CHECK (value IS NULL OR typeof(value) = 'blob'), "
            "ts INTEGER NOT NULL)")
        conn.execute("INSERT OR IGNORE INTO shards (shard, created_ms) VALUES (?, ?)",
                     (shard, now_ms))

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        check_shard(shard)
        if not batch:
            return
        ts = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        try:
            rows = [(k, v, ts) for k, v in batch]
        except (TypeError, ValueError) as e:
            raise LogError(f"{self.path}: append to shard {shard}: an entry of the batch is not a "
                           f"(key, value) pair ({e}); nothing of the batch was written") from e
        if self._owner is not None and self._owner == threading.get_ident():
            self._append_deferred([(shard, rows)], ts)
            return
        sql = self._insert(shard)
        with self._write_lock:
            conn = self._writer()
            created = False
            try:
                conn.execute("BEGIN IMMEDIATE")
                if shard not in self._tables:
                    self._create_shard(conn, shard, ts)
                    created = True
                conn.executemany(sql, rows)
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback(conn)
                raise self._error(f"append to shard {shard} failed, nothing of the batch was "
                                  f"written", e) from e
            if created:
                self._tables.add(shard)

    def append_many(self, batches: Sequence[tuple[int, Sequence[Entry]]],
                    now_ms: int | None = None) -> None:
        """Group commit: several shards' batches in one SQLite transaction (one commit, one
        write-ahead-log sync at ``durability="full"``), all of them or, on any error, none
        (:func:`storage.log.append_shards` falls back to one :meth:`append` per shard)."""
        batches = [(check_shard(shard), batch) for shard, batch in batches if batch]
        if len(batches) <= 1:
            for shard, batch in batches:
                self.append(shard, batch, now_ms)
            return
        ts = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        try:
            rows = [(shard, [(k, v, ts) for k, v in batch]) for shard, batch in batches]
        except (TypeError, ValueError) as e:
            raise LogError(f"{self.path}: append to shards "
                           f"{', '.join(str(s) for s, _ in batches)}: an entry is not a (key, "
                           f"value) pair ({e}); nothing was written") from e
        if self._owner is not None and self._owner == threading.get_ident():
            self._append_deferred(rows, ts)
            return
        with self._write_lock:
            conn = self._writer()
            created: list[int] = []
            try:
                conn.execute("BEGIN IMMEDIATE")
                for shard, shard_rows in rows:
                    if shard not in self._tables and shard not in created:
                        self._create_shard(conn, shard, ts)
                        created.append(shard)
                    sql = self._insert_sql.get(shard)
                    if sql is None:
                        sql = self._insert_sql[shard] = (
                            f"INSERT INTO {_table(shard)} (key, value, ts) VALUES (?, ?, ?)")
                    conn.executemany(sql, shard_rows)
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback(conn)
                raise self._error("append to several shards failed, nothing of the batches was "
                                  "written", e) from e
            self._tables.update(created)

    def _insert(self, shard: int) -> str:
        sql = self._insert_sql.get(shard)
        if sql is None:
            sql = self._insert_sql[shard] = (
                f"INSERT INTO {_table(shard)} (key, value, ts) VALUES (?, ?, ?)")
        return sql

    # ------------------------------------------------------------------ group commit

    def defer_commits(self, opened: Callable[[], None] | None,
                      lost: Callable[[list[int]], None] | None = None) -> None:
        """Group commit (module docstring) for the appends of the calling thread: ``opened`` is
        called when a group opens (the caller then arranges for :meth:`commit`), ``lost`` with
        the shards of a group whose commit failed (nothing of it was written). ``opened=None``
        ends the mode, committing the open group first."""
        self.commit()
        if opened is None:
            self._owner = self._opened = self._lost = None
            return
        self._owner = threading.get_ident()
        self._opened = opened
        self._lost = lost

    @property
    def uncommitted(self) -> bool:
        """A group is open (appended, not committed yet)."""
        return self._group is not None

    def commit(self) -> None:
        """Commit the open group, if any. On failure the group is rolled back, the ``lost``
        hook told its shards, and the error logged (this does not raise)."""
        self._end_group(commit=True)

    def rollback(self) -> None:
        """Drop the open group, if any (its shards go to the ``lost`` hook): the caller could
        not commit another log the group depends on."""
        self._end_group(commit=False)

    def _end_group(self, commit: bool) -> None:
        shards = self._group
        if shards is None:
            return
        self._group = None
        created, self._group_created = self._group_created, set()
        conn = self._conn
        try:
            if conn is not None and conn.in_transaction:
                if not commit:
                    raise sqlite3.OperationalError("rolled back by the caller")
                conn.execute("COMMIT")
                self._tables.update(created)
                return
            if shards:  # SQLite rolled the transaction back itself (an I/O error, disk full)
                raise sqlite3.OperationalError("the transaction was rolled back")
        except sqlite3.Error as e:
            if conn is not None:
                self._rollback(conn)
            if commit:
                log.error("%s: group commit of shards %s failed, nothing of it was written: %s",
                          self.path, sorted(shards), e)
            if self._lost is not None and shards:
                self._lost(sorted(shards))
        finally:
            self._write_lock.release()

    def _append_deferred(self, batches: Sequence[tuple[int, list[tuple[Any, Any, int]]]],
                         ts: int) -> None:
        """Append into the open group (opening one first): a savepoint per batch."""
        opened = self._group is None
        if opened:
            self._write_lock.acquire()
            try:
                conn = self._writer()
                conn.execute("BEGIN IMMEDIATE")
            except (LogError, sqlite3.Error) as e:
                self._write_lock.release()
                if isinstance(e, LogError):
                    raise
                raise self._error("append failed, nothing of the batch was written", e) from e
            self._group = set()
            if self._opened is not None:
                self._opened()
        conn = self._writer()
        created: list[int] = []
        if len(batches) == 1 and len(batches[0][1]) == 1 and (
                batches[0][0] in self._tables or batches[0][0] in self._group_created):
            # one row of an existing table: a statement that fails is undone by SQLite alone
            # (no savepoint needed; most appends are one record)
            shard, rows = batches[0]
            try:
                conn.execute(self._insert(shard), rows[0])
            except sqlite3.Error as e:
                if not conn.in_transaction:
                    self._end_group(commit=True)
                raise self._error(f"append to shard {shard} failed, nothing of the batch was "
                                  f"written", e) from e
            assert self._group is not None
            self._group.add(shard)
            return
        try:
            conn.execute("SAVEPOINT batch")
            for shard, rows in batches:
                if (shard not in self._tables and shard not in self._group_created
                        and shard not in created):
                    self._create_shard(conn, shard, ts)
                    created.append(shard)
                conn.executemany(self._insert(shard), rows)
            conn.execute("RELEASE batch")
        except sqlite3.Error as e:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK TO batch")
                    conn.execute("RELEASE batch")
            else:  # the whole group went with the error: commit() reports it lost
                self._end_group(commit=True)
            raise self._error(f"append to shards {', '.join(str(s) for s, _ in batches)} "
                              f"failed, nothing of the batch was written", e) from e
        assert self._group is not None
        self._group_created.update(created)
        self._group.update(shard for shard, _ in batches)

    def _settle(self) -> bool:
        """Before a read or a write outside the group: True when the calling thread owns the
        open group (it reads through the writer connection); another thread waits for the
        group's commit."""
        if self._owner is None:
            return False
        if self._owner == threading.get_ident():
            return self._group is not None
        with self._write_lock:
            return False

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    # ------------------------------------------------------------------ read

    def shards(self) -> list[int]:
        if self._settle():
            return sorted(self._tables | self._group_created)
        return sorted(self._tables)

    def read(self, shard: int) -> Iterator[Entry]:
        return self._scan(shard, "key, value")

    def read_with_offsets(self, shard: int) -> Iterator[OffsetEntry]:
        return self._scan(shard, "log_offset, key, value")

    def _scan(self, shard: int, columns: str) -> Iterator[Any]:
        check_shard(shard)
        conn = self._writer()  # closed?
        sql = f"SELECT {columns} FROM {_table(shard)} ORDER BY log_offset"
        if self._settle():  # the open group's own thread: its appends, uncommitted, included
            if shard not in self._tables and shard not in self._group_created:
                return iter(())
            try:
                return iter(conn.execute(sql).fetchall())
            except sqlite3.Error as e:
                raise self._error(f"reading shard {shard}", e) from e
        if shard not in self._tables:
            return iter(())
        return self._stream(shard, sql)

    def _stream(self, shard: int, sql: str) -> Iterator[Any]:
        try:
            conn = self._connect(readonly=True)
        except sqlite3.Error as e:
            raise self._error(f"reading shard {shard}", e) from e
        try:
            cur = conn.execute(sql)
            while True:
                rows = cur.fetchmany(_FETCH)
                if not rows:
                    return
                yield from rows
        except sqlite3.Error as e:
            raise self._error(f"reading shard {shard}", e) from e
        finally:
            conn.close()

    # ------------------------------------------------------------------ compaction

    def compact(self, shard: int, now_ms: int, tombstone_retention_ms: int) -> CompactionResult:
        check_shard(shard)
        self._writer()
        if self._settle():
            self.commit()
        expire = now_ms - tombstone_retention_ms if tombstone_retention_ms >= 0 else None
        with self._compaction_lock:
            if shard not in self._tables:
                return CompactionResult(shard, 0, 0, 0)
            plan = self._stream(shard, f"SELECT log_offset, key, value IS NULL, ts "
                                       f"FROM {_table(shard)} ORDER BY log_offset")
            scanned, superseded, expired = superseded_and_expired(plan, expire)
            chunks = 0
            max_ms = 0.0
            # Superseded entries first (oldest first), tombstones only after all of them.
            for offsets in (superseded, expired):
                n, longest = self._delete(shard, offsets)
                chunks += n
                max_ms = max(max_ms, longest)
        result = CompactionResult(shard, scanned, len(superseded), len(expired), chunks, max_ms)
        if result.removed:
            log.info("compacted shard %d of %s: %d entries scanned, %d superseded and %d "
                     "tombstones removed in %d chunks (longest %.1f ms)", shard, self.path,
                     scanned, result.superseded, result.tombstones, chunks, max_ms)
        return result

    def _delete(self, shard: int, offsets: list[int]) -> tuple[int, float]:
        sql = f"DELETE FROM {_table(shard)} WHERE log_offset = ?"
        chunk = self.compaction_chunk
        chunks = 0
        longest = 0.0
        for i in range(0, len(offsets), chunk):
            part = [(o,) for o in offsets[i:i + chunk]]
            with self._write_lock:
                conn = self._writer()
                t0 = time.perf_counter()
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany(sql, part)
                    conn.execute("COMMIT")
                except sqlite3.Error as e:
                    self._rollback(conn)
                    raise self._error(f"compaction of shard {shard} failed", e) from e
                longest = max(longest, (time.perf_counter() - t0) * 1000.0)
            chunks += 1
            if self.compaction_pause_s > 0 and i + chunk < len(offsets):
                time.sleep(self.compaction_pause_s)
        return chunks, longest

    # ------------------------------------------------------------------ stats / close

    def stats(self) -> LogStats:
        self._writer()
        shards: dict[int, ShardStats] = {}
        try:
            conn = self._connect(readonly=True)
            try:
                for shard in sorted(self._tables):
                    n, values, first, last = conn.execute(
                        f"SELECT count(*), count(value), min(log_offset), max(log_offset) "
                        f"FROM {_table(shard)}").fetchone()
                    shards[shard] = ShardStats(n, n - values, first, last)
            finally:
                conn.close()
        except sqlite3.Error as e:
            raise self._error("reading stats", e) from e
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(self.path + suffix)
        return LogStats(self.path, shards, size)

    def close(self) -> None:
        if self._settle():
            self.commit()
        with self._write_lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error as e:  # pragma: no cover
                    log.warning("%s: closing: %s", self.path, e)
            self._conn = None
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None

    def __enter__(self) -> SqliteLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: One stored entry with where and when it was written: (log offset, append time ms, key, value).
TimedEntry = tuple[int, int, bytes, bytes | None]


class SqliteLogSnapshot:
    """A read-only, consistent view of the record log of a data directory.

    For readers beside a running server (``groupcoord lab audit``): the database is opened with
    ``mode=ro`` and ``query_only``, takes no lock file (the server holds it) and reads every
    shard inside one read transaction, so all shards are seen at the same instant although the
    server keeps appending (WAL readers do not block the writer). Checks that the file is a
    groupcoord log of a schema version this code reads; errors are :class:`LogError` naming the
    file.
    """

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        import urllib.parse

        self.path = os.path.join(os.fspath(data_dir), DB_NAME)
        if not os.path.isfile(self.path):
            raise LogError(f"{data_dir}: no record log ({DB_NAME} not found): is it the data "
                           f"directory of 'groupcoord serve --storage sqlite'?")
        uri = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?mode=ro"
        try:
            self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=10.0)
        except sqlite3.Error as e:
            raise LogError(f"{self.path}: cannot open read-only: {e}") from e
        try:
            self._conn.execute("PRAGMA query_only=1")
            self._conn.execute("BEGIN")  # one snapshot for every shard
            app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id != APPLICATION_ID:
                raise LogError(f"{self.path}: not a groupcoord log (application_id {app_id:#x})")
            row = self._conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone()
            version = int(row[0]) if row is not None else None
            if version is None or not 1 <= version <= SCHEMA_VERSION:
                raise LogError(f"{self.path}: schema version {version} is not one this "
                               f"groupcoord reads (1..{SCHEMA_VERSION})")
            self._shards = [int(r[0]) for r in
                            self._conn.execute("SELECT shard FROM shards ORDER BY shard")]
        except sqlite3.Error as e:
            self._conn.close()
            raise LogError(f"{self.path}: cannot read the log: {e}") from e
        except BaseException:
            self._conn.close()
            raise

    def shards(self) -> list[int]:
        return list(self._shards)

    def read_with_times(self, shard: int) -> Iterator[TimedEntry]:
        """The entries of ``shard`` in log order, with their offsets and append times."""
        check_shard(shard)
        if shard not in self._shards:
            return
        try:
            cur = self._conn.execute(
                f"SELECT log_offset, ts, key, value FROM {_table(shard)} ORDER BY log_offset")
            while True:
                rows = cur.fetchmany(_FETCH)
                if not rows:
                    return
                for offset, ts, key, value in rows:
                    yield (int(offset), int(ts), bytes(key),
                           None if value is None else bytes(value))
        except sqlite3.Error as e:
            raise LogError(f"{self.path}: cannot read shard {shard}: {e}") from e

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("COMMIT")
        self._conn.close()

    def __enter__(self) -> SqliteLogSnapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

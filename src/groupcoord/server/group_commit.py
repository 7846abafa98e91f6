"""Group commit of the server's record logs: one durable commit per event-loop iteration
instead of one per request, answers still sent only once what they report is durable.

Every coordinator request that changes state appends its records before it is answered (write
before respond: ``server/runtime.py``, ``server/transaction_runtime.py``). A transaction is five
requests, four of them appends (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn),
plus the completions its markers append; committing each on its own was a third of the
server's time in SQLite under ``bench transactions``. Kafka's coordinator runtime groups the
same way: the records of several writes go into one batch, appended to the coordinator's
partition as one (``CoordinatorRuntime``, ``group.coordinator.append.linger.ms``), and each
write is answered once that batch is committed.

The requests that reach the loop in one iteration (the connections the selector found ready)
now share one commit per log:

- a log that supports it (``SqliteLog.defer_commits``) writes the appends made on the loop's
  thread into an open transaction; the first of an iteration calls :meth:`GroupCommit._opened`,
  which schedules :meth:`GroupCommit.commit` with ``call_soon``: after the I/O callbacks of the
  iteration, before anything scheduled later (the transaction markers' callback is scheduled
  after the EndTxn append that opens or joins the group, so PrepareCommit is durable before a
  marker is written);
- while a commit is pending, every answer written to a connection is held
  (:meth:`GroupCommit.write`); :meth:`GroupCommit.commit` commits the logs, the group log before
  the transaction log (a transaction's offsets completed before its CompleteCommit), then writes
  the held answers in order;
- a commit that fails (the log rolls the group back) drops the other logs' groups too, aborts
  the connections whose answers were held (the clients see a lost connection and retry, as after
  a broker failure) and reloads what was built on the lost appends: the group coordinator's
  shards, the transaction coordinator (``reload``).

A log without group commit (``--storage memory``) commits as it appends; nothing is held.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Answerable", "GroupCommit"]

log = logging.getLogger(__name__)


class Answerable(Protocol):
    """A connection as group commit sees it (``server/app.py``'s ``Connection``)."""

    transport: asyncio.Transport | None

    def abort(self) -> None: ...


class GroupCommit:
    """The server's group commit (module docstring)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._logs: list[Any] = []
        self._handle: asyncio.Handle | None = None
        #: Answers waiting for the pending commit, in the order they were written.
        self.held: list[tuple[Answerable, bytes]] = []
        #: Reloads owed for groups that were lost (the reload, the shards).
        self._lost: list[tuple[Callable[[list[int]], None], list[int]]] = []
        #: Counters, for tests and metrics: commits run, groups lost.
        self.commits = 0
        self.lost = 0

    def add(self, record_log: Any, reload: Callable[[list[int]], None],
            loop: asyncio.AbstractEventLoop) -> bool:
        """Group-commit ``record_log``'s appends made on this thread (the loop's): ``reload``
        rebuilds what was built on lost shards. False when the log has no group commit."""
        defer = getattr(record_log, "defer_commits", None)
        if defer is None:
            return False
        self._loop = loop
        defer(self._opened, lambda shards: self._lost.append((reload, shards)))
        self._logs.append(record_log)
        return True

    @property
    def pending(self) -> bool:
        """A commit is pending: answers are held until it."""
        return self._handle is not None

    def _opened(self) -> None:
        if self._handle is None and self._loop is not None:
            self._handle = self._loop.call_soon(self.commit)

    def write(self, conn: Answerable, data: bytes) -> None:
        """Write an answer to ``conn``: now, or after the pending commit."""
        if self._handle is not None:
            self.held.append((conn, data))
        elif conn.transport is not None:
            conn.transport.write(data)

    def commit(self) -> None:
        """Commit every log's open group, then write the held answers (or, when a group was
        lost, abort their connections and reload)."""
        if self._handle is None and not self._lost:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for record_log in self._logs:
            if self._lost:
                record_log.rollback()
            else:
                record_log.commit()
        self.commits += 1
        held, self.held = self.held, []
        if self._lost:
            lost, self._lost = self._lost, []
            self.lost += 1
            log.error("a group commit failed: %d answers dropped, their connections closed; "
                      "reloading the state built on the lost records", len(held))
            for conn in {id(c): c for c, _ in held}.values():
                conn.abort()
            for reload, shards in lost:
                try:
                    reload(shards)
                except Exception:  # a callback must never kill the loop
                    log.exception("reloading after a lost group commit failed")
            return
        for conn, data in held:
            transport = conn.transport
            if transport is not None and not transport.is_closing():
                transport.write(data)

    def close(self) -> None:
        """Commit what is open and end group commit on every log (before they are closed)."""
        self.commit()
        for record_log in self._logs:
            record_log.defer_commits(None)
        self._logs.clear()
        self._loop = None

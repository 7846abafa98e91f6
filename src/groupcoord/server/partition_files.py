"""Open descriptors of partition files, bounded (the broker's data plane, ``partition_log.py``).

A broker with 100,000 partitions cannot keep a descriptor per partition open: a process gets
1,024 by default (``ulimit -n``), and the server also needs them for connections and its record
log. :class:`OpenFiles` is a least-recently-used cache of the descriptors of partition files:
a partition's file is opened when it is written or read, and the descriptor least recently
used is closed when more than ``max_open`` are open. Nothing is lost by closing one: every
append is a single ``os.write`` on an ``O_APPEND`` descriptor (no user-space buffer), and reads
are ``os.pread`` at known positions.

Kafka keeps every segment of every partition open (its operators raise ``ulimit -n``); it has
no such knob, so ours carries the ``groupcoord.`` prefix:
``groupcoord.partition.max.open.files`` (default: a quarter of the soft ``RLIMIT_NOFILE``,
between 8 and 1,024 — 256 under ``ulimit -n 1024``). If the process runs out of descriptors
anyway (EMFILE/ENFILE, e.g. a burst of connections), half of the cached ones are closed and the
open is tried once more; a second failure reaches the caller as the ``OSError`` (Produce and
Fetch answer KAFKA_STORAGE_ERROR).

Written by hand: this is a dozen lines over ``collections.OrderedDict``; no library keeps a
bounded pool of raw descriptors that are opened lazily by path.
"""

from __future__ import annotations

import collections
import errno
import logging
import os
import resource
from collections.abc import Mapping

log = logging.getLogger(__name__)

MAX_OPEN_FILES_CONFIG = "groupcoord.partition.max.open.files"


def default_max_open_files() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1024
    return max(8, min(1024, soft // 4))


def max_open_files_from(props: Mapping[str, str]) -> int:
    """``groupcoord.partition.max.open.files`` from broker configs; ValueError names a bad one."""
    raw = props.get(MAX_OPEN_FILES_CONFIG)
    if raw is None:
        return default_max_open_files()
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{MAX_OPEN_FILES_CONFIG} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{MAX_OPEN_FILES_CONFIG} must be at least 1, got {value}")
    return value


class OpenFiles:
    """At most ``max_open`` descriptors of partition files, least recently used closed first."""

    def __init__(self, max_open: int | None = None) -> None:
        self.max_open = default_max_open_files() if max_open is None else max_open
        if self.max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {self.max_open}")
        self._fds: collections.OrderedDict[str, int] = collections.OrderedDict()
        #: Files opened (for tests and metrics: how often the cache missed).
        self.opens = 0
        #: Files appended to since the last :meth:`sync` (what a clean shutdown must flush).
        self.dirty: set[str] = set()

    def __len__(self) -> int:
        return len(self._fds)

    def fd(self, path: str, create: bool = False, exclusive: bool = False) -> int:
        """A descriptor of ``path`` opened read-write in append mode; with ``create`` the file
        and its directory are made if missing (else FileNotFoundError); with ``exclusive`` too,
        FileExistsError if the file is there. Valid until the next call (which may close it):
        use it at once."""
        fd = self._fds.get(path)
        if fd is not None:
            if exclusive:
                raise FileExistsError(path)
            self._fds.move_to_end(path)
            return fd
        fd = self._open(path, create, exclusive)
        self._fds[path] = fd
        self.opens += 1
        while len(self._fds) > self.max_open:
            _, old = self._fds.popitem(last=False)
            os.close(old)
        return fd

    def _open(self, path: str, create: bool, exclusive: bool) -> int:
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0) \
            | (os.O_EXCL if create and exclusive else 0)
        for attempt in range(3):
            try:
                return os.open(path, flags, 0o644)
            except FileNotFoundError:
                if not create or attempt > 0:
                    raise
                os.makedirs(os.path.dirname(path), exist_ok=True)
            except OSError as e:
                if e.errno not in (errno.EMFILE, errno.ENFILE) or not self._fds or attempt > 1:
                    raise
                drop = max(1, len(self._fds) // 2)
                log.warning("out of file descriptors opening %s: closing %d cached partition "
                            "files", path, drop)
                for _ in range(drop):
                    _, old = self._fds.popitem(last=False)
                    os.close(old)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        while self._fds:
            _, fd = self._fds.popitem()
            os.close(fd)

    def sync(self) -> int:
        """fsync every file appended to since the last call, then their directories (a new
        file's entry); a file deleted since is skipped. Returns how many files were flushed.
        What a clean shutdown does before it writes its marker (Kafka flushes every log)."""
        dirs = set()
        synced = 0
        for path in sorted(self.dirty):
            fd = self._fds.get(path)
            try:
                if fd is not None:
                    os.fsync(fd)
                else:
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
            except FileNotFoundError:
                continue
            synced += 1
            dirs.add(os.path.dirname(path))
        for d in sorted(dirs):
            try:
                fd = os.open(d, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.dirty.clear()
        return synced


__all__ = ["MAX_OPEN_FILES_CONFIG", "OpenFiles", "default_max_open_files", "max_open_files_from"]

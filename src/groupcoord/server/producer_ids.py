"""Producer ids for InitProducerId (KIP-98 idempotent producers), never issued twice.

Kafka hands out producer ids in blocks (``ProducerIdManager``: the controller reserves a block of
1000 ids, persisted, and the broker issues ids from it). We do the same in the data directory:
the file ``producer-ids`` holds the first id not yet reserved; before issuing an id of a new
block, the end of that block is written (to a temporary file, fsynced, renamed over the old
one). A restart resumes after the last reserved block, so an id is never re-issued even if the
process died mid-block (the unused rest of that block is skipped, as in Kafka).

Not here: transactional ids, epochs other than 0, producer id expiry.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["BLOCK_SIZE", "ProducerIdAllocator"]

log = logging.getLogger(__name__)

#: Ids reserved per write (Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``).
BLOCK_SIZE = 1000
FILE_NAME = "producer-ids"


class ProducerIdAllocator:
    def __init__(self, data_dir: Path, block_size: int = BLOCK_SIZE, persist: bool = True) -> None:
        if block_size < 1:
            raise ValueError("block_size must be positive")
        self.path = Path(data_dir) / FILE_NAME
        self.block_size = block_size
        #: False (``--storage memory``): ids from 0, nothing read or written.
        self.persist = persist
        self._next = self._read() if persist else 0
        self._limit = self._next  # nothing reserved by this process yet

    def _read(self) -> int:
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return 0
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{self.path}: not a producer id ({text[:40]!r})") from None
        if value < 0:
            raise ValueError(f"{self.path}: negative producer id {value}")
        return value

    def _reserve(self, limit: int) -> None:
        if not self.persist:
            return
        tmp = self.path.with_suffix(".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, f"{limit}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        log.debug("reserved producer ids up to %d", limit)

    def allocate(self) -> int:
        """The next producer id; reserves (durably) a new block when the current one is used."""
        if self._next >= self._limit:
            self._reserve(self._next + self.block_size)
            self._limit = self._next + self.block_size
        pid = self._next
        self._next += 1
        return pid

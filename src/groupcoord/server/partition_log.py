"""Partition data: record batches stored as clients send them (the broker's data plane,
docs/wire.md; the storage: docs/durability-and-metrics.md "Partition data").

File format (one file per partition, ``<data-dir>/topics/<topic-id-hex>/<partition>.log``): the
record batches (message format v2, KIP-98) back to back, byte for byte as the producer sent
them, except the 8-byte ``baseOffset`` (rewritten to the offset the broker assigns) and the
4-byte ``partitionLeaderEpoch`` (set to 0, the only leader epoch of our single node). Neither is
covered by the batch CRC, exactly as in Kafka's own log segments, which this file is: a Kafka
segment reader can read it. Offsets are assigned per partition, ``lastOffsetDelta + 1`` per
batch.

**No descriptor per partition** (a 100,000-partition topic under ``ulimit -n 1024``):

- a partition's file is created by its first append (``O_CREAT | O_EXCL``: should a file be
  there after all, it is recovered first, never overwritten); an empty partition has no file;
- descriptors come from :class:`~groupcoord.server.partition_files.OpenFiles`, a bounded LRU
  shared by all partitions (``groupcoord.partition.max.open.files``); a closed one is reopened
  on the next use — appends are single ``os.write`` calls on ``O_APPEND`` descriptors and reads
  ``os.pread`` at indexed positions, so closing one loses nothing;
- the in-memory index (base offset, last offset, position, size, max timestamp per batch) is
  built by :meth:`PartitionLog.recover`.

**Log recovery, and when it runs** (Kafka's ``LogLoader`` / ``LogSegment.recover``): after an
unclean stop (a crash, SIGKILL, a power loss) the topic registry recovers every partition file
present at start-up, before the server listens (``TopicRegistry.recover``), so damage is found
then and not when a consumer reaches it, at the cost of reading the stored data once
(partitions never written have no file and cost nothing). After a clean shutdown it reads no
file at start-up, as Kafka's ``LogManager`` skips recovery when the log directory holds its
clean-shutdown marker (``TopicRegistry``, ``.kafka_cleanshutdown``): each file is then
recovered, with the same checks, on first use (:meth:`PartitionLog.expect_file`). Every batch's header,
base offset (it must follow the previous batch) and CRC-32C are checked. A torn write is a
*prefix* of a batch (the write a crash interrupted is the last one, and ``os.write`` writes a
batch's bytes in order): an incomplete header, a header that cannot be read (magic byte), or
fewer bytes than the batch announces. Such a tail with no valid batch after it is cut off with a
WARNING naming the file, byte and offset, as Kafka's recovery truncates a segment. Anything else
is damage, not a torn write: a problem followed by a valid batch, and also a *complete* last
batch (every byte it announces is there) that fails its CRC-32C, base offset or offset delta —
a torn write cannot produce one, and cutting it would silently drop acknowledged records (Kafka's
``LogSegment.recover`` truncates at any invalid batch; here we refuse, so that an operator
decides). Damage raises :class:`PartitionLogCorrupt` (one line naming file, byte, offset and
problem, and the recovery command), nothing is changed, and ``serve`` stops. ``groupcoord
recover-partitions`` (``partition_cli.py``) cuts at the damage,
keeping the cut bytes in ``<file>.damaged-<byte>``. A :class:`PartitionLog` used without that
start-up pass (or a file unreadable at start-up) is recovered on first access; its error
then reaches Produce and Fetch, which answer KAFKA_STORAGE_ERROR, and the index stays unloaded
(the next access tries again): an unreadable file is never taken for an empty partition.

With ``in_memory`` (``--storage memory``) the batches are kept in a bytearray and nothing
touches the disk.

Batch header (offsets within a batch): baseOffset int64 @0, batchLength int32 @8 (bytes after
this field), partitionLeaderEpoch int32 @12, magic int8 @16, crc uint32 @17 (CRC-32C of bytes
21..end), attributes int16 @21, lastOffsetDelta int32 @23, baseTimestamp int64 @27,
maxTimestamp int64 @35, producerId int64 @43, producerEpoch int16 @51, baseSequence int32 @53,
recordCount int32 @57, records @61.

Writes go to the OS with ``os.write`` (no fsync): data survives a process restart, not a power
loss; a write that fails is cut back off the file. Compressed batches are stored compressed
(never decoded).

**Idempotent producers** (KIP-98, as Kafka's ``ProducerStateManager`` does for one partition):
a batch with a producer id >= 0 is checked against that producer's state — the latest producer
epoch and the sequence ranges of its last five batches with their offsets. A batch equal to one
of those (same epoch, same first and last sequence) is a retry whose first attempt was stored:
it is not written again and the offset of the stored one is returned. A batch from an older
epoch is refused (INVALID_PRODUCER_EPOCH); in the current epoch a first sequence other than
the last one + 1 (mod 2^31) is refused (OUT_OF_ORDER_SEQUENCE_NUMBER); a new epoch must start
at sequence 0. The state is rebuilt from the stored batches when the file is opened, so a
retry across a broker restart is still recognised.

**Transactions** (KIP-98; Kafka's ``ProducerAppendInfo``, ``ProducerStateEntry``,
``ProducerStateManager`` and ``TransactionIndex``, read in a 4.0 snapshot of apache/kafka):

- A transactional batch (attributes bit 4) opens its producer's transaction on this partition
  at its base offset, unless one is open already. A non-transactional batch from a producer with
  an open transaction is refused (INVALID_TXN_STATE), a transactional batch without a producer
  id and any control batch a client sends are invalid records (INVALID_RECORD), as Kafka's
  ``LogValidator``.
- :meth:`PartitionLog.append_control` writes the commit or abort marker the transaction
  coordinator sends (a control batch, attributes bits 4 and 5, one record: key = control type
  version 0 and type 0 abort / 1 commit, value = end transaction marker version 0 and the
  coordinator epoch). As ``ProducerAppendInfo.appendEndTxnMarker``: a marker whose producer epoch
  is older than the producer's is refused (INVALID_PRODUCER_EPOCH), one whose coordinator epoch
  is older than the last one seen TRANSACTION_COORDINATOR_FENCED; otherwise it is written, ends
  the open transaction if there is one (a repeated marker of a completed transaction, sent again
  by a coordinator after its restart, is written and changes nothing else), and sets the
  producer's epoch and coordinator epoch (a marker at a new epoch clears the remembered
  sequences: the next batch of that epoch starts at sequence 0, KIP-360).
- The **last stable offset** is the first offset of the earliest open transaction, or the high
  watermark when none is open (``ProducerStateManager.firstUnstableOffset``; one replica, so
  the high watermark is the log end).
- The **aborted-transactions index**: per aborted transaction with data here, (producer id,
  first offset, offset of its abort marker), in marker order (Kafka's ``AbortedTxn``). Choice:
  it is rebuilt by log recovery from the stored batches (markers included), as the producer
  state is, rather than persisted beside the log: recovery reads every batch header anyway.
  :meth:`PartitionLog.aborted_transactions` answers Kafka's ``collectAbortedTransactions``: the
  aborted transactions whose marker is at or after the fetch offset and whose first offset is
  before the end of the returned data.

**Log start offset** (DeleteRecords, Kafka's ``UnifiedLog.maybeIncrementLogStartOffset``):
:meth:`PartitionLog.delete_records` moves :attr:`PartitionLog.log_start_offset` up to an offset
at most the high watermark; nothing below it is served again (Fetch answers
OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST and the timestamp look-ups start there). The bytes
below it stay in the file for now (Kafka deletes whole segments below it later; this file is
one segment, so they are not reclaimed). The offset survives a restart through the topic
registry's checkpoint file (``topic_registry.py``), which the registry writes after this
partition's file is fsynced, so the data below a checkpointed start is always on disk; should
a file still end below its checkpointed start (cut by ``recover-partitions``), recovery lowers
the start to the new end with a warning.
"""

from __future__ import annotations

import bisect
import collections
import logging
import mmap
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from groupcoord.server.partition_files import OpenFiles
from groupcoord.storage.log import LogError

log = logging.getLogger(__name__)

BATCH_HEADER_SIZE = 61
_HEAD = struct.Struct(">qiibIhiqq")  # through maxTimestamp: 43 bytes
_PRODUCER = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence @43
#: Batches remembered per producer for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN).
BATCHES_TO_RETAIN = 5
_SEQ_MOD = 1 << 31
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LEADER_EPOCH = struct.Struct(">i")


class InvalidRecords(Exception):
    """The produced bytes are not a sequence of valid v2 record batches (CORRUPT_MESSAGE)."""


class ProducerStateError(Exception):
    """A batch or marker its producer's state refuses; ``code`` is the Kafka error code
    (45 OUT_OF_ORDER_SEQUENCE_NUMBER, 47 INVALID_PRODUCER_EPOCH, 48 INVALID_TXN_STATE,
    52 TRANSACTION_COORDINATOR_FENCED)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52

#: Batch attributes (message format v2).
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
#: Control record types (Kafka's ``ControlRecordType``).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class OffsetOutOfRange(ValueError):
    """DeleteRecords to an offset above the high watermark, or below 0 and not -1
    (OFFSET_OUT_OF_RANGE)."""


class InvalidRecord(InvalidRecords):
    """Records whose format is valid but that a client may not write (INVALID_RECORD, 87):
    a control batch, a transactional batch without a producer id (Kafka's ``LogValidator``)."""


class _ProducerState:
    """One producer on one partition (Kafka's ``ProducerStateEntry``): its epoch, its last
    batches (first seq, last seq, base offset), the coordinator epoch of its last marker and the
    first offset of its open transaction (None: none open)."""

    __slots__ = ("batches", "coordinator_epoch", "epoch", "last_timestamp", "txn_first")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.last_timestamp = -1
        self.batches: collections.deque[tuple[int, int, int]] = collections.deque(
            maxlen=BATCHES_TO_RETAIN)
        self.coordinator_epoch = -1
        self.txn_first: int | None = None

    def set_epoch(self, epoch: int) -> None:
        """``maybeUpdateProducerEpoch``: a new epoch forgets the sequences of the old one."""
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch


@dataclass(slots=True, frozen=True)
class ProducerSnapshot:
    """A producer's state on one partition as DescribeProducers shows it (Kafka's
    ``ProducerStateEntry``): its epoch, last sequence (-1: none), last timestamp (-1: none), the
    coordinator epoch of its last marker and the first offset of its open transaction (-1)."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(slots=True, frozen=True)
class BatchInfo:
    length: int  # whole batch, header included
    last_offset_delta: int
    max_timestamp: int
    record_count: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    attributes: int = 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + max(self.record_count, 1) - 1) % _SEQ_MOD


def parse_batches(data: bytes, verify_crc: bool = True) -> list[BatchInfo]:
    """Split produced bytes into v2 batches; InvalidRecords if anything is off."""
    out: list[BatchInfo] = []
    pos = 0
    end = len(data)
    if end == 0:
        raise InvalidRecords("empty record set")
    while pos < end:
        if end - pos < BATCH_HEADER_SIZE:
            raise InvalidRecords(f"truncated batch header at byte {pos}")
        (_base, length, _epoch, magic, crc, attrs, last_delta, _base_ts,
         max_ts) = _HEAD.unpack_from(data, pos)
        total = length + 12
        if magic != 2:
            raise InvalidRecords(f"unsupported message format (magic {magic}); only v2 batches")
        if total < BATCH_HEADER_SIZE or pos + total > end:
            raise InvalidRecords(f"batch length {length} at byte {pos} does not fit the record set")
        if last_delta < 0:
            raise InvalidRecords(f"negative lastOffsetDelta {last_delta}")
        if verify_crc:
            actual = crc32c.crc32c(memoryview(data)[pos + 21:pos + total])
            if actual != crc:
                raise InvalidRecords(f"batch at byte {pos}: CRC {actual:#010x} != {crc:#010x}")
        pid, pepoch, base_seq = _PRODUCER.unpack_from(data, pos + 43)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        out.append(BatchInfo(total, last_delta, max_ts, count, pid, pepoch, base_seq, attrs))
        pos += total
    return out


def _varint(buf: bytearray, value: int) -> None:
    """A zig-zag varint (the record format's ``varint``)."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        buf.append((v & 0x7F) | 0x80)
        v >>= 7
    buf.append(v)


def control_batch(offset: int, producer_id: int, producer_epoch: int, commit: bool,
                  coordinator_epoch: int, timestamp_ms: int) -> bytes:
    """A v2 control batch holding one end transaction marker (Kafka's
    ``MemoryRecords.withEndTransactionMarker``): attributes transactional + control, base
    sequence -1, one record whose key is the control record type (version 0, type 0 abort / 1
    commit) and whose value the marker (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = bytearray(b"\x00")  # record attributes
    _varint(body, 0)  # timestamp delta
    _varint(body, 0)  # offset delta
    _varint(body, len(key))
    body += key
    _varint(body, len(value))
    body += value
    _varint(body, 0)  # headers
    record = bytearray()
    _varint(record, len(body))
    record += body
    after_crc = struct.pack(">hiqqqhii", ATTR_TRANSACTIONAL | ATTR_CONTROL, 0, timestamp_ms,
                            timestamp_ms, producer_id, producer_epoch, -1, 1) + bytes(record)
    head = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc))
    return struct.pack(">qi", offset, len(head) + len(after_crc)) + head + after_crc


def _read_varint(data: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    shift = 0
    v = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return (v >> 1) ^ -(v & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def parse_control_record(data: bytes | mmap.mmap, pos: int, end: int) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of the first record of the control batch at
    ``pos`` (ending at ``end``), or None if it has no record or is not an end transaction
    marker (Kafka keeps unknown control types and ignores them)."""
    try:
        (count,) = struct.unpack_from(">i", data, pos + 57)
        if count < 1:
            return None
        p = pos + BATCH_HEADER_SIZE
        _length, p = _read_varint(data, p)
        p += 1  # attributes
        _ts, p = _read_varint(data, p)
        _od, p = _read_varint(data, p)
        klen, p = _read_varint(data, p)
        if klen < 4 or p + klen > end:
            return None
        _kv, ctype = struct.unpack_from(">hh", data, p)
        p += klen
        vlen, p = _read_varint(data, p)
        if ctype not in (CONTROL_ABORT, CONTROL_COMMIT) or vlen < 6 or p + vlen > end:
            return None
        _vv, coordinator_epoch = struct.unpack_from(">hi", data, p)
        return ctype, coordinator_epoch
    except (ValueError, IndexError, struct.error):
        return None


class PartitionLogCorrupt(LogError):
    """A partition file damaged before its tail: a batch that fails its checks with valid
    batches after it (so not a torn write). Nothing is changed; the message is one line naming
    the file, the byte position and offset, what is wrong, and how to recover."""

    def __init__(self, path: Path, position: int, offset: int, problem: str,
                 next_valid: int | None) -> None:
        self.path = path
        self.position = position
        self.offset = offset
        self.problem = problem
        self.next_valid = next_valid
        #: Set by the topic registry: the data directory, for the recovery command.
        self.data_dir: Path | None = None
        super().__init__()

    def __str__(self) -> str:
        where = f"--data-dir {self.data_dir}" if self.data_dir is not None else "--data-dir DIR"
        keep = f"keep offsets 0..{self.offset - 1}" if self.offset > 0 else "keep nothing"
        why = ("it is the last batch and complete" if self.next_valid is None else
               f"valid batches follow at byte {self.next_valid}")
        return (f"{self.path}: damaged record batch at byte {self.position} (offset "
                f"{self.offset}): {self.problem}; {why}, so this is not a torn write and "
                f"nothing was cut. To "
                f"{keep} and set the rest aside, run `groupcoord "
                f"recover-partitions {where}` with the server stopped")


_READ_ALL_LIMIT = 8 << 20  # files up to this size are read with one pread, larger ones mapped


class PartitionLog:
    """One partition's batches, on disk (``path``) or in memory, with an in-memory index.

    Nothing is touched on construction: the file is created by the first append (an empty
    partition has no file) and opened through ``files``, the shared bounded cache of
    descriptors. The index is built by :meth:`recover` (the topic registry calls it at start-up
    for every partition file present; otherwise the first access calls it).
    """

    __slots__ = ("_aborted", "_aborted_lasts", "_bases", "_files", "_fresh", "_hw", "_lasts",
                 "_loaded", "_max_ts", "_mem", "_open", "_positions", "_producers", "_size",
                 "_sizes", "_spath", "log_start_offset", "on_marker")

    def __init__(self, path: Path | str, files: OpenFiles | None = None, *,
                 in_memory: bool = False, fresh: bool = False) -> None:
        """``fresh``: the caller knows no file was there (the registry, for partitions without
        a file at start-up or created since): no look-up until the first append, which creates
        the file exclusively — and, should one have appeared after all, recovers it first."""
        self._spath = str(path)
        self._files = files if files is not None else _DEFAULT_FILES
        self._mem: bytearray | None = bytearray() if in_memory else None
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._positions: list[int] = []
        self._sizes: list[int] = []
        self._max_ts: list[int] = []
        self._producers: dict[int, _ProducerState] = {}
        #: Open transactions: producer id -> first offset (the last stable offset's input).
        self._open: dict[int, int] = {}
        #: The aborted-transactions index, in marker order: (producer id, first offset, marker
        #: offset), and the marker offsets alone (bisected).
        self._aborted: list[tuple[int, int, int]] = []
        self._aborted_lasts: list[int] = []
        self.log_start_offset = 0
        #: Called after :meth:`append_control` stored a marker (the topic registry's hook:
        #: waiting read_committed fetches wake up).
        self.on_marker: Callable[[], None] | None = None
        self._hw = 0
        self._size = 0
        self._fresh = fresh and not in_memory
        self._loaded = in_memory or fresh

    @property
    def path(self) -> Path:
        return Path(self._spath)

    def expect_file(self) -> None:
        """A file of this partition is there but was not read (start-up after a clean
        shutdown): the index is built by :meth:`recover` on first use, whose errors then reach
        the caller (Produce, Fetch, ListOffsets: KAFKA_STORAGE_ERROR) with the index left
        unloaded — never an empty partition."""
        if self._mem is None:
            self._fresh = False
            self._loaded = False

    @property
    def high_watermark(self) -> int:
        if not self._loaded:
            self.recover()
        return self._hw

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, or the high watermark when no
        transaction is open (Kafka's ``UnifiedLog.lastStableOffset``): a read_committed
        consumer reads below it."""
        if not self._loaded:
            self.recover()
        return min(self._open.values()) if self._open else self._hw

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction (a copy)."""
        if not self._loaded:
            self.recover()
        return dict(self._open)

    def aborted_transactions(self, start: int, upper: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of every aborted transaction whose abort marker is at
        or after ``start`` and whose first offset is below ``upper`` (Kafka's
        ``collectAbortedTransactions``): what a read_committed fetch of ``start`` .. ``upper``
        must drop."""
        if not self._loaded:
            self.recover()
        i = bisect.bisect_left(self._aborted_lasts, start)
        return [(pid, first) for pid, first, _last in self._aborted[i:] if first < upper]

    def aborted_index(self) -> list[tuple[int, int, int]]:
        """The aborted-transactions index: (producer id, first offset, marker offset)."""
        if not self._loaded:
            self.recover()
        return list(self._aborted)

    def producers(self) -> list[ProducerSnapshot]:
        """Every producer of this partition, by producer id (DescribeProducers, KIP-664)."""
        if not self._loaded:
            self.recover()
        return [ProducerSnapshot(pid, st.epoch, st.batches[-1][1] if st.batches else -1,
                                 st.last_timestamp, st.coordinator_epoch,
                                 -1 if st.txn_first is None else st.txn_first)
                for pid, st in sorted(self._producers.items())]

    def producer_epoch(self, producer_id: int) -> int | None:
        """The producer's latest epoch on this partition, or None if it never wrote here."""
        if not self._loaded:
            self.recover()
        state = self._producers.get(producer_id)
        return None if state is None else state.epoch

    @property
    def size_bytes(self) -> int:
        if not self._loaded:
            self.recover()
        return self._size

    def _reset(self) -> None:
        for lst in (self._bases, self._lasts, self._positions, self._sizes, self._max_ts):
            lst.clear()
        self._producers.clear()
        self._open.clear()
        self._aborted.clear()
        self._aborted_lasts.clear()
        self._hw = 0
        self._size = 0

    def recover(self, *, cut_damage: bool = False) -> tuple[int, str] | None:
        """Kafka's log recovery for this file: index every batch, checking its header, that its
        base offset follows the previous batch, and its CRC-32C.

        A torn tail (a prefix of a batch: an incomplete header or batch, or a header whose
        magic byte is wrong, with no valid batch after it) is cut off and logged at WARNING
        naming the file, byte and offset. A problem followed by a valid batch, or a complete last
        batch that fails its checks (bad CRC-32C, base offset or offset delta: not a torn write),
        raises :class:`PartitionLogCorrupt` and changes nothing — unless ``cut_damage`` (the
        ``recover-partitions`` command): then the
        bytes from the damage on are first copied to ``<file>.damaged-<byte>`` and the file is
        cut there. Returns (byte, problem) of what was cut, or None. On any error the index stays
        unloaded (the next access tries again): an unreadable file never looks like an empty
        partition.
        """
        self._reset()
        self._fresh = False
        try:
            cut = self._recover(cut_damage)
        except BaseException:
            self._reset()
            self._loaded = False
            raise
        self._loaded = True
        if self.log_start_offset > self._hw:
            log.warning("%s: the log start offset %d is beyond the log's end %d: lowered to it",
                        self._spath, self.log_start_offset, self._hw)
            self.log_start_offset = self._hw
        return cut

    def _recover(self, cut_damage: bool) -> tuple[int, str] | None:
        if self._mem is not None:
            return None
        try:
            fd = self._files.fd(self._spath)
        except FileNotFoundError:
            return None
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        if size <= _READ_ALL_LIMIT:
            data: bytes | mmap.mmap = os.pread(fd, size, 0)
        else:
            data = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        try:
            with memoryview(data) as view:
                end, problem, complete = self._scan(data, view, size)
                if problem is None:
                    self._size = end
                    return None
                follow = _next_valid_batch(data, view, end + 1, size)
                damaged = follow is not None or complete
                if damaged and not cut_damage:
                    raise PartitionLogCorrupt(self.path, end, self._hw, problem, follow)
                if damaged:
                    aside = f"{self._spath}.damaged-{end}"
                    with open(aside, "wb") as f:
                        f.write(view[end:size])
                        f.flush()
                        os.fsync(f.fileno())
                    log.warning("%s: cut at byte %d (offset %d): %s; the %d bytes from there "
                                "are kept in %s", self.path, end, self._hw, problem, size - end,
                                aside)
                else:
                    log.warning("%s: log recovery: truncating a torn tail of %d bytes at byte %d "
                                "(offset %d): %s", self.path, size - end, end, self._hw, problem)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
        fd = self._files.fd(self._spath)
        os.ftruncate(fd, end)
        self._size = end
        return end, problem

    def _scan(self, data: bytes | mmap.mmap, view: memoryview,
              size: int) -> tuple[int, str | None, bool]:
        """Index the valid batches from the start; (end of the last valid one, the problem of
        the batch there or None, whether that batch is complete: every byte its header
        announces is present, so it is not the prefix a torn write leaves)."""
        pos = 0
        while pos < size:
            if size - pos < BATCH_HEADER_SIZE:
                return (pos, f"incomplete batch header ({size - pos} of {BATCH_HEADER_SIZE} "
                        f"bytes)", False)
            (base, length, _e, magic, crc, attrs, last_delta, _bt, max_ts) = _HEAD.unpack_from(data, pos)
            total = length + 12
            if magic != 2:
                return pos, f"magic byte {magic}, not 2 (not a v2 record batch)", False
            if total < BATCH_HEADER_SIZE:
                return pos, f"batch length {length} is shorter than a batch header", False
            if pos + total > size:
                return (pos, f"incomplete batch ({total} bytes announced, {size - pos} present)",
                        False)
            if last_delta < 0:
                return pos, f"negative lastOffsetDelta {last_delta}", True
            if base != self._hw:
                return pos, f"base offset {base} where {self._hw} follows the previous batch", True
            actual = crc32c.crc32c(view[pos + 21:pos + total])
            if actual != crc:
                return (pos, f"CRC-32C {actual:#010x} does not match the stored {crc:#010x}",
                        True)
            pid, pepoch, base_seq = _PRODUCER.unpack_from(data, pos + 43)
            if pid >= 0 and attrs & ATTR_CONTROL:
                marker = parse_control_record(data, pos, pos + total)
                if marker is not None:
                    self._end_transaction(pid, pepoch, marker[0] == CONTROL_COMMIT, marker[1],
                                          base)
            elif pid >= 0:
                (count,) = struct.unpack_from(">i", data, pos + 57)
                self._remember(BatchInfo(total, last_delta, max_ts, count, pid, pepoch,
                                         base_seq, attrs), base)
            self._index(base, base + last_delta, pos, total, max_ts)
            pos += total
        return pos, None, False

    def _index(self, base: int, last: int, pos: int, size: int, max_ts: int) -> None:
        self._bases.append(base)
        self._lasts.append(last)
        self._positions.append(pos)
        self._sizes.append(size)
        self._max_ts.append(max_ts)
        self._hw = last + 1

    def _remember(self, b: BatchInfo, base_offset: int) -> None:
        """A data batch of a producer was stored at ``base_offset`` (``appendDataBatch``)."""
        state = self._producers.get(b.producer_id)
        if state is None:
            state = self._producers[b.producer_id] = _ProducerState(b.producer_epoch)
        state.set_epoch(b.producer_epoch)
        state.batches.append((b.base_sequence, b.last_sequence, base_offset))
        state.last_timestamp = b.max_timestamp
        if b.is_transactional and state.txn_first is None:
            state.txn_first = base_offset
            self._open[b.producer_id] = base_offset

    def _end_transaction(self, pid: int, epoch: int, commit: bool, coordinator_epoch: int,
                         offset: int) -> None:
        """A marker stored at ``offset`` (``appendEndTxnMarker`` without its checks, which
        :meth:`append_control` made): the open transaction ends (an aborted one goes to the
        index), the producer takes the marker's epochs."""
        state = self._producers.get(pid)
        if state is None:
            state = self._producers[pid] = _ProducerState(epoch)
        first = state.txn_first
        if first is not None and not commit:
            self._aborted.append((pid, first, offset))
            self._aborted_lasts.append(offset)
        state.txn_first = None
        self._open.pop(pid, None)
        state.set_epoch(epoch)
        state.coordinator_epoch = coordinator_epoch

    def _check_producer(self, b: BatchInfo,
                        pending: dict[int, tuple[int, int, bool]]) -> int | None:
        """The stored offset if ``b`` is a duplicate; raises ProducerStateError if its
        producer's state refuses it; None if it is the next batch. ``pending``: (epoch, last
        seq, transaction open) after the batches accepted earlier in the same request.

        As ``ProducerAppendInfo``: a duplicate (same epoch and sequence range as one of the
        last five stored batches) is found first; then an epoch older than the producer's is
        INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0 (unless the producer is
        unknown here: any sequence, as Kafka since KIP-360, which never answers
        UNKNOWN_PRODUCER_ID for a produce), the same epoch must continue the sequence
        (OUT_OF_ORDER_SEQUENCE_NUMBER); a non-transactional batch while the producer's
        transaction is open is INVALID_TXN_STATE."""
        pid, epoch = b.producer_id, b.producer_epoch
        last_sequence = b.last_sequence
        known = pending.get(pid)
        if known is not None:
            known_epoch: int | None
            known_epoch, last_seq, txn_open = known
        else:
            state = self._producers.get(pid)
            if state is None:
                known_epoch, last_seq, txn_open = None, -1, False
            else:
                known_epoch = state.epoch
                stored = state.batches
                if epoch == known_epoch:
                    base_sequence = b.base_sequence
                    for first, last, offset in stored:
                        if first == base_sequence and last == last_sequence:
                            return offset
                last_seq = stored[-1][1] if stored else -1
                txn_open = state.txn_first is not None
        if known_epoch is not None:
            if epoch < known_epoch:
                raise ProducerStateError(INVALID_PRODUCER_EPOCH,
                                         f"producer {pid}: epoch {epoch} is older than "
                                         f"{known_epoch}")
            if epoch > known_epoch:
                if b.base_sequence != 0:
                    raise ProducerStateError(OUT_OF_ORDER_SEQUENCE_NUMBER,
                                             f"producer {pid}: new epoch {epoch} starts at "
                                             f"sequence {b.base_sequence}, not 0")
            elif b.base_sequence != (last_seq + 1) % _SEQ_MOD:
                raise ProducerStateError(OUT_OF_ORDER_SEQUENCE_NUMBER,
                                         f"producer {pid}: sequence {b.base_sequence} after "
                                         f"{last_seq}")
        transactional = b.attributes & ATTR_TRANSACTIONAL
        if txn_open and not transactional:
            raise ProducerStateError(INVALID_TXN_STATE,
                                     f"producer {pid}: a non-transactional batch while its "
                                     f"transaction is open")
        pending[pid] = (epoch, last_sequence, txn_open or bool(transactional))
        return None

    def append(self, data: bytes) -> int:
        """Append produced batches (validated first); returns the base offset assigned (for a
        retried idempotent batch already stored, the offset it was stored at)."""
        batches = parse_batches(data)
        for b in batches:
            if b.attributes & (ATTR_CONTROL | ATTR_TRANSACTIONAL):
                if b.attributes & ATTR_CONTROL:
                    raise InvalidRecord("clients may not write control batches")
                if b.producer_id < 0:
                    raise InvalidRecord("a transactional batch needs a producer id")
        if not self._loaded:
            self.recover()
        pending: dict[int, tuple[int, int, bool]] = {}
        duplicates = [None if b.producer_id < 0 else self._check_producer(b, pending)
                      for b in batches]
        if duplicates and all(d is not None for d in duplicates):
            first_dup = duplicates[0]
            assert first_dup is not None
            return first_dup
        if any(d is not None for d in duplicates):
            raise ProducerStateError(OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     "a produce request mixes stored and new batches")
        first = self._write(data, batches)
        if first is None:  # a file found where none was expected: recovered, validate again
            return self.append(data)
        offset = first
        for b in batches:
            if b.producer_id >= 0:
                self._remember(b, offset)
            offset += b.last_offset_delta + 1
        return first

    def append_control(self, producer_id: int, producer_epoch: int, commit: bool,
                       coordinator_epoch: int, timestamp_ms: int) -> int:
        """Write the transaction coordinator's commit or abort marker for ``producer_id``;
        returns its offset. Refused with :class:`ProducerStateError`: a producer epoch older
        than the producer's here (INVALID_PRODUCER_EPOCH), a coordinator epoch older than the
        last marker's (TRANSACTION_COORDINATOR_FENCED). A repeated marker (no transaction open)
        is written and ends nothing, as Kafka's ``appendEndTxnMarker``."""
        if producer_id < 0 or not 0 <= producer_epoch < 1 << 15:
            raise ProducerStateError(INVALID_PRODUCER_EPOCH,
                                     f"no marker for producer {producer_id} epoch "
                                     f"{producer_epoch}")
        if not self._loaded:
            self.recover()
        state = self._producers.get(producer_id)
        if state is not None and producer_epoch < state.epoch:
            raise ProducerStateError(INVALID_PRODUCER_EPOCH,
                                     f"marker of producer {producer_id} at epoch "
                                     f"{producer_epoch}, older than {state.epoch}")
        if state is not None and coordinator_epoch < state.coordinator_epoch:
            raise ProducerStateError(TRANSACTION_COORDINATOR_FENCED,
                                     f"marker of producer {producer_id} from coordinator epoch "
                                     f"{coordinator_epoch}, older than "
                                     f"{state.coordinator_epoch}")
        data = control_batch(0, producer_id, producer_epoch, commit, coordinator_epoch,
                             timestamp_ms)
        batches = parse_batches(data)
        offset = self._write(data, batches)
        if offset is None:
            return self.append_control(producer_id, producer_epoch, commit, coordinator_epoch,
                                       timestamp_ms)
        self._end_transaction(producer_id, producer_epoch, commit, coordinator_epoch, offset)
        if self.on_marker is not None:
            self.on_marker()
        return offset

    def _write(self, data: bytes, batches: list[BatchInfo]) -> int | None:
        """Store validated batches at the end (offsets and leader epochs rewritten) and index
        them; their first offset, or None if a file appeared for a fresh partition (it was
        recovered: the caller validates again)."""
        buf = bytearray(data)
        first_position = self._size
        first = self._hw
        next_offset = first
        pos = 0
        entries = []
        for b in batches:
            _OFFSET_AND_LENGTH.pack_into(buf, pos, next_offset, b.length - 12)
            _LEADER_EPOCH.pack_into(buf, pos + 12, 0)
            entries.append((next_offset, next_offset + b.last_offset_delta, self._size + pos,
                            b.length, b.max_timestamp))
            next_offset += b.last_offset_delta + 1
            pos += b.length
        if self._mem is not None:
            self._mem += buf
        else:
            fd = self._fd_for_append()
            if self._size != first_position:  # a file found where none was expected
                return None
            try:
                written = os.write(fd, buf)
            except OSError:
                os.ftruncate(fd, self._size)
                raise
            if written != len(buf):  # pragma: no cover - disk full
                os.ftruncate(fd, self._size)
                raise OSError(f"short write to {self.path}: {written} of {len(buf)} bytes")
            self._files.dirty.add(self._spath)
        for e in entries:
            self._index(*e)
        self._size += len(buf)
        return first

    def _fd_for_append(self) -> int:
        if not self._fresh:
            return self._files.fd(self._spath, create=True)
        self._fresh = False
        try:
            return self._files.fd(self._spath, create=True, exclusive=True)
        except FileExistsError:
            log.warning("%s: a partition file appeared where none was: recovering it",
                        self._spath)
            self.recover()
            return self._files.fd(self._spath, create=True)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords on this partition (Kafka's ``Partition.deleteRecordsOnLeader``): move
        the log start offset up to ``offset`` (-1: the high watermark); an offset at or below
        the current start changes nothing. Returns the new log start offset (the low
        watermark). :class:`OffsetOutOfRange` for an offset above the high watermark or
        below 0 (other than -1)."""
        if not self._loaded:
            self.recover()
        target = self._hw if offset == -1 else offset
        if target < 0 or target > self._hw:
            raise OffsetOutOfRange(f"offset {offset} is not within the log start offset "
                                   f"{self.log_start_offset} .. high watermark {self._hw}")
        self.log_start_offset = max(self.log_start_offset, target)
        return self.log_start_offset

    def sync(self) -> None:
        """fsync this partition's file (nothing for an in-memory or a file-less partition)."""
        if self._mem is None and not self._fresh and self._size > 0:
            os.fsync(self._files.fd(self._spath))

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Batches from the one holding ``offset`` on, at least one, then up to ``max_bytes``."""
        return self.read_range(offset, max_bytes)[0]

    def read_range(self, offset: int, max_bytes: int,
                   max_offset: int | None = None) -> tuple[bytes, int]:
        """(batches from the one holding ``offset`` on, at least one, then up to ``max_bytes``,
        only batches that start below ``max_offset`` if given; the offset after the last
        batch returned). A read_committed fetch reads with ``max_offset`` = the last stable
        offset, a batch boundary (Kafka's ``LocalLog.read`` with its ``maxOffsetMetadata``)."""
        if not self._loaded:
            self.recover()
        lasts = self._lasts
        i = bisect.bisect_left(lasts, offset)
        limit = len(lasts) if max_offset is None else bisect.bisect_left(self._bases, max_offset)
        if i >= limit:
            return b"", offset
        start = self._positions[i]
        total = self._sizes[i]
        j = i + 1
        while j < limit and total + self._sizes[j] <= max_bytes:
            total += self._sizes[j]
            j += 1
        end_offset = lasts[j - 1] + 1
        if self._mem is not None:
            return bytes(self._mem[start:start + total]), end_offset
        return os.pread(self._files.fd(self._spath), total, start), end_offset

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch whose max timestamp is >= ``timestamp``.

        Batch granularity: the base offset of that batch (Kafka finds the exact record; a
        consumer seeking by time then skips the few earlier records of the batch itself).
        """
        if not self._loaded:
            self.recover()
        start = self.log_start_offset
        i = bisect.bisect_left(self._lasts, start)
        for k in range(i, len(self._bases)):
            ts = self._max_ts[k]
            if ts >= timestamp:
                return max(self._bases[k], start), ts
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        if not self._loaded:
            self.recover()
        i = bisect.bisect_left(self._lasts, self.log_start_offset)
        if i >= len(self._max_ts):
            return None
        best = max(range(i, len(self._max_ts)), key=lambda k: (self._max_ts[k], -k))
        return self._lasts[best], self._max_ts[best]

    def close(self) -> None:
        """Close this partition's descriptor if the cache holds one (it is reopened on use)."""
        if self._mem is None:
            self._files.close(self._spath)


def _next_valid_batch(data: bytes | mmap.mmap, view: memoryview, start: int,
                      size: int) -> int | None:
    """The byte position of the first valid-looking batch at or after ``start`` (magic 2, a
    length that fits, a matching CRC-32C), or None: what tells damage in the middle of a file
    from a torn tail."""
    i = start + 16
    while True:
        i = data.find(b"\x02", i)
        if i < 0:
            return None
        q = i - 16
        if q + BATCH_HEADER_SIZE > size:
            return None
        (length,) = struct.unpack_from(">i", data, q + 8)
        total = length + 12
        if total >= BATCH_HEADER_SIZE and q + total <= size:
            (crc,) = struct.unpack_from(">I", data, q + 17)
            if crc32c.crc32c(view[q + 21:q + total]) == crc:
                return q
        i += 1


_DEFAULT_FILES = OpenFiles()

"""Transactions in the partition log (``server/partition_log.py``; KIP-98, KIP-360; Kafka's
``ProducerAppendInfo``, ``ProducerStateManager``, ``TransactionIndex``): transactional batches,
the control markers of :meth:`PartitionLog.append_control`, producer epochs, the last stable
offset, the aborted-transactions index, and their rebuild by log recovery.

The property test drives a partition with random transactional and plain batches and markers,
and reads it as a read_committed consumer does (Kafka's ``CompletedFetch``: a transactional
batch of a producer in the response's aborted list is skipped up to its abort marker): what it
reads is exactly the committed data below the last stable offset, never an aborted record."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from groupcoord.server.partition_files import OpenFiles
from groupcoord.server.partition_log import (
    INVALID_PRODUCER_EPOCH,
    INVALID_TXN_STATE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    TRANSACTION_COORDINATOR_FENCED,
    InvalidRecord,
    PartitionLog,
    ProducerStateError,
    _varint,
    control_batch,
    parse_batches,
)


def batch(n: int = 1, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
          ts: int = 1_000, fill: int = 0) -> bytes:
    """A v2 batch of ``n`` records (null key, one-byte value ``fill``)."""
    records = bytearray()
    for i in range(n):
        body = bytearray(b"\x00")  # attributes
        _varint(body, 0)  # timestamp delta
        _varint(body, i)  # offset delta
        _varint(body, -1)  # null key
        _varint(body, 1)
        body.append(fill)
        _varint(body, 0)  # headers
        _varint(records, len(body))
        records += body
    after_crc = struct.pack(">hiqqqhii", 0x10 if txn else 0, n - 1, ts, ts + n, pid, epoch,
                            seq, n) + bytes(records)
    body = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def disk_log(tmp_path: Path, name: str = "p.log") -> PartitionLog:
    return PartitionLog(tmp_path / name, OpenFiles(16), fresh=True)


def state(plog: PartitionLog) -> tuple[object, ...]:
    """Everything the producer state and the transaction index hold."""
    producers = {pid: (s.epoch, list(s.batches), s.coordinator_epoch, s.txn_first)
                 for pid, s in sorted(plog._producers.items())}
    return (plog.high_watermark, plog.last_stable_offset, plog.open_transactions(),
            plog.aborted_index(), producers)


# ----------------------------------------------------------------------------- markers


def test_the_control_batch_is_a_kafka_end_transaction_marker() -> None:
    raw = control_batch(42, 9, 3, True, 17, 5_000)
    b, size = read_batch(raw, 0)
    assert size == len(raw)
    assert (b.base_offset, b.attributes, b.producer_id, b.producer_epoch, b.base_sequence) == (
        42, 0x30, 9, 3, -1)
    assert len(b.records) == 1
    assert b.records[0].key == struct.pack(">hh", 0, 1)  # version 0, COMMIT
    assert b.records[0].value == struct.pack(">hi", 0, 17)  # version 0, coordinator epoch
    abort, _ = read_batch(control_batch(0, 9, 3, False, 17, 5_000), 0)
    assert abort.records[0].key == struct.pack(">hh", 0, 0)
    assert parse_batches(raw)[0].is_control


def test_commit_and_abort_move_the_last_stable_offset_and_fill_the_index() -> None:
    plog = PartitionLog("mem", in_memory=True)
    assert plog.append(batch(2)) == 0
    assert plog.append(batch(3, pid=7, epoch=0, seq=0, txn=True)) == 2
    assert plog.append(batch(1, pid=8, epoch=0, seq=0, txn=True)) == 5
    assert plog.append(batch(1, pid=7, epoch=0, seq=3, txn=True)) == 6
    assert (plog.high_watermark, plog.last_stable_offset) == (7, 2)
    assert plog.open_transactions() == {7: 2, 8: 5}
    assert plog.append_control(7, 0, False, 0, 10) == 7
    assert (plog.high_watermark, plog.last_stable_offset) == (8, 5)
    assert plog.aborted_index() == [(7, 2, 7)]
    assert plog.append_control(8, 0, True, 0, 10) == 8
    assert (plog.high_watermark, plog.last_stable_offset) == (9, 9)
    assert plog.aborted_index() == [(7, 2, 7)]  # a commit is not indexed
    assert plog.aborted_transactions(0, 9) == [(7, 2)]
    assert plog.aborted_transactions(8, 9) == []  # the marker is before the fetch offset
    assert plog.aborted_transactions(0, 2) == []  # the transaction starts after the data


def test_a_repeated_marker_is_written_and_changes_nothing_else() -> None:
    plog = PartitionLog("mem", in_memory=True)
    plog.append(batch(1, pid=7, epoch=0, seq=0, txn=True))
    plog.append_control(7, 0, False, 2, 10)
    before = state(plog)
    assert plog.append_control(7, 0, False, 2, 10) == 2
    after = state(plog)
    assert after[0] == 3 and after[1] == 3 and after[2:] == before[2:]


def test_markers_from_an_old_producer_or_coordinator_epoch_are_refused() -> None:
    plog = PartitionLog("mem", in_memory=True)
    plog.append(batch(1, pid=7, epoch=2, seq=0, txn=True))
    with pytest.raises(ProducerStateError) as e:
        plog.append_control(7, 1, True, 0, 10)
    assert e.value.code == INVALID_PRODUCER_EPOCH
    plog.append_control(7, 2, True, 5, 10)
    plog.append(batch(1, pid=7, epoch=2, seq=1, txn=True))
    with pytest.raises(ProducerStateError) as e:
        plog.append_control(7, 2, True, 4, 10)
    assert e.value.code == TRANSACTION_COORDINATOR_FENCED
    assert plog.high_watermark == 3 and plog.open_transactions() == {7: 2}


def test_an_epoch_bump_by_marker_fences_the_old_epoch_and_restarts_sequences() -> None:
    """KIP-360 / the abort of a fenced producer's transaction at the new epoch."""
    plog = PartitionLog("mem", in_memory=True)
    plog.append(batch(2, pid=7, epoch=0, seq=0, txn=True))
    plog.append_control(7, 1, False, 0, 10)
    with pytest.raises(ProducerStateError) as e:  # the zombie's next batch
        plog.append(batch(1, pid=7, epoch=0, seq=2, txn=True))
    assert e.value.code == INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError) as e:  # the new epoch starts at sequence 0
        plog.append(batch(1, pid=7, epoch=1, seq=5, txn=True))
    assert e.value.code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.append(batch(1, pid=7, epoch=1, seq=0, txn=True)) == 3
    assert plog.last_stable_offset == 3


def test_data_batches_a_transaction_refuses() -> None:
    plog = PartitionLog("mem", in_memory=True)
    plog.append(batch(1, pid=7, epoch=0, seq=0, txn=True))
    with pytest.raises(ProducerStateError) as e:
        plog.append(batch(1, pid=7, epoch=0, seq=1, txn=False))
    assert e.value.code == INVALID_TXN_STATE
    with pytest.raises(InvalidRecord):
        plog.append(batch(1, pid=-1, txn=True))
    with pytest.raises(InvalidRecord):
        plog.append(control_batch(0, 7, 0, True, 0, 1))
    # A retried transactional batch is recognised (its first attempt's offset).
    assert plog.append(batch(1, pid=7, epoch=0, seq=0, txn=True)) == 0
    assert plog.high_watermark == 1


def test_read_committed_reads_below_the_last_stable_offset(tmp_path: Path) -> None:
    plog = disk_log(tmp_path)
    plog.append(batch(2, fill=1))
    plog.append(batch(1, pid=7, epoch=0, seq=0, txn=True, fill=2))
    plog.append(batch(1, fill=3))
    data, end = plog.read_range(0, 1 << 20, plog.last_stable_offset)
    assert end == 2 and [b.record_count for b in parse_batches(data)] == [2]
    assert plog.read_range(2, 1 << 20, plog.last_stable_offset) == (b"", 2)
    data, end = plog.read_range(0, 1 << 20)
    assert end == 4 and len(parse_batches(data)) == 3


# ----------------------------------------------------------------------------- recovery


def test_recovery_rebuilds_producers_transactions_and_the_index(tmp_path: Path) -> None:
    plog = disk_log(tmp_path)
    plog.append(batch(2, pid=7, epoch=0, seq=0, txn=True))
    plog.append(batch(1, pid=8, epoch=4, seq=0, txn=True))
    plog.append(batch(1))
    plog.append_control(7, 0, False, 3, 10)
    plog.append(batch(1, pid=9, epoch=0, seq=0, txn=False))
    plog.append(batch(1, pid=7, epoch=1, seq=0, txn=True))
    live = state(plog)
    files = OpenFiles(4)
    again = PartitionLog(tmp_path / "p.log", files)
    again.recover()
    assert state(again) == live
    assert live[1] == 2 and live[3] == [(7, 0, 4)]
    # The rebuilt state goes on refusing what the live one refuses.
    with pytest.raises(ProducerStateError) as e:
        again.append_control(7, 0, True, 3, 10)
    assert e.value.code == INVALID_PRODUCER_EPOCH
    # A retry of pid 8's batch is still recognised; pid 7's open transaction ends.
    assert again.append(batch(1, pid=8, epoch=4, seq=0, txn=True)) == 2
    assert again.append_control(7, 1, True, 3, 10) == 7
    assert again.open_transactions() == {8: 2}


# ----------------------------------------------------------------------------- property


def consume_read_committed(plog: PartitionLog, max_bytes: int) -> list[int]:
    """The offsets a read_committed consumer delivers, fetching from 0 to the last stable
    offset ``max_bytes`` at a time (Kafka's consumer: per fetch, the response's aborted
    transactions; a transactional batch of an aborted producer is skipped until its marker)."""
    delivered: list[int] = []
    position = 0
    lso = plog.last_stable_offset
    while position < lso:
        data, end = plog.read_range(position, max_bytes, lso)
        assert data and end > position
        aborted = sorted(plog.aborted_transactions(position, end), key=lambda a: a[1])
        aborting: set[int] = set()
        pos = 0
        while pos < len(data):
            b, size = read_batch(data, pos)
            pos += size
            last = b.base_offset + b.last_offset_delta
            assert last < lso
            while aborted and aborted[0][1] <= last:
                aborting.add(aborted.pop(0)[0])
            if b.attributes & 0x20:
                key = b.records[0].key or b""
                if struct.unpack(">hh", key)[1] == 0:
                    aborting.discard(b.producer_id)
                continue
            if b.attributes & 0x10 and b.producer_id in aborting:
                continue
            delivered.extend(r.offset for r in b.records if r.offset >= position)
        position = end
    return delivered


OPS = st.lists(st.tuples(st.sampled_from(["data", "data", "plain", "commit", "abort"]),
                         st.integers(0, 2), st.integers(1, 3)), max_size=40)


@settings(max_examples=120, deadline=None)
@given(OPS, st.integers(80, 400))
def test_random_transactions_read_committed_and_recovery(tmp_path_factory: pytest.TempPathFactory,
                                                         ops: list[tuple[str, int, int]],
                                                         max_bytes: int) -> None:
    path = tmp_path_factory.mktemp("txn")
    plog = disk_log(path)
    seqs = [0, 0, 0]
    open_txn: dict[int, list[int]] = {}  # producer -> offsets of its open transaction
    committed: list[int] = []  # offsets a read_committed consumer may ever see
    for op, producer, n in ops:
        pid = 100 + producer
        if op == "data":
            base = plog.append(batch(n, pid=pid, epoch=0, seq=seqs[producer], txn=True))
            seqs[producer] += n
            open_txn.setdefault(pid, []).extend(range(base, base + n))
        elif op == "plain":
            base = plog.append(batch(n))
            committed.extend(range(base, base + n))
        else:
            plog.append_control(pid, 0, op == "commit", 0, 1)
            offsets = open_txn.pop(pid, [])
            if op == "commit":
                committed.extend(offsets)
        lso = plog.last_stable_offset
        first_open = min((offs[0] for offs in open_txn.values() if offs), default=None)
        assert lso <= plog.high_watermark
        assert lso == (plog.high_watermark if first_open is None else first_open)
    expected = sorted(o for o in committed if o < plog.last_stable_offset)
    assert consume_read_committed(plog, max_bytes) == expected
    assert consume_read_committed(plog, 1 << 20) == expected
    again = PartitionLog(path / "p.log", OpenFiles(4))
    again.recover()
    assert state(again) == state(plog)

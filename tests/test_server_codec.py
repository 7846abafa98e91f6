"""Unit tests of the wire edge without a server: framing, headers, ``build``, the hand-written
heartbeat encoder (byte-equal to kio's), and the partition log file format."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import (
    DecodeError,
    build,
    decode_request_body,
    encode_entity,
    encode_request,
    parse_request_header,
    request_class,
    response_class,
)
from groupcoord.protocol.fast import consumer_group_heartbeat_response
from groupcoord.protocol.framing import FrameDecoder, FrameError, frame
from groupcoord.server.partition_log import InvalidRecords, PartitionLog, parse_batches


def test_frame_decoder_splits_across_feeds() -> None:
    d = FrameDecoder(max_frame_size=100)
    data = frame(b"abc") + frame(b"") + frame(b"x" * 50)
    out: list[bytes] = []
    for i in range(len(data)):  # one byte at a time
        out += d.feed(data[i:i + 1])
    assert out == [b"abc", b"", b"x" * 50]
    assert d.buffered == 0
    assert d.feed(data) == [b"abc", b"", b"x" * 50]


@pytest.mark.parametrize("prefix", [struct.pack(">i", 101), struct.pack(">i", -1)])
def test_frame_decoder_rejects_bad_sizes(prefix: bytes) -> None:
    with pytest.raises(FrameError):
        FrameDecoder(max_frame_size=100).feed(prefix)


def test_request_header_v1_v2_and_body_offset() -> None:
    cls = request_class(68, 1)
    assert cls is not None
    body = build(cls, group_id="g", member_id="m", member_epoch=3, topic_partitions=None)
    raw = encode_request(body, 99, "my-client")[4:]
    h = parse_request_header(raw, flexible=True)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (68, 1, 99, "my-client")
    assert decode_request_body(cls, raw, h.size) == body
    v1 = request_class(3, 4)
    assert v1 is not None
    raw = encode_request(build(v1, topics=None), 7, None)[4:]
    h = parse_request_header(raw, flexible=False)
    assert (h.correlation_id, h.client_id, h.size) == (7, None, 10)
    with pytest.raises(DecodeError):
        parse_request_header(raw[:9], flexible=False)
    with pytest.raises(DecodeError):
        decode_request_body(cls, b"\x00\x01", 0)


def test_build_fills_version_specific_fields() -> None:
    v0 = response_class(10, 0)
    v4 = response_class(10, 4)
    assert v0 is not None and v4 is not None
    r0 = build(v0, throttle_time=5, error_code=15, node_id=0, host="h", port=1, coordinators=[])
    assert r0.error_code == ErrorCode.coordinator_not_available and r0.host == "h"
    r4 = build(v4, throttle_time=0, coordinators=[{"key": "g", "node_id": 0, "host": "h", "port": 1,
                                                   "error_code": 0, "error_message": None}])
    assert r4.coordinators[0].key == "g"
    assert encode_entity(r4)  # encodable


@pytest.mark.parametrize("assignment", [
    None, [], [(uuid.uuid4(), (0, 1, 2))], [(uuid.uuid4(), ()), (uuid.uuid4(), tuple(range(200)))]])
@pytest.mark.parametrize("version", [0, 1])
def test_fast_heartbeat_response_equals_kio(assignment: list[tuple[uuid.UUID, tuple[int, ...]]] | None,
                                            version: int) -> None:
    cls = response_class(68, version)
    assert cls is not None
    for err, msg, mid in [(0, None, "member-" + "x" * 200), (22, "fenced: é", None)]:
        expected = encode_entity(build(cls, throttle_time=0, error_code=err, error_message=msg,
                                       member_id=mid, member_epoch=7, heartbeat_interval=5000,
                                       assignment=None if assignment is None else {
                                           "topic_partitions": [{"topic_id": t, "partitions": ps}
                                                                for t, ps in assignment]}))
        got = consumer_group_heartbeat_response(err, msg, mid, 7, 5000, assignment)
        assert got == expected


def _batch(n_records: int, ts: int = 1000, corrupt: bool = False) -> bytes:
    """A minimal v2 batch (records' bytes are opaque to the broker)."""
    import crc32c

    records = b"\x00" * (5 * n_records)
    after_crc = struct.pack(">hiqqqhii", 0, n_records - 1, ts, ts + n_records, -1, -1, -1,
                            n_records) + records
    crc = crc32c.crc32c(after_crc) ^ (1 if corrupt else 0)
    body = struct.pack(">ibI", 0, 2, crc) + after_crc  # leader epoch, magic, crc
    return struct.pack(">qi", 12345, len(body)) + body


def test_partition_log_assigns_offsets_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "p" / "0.log"
    plog = PartitionLog(path)
    assert plog.append(_batch(3)) == 0
    assert plog.append(_batch(2, ts=5000) + _batch(1, ts=6000)) == 3
    assert plog.high_watermark == 6
    data = plog.read(4, 1 << 20)
    assert struct.unpack_from(">q", data, 0)[0] == 3  # the batch holding offset 4
    assert [b.record_count for b in parse_batches(data)] == [2, 1]
    assert plog.offset_for_timestamp(5001) == (3, 5002)
    assert plog.read(6, 100) == b""
    with pytest.raises(InvalidRecords):
        plog.append(_batch(1, corrupt=True))
    with pytest.raises(InvalidRecords):
        plog.append(_batch(1)[:-1])
    plog.close()
    with open(path, "ab") as f:  # a torn write at the tail
        f.write(_batch(4)[:20])
    again = PartitionLog(path)
    assert again.high_watermark == 6
    assert again.read(0, 1) == plog_bytes_first(path)
    assert again.append(_batch(1)) == 6
    again.close()


def plog_bytes_first(path: Path) -> bytes:
    data = path.read_bytes()
    (length,) = struct.unpack_from(">i", data, 8)
    return data[:12 + length]


def _idempotent_batch(n_records: int, pid: int, epoch: int, seq: int) -> bytes:
    """A v2 batch of an idempotent producer (producer id, epoch, base sequence)."""
    import crc32c

    records = b"\x00" * (5 * n_records)
    after_crc = struct.pack(">hiqqqhii", 0, n_records - 1, 1000, 1000 + n_records, pid, epoch,
                            seq, n_records) + records
    body = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def test_partition_log_idempotent_producer_dedup_and_order(tmp_path: Path) -> None:
    """KIP-98 on one partition: a retried batch is stored once and answered with its first
    offset (also after a reopen); sequence gaps and old epochs are refused."""
    from groupcoord.server.partition_log import ProducerStateError

    path = tmp_path / "p" / "0.log"
    plog = PartitionLog(path)
    assert plog.append(_idempotent_batch(3, pid=7, epoch=0, seq=0)) == 0     # seqs 0..2
    assert plog.append(_idempotent_batch(2, pid=7, epoch=0, seq=3)) == 3     # seqs 3..4
    assert plog.append(_idempotent_batch(3, pid=7, epoch=0, seq=0)) == 0     # a retry: dup
    assert plog.high_watermark == 5
    with pytest.raises(ProducerStateError) as gap:
        plog.append(_idempotent_batch(1, pid=7, epoch=0, seq=9))
    assert gap.value.code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.append(_idempotent_batch(1, pid=8, epoch=0, seq=0)) == 5    # another producer
    assert plog.append(_idempotent_batch(1, pid=7, epoch=1, seq=0)) == 6    # a new epoch
    with pytest.raises(ProducerStateError) as old:
        plog.append(_idempotent_batch(1, pid=7, epoch=0, seq=5))
    assert old.value.code == 47  # INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError):
        plog.append(_idempotent_batch(1, pid=7, epoch=2, seq=4))  # a new epoch starts at 0
    assert plog.append(_batch(1)) == 7  # non-idempotent batches are not checked
    plog.close()
    again = PartitionLog(path)  # the producer state is rebuilt from the stored batches
    assert again.append(_idempotent_batch(1, pid=7, epoch=1, seq=0)) == 6
    assert again.append(_idempotent_batch(1, pid=8, epoch=0, seq=0)) == 5
    assert again.append(_idempotent_batch(1, pid=7, epoch=1, seq=1)) == 8
    assert again.high_watermark == 9
    again.close()

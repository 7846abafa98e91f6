"""The partition store's clean-shutdown marker (``topic_registry.py``, Kafka's
``.kafka_cleanshutdown``):

- an orderly stop flushes the partition files and writes the marker last; the next start reads
  no partition file (no descriptor opened, nothing checked), deletes the marker, and each file
  is recovered on first use;
- no marker (SIGKILL, a crash): full recovery at start, as before (a torn tail is cut);
- a marker with a file damaged after the clean stop: the start trusts the marker (as Kafka);
  the damage is found on first use and that partition answers KAFKA_STORAGE_ERROR, never an
  empty log, until ``recover-partitions`` (which reads every file, marker or not) fixes it.
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.partition_log import PartitionLogCorrupt
from groupcoord.server.topic_registry import CLEAN_SHUTDOWN_FILE, TopicRegistry

from .conftest import start_server
from .test_partition_store import batch

E = ErrorCode


def _written(data_dir: Path, partitions: int = 3, batches: int = 2) -> TopicRegistry:
    reg = TopicRegistry(data_dir)
    reg.create("t", partitions)
    for p in range(partitions):
        plog = reg.partition("t", p)
        assert plog is not None
        for i in range(batches):
            plog.append(batch(2, fill=p * 10 + i))
    return reg


def _files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "topics").rglob("*.log"), key=lambda f: int(f.stem))


def test_a_clean_close_writes_the_marker_and_the_next_start_reads_no_file(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    reg = _written(tmp_path)
    assert reg.files.dirty  # appended since start: to be flushed
    reg.close(clean=True)
    marker = tmp_path / CLEAN_SHUTDOWN_FILE
    assert marker.exists() and not reg.files.dirty

    with caplog.at_level(logging.INFO, logger="groupcoord.server.topic_registry"):
        again = TopicRegistry(tmp_path)
    assert again.clean_start and again.files_recovered == 0
    assert again.files.opens == 0  # not one partition file opened at start-up
    assert not marker.exists()  # deleted at start: a crash from now on means recovery
    assert any("clean shutdown: 3 partition files not read" in r.getMessage()
               for r in caplog.records)
    # first use recovers the file (opens it) and serves the data
    for p in range(3):
        plog = again.partition("t", p)
        assert plog is not None and plog.high_watermark == 4
        assert plog.read(0, 1 << 20).endswith(bytes([p * 10 + 1]) * 10)
    assert again.files.opens >= 3
    assert again.partition("t", 0).append(batch(1)) == 4  # type: ignore[union-attr]
    again.close()  # not clean (as a crash would leave it): no marker
    assert not marker.exists()

    third = TopicRegistry(tmp_path)
    assert not third.clean_start and third.files_recovered == 3
    third.close()


def test_without_the_marker_start_up_recovers_every_file_and_cuts_a_torn_tail(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    reg = _written(tmp_path)
    reg.close()  # what SIGKILL leaves: no marker
    files = _files(tmp_path)
    size = files[1].stat().st_size
    with open(files[1], "ab") as f:
        f.write(batch(1)[:30])  # a write torn by the crash
    with caplog.at_level(logging.WARNING, logger="groupcoord.server.partition_log"):
        again = TopicRegistry(tmp_path)
    assert not again.clean_start and again.files_recovered == 3
    assert files[1].stat().st_size == size
    assert any(str(files[1]) in r.getMessage() and "torn tail" in r.getMessage()
               for r in caplog.records)
    again.close()


def test_a_marker_is_trusted_damage_after_a_clean_stop_is_found_on_first_use(
        tmp_path: Path) -> None:
    reg = _written(tmp_path, partitions=2, batches=3)
    reg.close(clean=True)
    files = _files(tmp_path)
    one = len(batch(2))
    raw = bytearray(files[0].read_bytes())
    raw[one + 16] = 7  # the second batch's magic byte, valid batches after it
    files[0].write_bytes(bytes(raw))

    again = TopicRegistry(tmp_path)  # starts: the marker says the files are sound
    assert again.clean_start
    plog = again.partition("t", 0)
    assert plog is not None
    for _ in range(2):  # every use finds the damage again: never an empty partition
        with pytest.raises(PartitionLogCorrupt, match="magic byte 7"):
            _ = plog.high_watermark
        with pytest.raises(PartitionLogCorrupt):
            plog.read(0, 100)
        with pytest.raises(PartitionLogCorrupt):
            plog.append(batch(1))
    assert files[0].read_bytes() == bytes(raw)  # nothing cut
    other = again.partition("t", 1)
    assert other is not None and other.high_watermark == 6  # the sound one serves
    again.close()


def test_recover_partitions_reads_every_file_whatever_the_marker_says(tmp_path: Path) -> None:
    from groupcoord.cli import main

    reg = _written(tmp_path, partitions=1, batches=3)
    reg.close(clean=True)
    (path,) = _files(tmp_path)
    one = len(batch(2))
    raw = bytearray(path.read_bytes())
    raw[one + 16] = 7
    path.write_bytes(bytes(raw))
    assert main(["recover-partitions", "--data-dir", str(tmp_path)]) == 0
    assert path.read_bytes() == bytes(raw[:one])
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # left as it was: the files are sound now
    again = TopicRegistry(tmp_path)
    assert again.clean_start and again.partition("t", 0).high_watermark == 2  # type: ignore[union-attr]
    again.close()


def test_the_in_memory_registry_writes_no_marker(tmp_path: Path) -> None:
    reg = TopicRegistry(tmp_path, in_memory=True)
    reg.create("t", 1)
    reg.partition("t", 0).append(batch(1))  # type: ignore[union-attr]
    reg.close(clean=True)
    assert list(tmp_path.iterdir()) == []


def _produce(c: KafkaClient, partitions: int) -> None:
    r = c.call(ApiKey.PRODUCE, 9, acks=1, timeout=10_000, topic_data=[
        {"name": "t", "partition_data": [{"index": p, "records": batch(2)}
                                         for p in range(partitions)]}])
    assert all(p.error_code == E.none for p in r.responses[0].partition_responses), r


def _fetch_codes(c: KafkaClient, partitions: int) -> list[tuple[int, int]]:
    r = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, topics=[
        {"topic": "t", "partitions": [{"partition": p, "fetch_offset": 0,
                                       "partition_max_bytes": 1 << 20}
                                      for p in range(partitions)]}])
    return [(int(p.error_code), int(p.high_watermark)) for p in r.responses[0].partitions]


def _create_topic(c: KafkaClient) -> None:
    """Topic ``t`` of 2 partitions."""
    r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
        {"name": "t", "num_partitions": 2, "replication_factor": -1}])
    assert r.topics[0].error_code == E.none


def test_serve_skips_recovery_after_sigterm_and_recovers_after_sigkill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with KafkaClient(server.bootstrap) as c:
            _create_topic(c)
            _produce(c, 2)
    finally:
        assert server.stop() == 0  # SIGTERM: an orderly stop
    assert "clean-shutdown marker written" in server.stderr()
    assert (data / CLEAN_SHUTDOWN_FILE).exists()

    server = start_server(data)
    try:
        assert "clean shutdown: 2 partition files not read" in server.stderr()
        assert not (data / CLEAN_SHUTDOWN_FILE).exists()
        with KafkaClient(server.bootstrap) as c:
            assert _fetch_codes(c, 2) == [(E.none, 2), (E.none, 2)]
            _produce(c, 2)
    finally:
        assert server.stop(sig=signal.SIGKILL) == -signal.SIGKILL
    assert not (data / CLEAN_SHUTDOWN_FILE).exists()
    files = _files(data)
    with open(files[1], "ab") as f:
        f.write(batch(1)[:25])  # as if the kill tore a write

    server = start_server(data)
    try:
        err = server.stderr()
        assert "(2 partition files checked)" in err
        assert f"{files[1]}: log recovery: truncating a torn tail of 25 bytes" in err
        with KafkaClient(server.bootstrap) as c:
            assert _fetch_codes(c, 2) == [(E.none, 4), (E.none, 4)]
    finally:
        assert server.stop() == 0


def test_serve_answers_storage_error_for_a_file_damaged_after_a_clean_stop(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with KafkaClient(server.bootstrap) as c:
            _create_topic(c)
            for _ in range(3):
                _produce(c, 2)
    finally:
        assert server.stop() == 0
    files = _files(data)
    raw = bytearray(files[0].read_bytes())
    raw[len(batch(2)) + 16] = 7  # damage in the middle, valid batches after it
    files[0].write_bytes(bytes(raw))

    server = start_server(data)  # the marker is trusted: it starts
    try:
        with KafkaClient(server.bootstrap) as c:
            for _ in range(2):
                assert _fetch_codes(c, 2) == [(E.kafka_storage_error, -1), (E.none, 6)]
                lo = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
                    {"name": "t", "partitions": [{"partition_index": p, "timestamp": -1}
                                                 for p in (0, 1)]}])
                assert [(int(p.error_code), int(p.offset)) for p in lo.topics[0].partitions] \
                    == [(E.kafka_storage_error, -1), (E.none, 6)]
                r = c.call(ApiKey.PRODUCE, 9, acks=1, timeout=10_000, topic_data=[
                    {"name": "t", "partition_data": [{"index": 0, "records": batch(1)}]}])
                assert r.responses[0].partition_responses[0].error_code == E.kafka_storage_error
        assert "Traceback" not in server.stderr()
    finally:
        assert server.stop() == 0
    assert files[0].read_bytes() == bytes(raw)  # nothing cut, nothing appended

"""The broker's partition store (``server/partition_log.py``, ``partition_files.py``,
``topic_registry.py``) without a server:

- an empty partition has no file; files are made by the first append and their descriptors are
  bounded by the LRU (``groupcoord.partition.max.open.files``), never one per partition;
- Kafka's log recovery at start-up: a torn tail (a prefix of the last batch: an incomplete header
  or batch, an unreadable header) is cut and logged at WARNING naming the file and the byte;
  damage followed by valid batches, and a complete last batch with a bad CRC, base offset or
  offset delta, are refused with one line naming file, byte, offset and problem, and nothing is
  changed; ``recover-partitions`` cuts there and keeps the rest aside;
- CreateTopics, DeleteTopics and CreatePartitions are all or nothing when ``topics.json``
  cannot be written (KAFKA_STORAGE_ERROR, nothing left behind);
- the in-memory registry (``--storage memory``) touches no file.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import struct
from pathlib import Path
from typing import Any

import crc32c
import pytest

from groupcoord.protocol.errors import CoordinatorError, ErrorCode
from groupcoord.server import topic_registry
from groupcoord.server.partition_files import (
    MAX_OPEN_FILES_CONFIG,
    OpenFiles,
    max_open_files_from,
)
from groupcoord.server.partition_log import PartitionLog, PartitionLogCorrupt, parse_batches
from groupcoord.server.topic_registry import TopicRegistry


def batch(n_records: int = 1, ts: int = 1000, fill: int = 0) -> bytes:
    """A v2 record batch (the broker does not decode records: their bytes are opaque)."""
    records = bytes([fill]) * (5 * n_records)
    after_crc = struct.pack(">hiqqqhii", 0, n_records - 1, ts, ts + n_records, -1, -1, -1,
                            n_records) + records
    body = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def partition_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "topics").rglob("*.log")) if (data_dir / "topics").exists() else []


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# ---------------------------------------------------------------------------- descriptors


def test_empty_partitions_have_no_file_and_descriptors_are_bounded(tmp_path: Path) -> None:
    reg = TopicRegistry(tmp_path, max_open_files=8)
    before = open_fds()
    reg.create("big", 5_000)
    assert partition_files(tmp_path) == []  # nothing per partition until written
    assert reg.get("big") is not None and reg.get("big").num_partitions == 5_000  # type: ignore[union-attr]
    for p in range(0, 5_000, 50):  # 100 partitions written
        plog = reg.partition("big", p)
        assert plog is not None
        assert plog.append(batch(2, fill=p % 251)) == 0
        assert plog.append(batch(1, fill=p % 251)) == 2
        assert len(reg.files) <= 8
    assert len(partition_files(tmp_path)) == 100
    assert open_fds() - before <= 8
    for p in range(0, 5_000, 50):  # everything reads back (descriptors reopened as needed)
        plog = reg.partition("big", p)
        assert plog is not None and plog.high_watermark == 3
        data = plog.read(0, 1 << 20)
        assert [b.record_count for b in parse_batches(data)] == [2, 1]
        assert data.endswith(bytes([p % 251]) * 5)
    assert open_fds() - before <= 8
    assert reg.partition("big", 1) is not None and reg.partition("big", 1).read(0, 100) == b""  # type: ignore[union-attr]
    reg.close()
    assert open_fds() <= before

    again = TopicRegistry(tmp_path, max_open_files=8)  # restart: the data is all there
    assert [again.partition("big", p).high_watermark for p in (0, 50, 4_950, 1)] == [3, 3, 3, 0]  # type: ignore[union-attr]
    assert len(again.files) <= 8
    again.close()


def test_open_files_lru_closes_the_least_recently_used(tmp_path: Path) -> None:
    files = OpenFiles(2)
    paths = [str(tmp_path / f"{i}.log") for i in range(3)]
    fds = [files.fd(p, create=True) for p in paths[:2]]
    files.fd(paths[0])  # 0 is now the most recent
    files.fd(paths[2], create=True)
    assert len(files) == 2
    with pytest.raises(OSError):
        os.fstat(fds[1])  # 1 was closed
    os.fstat(fds[0])
    with pytest.raises(FileNotFoundError):
        files.fd(str(tmp_path / "missing.log"))
    with pytest.raises(FileExistsError):
        files.fd(paths[1], create=True, exclusive=True)
    files.close_all()
    assert len(files) == 0


def test_open_files_config_is_checked() -> None:
    assert max_open_files_from({MAX_OPEN_FILES_CONFIG: "64"}) == 64
    assert max_open_files_from({}) >= 8
    for bad in ("0", "x", "-3"):
        with pytest.raises(ValueError, match=MAX_OPEN_FILES_CONFIG):
            max_open_files_from({MAX_OPEN_FILES_CONFIG: bad})


def test_a_file_that_appears_for_a_fresh_partition_is_recovered_not_overwritten(
        tmp_path: Path) -> None:
    reg = TopicRegistry(tmp_path)
    reg.create("t", 2)
    plog = reg.partition("t", 1)
    assert plog is not None
    path = plog.path
    path.parent.mkdir(parents=True)
    stored = batch(3)
    path.write_bytes(stored)  # e.g. restored by hand while the broker ran
    assert plog.append(batch(1)) == 3
    assert plog.high_watermark == 4
    assert [b.record_count for b in parse_batches(plog.read(0, 1 << 20))] == [3, 1]
    reg.close()


# ---------------------------------------------------------------------------- log recovery


def _stored(tmp_path: Path, n: int = 4) -> tuple[Path, list[int]]:
    """A registry with topic ``t`` whose partition 0 holds ``n`` batches; (file, batch starts)."""
    reg = TopicRegistry(tmp_path)
    reg.create("t", 1)
    plog = reg.partition("t", 0)
    assert plog is not None
    starts = []
    for i in range(n):
        starts.append(plog.size_bytes)
        plog.append(batch(2, fill=i))
    path = plog.path
    reg.close()
    return path, starts


def _flip(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["incomplete-header", "incomplete-batch", "magic", "length"])
def test_a_torn_tail_is_cut_and_logged(tmp_path: Path, damage: str,
                                       caplog: pytest.LogCaptureFixture) -> None:
    path, starts = _stored(tmp_path)
    last = starts[-1]
    if damage == "incomplete-header":
        with open(path, "ab") as f:
            f.write(batch(1)[:30])
        cut_at = path.stat().st_size - 30
    elif damage == "incomplete-batch":
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size - 3)
        cut_at = last
    elif damage == "magic":
        _flip(path, last + 16)
        cut_at = last
    else:  # a length that runs past the end
        _flip(path, last + 9)
        cut_at = last
    with caplog.at_level(logging.WARNING, logger="groupcoord.server.partition_log"):
        reg = TopicRegistry(tmp_path)
    plog = reg.partition("t", 0)
    assert plog is not None
    kept = 4 if damage == "incomplete-header" else 3
    assert plog.high_watermark == 2 * kept
    assert path.stat().st_size == cut_at
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(path) in w and f"at byte {cut_at}" in w for w in warnings), warnings
    assert plog.append(batch(1)) == 2 * kept  # writes go on after the cut
    reg.close()


@pytest.mark.parametrize("damage", ["crc", "magic", "length", "base-offset"])
def test_damage_before_the_tail_is_refused_and_nothing_changes(tmp_path: Path,
                                                               damage: str) -> None:
    path, starts = _stored(tmp_path)
    bad = starts[1]
    pos = {"crc": starts[2] - 1, "magic": bad + 16, "length": bad + 10,
           "base-offset": bad + 7}[damage]
    _flip(path, pos)
    before = path.read_bytes()
    with pytest.raises(PartitionLogCorrupt) as exc:
        TopicRegistry(tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(path) in msg and f"at byte {bad} (offset 2)" in msg
    assert {"crc": "CRC-32C", "magic": "magic byte", "length": "incomplete batch",
            "base-offset": "base offset"}[damage] in msg
    assert f"recover-partitions --data-dir {tmp_path}" in msg
    assert path.read_bytes() == before  # nothing was cut


@pytest.mark.parametrize("damage", ["crc", "base-offset"])
def test_a_complete_last_batch_that_fails_its_checks_is_damage_not_a_torn_tail(
        tmp_path: Path, damage: str) -> None:
    """A torn write leaves a prefix of a batch; a last batch with every announced byte present
    and a bad CRC (or base offset) holds acknowledged records: refused, nothing cut, and
    ``recover-partitions`` sets it aside like damage mid-file."""
    from groupcoord.cli import main

    path, starts = _stored(tmp_path)
    last = starts[-1]
    _flip(path, path.stat().st_size - 1 if damage == "crc" else last + 7)
    before = path.read_bytes()
    with pytest.raises(PartitionLogCorrupt) as exc:
        TopicRegistry(tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert f"at byte {last} (offset 6)" in msg and "it is the last batch and complete" in msg
    assert {"crc": "CRC-32C", "base-offset": "base offset"}[damage] in msg
    assert path.read_bytes() == before  # nothing was cut
    plog = PartitionLog(path, OpenFiles(4))  # first access without the start-up pass: refused
    with pytest.raises(PartitionLogCorrupt):
        plog.read(0, 100)
    assert path.read_bytes() == before
    assert main(["recover-partitions", "--data-dir", str(tmp_path)]) == 0
    assert path.read_bytes() == before[:last]
    assert Path(f"{path}.damaged-{last}").read_bytes() == before[last:]
    reg = TopicRegistry(tmp_path)
    plog2 = reg.partition("t", 0)
    assert plog2 is not None and plog2.high_watermark == 6
    reg.close()


def test_recover_partitions_cuts_at_the_damage_and_keeps_the_rest_aside(tmp_path: Path) -> None:
    from groupcoord.cli import main

    path, starts = _stored(tmp_path)
    _flip(path, starts[2] + 16)
    before = path.read_bytes()
    assert main(["recover-partitions", "--data-dir", str(tmp_path)]) == 0
    assert path.read_bytes() == before[:starts[2]]
    assert Path(f"{path}.damaged-{starts[2]}").read_bytes() == before[starts[2]:]
    reg = TopicRegistry(tmp_path)  # starts now
    plog = reg.partition("t", 0)
    assert plog is not None and plog.high_watermark == 4
    assert plog.append(batch(1)) == 4
    reg.close()
    assert main(["recover-partitions", "--data-dir", str(tmp_path / "nothing-here")]) == 2


def test_an_unreadable_file_is_never_taken_for_an_empty_partition(tmp_path: Path) -> None:
    path, _ = _stored(tmp_path, n=2)

    class FailingFiles(OpenFiles):
        failing = True

        def fd(self, path: str, create: bool = False, exclusive: bool = False) -> int:
            if self.failing:
                raise OSError(errno.EIO, "Input/output error")
            return super().fd(path, create, exclusive)

    files = FailingFiles(4)
    plog = PartitionLog(path, files)
    with pytest.raises(OSError):
        _ = plog.high_watermark
    with pytest.raises(OSError):
        plog.append(batch(1))
    files.failing = False
    assert plog.high_watermark == 4  # loaded on the next access, nothing was lost
    assert plog.append(batch(1)) == 4
    files.close_all()


def test_a_damaged_partition_found_on_first_access_raises(tmp_path: Path) -> None:
    """A PartitionLog opened on its own (no registry start-up check) finds the damage when
    first used: the caller answers KAFKA_STORAGE_ERROR, it never serves a shortened log."""
    path, starts = _stored(tmp_path)
    _flip(path, starts[1] + 30)
    plog = PartitionLog(path, OpenFiles(4))
    with pytest.raises(PartitionLogCorrupt):
        plog.read(0, 100)
    with pytest.raises(PartitionLogCorrupt):
        plog.append(batch(1))
    assert path.stat().st_size == starts[-1] + len(batch(2))


# ---------------------------------------------------------------------------- all or nothing


def _fail_writes(monkeypatch: pytest.MonkeyPatch, err: int) -> None:
    def failing_open(*args: Any, **kwargs: Any) -> Any:
        raise OSError(err, os.strerror(err))
    monkeypatch.setattr(topic_registry, "open", failing_open, raising=False)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EMFILE])
def test_create_topic_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        err: int) -> None:
    reg = TopicRegistry(tmp_path)
    reg.create("kept", 3)
    meta_before = (tmp_path / "topics.json").read_bytes()
    generation = reg.generation
    _fail_writes(monkeypatch, err)
    with pytest.raises(CoordinatorError) as exc:
        reg.create("big", 10_000)
    assert exc.value.code == ErrorCode.kafka_storage_error
    assert "big" in exc.value.message and "topics.json" in exc.value.message
    assert reg.get("big") is None and len(reg.by_id) == 1 and reg.generation == generation
    assert (tmp_path / "topics.json").read_bytes() == meta_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topics.json"]
    with pytest.raises(CoordinatorError) as exc:
        reg.add_partitions("kept", 5)
    assert exc.value.code == ErrorCode.kafka_storage_error and reg.get("kept").num_partitions == 3  # type: ignore[union-attr]
    with pytest.raises(CoordinatorError) as exc:
        reg.delete("kept")
    assert exc.value.code == ErrorCode.kafka_storage_error and reg.get("kept") is not None
    monkeypatch.undo()
    reg.create("big", 10_000)  # works once the disk does
    assert json.loads((tmp_path / "topics.json").read_text())["topics"][0]["name"] == "big"
    reg.close()


def test_memory_registry_touches_no_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "never"
    reg = TopicRegistry(data_dir, in_memory=True)
    reg.create("t", 100)
    plog = reg.partition("t", 7)
    assert plog is not None
    assert plog.append(batch(2)) == 0 and plog.append(batch(1)) == 2
    assert [b.record_count for b in parse_batches(plog.read(1, 1 << 20))] == [2, 1]
    reg.add_partitions("t", 200)
    reg.delete("t")
    reg.close()
    assert not data_dir.exists()

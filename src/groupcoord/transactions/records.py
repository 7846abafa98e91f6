"""The records of the transaction log (Kafka's ``__transaction_state``): the only way the
transaction coordinator's state changes.

Two record types, each a key and a value (``None``: a tombstone):

- ``TransactionRecord``: key the transactional id, value its :class:`TransactionMetadata`
  (Kafka's ``TransactionLogKey`` / ``TransactionLogValue``); a tombstone when the id expires
  (``transactional.id.expiration.ms``).
- ``CoordinatorEpochRecord``: key a partition of the transaction log, value its coordinator
  epoch. Kafka's coordinator epoch is the leader epoch of the ``__transaction_state`` partition;
  a single-process broker has none, so each load writes the next epoch here, and markers written
  after a restart carry a larger epoch than any before it (a partition refuses markers of an
  older coordinator epoch: TRANSACTION_COORDINATOR_FENCED).

Encoding: the key is a 2-byte record type and a 2-byte version, then the id in UTF-8 (or the
partition as 4 bytes); the value is a 2-byte version and compact JSON with sorted keys, so the
same state encodes to the same bytes. Both keys are upserts, so a compacted log replays to the
same state (storage/log.py).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _string  # json.dumps's, ensure_ascii

from groupcoord.transactions.state import TransactionMetadata, TransactionState

__all__ = ["CoordinatorEpochRecord", "TransactionRecord", "TxnRecord", "decode", "encode"]

_HEAD = struct.Struct(">hh")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
TRANSACTION = 0
COORDINATOR_EPOCH = 1
VERSION = 0


@dataclass(slots=True, frozen=True)
class TransactionRecord:
    transactional_id: str
    #: None: a tombstone (the id expired).
    metadata: TransactionMetadata | None


@dataclass(slots=True, frozen=True)
class CoordinatorEpochRecord:
    partition: int
    epoch: int


TxnRecord = TransactionRecord | CoordinatorEpochRecord


def _metadata_json(m: TransactionMetadata) -> bytes:
    """The value's JSON: what ``json.dumps(value, sort_keys=True, separators=(",", ":"))``
    writes for the dict of the fields (tests check the bytes), written directly: every
    transaction writes four of these values."""
    partitions = ",".join([f"[{_string(t)},{int(p)}]" for t, p in m.partitions])
    groups = ",".join([_string(g) for g in m.groups])
    text = (f'{{"groups":[{groups}],"last_producer_epoch":{int(m.last_producer_epoch)},'
            f'"last_update_ms":{int(m.last_update_ms)},"partitions":[{partitions}],'
            f'"previous_producer_id":{int(m.previous_producer_id)},'
            f'"producer_epoch":{int(m.producer_epoch)},"producer_id":{int(m.producer_id)},'
            f'"start_ms":{int(m.start_ms)},"state":{int(m.state.id)},'
            f'"timeout_ms":{int(m.timeout_ms)}}}')
    return _I16.pack(VERSION) + text.encode()


def encode(record: TxnRecord) -> tuple[bytes, bytes | None]:
    """``(key, value)`` bytes of a record for the record log."""
    if isinstance(record, TransactionRecord):
        key = _HEAD.pack(TRANSACTION, VERSION) + record.transactional_id.encode()
        return key, None if record.metadata is None else _metadata_json(record.metadata)
    key = _HEAD.pack(COORDINATOR_EPOCH, VERSION) + _I32.pack(record.partition)
    return key, _I16.pack(VERSION) + _I32.pack(record.epoch)


def decode(key: bytes, value: bytes | None) -> TxnRecord:
    """The record of an entry of the log; ValueError for bytes this version cannot read."""
    if len(key) < _HEAD.size:
        raise ValueError(f"transaction log key of {len(key)} bytes")
    rtype, version = _HEAD.unpack_from(key)
    if version != VERSION:
        raise ValueError(f"transaction log key version {version}")
    if rtype == COORDINATOR_EPOCH:
        (partition,) = _I32.unpack_from(key, _HEAD.size)
        if value is None or len(value) != 2 + _I32.size:
            raise ValueError("coordinator epoch record without its value")
        (epoch,) = _I32.unpack_from(value, 2)
        return CoordinatorEpochRecord(partition, epoch)
    if rtype != TRANSACTION:
        raise ValueError(f"unknown transaction log record type {rtype}")
    tid = key[_HEAD.size:].decode()
    if value is None:
        return TransactionRecord(tid, None)
    (vversion,) = _I16.unpack_from(value)
    if vversion != VERSION:
        raise ValueError(f"transaction log value version {vversion}")
    v = json.loads(value[2:])
    return TransactionRecord(tid, TransactionMetadata(
        transactional_id=tid, producer_id=int(v["producer_id"]),
        producer_epoch=int(v["producer_epoch"]), last_producer_epoch=int(v["last_producer_epoch"]),
        previous_producer_id=int(v["previous_producer_id"]), timeout_ms=int(v["timeout_ms"]),
        state=TransactionState.of_id(int(v["state"])),
        partitions=tuple((str(t), int(p)) for t, p in v["partitions"]),
        groups=tuple(str(g) for g in v["groups"]), start_ms=int(v["start_ms"]),
        last_update_ms=int(v["last_update_ms"])))

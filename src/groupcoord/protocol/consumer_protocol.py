"""The consumer embedded protocol: ConsumerProtocolSubscription and ConsumerProtocolAssignment.

Classic consumers (protocol type ``consumer``) carry their subscription in JoinGroup's protocol
metadata and receive their assignment in SyncGroup's assignment bytes, each as an int16 version
followed by the struct of that version (Kafka's ``ConsumerProtocol``):

- ConsumerProtocolSubscription v0: topics, user data; v1 adds owned partitions; v2 the
  generation id; v3 the rack id.
- ConsumerProtocolAssignment v0: assigned partitions, user data (v1-v3 have the same fields).

Decoding follows upstream's forward compatibility: a version newer than the newest known (v3) is
read as v3 (later versions only append fields), and trailing bytes are ignored. Encoding writes
the requested version (v0-v3), dropping the fields that version lacks.

The structs are kio's generated entities; this module only adds the version prefix, plain
Python values (:class:`Subscription`, :class:`Assignment`, partitions as ``{topic: [ids]}``) and
one error type. It does not validate topic names or the meaning of user data (assignor-specific
bytes, e.g. the cooperative-sticky assignor's, are passed through unchanged).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import data as a0
from kio.schema.consumer_protocol_assignment.v1 import data as a1
from kio.schema.consumer_protocol_assignment.v2 import data as a2
from kio.schema.consumer_protocol_assignment.v3 import data as a3
from kio.schema.consumer_protocol_subscription.v0 import data as s0
from kio.schema.consumer_protocol_subscription.v1 import data as s1
from kio.schema.consumer_protocol_subscription.v2 import data as s2
from kio.schema.consumer_protocol_subscription.v3 import data as s3
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.serial.writers import Writable
from kio.static.primitive import i32

from groupcoord.protocol.bounds import bounded_reader

__all__ = [
    "LATEST_VERSION",
    "Assignment",
    "ConsumerProtocolError",
    "Partitions",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

#: The newest version of both structs this module knows.
LATEST_VERSION = 3

#: ``{topic: sorted partition ids}``.
Partitions = dict[str, list[int]]

_SUB = (s0.ConsumerProtocolSubscription, s1.ConsumerProtocolSubscription,
        s2.ConsumerProtocolSubscription, s3.ConsumerProtocolSubscription)
_SUB_TP = (None, s1.TopicPartition, s2.TopicPartition, s3.TopicPartition)
_ASG = (a0.ConsumerProtocolAssignment, a1.ConsumerProtocolAssignment,
        a2.ConsumerProtocolAssignment, a3.ConsumerProtocolAssignment)
_ASG_TP = (a0.TopicPartition, a1.TopicPartition, a2.TopicPartition, a3.TopicPartition)

_readers: dict[type[Any], Callable[[bytes, int], tuple[Any, int]]] = {}
_writers: dict[type[Any], Callable[[Writable, Any], None]] = {}


class ConsumerProtocolError(ValueError):
    """Bytes that are not a ConsumerProtocolSubscription / Assignment, or an unknown version
    asked for when encoding."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A decoded ConsumerProtocolSubscription (fields a version lacks take their defaults)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: Partitions = field(default_factory=dict)
    generation_id: int = -1
    rack_id: str | None = None
    #: The version read from the bytes (may exceed LATEST_VERSION).
    version: int = 0


@dataclass(frozen=True, slots=True)
class Assignment:
    """A decoded ConsumerProtocolAssignment."""

    partitions: Partitions
    user_data: bytes | None = None
    version: int = 0


def _read(cls: type[Any], raw: bytes) -> Any:
    r = _readers.get(cls)
    if r is None:
        r = _readers[cls] = bounded_reader(cls)
    try:
        entity, _ = r(raw, 2)
    except Exception as e:  # kio raises assorted errors on truncated or garbled bytes
        raise ConsumerProtocolError(f"malformed {cls.__name__} v{cls.__version__}: "
                                    f"{type(e).__name__}: {e}") from None
    return entity


def _write(entity: Any, version: int) -> bytes:
    cls = type(entity)
    w = _writers.get(cls)
    if w is None:
        w = _writers[cls] = entity_writer(cls)
    buf = io.BytesIO()
    buf.write(version.to_bytes(2, "big", signed=True))
    w(buf, entity)
    return buf.getvalue()


def _version(raw: bytes, what: str) -> int:
    if len(raw) < 2:
        raise ConsumerProtocolError(f"{what} shorter than its version ({len(raw)} bytes)")
    version = int.from_bytes(raw[:2], "big", signed=True)
    if version < 0:
        raise ConsumerProtocolError(f"negative {what} version {version}")
    return version


def _check_version(version: int) -> None:
    if not 0 <= version <= LATEST_VERSION:
        raise ConsumerProtocolError(f"cannot encode version {version} (0..{LATEST_VERSION})")


def _partitions(tps: Iterable[Any]) -> Partitions:
    out: Partitions = {}
    for tp in tps:
        out.setdefault(str(tp.topic), []).extend(int(p) for p in tp.partitions)
    return {t: sorted(ps) for t, ps in out.items()}


_I32_MIN = -(2**31)
_I32_MAX = 2**31 - 1


def _i32s(ps: Iterable[int]) -> tuple[int, ...]:
    """``tuple(i32(p) for p in sorted(ps))``: kio's ``i32`` (a phantom type: it returns its
    argument or raises ``TypeError``) is called only for a value that is not a plain int in
    range, which it then refuses as before. Its check through the phantom metaclass cost
    most of a cooperative member's subscription encoding (one call per owned partition)."""
    out = tuple(sorted(ps))
    for p in out:
        if p.__class__ is not int or not _I32_MIN <= p <= _I32_MAX:
            i32(p)
    return out


def _topic_partitions(cls: Any, partitions: Mapping[str, Iterable[int]]) -> tuple[Any, ...]:
    return tuple(cls(topic=TopicName(t), partitions=_i32s(ps))
                 for t, ps in sorted(partitions.items()))


def decode_subscription(raw: bytes) -> Subscription:
    """Decode ConsumerProtocolSubscription bytes (any version; newer than v3 read as v3)."""
    version = _version(raw, "subscription")
    e = _read(_SUB[min(version, LATEST_VERSION)], raw)
    return Subscription(
        topics=tuple(e.topics), user_data=e.user_data,
        owned_partitions=_partitions(getattr(e, "owned_partitions", ())),
        generation_id=int(getattr(e, "generation_id", -1)),
        rack_id=getattr(e, "rack_id", None), version=version)


def encode_subscription(topics: Iterable[str], *, user_data: bytes | None = None,
                        owned_partitions: Mapping[str, Iterable[int]] | None = None,
                        generation_id: int = -1, rack_id: str | None = None,
                        version: int = LATEST_VERSION) -> bytes:
    """ConsumerProtocolSubscription bytes of ``version`` (fields it lacks are dropped)."""
    _check_version(version)
    kw: dict[str, Any] = {"topics": tuple(topics), "user_data": user_data}
    if version >= 1:
        kw["owned_partitions"] = _topic_partitions(_SUB_TP[version], owned_partitions or {})
    if version >= 2:
        kw["generation_id"] = i32(generation_id)
    if version >= 3:
        kw["rack_id"] = rack_id
    return _write(_SUB[version](**kw), version)


def decode_assignment(raw: bytes) -> Assignment:
    """Decode ConsumerProtocolAssignment bytes (any version; newer than v3 read as v3)."""
    version = _version(raw, "assignment")
    e = _read(_ASG[min(version, LATEST_VERSION)], raw)
    return Assignment(_partitions(e.assigned_partitions), e.user_data, version)


def encode_assignment(partitions: Mapping[str, Iterable[int]], *, user_data: bytes | None = None,
                      version: int = LATEST_VERSION) -> bytes:
    """ConsumerProtocolAssignment bytes of ``version``."""
    _check_version(version)
    return _write(_ASG[version](
        assigned_partitions=_topic_partitions(_ASG_TP[version], partitions),
        user_data=user_data), version)

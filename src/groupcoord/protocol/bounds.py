"""Frame-bounded structural check of a message body before kio's native decoder reads it.

kio's native (Rust) readers take an array's element count at face value and reserve memory
for it before checking that the bytes are there: a 5-byte body ``ff ff ff ff 0f`` in front of
a compact array (e.g. ShareGroupDescribe v1's GroupIds) asks for ~2^32 elements and aborts the
whole process ("memory allocation of ... bytes failed"), which no ``except`` can catch.

:func:`check_body` walks an entity's wire layout as the Kafka protocol defines it (the message
schemas' field order; flexible versions' compact arrays / strings / bytes with their
``N + 1`` unsigned-varint lengths and tagged-field sections, KIP-482; the int8 presence marker
of nullable structs, KIP-893; legacy int16 / int32 lengths otherwise), reading each length
prefix and refusing one larger than the bytes left in the frame. An array of N elements needs
at least N bytes (N x the element size for fixed-size elements), so whatever passes cannot make
the decoder reserve more than a small multiple of the frame. The walk is linear in the frame
and never allocates per element; tagged fields the schema knows are walked inside their
declared size, unknown ones are skipped (as Kafka's readers do).

The plan of each entity class is compiled once from kio's own field introspection (the same
metadata kio's writers use), so the check follows the schema kio decodes with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kio.serial import entity_reader
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)


class BoundsError(ValueError):
    """A length prefix says more than the frame holds (or the frame ends inside a field)."""


# A step reads one field at ``pos`` of ``buf`` (which ends at ``end``) and returns the next pos.
Step = Callable[[bytes, int, int], int]

_FIXED = {
    "int8": 1, "uint8": 1, "bool": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}


def read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint (at most 5 bytes, as Kafka's ``readUnsignedVarint``) and the next pos."""
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise BoundsError("frame ends inside a varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise BoundsError("varint longer than 5 bytes")


def _int16(buf: bytes, pos: int, end: int) -> int:
    if pos + 2 > end:
        raise BoundsError("frame ends inside an int16 length")
    return int.from_bytes(buf[pos:pos + 2], "big", signed=True)


def _int32(buf: bytes, pos: int, end: int) -> int:
    if pos + 4 > end:
        raise BoundsError("frame ends inside an int32 length")
    return int.from_bytes(buf[pos:pos + 4], "big", signed=True)


def _fixed(size: int) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        pos += size
        if pos > end:
            raise BoundsError("frame ends inside a field")
        return pos
    step.fixed_size = size  # type: ignore[attr-defined]
    return step


def _compact_blob(buf: bytes, pos: int, end: int) -> int:
    if pos < end and buf[pos] < 0x80:  # the usual one-byte length
        n = buf[pos]
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos, end)
    if n > 0:
        pos += n - 1
        if pos > end:
            raise BoundsError(f"compact string/bytes of {n - 1} bytes, {end - pos + n - 1} left")
    return pos


def _legacy_string(buf: bytes, pos: int, end: int) -> int:
    n = _int16(buf, pos, end)
    pos += 2
    if n < -1:
        raise BoundsError(f"string length {n}")
    if n > 0:
        pos += n
        if pos > end:
            raise BoundsError(f"string of {n} bytes, {end - pos + n} left")
    return pos


def _legacy_bytes(buf: bytes, pos: int, end: int) -> int:
    n = _int32(buf, pos, end)
    pos += 4
    if n < -1:
        raise BoundsError(f"bytes length {n}")
    if n > 0:
        pos += n
        if pos > end:
            raise BoundsError(f"bytes of {n}, {end - pos + n} left")
    return pos


def _scalar(kafka_type: str, flexible: bool) -> tuple[Step, int]:
    """The step of one non-array primitive field and its least size on the wire."""
    size = _FIXED.get(kafka_type)
    if size is not None:
        return _fixed(size), size
    if kafka_type == "string":
        return (_compact_blob, 1) if flexible else (_legacy_string, 2)
    if kafka_type in ("bytes", "records"):
        return (_compact_blob, 1) if flexible else (_legacy_bytes, 4)
    raise TypeError(f"no bounds rule for kafka_type {kafka_type!r}")


def _array(element: Step, least: int, flexible: bool) -> Step:
    least = max(least, 1)

    def step(buf: bytes, pos: int, end: int) -> int:
        if flexible:
            n, pos = read_uvarint(buf, pos, end)
            n -= 1  # N + 1; 0 is null
        else:
            n = _int32(buf, pos, end)
            pos += 4
            if n < -1:
                raise BoundsError(f"array length {n}")
        if n <= 0:
            return pos
        if n * least > end - pos:
            raise BoundsError(f"array of {n} elements, {end - pos} bytes left")
        for _ in range(n):
            pos = element(buf, pos, end)
        return pos
    return step


def _nullable(inner: Step) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        if pos >= end:
            raise BoundsError("frame ends at a nullable struct's marker")
        marker = buf[pos]
        if marker == 0xFF:  # int8 -1: null (KIP-893)
            return pos + 1
        return inner(buf, pos + 1, end)
    return step


_PLANS: dict[type[Any], Step] = {}


def plan(cls: type[Any]) -> Step:
    """The compiled check of entity class ``cls`` (cached)."""
    p = _PLANS.get(cls)
    if p is None:
        p = _PLANS[cls] = _compile(cls)
    return p


def _field_step(field: dataclasses.Field[Any], flexible: bool, tagged: bool) -> tuple[Step, int]:
    fc = classify_field(field)
    if isinstance(fc, EntityTupleField):
        return _array(_Lazy(fc.type_), 1 if fc.type_.__flexible__ else 0, flexible), 1
    if isinstance(fc, EntityField):
        inner: Step = _Lazy(fc.type_)
        if is_optional(field) and not tagged:
            return _nullable(inner), 1
        return inner, 0
    kafka_type = get_schema_field_type(field)
    if isinstance(fc, PrimitiveTupleField):
        element, least = _scalar(kafka_type, flexible)
        return _array(element, least, flexible), 1
    return _scalar(kafka_type, flexible)


class _Lazy:
    """A nested entity's plan, compiled on first use (entities may be shared between fields)."""

    __slots__ = ("cls", "step")

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        self.step: Step | None = None

    def __call__(self, buf: bytes, pos: int, end: int) -> int:
        if self.step is None:
            self.step = plan(self.cls)
        return self.step(buf, pos, end)


_COMPACT_INLINE = """\
    if pos >= end:
        raise BoundsError("frame ends at a compact length")
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos, end)
    if n:
        pos += n - 1
        if pos > end:
            raise BoundsError(f"compact string/bytes of {n - 1} bytes, frame ends before")
"""


def _compile(cls: type[Any]) -> Step:
    """The check of ``cls`` as one generated function: fixed-size runs and compact lengths
    inline (the common fields of hot requests), other fields through their step closures."""
    flexible = bool(cls.__flexible__)
    tagged: dict[int, Step] = {}
    scope: dict[str, Any] = {"BoundsError": BoundsError, "read_uvarint": read_uvarint,
                             "tagged_fields": _tagged_fields, "tagged": tagged}
    lines = ["def check(buf, pos, end):"]
    fixed = 0  # consecutive fixed-size fields are checked as one run

    def flush() -> None:
        nonlocal fixed
        if fixed:
            lines.append(f"    pos += {fixed}")
            lines.append("    if pos > end:")
            lines.append("        raise BoundsError('frame ends inside a field')")
            fixed = 0

    for i, field in enumerate(dataclasses.fields(cls)):
        tag = get_field_tag(field)
        step, least = _field_step(field, flexible, tag is not None)
        if tag is not None:
            tagged[int(tag)] = step
        elif getattr(step, "fixed_size", None) is not None:
            fixed += least
        else:
            flush()
            if step is _compact_blob:
                lines.append(_COMPACT_INLINE.rstrip("\n"))
            else:
                scope[f"s{i}"] = step
                lines.append(f"    pos = s{i}(buf, pos, end)")
    flush()
    if flexible:
        lines.append("    if pos < end and buf[pos] == 0:  # the usual case: no tagged fields")
        lines.append("        return pos + 1")
        lines.append("    return tagged_fields(buf, pos, end, tagged)")
    else:
        lines.append("    return pos")
    exec("\n".join(lines), scope)  # source built above from the schema only
    check: Step = scope["check"]
    return check


def _tagged_fields(buf: bytes, pos: int, end: int, tagged: dict[int, Step]) -> int:
    """A flexible entity's tagged-field section (KIP-482): known tags walked inside their
    declared size, unknown ones skipped."""
    count, pos = read_uvarint(buf, pos, end)
    if count > end - pos:
        raise BoundsError(f"{count} tagged fields, {end - pos} bytes left")
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        if size > end - pos:
            raise BoundsError(f"tagged field {tag} of {size} bytes, {end - pos} left")
        known = tagged.get(tag)
        if known is not None:
            known(buf, pos, pos + size)
        pos += size
    return pos


def check_body(cls: type[Any], buf: bytes, offset: int) -> int:
    """Walk the body of entity ``cls`` at ``buf[offset:]``; the position after it, or
    :class:`BoundsError` if a length prefix says more than the frame holds."""
    return plan(cls)(buf, offset, len(buf))


def bounded_reader(cls: type[Any]) -> Callable[[bytes, int], tuple[Any, int]]:
    """kio's ``entity_reader(cls)`` behind this check: ``(entity, bytes_consumed)``, or
    :class:`BoundsError` (a ValueError) before kio sees a length the bytes cannot hold."""
    read = entity_reader(cls)
    check = plan(cls)

    def reader(buf: bytes, offset: int) -> tuple[Any, int]:
        check(buf, offset, len(buf))
        return read(buf, offset)
    return reader

"""Kafka request/response codec at the wire edge, on top of kio's generated entities.

Kafka protocol guide ("Headers", KIP-482 flexible versions):

- Request header v1: ``api_key int16, api_version int16, correlation_id int32, client_id
  nullable string (int16 length, even in flexible versions)``; v2 adds tagged fields. A request
  uses header v2 exactly when its body version is flexible.
- Response header v0: ``correlation_id int32``; v1 adds tagged fields, used by flexible
  responses, **except ApiVersions, whose response header is always v0** (a client must parse it
  before it knows what the broker supports).

The request header prefix (key, version, correlation id, client id) is parsed by hand so that a
request for an unknown API or version can still be answered. Bodies are decoded and encoded
with ``kio.serial``; ``entity_reader(cls)(buf, offset)`` returns ``(entity, bytes_consumed)``.
The extension APIs of the specs (API keys 1000+) have no kio schema: :func:`request_class` and
:func:`response_class` give classes generated from the repo's JSON schemas
(``protocol/extensions.py``) in kio's shape, so everything below serves them unchanged.

:func:`build` constructs a kio entity of any version from plain values: fields that version
lacks are dropped, missing ones get their default or a zero value, and ints become the
timedelta / ErrorCode / datetime objects kio expects. Handlers write one superset of fields and
let the version's schema pick.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

from groupcoord.protocol import bounds
from groupcoord.protocol.extensions import extension_class
from groupcoord.protocol.framing import frame
from groupcoord.protocol.versions import ApiKey

__all__ = [
    "DecodeError",
    "RequestHeader",
    "build",
    "decode_request_body",
    "decode_response",
    "encode_request",
    "encode_response",
    "parse_request_header",
    "request_class",
    "request_client_id",
    "response_class",
    "response_frame",
]

E = TypeVar("E")

_PREFIX = struct.Struct(">hhih")
_PREFIX_KVC = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
#: A response frame's size and correlation id, then (``_V1``) the header's empty tagged fields.
_RESPONSE_V0 = struct.Struct(">ii")
_RESPONSE_V1 = struct.Struct(">iib")
_UTC = datetime.UTC


class DecodeError(Exception):
    """Bytes that are not a valid request (header or body) of the version they claim."""


@dataclass(slots=True, frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: Bytes of the frame taken by the header (the body starts there); -1 if not fully parsed.
    size: int = -1


# ------------------------------------------------------------------------------ schemas


@cache
def request_class(api_key: int, version: int) -> type[Any] | None:
    """kio's request class for (key, version) (an extension API's generated class), or None if
    there is no such schema."""
    ext = extension_class(api_key, version, "request")
    if ext is not None:
        return ext
    try:
        return load_request_schema(api_key, version)
    except Exception:
        return None


@cache
def response_class(api_key: int, version: int) -> type[Any] | None:
    ext = extension_class(api_key, version, "response")
    if ext is not None:
        return ext
    try:
        return load_response_schema(api_key, version)
    except Exception:
        return None


def request_is_flexible(api_key: int, version: int) -> bool:
    cls = request_class(api_key, version)
    return bool(cls is not None and cls.__flexible__)


def response_header_version(api_key: int, version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    cls = response_class(api_key, version)
    return 1 if cls is not None and cls.__flexible__ else 0


# ------------------------------------------------------------------------------ headers


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("varint too long")


def parse_request_prefix(buf: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame; DecodeError if too short."""
    if len(buf) < 8:
        raise DecodeError(f"request of {len(buf)} bytes is shorter than a request header")
    key, version, corr = struct.unpack_from(">hhi", buf, 0)
    return key, version, corr


def parse_request_header(buf: bytes, flexible: bool) -> RequestHeader:
    """Parse a request header v1 (``flexible=False``) or v2 (``flexible=True``)."""
    client_id, size = request_client_id(buf, flexible)
    key, version, corr = _PREFIX_KVC.unpack_from(buf, 0)
    return RequestHeader(key, version, corr, client_id, size)


def request_client_id(buf: bytes, flexible: bool) -> tuple[str | None, int]:
    """The client id of a request frame and the offset where its body starts (after the
    header's tagged fields when ``flexible``): :func:`parse_request_header` without building
    a :class:`RequestHeader` (the server's per-request path). DecodeError if malformed."""
    if len(buf) < _PREFIX.size:
        raise DecodeError(f"request of {len(buf)} bytes is shorter than a request header")
    n = _I16.unpack_from(buf, 8)[0]
    pos = _PREFIX.size
    client_id: str | None
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid client id length {n}")
        client_id = None
    else:
        if pos + n > len(buf):
            raise DecodeError("truncated client id")
        try:
            client_id = buf[pos:pos + n].decode()
        except UnicodeDecodeError as e:
            raise DecodeError(f"client id is not UTF-8: {e}") from None
        pos += n
    if flexible:
        if pos < len(buf) and buf[pos] == 0:  # the usual case: no tagged fields
            return client_id, pos + 1
        count, pos = _read_uvarint(buf, pos)
        for _ in range(count):
            _, pos = _read_uvarint(buf, pos)
            size, pos = _read_uvarint(buf, pos)
            pos += size
            if pos > len(buf):
                raise DecodeError("truncated tagged field in request header")
    return client_id, pos


_READERS: dict[type[Any], Callable[[bytes, int], tuple[Any, int]]] = {}
_WRITERS: dict[type[Any], Callable[[Any, Any], None]] = {}


def _reader(cls: type[Any]) -> Callable[[bytes, int], tuple[Any, int]]:
    """kio's reader of ``cls`` behind the frame-bounded check of ``protocol/bounds.py``: kio's
    native decoder reserves memory for an array's claimed length before reading it, so a
    hostile length prefix would abort the process; the check refuses it first."""
    r = _READERS.get(cls)
    if r is None:
        r = _READERS[cls] = bounds.bounded_reader(cls)
    return r


def _writer(cls: type[Any]) -> Callable[[Any, Any], None]:
    w = _WRITERS.get(cls)
    if w is None:
        w = _WRITERS[cls] = entity_writer(cls)
    return w


def decode_request_body(cls: type[E], buf: bytes, offset: int) -> E:
    """Decode the body of a request frame; DecodeError if it is malformed."""
    try:
        entity, _consumed = _reader(cls)(buf, offset)
    except Exception as e:  # kio raises several kinds (underflow, bad enum, bad UTF-8, ...)
        raise DecodeError(f"cannot decode {cls.__name__} v{getattr(cls, '__version__', '?')}: "
                          f"{type(e).__name__}: {e}") from None
    return entity


def encode_entity(entity: Any) -> bytes:
    buf = io.BytesIO()
    _writer(type(entity))(buf, entity)
    return buf.getvalue()


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """A whole response frame: size, response header (v0 or v1), body."""
    header = _I32.pack(correlation_id)
    if response_header_version(api_key, version) == 1:
        header += b"\x00"
    return frame(header + encode_entity(body))


def encode_raw_response(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    return response_frame(correlation_id, body, response_header_version(api_key, version) == 1)


def response_frame(correlation_id: int, body: bytes, header_v1: bool) -> bytes:
    """A whole response frame of an encoded ``body``: size, response header v1 (with its
    empty tagged fields) when ``header_v1``, else v0; :func:`encode_raw_response` with the
    header version known (the server's per-request path)."""
    if header_v1:
        return _RESPONSE_V1.pack(len(body) + 5, correlation_id, 0) + body
    return _RESPONSE_V0.pack(len(body) + 4, correlation_id) + body


# ------------------------------------------------------------------------------ client side


def encode_request(body: Any, correlation_id: int, client_id: str | None = "groupcoord") -> bytes:
    """A whole request frame for a kio request entity (header v2 if the body is flexible)."""
    key = int(body.__api_key__)
    version = int(body.__version__)
    cid = None if client_id is None else client_id.encode()
    header = struct.pack(">hhi", key, version, correlation_id)
    header += struct.pack(">h", -1) if cid is None else struct.pack(">h", len(cid)) + cid
    if body.__flexible__:
        header += b"\x00"
    return frame(header + encode_entity(body))


def decode_response(api_key: int, version: int, buf: bytes) -> tuple[int, Any]:
    """(correlation_id, kio response entity) of a response frame (without its size prefix)."""
    cls = response_class(api_key, version)
    if cls is None:
        raise DecodeError(f"no schema for response of API {api_key} v{version}")
    (corr,) = _I32.unpack_from(buf, 0)
    pos = 4
    if response_header_version(api_key, version) == 1:
        count, pos = _read_uvarint(buf, pos)
        for _ in range(count):
            _, pos = _read_uvarint(buf, pos)
            size, pos = _read_uvarint(buf, pos)
            pos += size
    try:
        entity, _ = _reader(cls)(buf, pos)
    except Exception as e:
        raise DecodeError(f"cannot decode {cls.__name__}: {type(e).__name__}: {e}") from None
    return corr, entity


# ------------------------------------------------------------------------------ build

_Conv = Callable[[Any], Any]


def _ms_timedelta(v: Any) -> Any:
    return v if isinstance(v, datetime.timedelta) else datetime.timedelta(milliseconds=int(v))


def _error_code(v: Any) -> Any:
    if isinstance(v, ErrorCode):
        return v
    try:
        return ErrorCode(int(v))
    except ValueError:
        return ErrorCode.unknown_server_error


def _datetime(v: Any) -> Any:
    if v is None or isinstance(v, datetime.datetime):
        return v
    if int(v) < 0:
        return None
    return datetime.datetime.fromtimestamp(int(v) / 1000, tz=_UTC)


def _identity(v: Any) -> Any:
    return v


def _zero(kafka_type: str, optional: bool, array: bool) -> Any:
    if array:
        return None if optional else ()
    if optional:
        return None
    if kafka_type.startswith(("int", "uint")) or kafka_type == "float64":
        return 0
    if kafka_type == "string":
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type.startswith("timedelta"):
        return datetime.timedelta(0)
    return None  # uuid (written as zeros), datetime


@dataclass(slots=True, frozen=True)
class _FieldPlan:
    name: str
    conv: _Conv
    has_default: bool
    zero: Any


def _entity_conv(inner: type[Any]) -> _Conv:
    def conv(v: Any) -> Any:
        if v is None or isinstance(v, inner):
            return v
        if isinstance(v, Mapping):
            return build(inner, v)
        raise TypeError(f"cannot make a {inner.__name__} of {type(v).__name__}")
    return conv


def _tuple_conv(item: _Conv) -> _Conv:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        return tuple(item(x) for x in v)
    return conv


_PLANS: dict[type[Any], tuple[_FieldPlan, ...]] = {}


def _plan(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    cached = _PLANS.get(cls)
    if cached is None:
        cached = _PLANS[cls] = _make_plan(cls)
    return cached


def _make_plan(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    plans = []
    for f in dataclasses.fields(cls):
        fc = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        optional = get_field_tag(f) is None and is_optional(f)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        zero: Any
        if isinstance(fc, EntityField):
            conv: _Conv = _entity_conv(fc.type_)
            zero = None if optional else _LazyEntity(fc.type_)
        elif isinstance(fc, EntityTupleField):
            conv = _tuple_conv(_entity_conv(fc.type_))
            zero = None if optional else ()
        else:
            if kafka_type.startswith("timedelta"):
                base: _Conv = _ms_timedelta
            elif kafka_type == "error_code":
                base = _error_code
            elif kafka_type.startswith("datetime"):
                base = _datetime
            else:
                base = _identity
            conv = _tuple_conv(base) if isinstance(fc, PrimitiveTupleField) else base
            zero = _zero(kafka_type, optional, isinstance(fc, PrimitiveTupleField))
        plans.append(_FieldPlan(f.name, conv, has_default, zero))
    return tuple(plans)


@dataclass(slots=True, frozen=True)
class _LazyEntity:
    cls: type[Any]


def build(cls: type[E], values: Mapping[str, Any] | None = None, /, **kw: Any) -> E:
    """An instance of kio entity ``cls`` from plain values (see the module docstring)."""
    if values:
        kw = {**values, **kw}
    args: dict[str, Any] = {}
    for p in _plan(cls):
        if p.name in kw:
            args[p.name] = p.conv(kw[p.name])
        elif not p.has_default:
            z = p.zero
            args[p.name] = build(z.cls) if isinstance(z, _LazyEntity) else z
    return cls(**args)


def to_ms(v: Any) -> int:
    """Milliseconds of a kio timedelta field (or an int)."""
    if isinstance(v, datetime.timedelta):
        return v.days * 86_400_000 + v.seconds * 1000 + v.microseconds // 1000
    return int(v)

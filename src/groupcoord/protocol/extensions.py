"""Wire schemas of the extension APIs, read from Kafka-style JSON message definitions.

The specs define APIs that Apache Kafka never shipped (KIP-848's client-side assignment,
ConsumerGroupPrepareAssignment / ConsumerGroupInstallAssignment; the Connect draft's
ConnectGroupHeartbeat / ConnectGroupPrepareAssignment / ConnectGroupInstallAssignment) plus two
admin requests of ours (ConnectGroupConfig, ConnectGroupDescribe). kio has no entities for them,
so their schemas live in ``protocol/schemas/*.json`` in upstream's message-definition format
(``clients/src/main/resources/common/message/*.json``: ``apiKey``, ``type``, ``validVersions``,
``flexibleVersions``, ``fields`` with ``versions`` / ``nullableVersions`` / ``taggedVersions`` +
``tag`` / ``default``, nested ``fields``, ``commonStructs``; ``//`` comment lines allowed).

This module turns each (API key, version, request or response) into a frozen dataclass shaped
exactly like kio's generated entities (``__api_key__``, ``__version__``, ``__flexible__``, field
metadata ``kafka_type`` and ``tag``, ``X | None`` for nullable, ``tuple[X, ...]`` for arrays), so
kio's own readers and writers (``kio.serial.entity_reader`` / ``entity_writer``) encode and
decode them, and ``codec.build`` fills them, like any upstream message.

Extension API keys are the block 1000-1099 (:data:`EXTENSION_KEY_RANGE`), far above upstream's
range (upstream's keys are below 100), written in each schema file and in ``docs/wire.md``.

**Overrides of upstream APIs** (:func:`override_class`): a schema file whose ``apiKey`` is an
upstream key (below the block) extends kio's class of that API with the file's *tagged* fields
(KIP-482: a reader skips tags it does not know, so the bytes stay compatible with every client
and broker). The file lists the upstream fields too, and they are checked against kio's class
(same count and order, names equal up to kio's ``...Ms`` -> timedelta renaming); only the tagged
fields are generated. The class is a subclass of kio's, so kio's field names, timedelta and
``ErrorCode`` conversions stay as they are for the upstream fields. Used for ConsumerGroupHeartbeat
(API 68): ClientAssignors and ShouldComputeAssignment of KIP-848's client-side assignors.

What it does not do: field names are the plain snake_case of the JSON names (``ThrottleTimeMs``
-> ``throttle_time_ms``, kept an ``int``: no timedelta conversion as kio does for upstream), and
``ErrorCode`` fields are plain ``int16`` (extension error codes such as INVALID_ASSIGNMENT = 1001
are not in kio's ``ErrorCode`` enum). Types supported: bool, int8/16/32/64, uint16, float64,
string, bytes, uuid, structs and arrays of these; not ``records``, not ``flexibleVersions`` that
start above a version with tagged fields, not the ``zeroCopy`` / ``ignorable`` / ``mapKey``
hints (all meaningless here).
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.static.constants import EntityType

__all__ = [
    "EXTENSION_KEY_RANGE",
    "MessageSchema",
    "SchemaError",
    "VersionRange",
    "entity_class",
    "extension_schemas",
    "load_schema_text",
    "override_class",
    "override_schemas",
    "parse_versions",
]

#: API keys reserved for the extension APIs (inclusive).
EXTENSION_KEY_RANGE = (1000, 1099)

_PRIMITIVES: dict[str, type[Any]] = {
    "bool": bool, "int8": int, "int16": int, "int32": int, "int64": int, "uint16": int,
    "float64": float, "string": str, "bytes": bytes, "uuid": uuid.UUID,
}


class SchemaError(Exception):
    """A message definition this module cannot read."""


@dataclass(slots=True, frozen=True)
class VersionRange:
    """Kafka's version range syntax: ``"0"``, ``"0+"``, ``"1-3"``, ``"none"``."""

    low: int
    high: int | None  # None: open-ended

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int) or version < self.low:
            return False
        return self.high is None or version <= self.high


_NONE = VersionRange(1, 0)  # contains nothing


def parse_versions(text: str | None) -> VersionRange:
    if text is None or text.strip() in ("", "none"):
        return _NONE
    s = text.strip()
    try:
        if s.endswith("+"):
            return VersionRange(int(s[:-1]), None)
        if "-" in s:
            lo, hi = s.split("-", 1)
            return VersionRange(int(lo), int(hi))
        return VersionRange(int(s), int(s))
    except ValueError:
        raise SchemaError(f"bad version range {text!r}") from None


def snake_case(name: str) -> str:
    """``ConnectorsAndTasks`` -> ``connectors_and_tasks``, ``GroupIds`` -> ``group_ids``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


@dataclass(slots=True, frozen=True)
class MessageSchema:
    """One JSON message definition (a request or a response of one API)."""

    api_key: int
    kind: str  # "request" | "response"
    name: str
    valid_versions: VersionRange
    flexible_versions: VersionRange
    fields: tuple[dict[str, Any], ...]
    common_structs: dict[str, dict[str, Any]]

    @property
    def versions(self) -> list[int]:
        v = self.valid_versions
        if v.high is None:
            raise SchemaError(f"{self.name}: validVersions must be bounded")
        return list(range(v.low, v.high + 1))

    @classmethod
    def parse(cls, text: str) -> MessageSchema:
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        try:
            doc = json.loads(body)
        except json.JSONDecodeError as e:
            raise SchemaError(f"not a JSON message definition: {e}") from None
        for k in ("apiKey", "type", "name", "validVersions", "fields"):
            if k not in doc:
                raise SchemaError(f"message definition without {k!r}")
        if doc["type"] not in ("request", "response"):
            raise SchemaError(f"{doc['name']}: type must be request or response")
        common = {s["name"]: s for s in doc.get("commonStructs", ())}
        return cls(int(doc["apiKey"]), doc["type"], doc["name"],
                   parse_versions(doc["validVersions"]), parse_versions(doc.get("flexibleVersions")),
                   tuple(doc["fields"]), common)


# ------------------------------------------------------------------------------ class generation


def _default(spec: dict[str, Any], kafka_type: str, nullable: bool) -> Any:
    """The field's declared default as a Python value, or MISSING."""
    if "default" not in spec:
        return dataclasses.MISSING
    raw = spec["default"]
    if isinstance(raw, str) and raw == "null":
        if not nullable:
            raise SchemaError(f"field {spec['name']}: default null but not nullable")
        return None
    if kafka_type == "bool":
        return raw if isinstance(raw, bool) else str(raw).lower() == "true"
    if kafka_type.startswith(("int", "uint")):
        return int(raw)
    if kafka_type == "float64":
        return float(raw)
    if kafka_type == "string":
        return str(raw)
    raise SchemaError(f"field {spec['name']}: no default supported for type {kafka_type}")


class _Builder:
    def __init__(self, schema: MessageSchema, version: int) -> None:
        self.schema = schema
        self.version = version
        self.flexible = version in schema.flexible_versions
        self.kind = schema.kind
        self._structs: dict[str, type[Any]] = {}

    def _namespace(self, entity_type: Any) -> dict[str, Any]:
        if self.kind == "request":
            header: Any = RequestHeaderV2 if self.flexible else RequestHeaderV1
        else:
            header = ResponseHeaderV1 if self.flexible else ResponseHeaderV0
        return {"__type__": entity_type, "__version__": self.version,
                "__flexible__": self.flexible, "__api_key__": self.schema.api_key,
                "__header_schema__": header,
                "__doc__": f"{self.schema.name} v{self.version} (groupcoord extension API "
                           f"{self.schema.api_key})."}

    def _struct(self, type_name: str, spec: dict[str, Any]) -> type[Any]:
        fields = spec.get("fields")
        if fields is None:
            common = self.schema.common_structs.get(type_name)
            if common is None:
                raise SchemaError(f"{self.schema.name}: unknown struct type {type_name!r}")
            fields = common["fields"]
        key = type_name
        cls = self._structs.get(key)
        if cls is None:
            cls = self._structs[key] = self.make(type_name, fields, EntityType.nested)
        return cls

    def make(self, name: str, fields: Any, entity_type: Any) -> type[Any]:
        spec_list = self.field_specs(name, fields)
        return dataclasses.make_dataclass(name, spec_list, namespace=self._namespace(entity_type),
                                          frozen=True, slots=True, kw_only=True)

    def field_specs(self, name: str, fields: Any,
                    tags: set[int] | None = None) -> list[tuple[str, Any, Any]]:
        """(name, type, field) of each field of ``fields`` present at this version."""
        spec_list: list[tuple[str, Any, Any]] = []
        tags = set() if tags is None else tags
        for f in fields:
            if self.version not in parse_versions(f.get("versions")):
                continue
            fname = snake_case(f["name"])
            ftype = f["type"]
            nullable = self.version in parse_versions(f.get("nullableVersions"))
            tagged = self.version in parse_versions(f.get("taggedVersions"))
            if tagged and not self.flexible:
                raise SchemaError(f"{name}.{f['name']}: tagged field in a non-flexible version")
            metadata: dict[str, Any] = {}
            if tagged:
                tag = int(f["tag"])
                if tag in tags:
                    raise SchemaError(f"{name}: tag {tag} used twice")
                tags.add(tag)
                metadata["tag"] = tag
            is_array = ftype.startswith("[]")
            inner = ftype[2:] if is_array else ftype
            if inner in _PRIMITIVES:
                py: Any = _PRIMITIVES[inner]
                metadata["kafka_type"] = inner
                default = _default(f, inner, nullable) if not is_array else (
                    None if f.get("default") == "null" else dataclasses.MISSING)
            else:
                py = self._struct(inner, f)
                default = None if f.get("default") == "null" else dataclasses.MISSING
            if is_array:
                py = tuple[py, ...]
            if nullable:
                py = py | None
            if tagged and default is dataclasses.MISSING:
                raise SchemaError(f"{name}.{f['name']}: a tagged field needs a default")
            kw: dict[str, Any] = {"metadata": metadata} if metadata else {}
            if default is not dataclasses.MISSING:
                kw["default"] = default
            spec_list.append((fname, py, dataclasses.field(**kw)))
        return spec_list


def entity_class(schema: MessageSchema, version: int) -> type[Any]:
    """A kio-compatible entity class for ``schema`` at ``version``."""
    if version not in schema.valid_versions:
        raise SchemaError(f"{schema.name} has no version {version}")
    b = _Builder(schema, version)
    entity_type = EntityType.request if schema.kind == "request" else EntityType.response
    return b.make(schema.name, schema.fields, entity_type)


# ------------------------------------------------------------------------------ the bundled schemas


def load_schema_text() -> dict[str, str]:
    """File name -> text of every bundled schema file."""
    root = resources.files("groupcoord.protocol") / "schemas"
    return {p.name: p.read_text() for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".json")}


@cache
def _bundled_schemas() -> dict[tuple[int, str], MessageSchema]:
    out: dict[tuple[int, str], MessageSchema] = {}
    lo, hi = EXTENSION_KEY_RANGE
    for fname, text in load_schema_text().items():
        s = MessageSchema.parse(text)
        if s.api_key > hi or s.api_key < 0:
            raise SchemaError(f"{fname}: API key {s.api_key} outside the extension block {lo}-{hi}")
        if fname != f"{s.name}.json":
            raise SchemaError(f"{fname}: holds {s.name}")
        if (s.api_key, s.kind) in out:
            raise SchemaError(f"{fname}: a second {s.kind} schema for API {s.api_key}")
        out[(s.api_key, s.kind)] = s
    return out


def extension_schemas() -> dict[tuple[int, str], MessageSchema]:
    """(api key, "request" | "response") -> schema, for every bundled extension API schema."""
    lo, hi = EXTENSION_KEY_RANGE
    return {k: s for k, s in _bundled_schemas().items() if lo <= k[0] <= hi}


def override_schemas() -> dict[tuple[int, str], MessageSchema]:
    """(api key, kind) -> schema, for every bundled file extending an upstream API."""
    return {k: s for k, s in _bundled_schemas().items() if k[0] < EXTENSION_KEY_RANGE[0]}


@cache
def extension_class(api_key: int, version: int, kind: str) -> type[Any] | None:
    """The entity class of an extension API's request or response, or of an upstream API a
    schema file extends (:func:`override_class`); None if there is none."""
    schema = extension_schemas().get((api_key, kind))
    if schema is None:
        return override_class(api_key, version, kind)
    if version not in schema.valid_versions:
        return None
    return entity_class(schema, version)


def _kio_name(name: str, kio_names: set[str]) -> str | None:
    s = snake_case(name)
    for candidate in (s, s.removesuffix("_ms")):
        if candidate in kio_names:
            return candidate
    return None


@cache
def override_class(api_key: int, version: int, kind: str) -> type[Any] | None:
    """kio's class of upstream API ``api_key`` extended with the tagged fields of our schema
    file for it (see the module doc); None if no file extends that API at that version."""
    schema = override_schemas().get((api_key, kind))
    if schema is None or version not in schema.valid_versions:
        return None
    load = load_request_schema if kind == "request" else load_response_schema
    base: type[Any] = load(api_key, version)
    base_fields = dataclasses.fields(base)
    kio_names = [f.name for f in base_fields]
    present = [f for f in schema.fields if version in parse_versions(f.get("versions"))]
    tagged = [f for f in present if version in parse_versions(f.get("taggedVersions"))]
    plain = [f for f in present if f not in tagged]
    names = [_kio_name(f["name"], set(kio_names)) for f in plain]
    if names != kio_names:
        raise SchemaError(f"{schema.name} v{version}: the untagged fields "
                          f"{[f['name'] for f in plain]} are not kio's {kio_names}")
    tags = {int(f.metadata["tag"]) for f in base_fields if "tag" in f.metadata}
    specs = _Builder(schema, version).field_specs(schema.name, tagged, tags)
    return dataclasses.make_dataclass(
        base.__name__, specs, bases=(base,), frozen=True, slots=True, kw_only=True,
        namespace={"__module__": __name__,
                   "__doc__": f"{schema.name} v{version}: kio's class plus groupcoord's "
                              f"tagged fields {[f['name'] for f in tagged]}."})


def extension_versions() -> dict[int, tuple[int, int]]:
    """API key -> (min, max) valid versions of every extension API (request and response agree)."""
    out: dict[int, tuple[int, int]] = {}
    for (key, _kind), s in sorted(extension_schemas().items()):
        vs = s.versions
        rng = (vs[0], vs[-1])
        if out.setdefault(key, rng) != rng:
            raise SchemaError(f"API {key}: request and response versions differ")
    return out

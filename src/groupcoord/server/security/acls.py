"""ACLs as Kafka has them: resource patterns, access control entries, filters, and their store.

The model is Apache Kafka's ``org.apache.kafka.common.acl`` / ``resource`` packages, with the
same wire values (the CreateAcls / DescribeAcls / DeleteAcls schemas carry them as int8):

- :class:`ResourceType` TOPIC, GROUP, CLUSTER (the resources this broker has), plus
  TRANSACTIONAL_ID, DELEGATION_TOKEN and USER so that ACLs naming them can be stored and
  listed as Kafka does (nothing here checks them: there are no transactions, tokens or quotas);
  ANY is a filter value only.
- :class:`PatternType` LITERAL (the name, or ``*`` for every resource of the type) and PREFIXED
  (every name starting with it); ANY and MATCH are filter values only: ANY matches every
  pattern, MATCH matches the patterns that would apply to a resource of exactly that name
  (the literal name, the literal ``*``, and every prefix of it).
- :class:`AclOperation` and :class:`PermissionType` (ALLOW / DENY); a principal is
  ``Type:Name`` (``User:*`` matches every user) and a host an IP address or ``*``.

A binding is a :class:`ResourcePattern` plus an :class:`AccessControlEntry`;
:class:`AclBindingFilter` selects bindings for DescribeAcls and DeleteAcls with Kafka's
``AclBindingFilter.matches`` semantics (None = any name / principal / host).

:class:`AclStore` keeps the bindings (a set: adding one twice keeps one, as Kafka does), indexed
by resource for the authorizer, and, given a path, saves them to ``acls.json`` in the data
directory after each change: written to a temporary file, fsynced and renamed over the old one
(the way ``topics.json`` is written), so a crash leaves the old set or the new one, never half.
A JSON file rather than records of the coordinator's log: ACLs are broker state like the topic
registry, not group state, and they change rarely.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "CLUSTER_NAME", "WILDCARD", "WILDCARD_PRINCIPAL", "AccessControlEntry", "AclBinding",
    "AclBindingFilter", "AclError", "AclOperation", "AclStore", "PatternType", "PermissionType",
    "ResourcePattern", "ResourceType", "parse_enum", "validate_binding",
]

#: The one name of the CLUSTER resource (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"
#: A literal resource name, or a host, meaning "every one".
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ACL_FILE = "acls.json"

_E = TypeVar("_E", bound=IntEnum)


class AclError(ValueError):
    """A binding or filter that cannot be used (answered INVALID_REQUEST on the wire)."""


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def parse_enum(cls: type[_E], text: str) -> _E:
    """``cls`` member named ``text``, as kafka-acls spells it or as the enum does: case, ``_``
    and ``-`` ignored (``Read``, ``DescribeConfigs``, ``describe_configs``, ``IDEMPOTENT_WRITE``).
    AclError naming the choices otherwise."""
    want = text.replace("_", "").replace("-", "").upper()
    for member in cls:
        if member.name.replace("_", "") == want:
            return member
    choices = ", ".join(mb.name for mb in cls if mb.name not in ("UNKNOWN", "ANY", "MATCH"))
    raise AclError(f"unknown {cls.__name__} {text!r}; expected one of {choices}")


def _principal_ok(principal: str) -> bool:
    kind, sep, name = principal.partition(":")
    return bool(sep and kind and name)


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this (stored) pattern applies to the resource ``(resource_type, name)``."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def to_json(self) -> dict[str, Any]:
        p, e = self.pattern, self.entry
        return {"resource_type": p.resource_type.name, "name": p.name,
                "pattern_type": p.pattern_type.name, "principal": e.principal, "host": e.host,
                "operation": e.operation.name, "permission": e.permission.name}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AclBinding:
        return cls(ResourcePattern(ResourceType[d["resource_type"]], str(d["name"]),
                                   PatternType[d["pattern_type"]]),
                   AccessControlEntry(str(d["principal"]), str(d["host"]),
                                      AclOperation[d["operation"]],
                                      PermissionType[d["permission"]]))


def validate_binding(b: AclBinding) -> None:
    """Refuse what Kafka's controller refuses in CreateAcls (``AclControlManager``): filter-only
    values (ANY, MATCH, UNKNOWN) in a binding, an empty resource name, a principal not of the
    form ``Type:Name``, an empty host, and a CLUSTER resource not named ``kafka-cluster``."""
    p, e = b.pattern, b.entry
    if p.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise AclError(f"Invalid resource type {p.resource_type.name} for an ACL")
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(f"Invalid pattern type {p.pattern_type.name} for an ACL: LITERAL or "
                       f"PREFIXED")
    if e.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise AclError(f"Invalid operation {e.operation.name} for an ACL")
    if e.permission in (PermissionType.ANY, PermissionType.UNKNOWN):
        raise AclError(f"Invalid permission type {e.permission.name} for an ACL: ALLOW or DENY")
    if not p.name:
        raise AclError("Resource name should not be empty")
    if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
        raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not _principal_ok(e.principal):
        raise AclError(f"Could not parse principal {e.principal!r}: expected Type:Name, "
                       f"e.g. User:alice")
    if not e.host:
        raise AclError("Host should not be empty: an IP address or *")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: None matches any name, principal or host; ANY matches any
    resource type, pattern type, operation or permission; pattern type MATCH matches the
    patterns that apply to the resource named (see the module docstring)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def validate(self) -> None:
        for field, value in (("resource type", self.resource_type),
                             ("pattern type", self.pattern_type), ("operation", self.operation),
                             ("permission type", self.permission)):
            if value.name == "UNKNOWN":
                raise AclError(f"Invalid {field} UNKNOWN in an ACL filter")

    def matches(self, b: AclBinding) -> bool:
        p, e = b.pattern, b.entry
        if self.resource_type != ResourceType.ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.name is not None and not p.matches(p.resource_type, self.name):
                return False
        else:
            if self.pattern_type != PatternType.ANY and self.pattern_type != p.pattern_type:
                return False
            if self.name is not None and self.name != p.name:
                return False
        if self.principal is not None and self.principal != e.principal:
            return False
        if self.host is not None and self.host != e.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != e.operation:
            return False
        return self.permission == PermissionType.ANY or self.permission == e.permission


class AclStore:
    """The bindings, in memory, read from ``path`` when given and saved to it after each
    change unless ``persist`` is false (``--storage memory``: the ACLs a data directory holds
    are read once at start and nothing is written, as the SCRAM credentials are)."""

    def __init__(self, path: Path | None = None, *, persist: bool = True) -> None:
        self.path = path
        self.persist = persist
        self._bindings: dict[AclBinding, None] = {}
        #: Bumped on every change (caches of authorization decisions key on it).
        self.generation = 0
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        if path is not None and path.exists():
            self._load(path)

    @classmethod
    def in_dir(cls, data_dir: Path, *, persist: bool = True) -> AclStore:
        return cls(data_dir / ACL_FILE, persist=persist)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or not isinstance(data.get("acls"), list):
                raise ValueError('expected {"acls": [...]}')
            bindings = [AclBinding.from_json(d) for d in data["acls"]]
            for b in bindings:
                validate_binding(b)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"cannot read ACLs from {path}: {e}") from None
        self._bindings = dict.fromkeys(bindings)
        self._reindex()

    def _save(self) -> None:
        if self.path is None or not self.persist:
            return
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump({"version": 1, "acls": [b.to_json() for b in self._bindings]}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _reindex(self) -> None:
        self.generation += 1
        self._literal = {}
        self._prefixed = {}
        for b in self._bindings:
            p = b.pattern
            if p.pattern_type == PatternType.LITERAL:
                self._literal.setdefault((p.resource_type, p.name), []).append(b)
            else:
                self._prefixed.setdefault(p.resource_type, []).append(b)

    def __len__(self) -> int:
        return len(self._bindings)

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(list(self._bindings))

    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Add valid bindings (validate each first: :func:`validate_binding`) and save."""
        new = [b for b in bindings if b not in self._bindings]
        if not new:
            return
        before = dict(self._bindings)
        self._bindings.update(dict.fromkeys(new))
        try:
            self._save()
        except OSError:
            self._bindings = before
            raise
        self._reindex()

    def remove(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding]]:
        """Delete every binding some filter matches and save; the matches of each filter."""
        matched = [[b for b in self._bindings if f.matches(b)] for f in filters]
        gone = {b for ms in matched for b in ms}
        if gone:
            before = dict(self._bindings)
            self._bindings = {b: None for b in self._bindings if b not in gone}
            try:
                self._save()
            except OSError:
                self._bindings = before
                raise
            self._reindex()
        return matched

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self._bindings if f.matches(b)]

    def for_resource(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The bindings whose pattern applies to ``(resource_type, name)``: literal ``name``,
        literal ``*`` and every prefixed pattern ``name`` starts with."""
        out = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out.extend(self._literal.get((resource_type, WILDCARD), ()))
        out.extend(b for b in self._prefixed.get(resource_type, ())
                   if name.startswith(b.pattern.name))
        return out

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        return [b for b in self._bindings if b.pattern.resource_type == resource_type]

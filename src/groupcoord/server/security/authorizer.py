"""The authorization decision: may this principal, from this host, do this to this resource?

Apache Kafka's ``StandardAuthorizer`` (``metadata`` module, ``StandardAuthorizerData``) and the
``Authorizer`` interface's ``authorizeByResourceType``, with the same semantics:

1. A principal listed in ``super.users`` (semicolon-separated ``Type:Name``) is allowed
   everything, whatever the ACLs say.
2. The ACLs that apply are those whose pattern matches the resource (literal name, literal
   ``*``, or a prefix of the name; ``acls.AclStore.for_resource``) and whose principal is the
   request's or ``User:*`` and whose host is the client's address or ``*``.
3. **DENY wins**: a matching DENY entry for the operation (or for ALL) refuses. Only the exact
   operation or ALL is denied: a DENY of READ does not deny DESCRIBE.
4. Otherwise a matching ALLOW entry for the operation or ALL allows; and the implied operations:
   DESCRIBE is allowed by ALLOW READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALLOW
   ALTER_CONFIGS.
5. If no ACL at all applies to the resource (whoever it names), ``allow.everyone.if.no.acl.found``
   decides; else the request is refused.

``allow.everyone.if.no.acl.found`` defaults to false in Kafka. Here it defaults to **true only
when every listener of the server is PLAINTEXT bound to a loopback address** (127.0.0.0/8, ::1,
``localhost``): a development server on this machine keeps working with no ACLs, as it did
before ACLs existed; a server reachable from elsewhere, or one with authentication, refuses what
no ACL allows. Setting the property explicitly (``--config allow.everyone.if.no.acl.found=...``)
overrides the default either way. :func:`default_allow_everyone` takes the server's listeners as
``(security protocol, host)`` pairs (``KafkaServer.security_listeners``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.server.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclOperation,
    AclStore,
    PatternType,
    PermissionType,
    ResourceType,
)

__all__ = ["IMPLIES_DESCRIBE", "IMPLIES_DESCRIBE_CONFIGS", "SUPPORTED_OPERATIONS", "Authorizer",
           "default_allow_everyone", "entry_decision", "parse_super_users"]

Op = AclOperation

#: ALLOW of one of these allows DESCRIBE too (Kafka's ``IMPLIES_DESCRIBE``).
IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
#: ALLOW of one of these allows DESCRIBE_CONFIGS too.
IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})

#: The operations of each resource type that the ``authorized_operations`` fields report
#: (Kafka's ``AclEntry.supportedOperations``).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                           Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
}

#: A resource name that no literal name (other than ``*``) and no prefix matches.
_UNNAMED = "\x00"


def entry_decision(e: AccessControlEntry, principal: str, host: str,
                   op: AclOperation) -> PermissionType | None:
    """ALLOW or DENY if entry ``e`` decides ``op`` for ``principal`` from ``host``; None if it
    does not apply (Kafka's ``StandardAuthorizerData.findResult``)."""
    if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
        return None
    if e.host != WILDCARD and e.host != host:
        return None
    if e.operation != Op.ALL and e.operation != op:
        if e.permission != PermissionType.ALLOW:
            return None
        if op == Op.DESCRIBE and e.operation in IMPLIES_DESCRIBE:
            return PermissionType.ALLOW
        if op == Op.DESCRIBE_CONFIGS and e.operation in IMPLIES_DESCRIBE_CONFIGS:
            return PermissionType.ALLOW
        return None
    return e.permission


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by ``;`` (blanks around each ignored). Each must
    be ``Type:Name`` as Kafka's ``SecurityUtils.parseKafkaPrincipal`` requires (Kafka refuses
    to start otherwise): a one-line ValueError for an entry without a principal type, such as
    ``bob``, which would never match anyone."""
    out = []
    for entry in (value or "").split(";"):
        p = entry.strip()
        if not p:
            continue
        kind, sep, name = p.partition(":")
        if not sep or not kind.strip() or not name.strip():
            raise ValueError(f"config super.users: {p!r} is not a principal: expected "
                             f"principalType:principalName, e.g. User:{name or kind or p}")
        out.append(p)
    return frozenset(out)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_allow_everyone(listeners: Iterable[tuple[str, str]]) -> bool:
    """The default of ``allow.everyone.if.no.acl.found``: true only if every listener
    ``(security protocol, host)`` is PLAINTEXT on a loopback address (and there is one)."""
    ls = list(listeners)
    return bool(ls) and all(proto.upper() == "PLAINTEXT" and _is_loopback(host)
                            for proto, host in ls)


@dataclass
class Authorizer:
    store: AclStore = field(default_factory=AclStore)
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl: bool = True

    @classmethod
    def from_properties(cls, store: AclStore, properties: Mapping[str, str],
                        listeners: Iterable[tuple[str, str]]) -> Authorizer:
        """``super.users`` and ``allow.everyone.if.no.acl.found`` from the broker configs
        (ValueError for a value other than true / false), the latter's default from the
        listeners (:func:`default_allow_everyone`)."""
        raw = properties.get("allow.everyone.if.no.acl.found")
        if raw is None:
            allow = default_allow_everyone(listeners)
        elif raw.strip().lower() in ("true", "false"):
            allow = raw.strip().lower() == "true"
        else:
            raise ValueError(f"allow.everyone.if.no.acl.found must be true or false, got {raw!r}")
        return cls(store, parse_super_users(properties.get("super.users")), allow)

    #: Decisions remembered (:meth:`authorize`); past it the cache starts again empty.
    CACHE_SIZE: ClassVar[int] = 1 << 16

    def __post_init__(self) -> None:
        #: (principal, host, op, resource type, name) -> decision, valid for ``_cached_for``.
        self._cache: dict[tuple[str, str, AclOperation, ResourceType, str], bool] = {}
        self._cached_for: tuple[AclStore, int, bool] | None = None

    def authorize(self, principal: str, host: str, op: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """The decision (module doc). A decision is a function of the request's principal,
        host, operation and resource and of the ACLs and settings, so it is remembered: a
        client heartbeating its group asks the same question on every request. The cache
        holds for one generation of the ACL store (every change bumps it) and one
        ``allow.everyone.if.no.acl.found``: an ACL added or removed decides the next request."""
        if principal in self.super_users:
            return True
        store = self.store
        if not store:  # no ACLs at all (the hot path of a server without any)
            return self.allow_everyone_if_no_acl
        stamp = self._cached_for
        if (stamp is None or stamp[1] != store.generation or stamp[0] is not store
                or stamp[2] != self.allow_everyone_if_no_acl):
            self._cache.clear()
            self._cached_for = (store, store.generation, self.allow_everyone_if_no_acl)
        key = (principal, host, op, resource_type, name)
        decision = self._cache.get(key)
        if decision is None:
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            decision = self._cache[key] = self._decide(principal, host, op, resource_type, name)
        return decision

    def denied(self, principal: str, host: str, op: AclOperation, resource_type: ResourceType,
               names: Iterable[str]) -> list[str]:
        """The names among ``names`` :meth:`authorize` refuses, in their order: one decision
        for all when it cannot depend on the name (a super user; no ACLs at all), which is
        a join to 100 topics's every DESCRIBE check on a server without ACLs."""
        if principal in self.super_users:
            return []
        if not self.store:
            return [] if self.allow_everyone_if_no_acl else list(names)
        authorize = self.authorize
        return [n for n in names if not authorize(principal, host, op, resource_type, n)]

    def _decide(self, principal: str, host: str, op: AclOperation,
                resource_type: ResourceType, name: str) -> bool:
        """:meth:`authorize` with ACLs in the store, not cached."""
        acls = self.store.for_resource(resource_type, name)
        if not acls:
            return self.allow_everyone_if_no_acl
        allowed = False
        for b in acls:
            d = entry_decision(b.entry, principal, host, op)
            if d == PermissionType.DENY:
                return False
            if d == PermissionType.ALLOW:
                allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, op: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Whether ``op`` is allowed on at least one resource of the type (Kafka's
        ``authorizeByResourceType``, KIP-679, which InitProducerId uses: WRITE on some topic
        stands in for IDEMPOTENT_WRITE on the cluster). Allowed if a resource no ACL names
        would be; else if some ALLOW (op or ALL, this principal or ``User:*``, this host or
        ``*``) is not covered by a DENY: a literal name not denied literally or by a denied
        prefix of it, a prefix not denied by a denied prefix of it; a DENY on the literal
        ``*`` refuses all."""
        if self.authorize(principal, host, op, resource_type, _UNNAMED):
            return True

        def applies(e: AccessControlEntry, perm: PermissionType) -> bool:
            return (e.permission == perm and e.operation in (op, Op.ALL)
                    and e.principal in (principal, WILDCARD_PRINCIPAL)
                    and e.host in (host, WILDCARD))

        bindings = self.store.of_type(resource_type)
        denied_literal = {b.pattern.name for b in bindings
                          if b.pattern.pattern_type == PatternType.LITERAL
                          and applies(b.entry, PermissionType.DENY)}
        if WILDCARD in denied_literal:
            return False
        denied_prefixes = [b.pattern.name for b in bindings
                           if b.pattern.pattern_type == PatternType.PREFIXED
                           and applies(b.entry, PermissionType.DENY)]
        for b in bindings:
            if not applies(b.entry, PermissionType.ALLOW):
                continue
            name = b.pattern.name
            if any(name.startswith(p) for p in denied_prefixes):
                continue
            if b.pattern.pattern_type == PatternType.LITERAL and name in denied_literal:
                continue
            return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """The ``authorized_operations`` bit field of Metadata / DescribeGroups /
        ConsumerGroupDescribe: bit ``op`` set for each supported operation allowed."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits

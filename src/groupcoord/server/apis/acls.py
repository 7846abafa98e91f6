"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31) over the wire, as Kafka's admin
clients send them (``AdminClient.create_acls`` / ``describe_acls`` / ``delete_acls`` of
confluent-kafka, kafka-python's ``KafkaAdminClient``, ``kafka-acls.sh``).

As Kafka (``KafkaApis.handleCreateAcls`` and friends, ``AclControlManager``):

- every one of them requires ALTER on the CLUSTER (Describe: DESCRIBE on the CLUSTER, which
  ALTER implies); refused, CreateAcls answers CLUSTER_AUTHORIZATION_FAILED for each creation,
  DescribeAcls at the top level, DeleteAcls for each filter, and nothing changes;
- a creation that is not a valid binding (a filter-only value such as ANY or MATCH, an unknown
  int8, an empty name, a principal not ``Type:Name``, a CLUSTER not named ``kafka-cluster``)
  gets INVALID_REQUEST with the reason, the others of the request are created; creating a
  binding that exists already succeeds and keeps one;
- DescribeAcls with an invalid filter (an UNKNOWN value) answers INVALID_REQUEST; its
  resources are grouped by pattern; DeleteAcls answers per filter the bindings it deleted (a
  binding matched by several filters is reported under each).

The bindings are kept by :class:`AclStore` (durable in the data directory). A store that cannot
be written (disk full) answers UNKNOWN_SERVER_ERROR with the reason, and the set in memory is
left as it was.
"""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import ApiFamily, BrokerState
from groupcoord.server.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    validate_binding,
)

__all__ = ["AclApis", "binding_from_wire", "filter_from_wire"]

log = logging.getLogger(__name__)
E = ErrorCode
_E = TypeVar("_E", bound=IntEnum)


def _enum(cls: type[_E], value: int) -> _E:
    """The member of ``cls`` for an int8 off the wire; UNKNOWN for a value Kafka does not have
    (Kafka's ``fromCode`` does the same)."""
    try:
        return cls(int(value))
    except ValueError:
        return cls(0)


def binding_from_wire(c: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(_enum(ResourceType, c.resource_type), c.resource_name,
                        _enum(PatternType, getattr(c, "resource_pattern_type", 3))),
        AccessControlEntry(c.principal, c.host, _enum(AclOperation, c.operation),
                           _enum(PermissionType, c.permission_type)))


def filter_from_wire(f: Any) -> AclBindingFilter:
    return AclBindingFilter(
        _enum(ResourceType, f.resource_type_filter), f.resource_name_filter,
        _enum(PatternType, getattr(f, "pattern_type_filter", 3)), f.principal_filter,
        f.host_filter, _enum(AclOperation, f.operation), _enum(PermissionType, f.permission_type))


def _acl_fields(b: AclBinding) -> dict[str, Any]:
    return {"principal": b.entry.principal, "host": b.entry.host,
            "operation": int(b.entry.operation), "permission_type": int(b.entry.permission)}


class AclApis(ApiFamily):
    """The three handlers; ``handlers`` maps API key -> handler(body, ctx)."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {
            ApiKey.CREATE_ACLS: self.create_acls,
            ApiKey.DESCRIBE_ACLS: self.describe_acls,
            ApiKey.DELETE_ACLS: self.delete_acls,
        }

    def create_acls(self, body: Any, ctx: Any) -> Any:
        if not self._cluster_allowed(ctx, AclOperation.ALTER):
            return self._resp(ctx, throttle_time=0, results=[
                {"error_code": E.cluster_authorization_failed,
                 "error_message": "Not authorized to alter ACLs (ALTER on the CLUSTER)."}
                for _ in body.creations])
        results: list[dict[str, Any]] = []
        valid: list[AclBinding] = []
        for c in body.creations:
            b = binding_from_wire(c)
            try:
                validate_binding(b)
            except AclError as e:
                results.append({"error_code": E.invalid_request, "error_message": str(e)})
                continue
            valid.append(b)
            results.append({"error_code": 0, "error_message": None})
        try:
            self.authorizer.store.add(valid)
        except OSError as e:
            log.error("cannot save ACLs: %s", e)
            results = [r if r["error_code"] else
                       {"error_code": E.unknown_server_error,
                        "error_message": f"cannot save ACLs: {e}"} for r in results]
        return self._resp(ctx, throttle_time=0, results=results)

    def describe_acls(self, body: Any, ctx: Any) -> Any:
        if not self._cluster_allowed(ctx, AclOperation.DESCRIBE):
            return self._resp(ctx, throttle_time=0, error_code=E.cluster_authorization_failed,
                              error_message="Not authorized to describe ACLs (DESCRIBE on the "
                                            "CLUSTER).", resources=())
        f = filter_from_wire(body)
        try:
            f.validate()
        except AclError as e:
            return self._resp(ctx, throttle_time=0, error_code=E.invalid_request,
                              error_message=str(e), resources=())
        by_pattern: dict[ResourcePattern, list[AclBinding]] = {}
        for b in sorted(self.authorizer.store.describe(f)):
            by_pattern.setdefault(b.pattern, []).append(b)
        return self._resp(ctx, throttle_time=0, error_code=0, error_message=None, resources=[
            {"resource_type": int(p.resource_type), "resource_name": p.name,
             "pattern_type": int(p.pattern_type), "acls": [_acl_fields(b) for b in bs]}
            for p, bs in by_pattern.items()])

    def delete_acls(self, body: Any, ctx: Any) -> Any:
        if not self._cluster_allowed(ctx, AclOperation.ALTER):
            return self._resp(ctx, throttle_time=0, filter_results=[
                {"error_code": E.cluster_authorization_failed,
                 "error_message": "Not authorized to delete ACLs (ALTER on the CLUSTER).",
                 "matching_acls": ()} for _ in body.filters])
        filters: list[AclBindingFilter | None] = []
        errors: list[str | None] = []
        for raw in body.filters:
            f = filter_from_wire(raw)
            try:
                f.validate()
                filters.append(f)
                errors.append(None)
            except AclError as e:
                filters.append(None)
                errors.append(str(e))
        good = [f for f in filters if f is not None]
        try:
            matched = iter(self.authorizer.store.remove(good))
        except OSError as e:
            log.error("cannot save ACLs: %s", e)
            return self._resp(ctx, throttle_time=0, filter_results=[
                {"error_code": E.unknown_server_error, "error_message": f"cannot save ACLs: {e}",
                 "matching_acls": ()} for _ in body.filters])
        results: list[dict[str, Any]] = []
        for maybe, err in zip(filters, errors, strict=True):
            if maybe is None:
                results.append({"error_code": E.invalid_request, "error_message": err,
                                "matching_acls": ()})
                continue
            results.append({"error_code": 0, "error_message": None, "matching_acls": [
                {"error_code": 0, "error_message": None,
                 "resource_type": int(b.pattern.resource_type), "resource_name": b.pattern.name,
                 "pattern_type": int(b.pattern.pattern_type), **_acl_fields(b)}
                for b in next(matched)]})
        return self._resp(ctx, throttle_time=0, filter_results=results)

"""``groupcoord acls add|list|remove``: ACLs from the command line, shaped after ``kafka-acls.sh``.

::

    groupcoord acls add --allow-principal User:alice --operation Read --group g \\
        [--resource-pattern-type prefixed] [--bootstrap-server H:P | --data-dir D]
    groupcoord acls list [--topic T | --group G | --cluster] [--principal P] [--json]
    groupcoord acls remove --group g [--allow-principal User:alice --operation Read]

Resources: ``--topic``, ``--group``, ``--transactional-id`` (repeatable) and ``--cluster``.
Principals: ``--allow-principal`` / ``--deny-principal`` (repeatable) with ``--allow-host`` /
``--deny-host`` (default ``*``); ``--operation`` (repeatable, default All), spelled as
kafka-acls does (``Read``, ``DescribeConfigs``, ``IdempotentWrite``) or as the enum
(``DESCRIBE_CONFIGS``). ``add`` makes every combination of resource, principal, host and
operation; an operation the resource type does not have is refused, as kafka-acls does.
``remove`` with principals removes exactly those bindings, without removes every ACL of the
resources named; ``list`` shows the ACLs of the resources named (all without one), and
``--resource-pattern-type any|match`` widens it as Kafka's filters do.

Two ways to reach the ACLs:

- **online** (default, ``--bootstrap-server``, default 127.0.0.1:9092): CreateAcls,
  DescribeAcls and DeleteAcls to the running server, as the principal of the connection
  (ALTER on the CLUSTER needed, or a ``super.users`` principal); ``--client-id`` sets the
  client id.
- **offline** (``--data-dir D``): ``acls.json`` of a *stopped* server's data directory, for
  setting ACLs before the first start. It takes the data directory's lock
  (``groupcoord.lock``, held by a running server with the SQLite log) and refuses if the
  directory is in use: a running server would not see the change and would overwrite it.

Every error is one line (``error: ...``), exit status 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from groupcoord.commands import command
from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.client_config import add_command_config
from groupcoord.protocol.errors import error_name
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclOperation,
    AclStore,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    parse_enum,
    validate_binding,
)
from groupcoord.server.security.authorizer import SUPPORTED_OPERATIONS

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = "groupcoord.lock"  # the SQLite log's (storage/sqlite.py)


# ------------------------------------------------------------------------------ arguments


def _resources(ns: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    out = [(ResourceType.TOPIC, t) for t in ns.topic or ()]
    out += [(ResourceType.GROUP, g) for g in ns.group or ()]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in ns.transactional_id or ()]
    if ns.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _pattern_type(ns: argparse.Namespace, default: PatternType) -> PatternType:
    return default if ns.resource_pattern_type is None else parse_enum(PatternType,
                                                                      ns.resource_pattern_type)


def _entries(ns: argparse.Namespace) -> list[tuple[str, str, AclOperation, PermissionType]]:
    ops = [parse_enum(AclOperation, o) for o in ns.operation or ["All"]]
    out = []
    for perm, principals, hosts in ((PermissionType.ALLOW, ns.allow_principal, ns.allow_host),
                                    (PermissionType.DENY, ns.deny_principal, ns.deny_host)):
        for p, h, op in itertools.product(principals or (), hosts or ["*"], ops):
            out.append((p, h, op, perm))
    return out


def _bindings(ns: argparse.Namespace) -> list[AclBinding]:
    resources = _resources(ns)
    if not resources:
        raise AclError("name a resource: --topic, --group, --transactional-id or --cluster")
    entries = _entries(ns)
    if not entries:
        raise AclError("name a principal: --allow-principal or --deny-principal")
    pattern = _pattern_type(ns, PatternType.LITERAL)
    out = []
    for (rtype, name), (principal, host, op, perm) in itertools.product(resources, entries):
        supported = SUPPORTED_OPERATIONS.get(rtype)
        if supported is not None and op != AclOperation.ALL and op not in supported:
            raise AclError(f"ResourceType {rtype.name} only supports operations "
                           f"{', '.join(o.name for o in (AclOperation.ALL, *supported))}")
        b = AclBinding(ResourcePattern(rtype, name, pattern),
                       AccessControlEntry(principal, host, op, perm))
        validate_binding(b)
        out.append(b)
    return out


def _filters(ns: argparse.Namespace, *, listing: bool) -> list[AclBindingFilter]:
    """``list``/``remove`` filters: exact bindings when principals are given (remove), else
    every ACL of each resource named (or of every resource, for list)."""
    resources = _resources(ns)
    if not listing and not resources:
        raise AclError("name a resource to remove ACLs of: --topic, --group, "
                       "--transactional-id or --cluster")
    pattern = _pattern_type(ns, PatternType.ANY if listing and not resources
                            else PatternType.LITERAL)
    entries = _entries(ns)
    if entries and not listing:
        return [AclBindingFilter(b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type,
                                 b.entry.principal, b.entry.host, b.entry.operation,
                                 b.entry.permission) for b in _bindings(ns)]
    targets: list[tuple[ResourceType, str | None]] = list(resources) or [(ResourceType.ANY, None)]
    return [AclBindingFilter(rtype, name, pattern, principal=getattr(ns, "principal", None))
            for rtype, name in targets]


# ------------------------------------------------------------------------------ backends


@contextlib.contextmanager
def _offline(data_dir: Path) -> Iterator[AclStore]:
    if not data_dir.is_dir():
        raise AclError(f"--data-dir {data_dir} is not a directory")
    lock = open(data_dir / LOCK_NAME, "ab")  # noqa: SIM115 - closed below
    try:
        if fcntl is not None:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise AclError(f"the data directory {data_dir} is in use by a running server: "
                               f"change its ACLs with --bootstrap-server") from None
        try:
            yield AclStore.in_dir(data_dir)
        except ValueError as e:  # a damaged acls.json
            raise AclError(str(e)) from None
    finally:
        lock.close()


def _wire(b: AclBinding) -> dict[str, Any]:
    return {"resource_type": int(b.pattern.resource_type), "resource_name": b.pattern.name,
            "resource_pattern_type": int(b.pattern.pattern_type), "principal": b.entry.principal,
            "host": b.entry.host, "operation": int(b.entry.operation),
            "permission_type": int(b.entry.permission)}


def _wire_filter(f: AclBindingFilter) -> dict[str, Any]:
    return {"resource_type_filter": int(f.resource_type), "resource_name_filter": f.name,
            "pattern_type_filter": int(f.pattern_type), "principal_filter": f.principal,
            "host_filter": f.host, "operation": int(f.operation),
            "permission_type": int(f.permission)}


def _from_wire(rtype: int, name: str, pattern: int, a: Any) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(rtype), name, PatternType(pattern)),
                      AccessControlEntry(a.principal, a.host, AclOperation(a.operation),
                                         PermissionType(a.permission_type)))


def _check(code: int, message: str | None) -> None:
    if code:
        raise AclError(f"{error_name(code)}: {message or ''}".rstrip(": "))


def _add(ns: argparse.Namespace) -> list[AclBinding]:
    bindings = _bindings(ns)
    if ns.data_dir:
        with _offline(Path(ns.data_dir)) as store:
            store.add(bindings)
        return bindings
    with KafkaClient(ns.bootstrap_server, client_id=ns.client_id, **ns.command_config) as c:
        r = c.call(ApiKey.CREATE_ACLS, 3, creations=[_wire(b) for b in bindings])
    for res in r.results:
        _check(int(res.error_code), res.error_message)
    return bindings


def _list(ns: argparse.Namespace) -> list[AclBinding]:
    filters = _filters(ns, listing=True)
    found: dict[AclBinding, None] = {}
    if ns.data_dir:
        with _offline(Path(ns.data_dir)) as store:
            for f in filters:
                found.update(dict.fromkeys(store.describe(f)))
        return sorted(found)
    with KafkaClient(ns.bootstrap_server, client_id=ns.client_id, **ns.command_config) as c:
        for f in filters:
            r = c.call(ApiKey.DESCRIBE_ACLS, 3, _wire_filter(f))
            _check(int(r.error_code), r.error_message)
            for res in r.resources:
                for a in res.acls:
                    found[_from_wire(int(res.resource_type), res.resource_name,
                                     int(res.pattern_type), a)] = None
    return sorted(found)


def _remove(ns: argparse.Namespace) -> list[AclBinding]:
    filters = _filters(ns, listing=False)
    if ns.data_dir:
        with _offline(Path(ns.data_dir)) as store:
            return sorted({b for ms in store.remove(filters) for b in ms})
    with KafkaClient(ns.bootstrap_server, client_id=ns.client_id, **ns.command_config) as c:
        r = c.call(ApiKey.DELETE_ACLS, 3, filters=[_wire_filter(f) for f in filters])
    gone: set[AclBinding] = set()
    for fr in r.filter_results:
        _check(int(fr.error_code), fr.error_message)
        for m in fr.matching_acls:
            gone.add(_from_wire(int(m.resource_type), m.resource_name, int(m.pattern_type), m))
    return sorted(gone)


# ------------------------------------------------------------------------------ output


def _text(bindings: list[AclBinding], title: str) -> str:
    by: dict[ResourcePattern, list[AclBinding]] = {}
    for b in bindings:
        by.setdefault(b.pattern, []).append(b)
    lines = []
    for p, bs in by.items():
        lines.append(f"{title} for resource `ResourcePattern(resourceType={p.resource_type.name}, "
                     f"name={p.name}, patternType={p.pattern_type.name})`:")
        lines += [f" \t(principal={b.entry.principal}, host={b.entry.host}, "
                  f"operation={b.entry.operation.name}, permissionType={b.entry.permission.name})"
                  for b in bs]
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _run(ns: argparse.Namespace) -> int:
    actions = {"add": (_add, "Adding ACLs"), "list": (_list, "Current ACLs"),
               "remove": (_remove, "Removed ACLs")}
    fn, title = actions[ns.action]
    try:
        bindings = fn(ns)
    except (AclError, KafkaClientError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps([b.to_json() for b in bindings], indent=2))
    elif bindings:
        print(_text(bindings, title))
    elif ns.action != "add":
        print("No ACLs matched." if ns.action == "remove" else "No ACLs.")
    return 0


@command("acls", "add, list and remove ACLs (like kafka-acls), online or in a data directory")
def _acls_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["add", "list", "remove"])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--bootstrap-server", default="127.0.0.1:9092",
                       help="the running server (default 127.0.0.1:9092)")
    where.add_argument("--data-dir", default=None,
                       help="a stopped server's data directory (acls.json), instead")
    p.add_argument("--client-id", default="groupcoord-cli")
    add_command_config(p)
    p.add_argument("--topic", action="append", metavar="NAME")
    p.add_argument("--group", action="append", metavar="NAME")
    p.add_argument("--transactional-id", action="append", metavar="ID")
    p.add_argument("--cluster", action="store_true", help="the CLUSTER resource")
    p.add_argument("--resource-pattern-type", default=None,
                   help="literal (default) or prefixed; list/remove also any or match")
    p.add_argument("--allow-principal", action="append", metavar="TYPE:NAME")
    p.add_argument("--deny-principal", action="append", metavar="TYPE:NAME")
    p.add_argument("--allow-host", action="append", metavar="HOST")
    p.add_argument("--deny-host", action="append", metavar="HOST")
    p.add_argument("--operation", action="append", metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                        "DescribeConfigs, AlterConfigs, IdempotentWrite, All (default All)")
    p.add_argument("--principal", default=None, help="list: only this principal's ACLs")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_run)


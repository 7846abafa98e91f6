"""CLI subcommands of the server layer (``serve``, ``groups``, ``topics``), registered with
``groupcoord.cli``.

- ``groupcoord serve --host H --port P --data-dir DIR [--storage sqlite|memory] [--shards N]
  [--brokers N [--racks R0,R1,...]] [--listener NAME://HOST:PORT ...] [--config key=value ...]
  [--metrics-port PORT]``: run the
  broker (``--brokers N``: N brokers in one process, ``server/brokers.py``, and a second line
  ``brokers: HOST:PORT,...``); prints exactly ``listening on HOST:PORT`` (flushed) once it is
  ready (every coordinator shard loaded; the
  socket answers COORDINATOR_LOAD_IN_PROGRESS before that), then, with ``--metrics-port``,
  ``metrics on http://HOST:PORT/metrics`` (Prometheus text format; ``0`` picks a free port);
  SIGINT / SIGTERM stop it cleanly. With listeners (``--listener``, repeatable, or ``--config
  listeners=...``; ``server/security/``, docs/security.md) it prints one ``listening on
  NAME://HOST:PORT`` line per listener instead; a listener open beyond loopback without
  authentication is one WARNING log line on stderr (naming it, what its anonymous clients may
  do under ``allow.everyone.if.no.acl.found``, and what to do). A record log that cannot be opened or
  loaded (corrupt or truncated database, a row that does not decode) exits with status 1 and
  the LogError message, naming the file, on stderr: ``error: cannot start: ...``, no
  traceback. Log compaction:
  ``--config log.compaction.interval.ms=N`` (default 300000, 0 = off) and
  ``--config log.cleaner.delete.retention.ms=N`` (how long tombstones are kept, default 24 h).
  ``--config`` keys are Kafka's broker config names, checked at start (``server/settings.py``,
  docs/configuration.md): an unknown key or a bad value exits with status 2 and one line naming
  it (and the closest known key); Kafka configs without effect here are accepted with a warning.
  ``--durability normal|full|off``: the sqlite record log's durability (``storage/sqlite.py``).
  Every start-up error is one line on stderr: status 2 for bad usage (a port outside 0..65535,
  bad ``--racks``/``--brokers``, a ``--data-dir`` that is not a directory), 1 for a failure
  (a port in use, a data directory that cannot be written, bad data in it).
- ``groupcoord topics create|list|add-partitions|delete`` and ``groupcoord groups list|describe``
  (``--bootstrap-server``, ``--json``): thin Kafka-protocol clients over our own codec, shaped
  after ``kafka-topics.sh`` / ``kafka-consumer-groups.sh``. They talk to the bootstrap broker
  itself (groupcoord is a single node that coordinates every group). ``groups describe`` asks
  ConsumerGroupDescribe first and DescribeGroups for a group that is not a consumer group
  (classic groups, and groups with committed offsets only, listed as Empty classic groups).
  A consumer group is ``"type": "consumer"``; during an online migration each member
  says which protocol it uses (``"protocol": "classic"`` or ``"consumer"``).
  A share group (KIP-932) is ``"type": "share"``, described with ShareGroupDescribe
  (``server/share_groups_cli.py``): its members and the members sharing each partition.
  A connect group (the Connect draft) is described with ConnectGroupDescribe: its workers with url,
  epoch, state, the connectors and tasks each runs and its target.
- ``groupcoord connectors create NAME --tasks N --group G``, ``connectors update NAME --tasks N
  --group G``, ``connectors delete NAME --group G``, ``connectors list --group G``
  (``--bootstrap-server``, ``--json``): the connectors-and-tasks configuration of a connect
  group, changed with the ConnectGroupConfig admin request (API 1005, ``docs/wire.md``) and read
  with ConnectGroupDescribe (1006), which also says which worker runs each connector and task.
  ``groupcoord connect connectors ...`` is the same command (:func:`add_connectors_commands`).
  A classic Connect group keeps no configuration: its workers read the one of their config group
  (``{group}-configs``, ``protocol/connect_protocol.py``'s ``default_config_group``); a change aimed at the
  classic group itself fails with GROUP_ID_NOT_FOUND and a hint naming that group.

CLI output goes to stdout with ``print`` (the command's product); diagnostics use logging.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.commands import (
    UsageError,
    command,
    int_at_least,
)
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.client_config import add_admin_options, guard_client_errors
from groupcoord.protocol.errors import CoordinatorError, error_name
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.share_groups_cli import describe_share, share_lines

log = logging.getLogger(__name__)


def _parse_props(items: list[str] | None) -> dict[str, str]:
    props: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config expects key=value, got {item!r}")
        props[key.strip()] = value.strip()
    return props


# ------------------------------------------------------------------------------ serve


def _port(text: str) -> int:
    """An argparse ``type``: a TCP port, 0..65535 (0: a free one)."""
    value = int_at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be within 0..65535, got {value}")
    return value


def _racks(text: str) -> list[str]:
    racks = [r.strip() for r in text.split(",")]
    if any(not r for r in racks):
        raise argparse.ArgumentTypeError(f"expected one non-empty rack name per broker, "
                                         f"comma-separated, got {text!r}")
    return racks


def _check_data_dir(path: Path) -> str | None:
    """Why ``path`` cannot be the data directory (created if missing), else None."""
    if path.exists() and not path.is_dir():
        return f"--data-dir {path} is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a parent is a file
        return f"--data-dir {path}: a parent of it is not a directory"
    except OSError as e:
        return f"--data-dir {path}: cannot create it: {e.strerror or e}"
    probe = path / ".groupcoord-write-test"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return f"--data-dir {path} is not writable: {e.strerror or e}"
    return None


def _run_serve(ns: argparse.Namespace) -> int:
    from groupcoord.server.app import KafkaServer
    from groupcoord.server.gc_tuning import tune_for_server
    from groupcoord.storage.log import LogError

    tune_for_server()  # this process is the server: collect cycles less often

    data_dir = Path(ns.data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        print(f"error: --data-dir {data_dir} is not a directory", file=sys.stderr)
        return 2
    if ns.listener and ns.port is not None:
        print("error: give either --listener or --port (--host/--port make the PLAINTEXT "
              "listener when no --listener is given)", file=sys.stderr)
        return 2
    try:
        server = KafkaServer(host=ns.host, port=9092 if ns.port is None else ns.port,
                             data_dir=data_dir, listeners=ns.listener,
                             storage=ns.storage, shards=ns.shards,
                             properties=_parse_props(ns.config), advertised_host=ns.advertised_host,
                             metrics_port=ns.metrics_port, brokers=ns.brokers,
                             racks=ns.racks, durability=ns.durability)
    except (CoordinatorError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # --storage memory writes nothing: no data directory is made (one that exists is read for
    # its SCRAM users and ACLs)
    problem = None if server.storage == "memory" else _check_data_dir(data_dir)
    if problem is not None:
        print(f"error: cannot start: {problem}", file=sys.stderr)
        return 1

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            host, port = await server.start()
        except (OSError, LogError, ValueError) as e:
            print(f"error: cannot start: {_start_error(e, ns)}", file=sys.stderr)
            await server.stop()
            return 1
        if ns.listener or server.properties.get("listeners"):  # one line per listener
            for spec in server.security.listeners:
                print(f"listening on {spec.url(server.bound[spec.name][0])}", flush=True)
        else:
            print(f"listening on {host}:{port}", flush=True)
        if server.brokerset is not None:
            print(f"brokers: {server.bootstrap_servers}", flush=True)
        if server.metrics_server is not None:
            print(f"metrics on http://{server.metrics_server.host}:{server.metrics_server.port}"
                  f"/metrics", flush=True)
        try:
            await stop.wait()
        finally:
            log.info("stopping")
            await server.stop()
        return 0

    return asyncio.run(main())


def _start_error(e: BaseException, ns: argparse.Namespace) -> str:
    """One line for a failed start (an OSError's text can span lines or lack the address)."""
    import errno
    import os
    import socket

    if isinstance(e, socket.gaierror):
        return f"cannot resolve --host {ns.host}: {e.strerror or e}"
    # the listener's own address (KafkaServer._listen sets it), else --host/--port
    where = (e.filename if isinstance(e, OSError) and isinstance(e.filename, str)
             else f"{ns.host}:{ns.port}")
    if isinstance(e, OSError) and e.errno == errno.EADDRINUSE:
        return f"{where} is in use (another server on that port?)"
    if isinstance(e, OSError) and e.errno in (errno.EADDRNOTAVAIL, errno.EACCES):
        return f"cannot listen on {where}: {os.strerror(e.errno).lower()}"
    text = " ".join(str(e).split())
    return text or type(e).__name__


@command("serve", "run the Kafka-protocol broker with the group coordinator")
def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=None,
                   help="port of the PLAINTEXT listener on --host (default 9092; 0 picks a free "
                        "port) when no --listener is given")
    p.add_argument("--listener", action="append", metavar="NAME://HOST:PORT",
                   help="a listener (repeatable), Kafka's names: PLAINTEXT, SSL, SASL_PLAINTEXT, "
                        "SASL_SSL (or a name of listener.security.protocol.map); port 0 picks a "
                        "free port; replaces --host/--port (docs/security.md)")
    p.add_argument("--advertised-host", default=None,
                   help="host name given to clients in Metadata/FindCoordinator (default: --host)")
    p.add_argument("--data-dir", default="./groupcoord-data")
    p.add_argument("--storage", choices=["sqlite", "memory"], default=None,
                   help="coordinator record log (default: sqlite when available)")
    p.add_argument("--durability", choices=["normal", "full", "off"], default=None,
                   help="the sqlite record log's durability (docs/durability-and-metrics.md): "
                        "normal (default; survives a process crash), full (an fsync per "
                        "write; survives an OS crash), off (tests)")
    p.add_argument("--shards", type=int_at_least(1), default=None,
                   help="coordinator shards, the __consumer_offsets partitions (default 1; 50 "
                        "with --brokers)")
    p.add_argument("--brokers", type=int_at_least(1), default=1,
                   help="brokers served by this process, node ids 0..N-1, one port each (from "
                        "--port up; all free ports with --port 0); leaders and coordinators "
                        "spread over them")
    p.add_argument("--racks", type=_racks, default=None, metavar="R0,R1,...",
                   help="with --brokers: each broker's rack, comma-separated")
    p.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="broker config, Kafka names (repeatable), the keys and their defaults "
                        "in docs/configuration.md; e.g. max.connections, "
                        "connections.max.idle.ms, log.compaction.interval.ms; an unknown key "
                        "is refused")
    p.add_argument("--metrics-port", type=_port, default=None,
                   help="serve Prometheus metrics on this port (0 picks a free port)")
    p.set_defaults(func=_run_serve)


# ------------------------------------------------------------------------------ helpers


def _client(ns: argparse.Namespace) -> KafkaClient:
    return KafkaClient(ns.bootstrap_server, **ns.command_config)


def _emit(ns: argparse.Namespace, data: Any, text: str) -> None:
    if ns.json:
        print(json.dumps(data, indent=2, sort_keys=False))
    elif text:
        print(text)


def _table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


# ------------------------------------------------------------------------------ topics


def _topics_create(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{
            "name": ns.topic, "num_partitions": ns.partitions, "replication_factor": -1,
            "assignments": (), "configs": [{"name": k, "value": v}
                                          for k, v in _parse_props(ns.config).items()]}],
                   timeout=30_000, validate_only=False)
    t = r.topics[0]
    code = int(t.error_code)
    data = {"name": t.name, "topic_id": str(t.topic_id) if t.topic_id else None,
            "partitions": int(t.num_partitions), "error": error_name(code) if code else None,
            "error_message": t.error_message}
    if code:
        if ns.json:
            _emit(ns, data, "")
        print(f"error: {error_name(code)}: {t.error_message or ''}", file=sys.stderr)
        return 1
    _emit(ns, data, f"Created topic {t.name} ({t.topic_id}) with {int(t.num_partitions)} partitions.")
    return 0


def _topics_list(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        r = c.call(ApiKey.METADATA, 12, wanted_min=1, topics=None,
                   allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    topics = sorted(({"name": t.name, "topic_id": str(t.topic_id) if t.topic_id else None,
                      "partitions": len(t.partitions)} for t in r.topics if not t.error_code),
                    key=lambda t: str(t["name"]))
    rows = [["TOPIC", "TOPIC-ID", "PARTITIONS"]] + [
        [str(t["name"]), str(t["topic_id"]), str(t["partitions"])] for t in topics]
    _emit(ns, topics, _table(rows) if topics else "(no topics)")
    return 0


def _topics_add_partitions(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        r = c.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
            {"name": ns.topic, "count": ns.partitions, "assignments": None}],
            timeout=30_000, validate_only=False)
    res = r.results[0]
    code = int(res.error_code)
    data = {"name": res.name, "partitions": ns.partitions,
            "error": error_name(code) if code else None, "error_message": res.error_message}
    if code:
        if ns.json:
            _emit(ns, data, "")
        print(f"error: {error_name(code)}: {res.error_message or ''}", file=sys.stderr)
        return 1
    _emit(ns, data, f"Topic {res.name} now has {ns.partitions} partitions.")
    return 0


def _topics_delete(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        r = c.call(ApiKey.DELETE_TOPICS, 5, topic_names=[ns.topic], timeout=30_000)
    res = r.responses[0]
    code = int(res.error_code)
    data = {"name": res.name, "error": error_name(code) if code else None}
    if code:
        if ns.json:
            _emit(ns, data, "")
        print(f"error: {error_name(code)}", file=sys.stderr)
        return 1
    _emit(ns, data, f"Deleted topic {res.name}.")
    return 0


@command("topics", "create, list, delete topics and add partitions (like kafka-topics)")
def _topics_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="topics_command", required=True)
    c = sub.add_parser("create", help="create a topic")
    add_admin_options(c)
    c.add_argument("topic")
    c.add_argument("--partitions", type=int, default=1)
    c.add_argument("--config", action="append", metavar="KEY=VALUE")
    c.set_defaults(func=guard_client_errors(_topics_create))
    li = sub.add_parser("list", help="list topics")
    add_admin_options(li)
    li.set_defaults(func=guard_client_errors(_topics_list))
    a = sub.add_parser("add-partitions", help="raise a topic's partition count to --partitions")
    add_admin_options(a)
    a.add_argument("topic")
    a.add_argument("--partitions", type=int, required=True, help="the new total count")
    a.set_defaults(func=guard_client_errors(_topics_add_partitions))
    d = sub.add_parser("delete", help="delete a topic")
    add_admin_options(d)
    d.add_argument("topic")
    d.set_defaults(func=guard_client_errors(_topics_delete))


# ------------------------------------------------------------------------------ groups


def _groups_list(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        r = c.call(ApiKey.LIST_GROUPS, 5, states_filter=ns.state or (), types_filter=ns.type or ())
    if r.error_code:
        print(f"error: {error_name(int(r.error_code))}", file=sys.stderr)
        return 1
    groups = [{"group_id": g.group_id, "type": g.group_type, "state": g.group_state,
               "protocol_type": g.protocol_type} for g in r.groups]
    rows = [["GROUP", "TYPE", "STATE"]] + [[g["group_id"], g["type"], g["state"]] for g in groups]
    _emit(ns, groups, _table(rows) if groups else "(no groups)")
    return 0


def _classic_assignment(raw: bytes) -> dict[str, list[int]]:
    """A ConsumerProtocolAssignment (any version) as ``{topic: partitions}``; empty if it does
    not decode."""
    from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment

    try:
        return decode_assignment(raw).partitions
    except ConsumerProtocolError:  # not a consumer assignment we can read: show none
        return {}


def _classic_connect_runs(metadata: bytes, raw: bytes) -> dict[str, Any]:
    """What a classic Connect worker runs after its last SyncGroup: the allocation its JoinGroup
    metadata reported (v1+; none under eager), minus the assignment's revoked items, plus the
    newly assigned ones (the whole set under eager); plus its url. Empty if it does not decode."""
    from groupcoord.protocol import connect_protocol as cp

    try:
        meta = cp.decode_worker_metadata(metadata)
        a = cp.decode_assignment(raw) if raw else None
    except cp.ConnectProtocolError:
        return {"url": None, "connectors": [], "tasks": []}
    connectors = list(meta.current.connectors) if meta.version > cp.CONNECT_PROTOCOL_V0 else []
    tasks = list(meta.current.tasks) if meta.version > cp.CONNECT_PROTOCOL_V0 else []
    if a is not None:
        connectors = [x for x in connectors if x not in a.revoked_connectors] + [
            x for x in a.connectors if x not in connectors]
        tasks = [t for t in tasks if t not in a.revoked_tasks] + [
            t for t in a.tasks if t not in tasks]
    return {"url": meta.url, "connectors": sorted(connectors),
            "tasks": [f"{t.connector}-{t.task}" for t in sorted(tasks)]}


def _describe_classic(c: KafkaClient, group_id: str, group: dict[str, Any],
                      owner: dict[tuple[str, int], dict[str, Any]]) -> bool:
    """Fill ``group`` from DescribeGroups; False if no classic group has that id."""
    d = c.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group_id],
               include_authorized_operations=False).groups[0]
    if d.error_code or d.group_state == "Dead":
        return False
    members = []
    for mb in d.members:
        assigned = (_classic_assignment(bytes(mb.member_assignment))
                    if d.protocol_type == "consumer" else {})
        info = {"member_id": mb.member_id, "instance_id": mb.group_instance_id,
                "client_id": mb.client_id, "client_host": mb.client_host, "assignment": assigned}
        if d.protocol_type == "connect":  # classic Connect workers: which one runs what
            info["connect"] = _classic_connect_runs(bytes(mb.member_metadata),
                                                    bytes(mb.member_assignment))
        members.append(info)
        for topic, ps in assigned.items():
            for p in ps:
                owner[(topic, p)] = info
    group.update(type="classic", state=d.group_state, protocol_type=d.protocol_type,
                 assignor=d.protocol_data or None, members=members)
    return True


def _tasks_text(cat: Any) -> list[str]:
    return [f"{t.connector}-{int(t.task)}" for t in cat.tasks]


def _connect_group(d: Any) -> dict[str, Any]:
    """A ConnectGroupDescribe entry as plain data."""
    def items(cat: Any) -> dict[str, list[str]]:
        return {"connectors": list(cat.connectors), "tasks": _tasks_text(cat)}

    return {"group_id": d.group_id, "type": "connect", "state": d.group_state,
            "group_epoch": int(d.group_epoch), "assignment_epoch": int(d.assignment_epoch),
            "assignor": d.assignor_name or None, "assigner": d.assigner,
            "assignment_error": int(d.assignment_error),
            "scheduled_rebalance_delay_ms": int(d.scheduled_rebalance_delay_ms),
            "config_offset": int(d.config_offset),
            "connectors": [{"name": cc.name, "tasks": int(cc.task_count)} for cc in d.connectors],
            "members": [{"member_id": mb.member_id, "instance_id": mb.instance_id, "url": mb.url,
                         "member_epoch": int(mb.member_epoch), "state": mb.state,
                         "client_id": mb.client_id, "client_host": mb.client_host,
                         "assignment": items(mb.assignment),
                         "pending_revocation": items(mb.pending_revocation),
                         "target_assignment": items(mb.target_assignment)}
                        for mb in d.members]}


def _describe_connect(c: KafkaClient, group_id: str, group: dict[str, Any]) -> bool:
    """Fill ``group`` from ConnectGroupDescribe; False if no connect group has that id (or the
    broker does not serve the API)."""
    if ApiKey.CONNECT_GROUP_DESCRIBE not in c.api_versions():
        return False
    d = c.connect_group_describe([group_id]).groups[0]
    if d.error_code:
        return False
    group.update(_connect_group(d))
    return True


#: ConsumerGroupDescribe v1 MemberType: the protocol a consumer group's member speaks.
_MEMBER_TYPES = {0: "classic", 1: "consumer"}


def _describe_one(c: KafkaClient, group_id: str) -> dict[str, Any]:
    d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group_id],
               include_authorized_operations=False).groups[0]
    group: dict[str, Any] = {"group_id": group_id}
    owner: dict[tuple[str, int], dict[str, Any]] = {}
    if d.error_code == ErrorCode.group_id_not_found and describe_share(c, group_id, group):
        return group  # KIP-932: members and the partitions they share, no committed offsets
    if d.error_code == ErrorCode.group_id_not_found and (
            _describe_connect(c, group_id, group)
            or _describe_classic(c, group_id, group, owner)):
        pass
    elif d.error_code:
        group.update(error=error_name(int(d.error_code)), error_message=d.error_message, members=[])
    else:
        members = []
        for mb in d.members:
            assigned = {tp.topic_name: sorted(int(p) for p in tp.partitions)
                        for tp in mb.assignment.topic_partitions}
            target = {tp.topic_name: sorted(int(p) for p in tp.partitions)
                      for tp in mb.target_assignment.topic_partitions}
            info = {"member_id": mb.member_id, "instance_id": mb.instance_id,
                    "client_id": mb.client_id, "client_host": mb.client_host,
                    "member_epoch": int(mb.member_epoch),
                    "subscribed_topic_names": list(mb.subscribed_topic_names),
                    "subscribed_topic_regex": mb.subscribed_topic_regex,
                    "assignment": assigned, "target_assignment": target,
                    # ConsumerGroupDescribe v1 MemberType: classic members of a migration
                    "protocol": _MEMBER_TYPES.get(int(getattr(mb, "member_type", -1)))}
            members.append(info)
            for topic, ps in assigned.items():
                for p in ps:
                    owner[(topic, p)] = info
        group.update(type="consumer", state=d.group_state, group_epoch=int(d.group_epoch),
                     assignment_epoch=int(d.assignment_epoch), assignor=d.assignor_name,
                     members=members)
    # committed offsets (admin read: no member id) and log end offsets for the lag
    of = c.call(ApiKey.OFFSET_FETCH, 8, wanted_min=8, groups=[
        {"group_id": group_id, "topics": None}], require_stable=False).groups[0]
    committed = {(t.name, int(p.partition_index)): int(p.committed_offset)
                 for t in of.topics for p in t.partitions if int(p.committed_offset) >= 0}
    keys = sorted(set(committed) | set(owner))
    ends: dict[tuple[str, int], int] = {}
    if keys:
        by_topic: dict[str, list[int]] = {}
        for t, p in keys:
            by_topic.setdefault(t, []).append(p)
        lo = c.call(ApiKey.LIST_OFFSETS, 7, wanted_min=1, replica_id=-1, isolation_level=0, topics=[
            {"name": t, "partitions": [{"partition_index": p, "timestamp": -1} for p in ps]}
            for t, ps in by_topic.items()])
        for t in lo.topics:
            for p in t.partitions:
                if not p.error_code:
                    ends[(t.name, int(p.partition_index))] = int(p.offset)
    partitions = []
    for t, p in keys:
        cur = committed.get((t, p))
        end = ends.get((t, p))
        m = owner.get((t, p))
        partitions.append({"topic": t, "partition": p, "current_offset": cur, "log_end_offset": end,
                           "lag": None if cur is None or end is None else max(end - cur, 0),
                           "member_id": m["member_id"] if m else None,
                           "client_id": m["client_id"] if m else None,
                           "host": m["client_host"] if m else None})
    group["partitions"] = partitions
    return group


def _fmt(v: Any) -> str:
    return "-" if v is None else str(v)


def _groups_describe(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        groups = [_describe_one(c, g) for g in ns.group]
    lines = []
    for g in groups:
        if "error" in g:
            lines.append(f"Group {g['group_id']}: {g['error']} {g.get('error_message') or ''}".rstrip())
        elif g.get("type") == "classic":
            lines.append(f"Group {g['group_id']}: classic, state {g['state']}, protocol type "
                         f"{g['protocol_type'] or '-'}, assignor {_fmt(g['assignor'])}, "
                         f"{len(g['members'])} members")
            workers = [["WORKER", "URL", "CONNECTORS", "TASKS"]] + [
                [mb["member_id"], _fmt(mb["connect"]["url"]),
                 ",".join(mb["connect"]["connectors"]) or "-",
                 ",".join(mb["connect"]["tasks"]) or "-"]
                for mb in g["members"] if "connect" in mb]
            if len(workers) > 1:
                lines.append(_table(workers))
        elif g.get("type") == "connect":
            lines.extend(_connect_lines(g))
        elif g.get("type") == "share":
            lines.extend(share_lines(g, _table))
            lines.append("")
            continue
        else:
            classic = sum(1 for mb in g["members"] if mb.get("protocol") == "classic")
            lines.append(f"Group {g['group_id']}: state {g['state']}, epoch {g['group_epoch']}, "
                         f"assignment epoch {g['assignment_epoch']}, assignor {g['assignor']}, "
                         f"{len(g['members'])} members"
                         + (f" ({classic} using the classic protocol)" if classic else ""))
        rows = [["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID",
                 "CLIENT-ID", "HOST"]]
        for p in g["partitions"]:
            rows.append([p["topic"], str(p["partition"]), _fmt(p["current_offset"]),
                         _fmt(p["log_end_offset"]), _fmt(p["lag"]), _fmt(p["member_id"]),
                         _fmt(p["client_id"]), _fmt(p["host"])])
        if len(rows) > 1:
            lines.append(_table(rows))
        lines.append("")
    _emit(ns, groups, "\n".join(lines).rstrip())
    # a group the coordinator does not know and that has no committed offsets does not exist
    return 1 if any("error" in g and not g["partitions"] for g in groups) else 0


def _connect_lines(g: dict[str, Any]) -> list[str]:
    lines = [f"Group {g['group_id']}: connect, state {g['state']}, epoch {g['group_epoch']}, "
             f"assignment epoch {g['assignment_epoch']}, assignor {_fmt(g['assignor'])}, "
             f"config offset {g['config_offset']}, {len(g['connectors'])} connectors, "
             f"{len(g['members'])} workers"]
    rows = [["WORKER", "URL", "EPOCH", "STATE", "CONNECTORS", "TASKS", "TARGET"]]
    for mb in g["members"]:
        a, t = mb["assignment"], mb["target_assignment"]
        rows.append([mb["member_id"], mb["url"] or "-", str(mb["member_epoch"]), mb["state"],
                     ",".join(a["connectors"]) or "-", ",".join(a["tasks"]) or "-",
                     ",".join(t["connectors"] + t["tasks"]) or "-"])
    if len(rows) > 1:
        lines.append(_table(rows))
    return lines


@command("groups", "list and describe groups: consumer, classic, connect, share (like kafka-consumer-groups)")
def _groups_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="groups_command", required=True)
    li = sub.add_parser("list", help="list groups")
    add_admin_options(li)
    li.add_argument("--state", action="append", help="only groups in this state (repeatable)")
    li.add_argument("--type", action="append", help="only groups of this type (repeatable)")
    li.set_defaults(func=guard_client_errors(_groups_list))
    d = sub.add_parser("describe", help="members, assignments, committed offsets and lag")
    add_admin_options(d)
    d.add_argument("group", nargs="+")
    d.set_defaults(func=guard_client_errors(_groups_describe))


# ------------------------------------------------------------------------------ connectors

CONFIG_CREATE, CONFIG_UPDATE, CONFIG_DELETE = 0, 1, 2


def _connectors_change(ns: argparse.Namespace, op: int, verb: str) -> int:
    tasks = int(getattr(ns, "tasks", 0) or 0)
    with _client(ns) as c:
        r = c.connect_group_config(ns.group, [{"op": op, "connector": ns.name, "task_count": tasks}])
    code = int(r.error_code)
    data = {"group_id": ns.group, "connector": ns.name,
            "tasks": tasks if op != CONFIG_DELETE else None,
            "group_epoch": int(r.group_epoch), "config_offset": int(r.config_offset),
            "error": error_name(code) if code else None, "error_message": r.error_message}
    if code:
        if ns.json:
            _emit(ns, data, "")
        print(f"error: {error_name(code)}: {r.error_message or ''}", file=sys.stderr)
        if code == ErrorCode.group_id_not_found and "classic group" in (r.error_message or ""):
            from groupcoord.protocol.connect_protocol import default_config_group

            print(f"hint: classic Connect workers of {ns.group} read their connectors from the "
                  f"connect group {default_config_group(ns.group)} (their --config-group)",
                  file=sys.stderr)
        return 1
    what = f"connector {ns.name}" + (f" with {tasks} tasks" if op != CONFIG_DELETE else "")
    _emit(ns, data, f"{verb} {what} in group {ns.group} (config offset {int(r.config_offset)}).")
    return 0


def _connectors_list(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        d = c.connect_group_describe([ns.group]).groups[0]
    if d.error_code:
        print(f"error: {error_name(int(d.error_code))}: {d.error_message or ''}", file=sys.stderr)
        return 1
    g = _connect_group(d)
    runs: dict[str, str] = {}  # connector or "name-task" -> worker running it
    for mb in g["members"]:
        for name in mb["assignment"]["connectors"] + mb["assignment"]["tasks"]:
            runs[name] = mb["member_id"]
    connectors = [{"name": cc["name"], "tasks": cc["tasks"], "worker": runs.get(cc["name"]),
                   "task_workers": {str(i): runs.get(f"{cc['name']}-{i}")
                                    for i in range(cc["tasks"])}}
                  for cc in g["connectors"]]
    rows = [["CONNECTOR", "TASKS", "WORKER", "TASK-WORKERS"]]
    for cc in connectors:
        rows.append([cc["name"], str(cc["tasks"]), _fmt(cc["worker"]),
                     " ".join(f"{i}:{_fmt(w)}" for i, w in cc["task_workers"].items()) or "-"])
    _emit(ns, connectors, _table(rows) if connectors else "(no connectors)")
    return 0


def add_connectors_commands(p: argparse.ArgumentParser) -> None:
    """The ``create|update|delete|list`` subcommands on ``p``: ``groupcoord connectors`` and its
    alias ``groupcoord connect connectors`` (``client/connect/cli.py``) are both this."""
    sub = p.add_subparsers(dest="connectors_command", required=True)
    for name, op, verb, help_ in (("create", CONFIG_CREATE, "Created", "create a connector"),
                                  ("update", CONFIG_UPDATE, "Updated", "change its task count"),
                                  ("delete", CONFIG_DELETE, "Deleted", "delete a connector")):
        c = sub.add_parser(name, help=help_)
        add_admin_options(c)
        c.add_argument("name")
        c.add_argument("--group", required=True, help="the connect group")
        if op != CONFIG_DELETE:
            c.add_argument("--tasks", type=int, required=True, help="number of tasks")
        c.set_defaults(func=guard_client_errors(
            lambda ns, op=op, verb=verb: _connectors_change(ns, op, verb)))
    li = sub.add_parser("list", help="the connectors, their task counts and who runs them")
    add_admin_options(li)
    li.add_argument("--group", required=True, help="the connect group")
    li.set_defaults(func=guard_client_errors(_connectors_list))


@command("connectors", "create, update, delete and list the connectors of a connect group")
def _connectors_args(p: argparse.ArgumentParser) -> None:
    add_connectors_commands(p)

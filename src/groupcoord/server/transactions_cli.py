"""``groupcoord transactions list|describe`` (KIP-664; shaped after Kafka's
``kafka-transactions.sh``): the transactions a broker coordinates, over the wire with
ListTransactions and DescribeTransactions (``--bootstrap-server``, ``--json``; the
``--command-config`` of the other admin commands for TLS / SASL).

- ``transactions list [--state S ...] [--producer-id N ...] [--duration-ms N] [--pattern RE]``:
  transactional id, producer id and state of each transaction matching every filter given
  (states by Kafka's names: Empty, Ongoing, PrepareCommit, ...; ``--duration-ms``: open for at
  least that long, KIP-994; ``--pattern``: a regular expression the whole id matches). A state
  that is not one is named on stderr.
- ``transactions describe ID ...``: producer id and epoch, state, timeout, when the current
  transaction started and how long it has run, its partitions. An id the broker does not know,
  or may not show, is an error line naming the error; exit status 1 if any.

- ``transactions find-hanging --topic T [--partition P] [--max-transaction-timeout MIN]``: the
  open transactions of the partitions (DescribeProducers at each leader) idle at least that
  long (default 15 minutes) that no transaction coordinator has in an open transaction
  (ListTransactions by producer id, DescribeTransactions), as ``kafka-transactions.sh
  find-hanging``.
- ``transactions abort --topic T --partition P --start-offset O``: the abort marker of the open
  transaction starting at O, with its producer's epoch and coordinator epoch
  (DescribeProducers), by WriteTxnMarkers at the leader, as ``kafka-transactions.sh abort``.

Exit status 0, 1 when the broker answers an error or cannot be reached (one line on stderr).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from groupcoord.commands import command, int_at_least
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.client_config import add_admin_options, guard_client_errors
from groupcoord.protocol.errors import error_name
from groupcoord.protocol.versions import ApiKey

__all__: list[str] = []


def _client(ns: argparse.Namespace) -> KafkaClient:
    return KafkaClient(ns.bootstrap_server, **ns.command_config)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def _emit(ns: argparse.Namespace, data: Any, text: str) -> None:
    import json

    print(json.dumps(data, indent=2) if ns.json else text)


def _list(ns: argparse.Namespace) -> int:
    if ns.pattern is not None:
        try:
            re.compile(ns.pattern)
        except re.error as e:
            print(f"error: --pattern {ns.pattern!r} is not a regular expression: {e}",
                  file=sys.stderr)
            return 2
    fields: dict[str, Any] = {"state_filters": tuple(ns.state or ()),
                              "producer_id_filters": tuple(ns.producer_id or ())}
    wanted_min = 0
    if ns.duration_ms is not None:
        fields["duration_filter"] = ns.duration_ms
        wanted_min = 1
    if ns.pattern is not None:
        fields["transactional_id_pattern"] = ns.pattern
        wanted_min = 2
    with _client(ns) as c:
        r = c.call(ApiKey.LIST_TRANSACTIONS, 2, wanted_min=wanted_min, **fields)
    code = int(r.error_code)
    if code:
        print(f"error: {error_name(code)}", file=sys.stderr)
        return 1
    for s in r.unknown_state_filters:
        print(f"warning: {s!r} is not a transaction state", file=sys.stderr)
    found = sorted(({"transactional_id": t.transactional_id, "producer_id": int(t.producer_id),
                     "state": t.transaction_state} for t in r.transaction_states),
                   key=lambda t: str(t["transactional_id"]))
    rows = [["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]] + [
        [str(t["transactional_id"]), str(t["producer_id"]), str(t["state"])] for t in found]
    _emit(ns, found, _table(rows) if found else "(no transactions)")
    return 0


def _describe(ns: argparse.Namespace) -> int:
    with _client(ns) as c:
        found = c.describe_transactions(ns.transactional_id)
    now = int(time.time() * 1000)
    out: list[dict[str, Any]] = []
    failed = False
    for d in found:
        if d.error_code:
            failed = True
            print(f"error: {d.transactional_id}: {error_name(d.error_code)}", file=sys.stderr)
            continue
        running = d.state in ("Ongoing", "PrepareCommit", "PrepareAbort")
        out.append({
            "transactional_id": d.transactional_id, "producer_id": d.producer_id,
            "producer_epoch": d.producer_epoch, "state": d.state, "timeout_ms": d.timeout_ms,
            "start_time_ms": d.start_time_ms if d.start_time_ms >= 0 else None,
            "duration_ms": now - d.start_time_ms if running and d.start_time_ms >= 0 else None,
            "partitions": [f"{t}-{p}" for t, ps in d.topics for p in sorted(ps)]})
    rows = [["TRANSACTIONAL-ID", "PRODUCER-ID", "EPOCH", "STATE", "TIMEOUT-MS", "START-MS",
             "DURATION-MS", "PARTITIONS"]] + [
        [str(t["transactional_id"]), str(t["producer_id"]), str(t["producer_epoch"]),
         str(t["state"]), str(t["timeout_ms"]),
         "-" if t["start_time_ms"] is None else str(t["start_time_ms"]),
         "-" if t["duration_ms"] is None else str(t["duration_ms"]),
         ",".join(str(p) for p in t["partitions"]) or "-"] for t in out]
    if out or ns.json:
        _emit(ns, out, _table(rows))
    return 1 if failed else 0


def _leaders(ns: argparse.Namespace, c: KafkaClient, topic: str,
             partition: int | None) -> dict[int, str] | str:
    """Partition -> its leader's ``host:port`` (Metadata), or the error naming why not."""
    r = c.call(ApiKey.METADATA, 12, wanted_min=1, topics=[{"name": topic, "topic_id": None}],
               allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    t = r.topics[0]
    if t.error_code:
        return f"{topic}: {error_name(int(t.error_code))}"
    brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in r.brokers}
    out = {int(p.partition_index): brokers.get(int(p.leader_id), ns.bootstrap_server)
           for p in t.partitions if partition is None or int(p.partition_index) == partition}
    return out or f"{topic}-{partition}: UNKNOWN_TOPIC_OR_PARTITION"


def _producers(ns: argparse.Namespace, topic: str,
               partition: int | None) -> list[dict[str, Any]] | str:
    """Every producer of the partitions (DescribeProducers at each leader), with the partition."""
    with _client(ns) as c:
        leaders = _leaders(ns, c, topic, partition)
    if isinstance(leaders, str):
        return leaders
    found: list[dict[str, Any]] = []
    for p, address in sorted(leaders.items()):
        with KafkaClient(address, **ns.command_config) as c:
            r = c.call(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
                {"name": topic, "partition_indexes": [p]}])
        part = r.topics[0].partitions[0]
        if part.error_code:
            return f"{topic}-{p}: {error_name(int(part.error_code))}"
        found += [{"topic": topic, "partition": p, "producer_id": int(x.producer_id),
                   "producer_epoch": int(x.producer_epoch),
                   "coordinator_epoch": int(x.coordinator_epoch),
                   "start_offset": int(x.current_txn_start_offset),
                   "last_timestamp": int(x.last_timestamp), "leader": address}
                  for x in part.active_producers]
    return found


def _tracked(ns: argparse.Namespace, producer_id: int, topic: str, partition: int) -> bool:
    """Whether a transaction coordinator has ``producer_id``'s open transaction with the
    partition (ListTransactions by producer id, then DescribeTransactions)."""
    with _client(ns) as c:
        r = c.call(ApiKey.LIST_TRANSACTIONS, 1, producer_id_filters=(producer_id,),
                   state_filters=())
        ids = [t.transactional_id for t in r.transaction_states]
        described = c.describe_transactions(ids) if ids else []
    return any(d.state in ("Ongoing", "PrepareCommit", "PrepareAbort")
               and any(t == topic and partition in ps for t, ps in d.topics)
               for d in described if not d.error_code)


def _find_hanging(ns: argparse.Namespace) -> int:
    found = _producers(ns, ns.topic, ns.partition)
    if isinstance(found, str):
        print(f"error: {found}", file=sys.stderr)
        return 1
    now = int(time.time() * 1000)
    limit = ns.max_transaction_timeout * 60_000
    hanging = [dict(x, duration_ms=now - x["last_timestamp"]) for x in found
               if x["start_offset"] >= 0 and now - x["last_timestamp"] >= limit
               and not _tracked(ns, x["producer_id"], x["topic"], x["partition"])]
    rows = [["TOPIC", "PARTITION", "PRODUCER-ID", "EPOCH", "COORDINATOR-EPOCH", "START-OFFSET",
             "LAST-TIMESTAMP", "DURATION-MS"]] + [
        [h["topic"], str(h["partition"]), str(h["producer_id"]), str(h["producer_epoch"]),
         str(h["coordinator_epoch"]), str(h["start_offset"]), str(h["last_timestamp"]),
         str(h["duration_ms"])] for h in hanging]
    _emit(ns, hanging, _table(rows) if hanging else "(no hanging transactions)")
    return 0


def _abort(ns: argparse.Namespace) -> int:
    found = _producers(ns, ns.topic, ns.partition)
    if isinstance(found, str):
        print(f"error: {found}", file=sys.stderr)
        return 1
    match = [x for x in found if x["start_offset"] == ns.start_offset]
    if not match:
        print(f"error: no open transaction starts at offset {ns.start_offset} of "
              f"{ns.topic}-{ns.partition}", file=sys.stderr)
        return 1
    x = match[0]
    with KafkaClient(x["leader"], **ns.command_config) as c:
        r = c.call(ApiKey.WRITE_TXN_MARKERS, 1, markers=[{
            "producer_id": x["producer_id"], "producer_epoch": x["producer_epoch"],
            "transaction_result": False, "coordinator_epoch": x["coordinator_epoch"],
            "topics": [{"name": ns.topic, "partition_indexes": [ns.partition]}]}])
    code = int(r.markers[0].topics[0].partitions[0].error_code)
    if code:
        print(f"error: {error_name(code)}", file=sys.stderr)
        return 1
    _emit(ns, {"aborted": x}, f"Aborted the transaction of producer {x['producer_id']} "
          f"(epoch {x['producer_epoch']}) starting at offset {ns.start_offset} of "
          f"{ns.topic}-{ns.partition}.")
    return 0


@command("transactions", "list, describe, find hanging and abort transactions")
def _args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="transactions_command", required=True)
    li = sub.add_parser("list", help="transactional ids, producer ids and states")
    add_admin_options(li)
    li.add_argument("--state", action="append", help="keep this state (repeatable)")
    li.add_argument("--producer-id", action="append", type=int_at_least(0),
                    help="keep this producer id (repeatable)")
    li.add_argument("--duration-ms", type=int_at_least(0),
                    help="keep transactions open at least this long")
    li.add_argument("--pattern", help="keep ids the regular expression matches whole")
    li.set_defaults(func=guard_client_errors(_list))
    d = sub.add_parser("describe", help="one transactional id's producer, state and partitions")
    add_admin_options(d)
    d.add_argument("transactional_id", nargs="+")
    d.set_defaults(func=guard_client_errors(_describe))
    f = sub.add_parser("find-hanging", help="open transactions on a topic's partitions that no "
                       "transaction coordinator tracks (DescribeProducers)")
    add_admin_options(f)
    f.add_argument("--topic", required=True)
    f.add_argument("--partition", type=int_at_least(0))
    f.add_argument("--max-transaction-timeout", type=int_at_least(0), default=15,
                   help="minutes a transaction must have been idle (default 15, Kafka's "
                        "transaction.max.timeout.ms)")
    f.set_defaults(func=guard_client_errors(_find_hanging))
    a = sub.add_parser("abort", help="write the abort marker of the open transaction starting "
                       "at an offset (WriteTxnMarkers at the partition's leader)")
    add_admin_options(a)
    a.add_argument("--topic", required=True)
    a.add_argument("--partition", type=int_at_least(0), required=True)
    a.add_argument("--start-offset", type=int_at_least(0), required=True)
    a.set_defaults(func=guard_client_errors(_abort))

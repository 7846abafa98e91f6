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

Exit status 0, 1 when the broker answers an error or cannot be reached (one line on stderr).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from groupcoord.commands import bootstrap_servers, command, int_at_least
from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.client_config import add_command_config
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


def _guard(fn: Any) -> Any:
    def run(ns: argparse.Namespace) -> int:
        try:
            return int(fn(ns))
        except KafkaClientError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return run


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", type=bootstrap_servers, default="127.0.0.1:9092")
    add_command_config(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


@command("transactions", "list and describe the transactions a broker coordinates")
def _args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="transactions_command", required=True)
    li = sub.add_parser("list", help="transactional ids, producer ids and states")
    _common(li)
    li.add_argument("--state", action="append", help="keep this state (repeatable)")
    li.add_argument("--producer-id", action="append", type=int_at_least(0),
                    help="keep this producer id (repeatable)")
    li.add_argument("--duration-ms", type=int_at_least(0),
                    help="keep transactions open at least this long")
    li.add_argument("--pattern", help="keep ids the regular expression matches whole")
    li.set_defaults(func=_guard(_list))
    d = sub.add_parser("describe", help="one transactional id's producer, state and partitions")
    _common(d)
    d.add_argument("transactional_id", nargs="+")
    d.set_defaults(func=_guard(_describe))

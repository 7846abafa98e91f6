"""``groupcoord control COMMAND ... --bootstrap-server H:P``: the control plane of a running
server from the command line (``server/control.py`` documents the commands; this sends the
GroupcoordControl extension request, API 1010).

- ``inject-error API ERROR [--count N] [--group G] [--client-id C] [--broker B]``
- ``add-latency MS [--api API] [--broker B] [--client-id C]``
- ``clear-faults``, ``faults``
- ``drop-connections (--client-id C | --all)``, ``connections``
- ``expire-session GROUP MEMBER``
- ``fail-next-append [--count N]``
- ``hold-rebalance GROUP``, ``release-rebalance GROUP``
- ``expire-transaction TRANSACTIONAL_ID``, ``move-transaction-coordinator TRANSACTIONAL_ID
  [--to BROKER]``
- ``move-coordinator GROUP [--to BROKER]``, ``broker-down BROKER``, ``broker-up BROKER``,
  ``brokers [--group G]`` (a server with ``--brokers N``)

Prints what the server did (``--json``: its JSON answer). Exit status 1 with ``error: ...`` when
the server refuses the command (unknown API or error name, missing member, ...) or cannot be
reached; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from groupcoord.commands import bootstrap_servers, command, int_at_least
from groupcoord.protocol.client_config import add_command_config

__all__: list[str] = []


def _run(ns: argparse.Namespace) -> int:
    from groupcoord.protocol.client import KafkaClientError
    from groupcoord.testing.cluster import Control, ControlError

    args: dict[str, Any] = {k: getattr(ns, k) for k in ns.arg_names}
    args = {k: v for k, v in args.items() if v is not None and v is not False}
    try:
        result = Control.connect(ns.bootstrap_server, security=ns.command_config).run(
            ns.control_command, **args)
    except (ControlError, KafkaClientError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(f"{ns.control_command}: {json.dumps(result, sort_keys=True)}")
    return 0


_positive = int_at_least(1)


@command("control", "the control plane of a running server, for tests (faults, sessions)")
def _control_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="control_command", required=True)

    def verb(name: str, help_text: str, *names: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help_text, description=help_text)
        c.add_argument("--bootstrap-server", type=bootstrap_servers, default="127.0.0.1:9092")
        add_command_config(c)
        c.add_argument("--json", action="store_true", help="print the server's JSON answer")
        c.set_defaults(func=_run, arg_names=list(names))
        return c

    c = verb("inject-error", "answer the next requests of an API with an error code",
             "api", "error", "count", "group", "client_id", "broker")
    c.add_argument("api", help="API name (Heartbeat, OffsetCommit, ConsumerGroupHeartbeat...) "
                               "or key")
    c.add_argument("error", help="Kafka error name (NOT_COORDINATOR...) or code")
    c.add_argument("--count", type=_positive, default=1, help="how many requests (default 1)")
    c.add_argument("--group", help="only requests naming this group")
    c.add_argument("--client-id", dest="client_id", help="only requests from this client id")
    c.add_argument("--broker", type=int, help="only requests to this broker (node id)")
    c = verb("add-latency", "delay matching requests", "ms", "api", "broker", "client_id")
    c.add_argument("ms", type=int, help="milliseconds")
    c.add_argument("--api", help="only this API")
    c.add_argument("--broker", type=int, help="only this broker")
    c.add_argument("--client-id", dest="client_id", help="only this client id")
    verb("clear-faults", "remove every error and latency rule")
    verb("faults", "the error and latency rules in force")
    c = verb("drop-connections", "close a client's connections now", "client_id", "all")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--client-id", dest="client_id")
    g.add_argument("--all", action="store_true", help="every client connection")
    verb("connections", "the open connections, their listener and principal")
    c = verb("expire-session", "a member's session expires now", "group", "member")
    c.add_argument("group")
    c.add_argument("member", help="the member id")
    c = verb("fail-next-append", "the next record-log appends fail (the shard reloads)", "count")
    c.add_argument("--count", type=_positive, default=1)
    c = verb("move-coordinator", "move a group's coordinator to another broker (--brokers N)",
             "group", "to")
    c.add_argument("group")
    c.add_argument("--to", type=int, help="the broker (default: the next live one)")
    c = verb("expire-transaction", "a transactional id's open transaction times out now",
             "transactional_id")
    c.add_argument("transactional_id")
    c = verb("move-transaction-coordinator",
             "move a transactional id's coordinator to another broker (--brokers N)",
             "transactional_id", "to")
    c.add_argument("transactional_id")
    c.add_argument("--to", type=int, help="the broker (default: the next live one)")
    c = verb("broker-down", "take a broker down (--brokers N)", "broker")
    c.add_argument("broker", type=int)
    c = verb("broker-up", "bring a broker back (--brokers N)", "broker")
    c.add_argument("broker", type=int)
    c = verb("hold-rebalance", "heartbeats answered, the group's target held back", "group")
    c.add_argument("group")
    c = verb("release-rebalance", "release a held rebalance", "group")
    c.add_argument("group")
    c = verb("brokers", "the brokers, those down, and a group's coordinator", "group")
    c.add_argument("--group", help="also say this group's coordinator")

"""``groupcoord connect worker``: a Connect worker process of a ``connect`` group.

``groupcoord connect worker --bootstrap-server HOST:PORT --group G [--url URL]
[--protocol eager|compatible|sessioned] [--assignor eager|incremental-cooperative]
[--instance-id ID]`` joins the group with an :class:`~.async_worker.AsyncConnectWorker` whose
listener is the plugin runtime (:class:`~.runtime.ConnectRuntime`), runs the connectors and tasks
the group gives it until SIGINT or SIGTERM, then stops them, leaves the group and exits 0 (1 on a
fatal group error). Each assignment change is printed to stdout as a line (``assigned: ...``,
``revoked: ...``, ``lost: ...``).

Connector names are mapped to connector classes by ``--connector-class NAME=CLASS`` (repeatable),
else ``--default-class`` (``counter``, the demo source of :mod:`.demo`, the only built-in
class); ``--config KEY=VALUE`` (repeatable) is every connector's configuration, and ``--output
FILE`` sets the demo's ``output`` (its JSON-lines record of what ran where). The connectors
themselves are created with ``groupcoord connectors create NAME --tasks N --group G``.

``--assignor`` narrows the client assignors the worker advertises: ``eager`` is ``--protocol
eager``; ``incremental-cooperative`` needs ``compatible`` or ``sessioned`` (the default).

Not here: a REST API (``--url`` is only advertised), plugins loaded from a path (classes come
from the built-in registry).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import Coroutine
from typing import Any

from groupcoord.cli import command
from groupcoord.client.connect.assignors import DEFAULT_MAX_DELAY_MS
from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.demo import COUNTER, DEMO_REGISTRY
from groupcoord.client.connect.listener import Connectors, Tasks
from groupcoord.client.connect.runtime import ConnectRuntime, item_label
from groupcoord.client.connect.worker import EAGER, INCREMENTAL_COOPERATIVE, PROTOCOLS
from groupcoord.client.connection import ConnectionLost, UnsupportedApi

__all__ = ["resolve_protocol"]


def resolve_protocol(protocol: str | None, assignor: str | None) -> str:
    """The worker's ``protocol`` from ``--protocol`` and ``--assignor``; ValueError when they
    contradict each other."""
    if assignor is None:
        return protocol or "sessioned"
    if assignor == EAGER:
        if protocol not in (None, "eager"):
            raise ValueError(f"--assignor eager contradicts --protocol {protocol}")
        return "eager"
    if assignor == INCREMENTAL_COOPERATIVE:
        if protocol == "eager":
            raise ValueError("--assignor incremental-cooperative contradicts --protocol eager")
        return protocol or "sessioned"
    raise ValueError(f"unknown assignor {assignor!r}")


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or ():
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} takes KEY=VALUE, got {v!r}")
        out[key] = value
    return out


def _labels(connectors: Connectors, tasks: Tasks) -> str:
    return ", ".join([*connectors, *(item_label(t.connector, t.task) for t in tasks)])


class _PrintingRuntime(ConnectRuntime):
    """The runtime, printing each assignment change (the command's product) as it happens."""

    def on_assigned(self, connectors: Connectors,  # type: ignore[override]
                    tasks: Tasks) -> Coroutine[Any, Any, None]:
        print(f"assigned: {_labels(connectors, tasks)}", flush=True)
        return super().on_assigned(connectors, tasks)

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> Coroutine[Any, Any, None]:
        print(f"revoked: {_labels(connectors, tasks)}", flush=True)
        return super().on_revoked(connectors, tasks)

    def on_lost(self, connectors: Connectors,  # type: ignore[override]
                tasks: Tasks) -> Coroutine[Any, Any, None]:
        print(f"lost: {_labels(connectors, tasks)}", flush=True)
        return super().on_lost(connectors, tasks)


def _run_worker(ns: argparse.Namespace) -> int:
    try:
        protocol = resolve_protocol(ns.protocol, ns.assignor)
        classes = _pairs(ns.connector_class, "--connector-class")
        config = _pairs(ns.config, "--config")
        for name in [ns.default_class, *classes.values()]:
            DEMO_REGISTRY.get(name)
    except (ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if ns.output:
        config["output"] = ns.output
    url = ns.url or f"http://{socket.gethostname()}:8083"
    runtime = _PrintingRuntime(DEMO_REGISTRY, connector_classes=classes,
                               default_class=ns.default_class, default_config=config)
    worker = AsyncConnectWorker(ns.bootstrap_server, ns.group, url=url, protocol=protocol,
                                listener=runtime, instance_id=ns.instance_id,
                                member_id=ns.member_id,
                                max_delay_ms=ns.scheduled_rebalance_max_delay_ms,
                                rebalance_timeout_ms=ns.rebalance_timeout_ms)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await worker.start()
        except (ConnectionLost, OSError, RuntimeError, UnsupportedApi) as e:
            print(f"error: cannot join group {ns.group}: {e}", file=sys.stderr)
            return 1
        print(f"worker {worker.member_id} ({url}) joining connect group {ns.group} "
              f"(protocol {protocol})", flush=True)
        while not stop.is_set() and worker.error is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        code = 0
        if worker.error is not None:
            print(f"error: {worker.error}", file=sys.stderr)
            code = 1
        await worker.close()
        await runtime.stop_all()
        print(f"worker {worker.member_id} left connect group {ns.group}", flush=True)
        return code

    return asyncio.run(main())


@command("connect", "Kafka Connect on the new protocol: run a worker of a connect group")
def _connect_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="connect_command", required=True)
    w = sub.add_parser("worker", help="run a worker until Ctrl-C (then it leaves the group)")
    w.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    w.add_argument("--group", required=True, help="the connect group")
    w.add_argument("--url", default=None, help="the REST url advertised (default "
                                               "http://HOSTNAME:8083)")
    w.add_argument("--protocol", choices=sorted(PROTOCOLS), default=None,
                   help="connect.protocol: the client assignors advertised (default sessioned)")
    w.add_argument("--assignor", choices=[EAGER, INCREMENTAL_COOPERATIVE], default=None,
                   help="only this assignor family (see --protocol)")
    w.add_argument("--instance-id", default=None, help="static membership")
    w.add_argument("--member-id", default=None, help="default: a random id")
    w.add_argument("--scheduled-rebalance-max-delay-ms", type=int, default=DEFAULT_MAX_DELAY_MS,
                   help="KIP-415's delay before lost work is reassigned")
    w.add_argument("--rebalance-timeout-ms", type=int, default=60_000)
    w.add_argument("--connector-class", action="append", metavar="NAME=CLASS",
                   help=f"connector NAME runs class CLASS (known: {', '.join(DEMO_REGISTRY.names())})")
    w.add_argument("--default-class", default=COUNTER,
                   help="the class of connectors without --connector-class")
    w.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="connector configuration, for every connector (repeatable)")
    w.add_argument("--output", default=None,
                   help="the demo connector's JSON-lines record of what ran where")
    w.set_defaults(func=_run_worker)

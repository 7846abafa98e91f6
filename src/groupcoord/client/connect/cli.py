"""``groupcoord connect``: Kafka Connect workers, on the new protocol or the classic one, and the
connectors of their groups.

``groupcoord connect worker --bootstrap-server HOST:PORT --group G [--protocol
connect|eager|compatible|sessioned] [--url URL]`` runs one worker process with the plugin runtime
(:class:`~.runtime.ConnectRuntime`) as its listener, runs the connectors and tasks the group
gives it until SIGINT or SIGTERM, then stops them, leaves the group and exits 0 (1 on a fatal
group error or when it cannot join, 2 on bad arguments). Stopping takes at most
``--close-timeout-ms`` (default 5 s) even when the coordinator is gone: a leave that cannot be
delivered by then is abandoned (the coordinator expires the worker after its session timeout);
a second signal exits at once (status 1). Each assignment change is printed to
stdout as a line (``assigned: ...``, ``revoked: ...``, ``lost: ...``).

- ``--protocol connect`` (the default): the new protocol, a member of the ``connect`` group type
  (:class:`~.async_worker.AsyncConnectWorker`: ConnectGroupHeartbeat; the worker the coordinator
  chooses runs the assignor). ``--assignor eager|cooperative`` picks that assignor (the client
  assignors advertised: ``eager`` only, or KIP-415's incremental cooperative one first;
  default cooperative; ``incremental-cooperative`` is accepted for ``cooperative``).
  ``--member-id``, ``--instance-id`` (static membership) apply.
- ``--protocol eager|compatible|sessioned``: Kafka Connect's classic ``connect.protocol``
  (:class:`~.async_classic_worker.AsyncClassicConnectWorker`: JoinGroup/SyncGroup with protocol
  type ``connect``, the leader assigns, KIP-415). ``--assignor`` may only repeat what the
  protocol implies (``eager`` for eager, ``cooperative`` for the others). The connectors come
  from the coordinator's configuration of ``--config-group`` (default ``G-configs``), or of G
  itself once G is a connect group (after an online upgrade). ``--client-id`` names the worker
  (its member ids are ``CLIENT_ID-N``); ``--session-timeout-ms``, ``--heartbeat-interval-ms``
  and ``--config-poll-ms`` tune it. Connect has no static membership: ``--instance-id`` and
  ``--member-id`` are refused.

Connector names are mapped to connector classes by ``--connector-class NAME=CLASS`` (repeatable),
else ``--default-class`` (``counter``, the demo source of :mod:`.demo`, the only built-in
class); ``--config KEY=VALUE`` (repeatable) is every connector's configuration, and ``--output
FILE`` sets the demo's ``output`` (its JSON-lines record of what ran where).

``groupcoord connect connectors create NAME --tasks N --group G``, ``... update``, ``... delete
NAME --group G``, ``... list --group G``: the same command as ``groupcoord connectors``
(``server/cli.py``, :func:`~groupcoord.server.cli.add_connectors_commands`).

Not here: a REST API (``--url`` is only advertised), plugins loaded from a path (classes come
from the built-in registry).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Coroutine
from typing import Any

from groupcoord.client.connect.assignors import DEFAULT_MAX_DELAY_MS
from groupcoord.client.connect.async_classic_worker import AsyncClassicConnectWorker
from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.demo import COUNTER, DEMO_REGISTRY
from groupcoord.client.connect.listener import Connectors, Tasks
from groupcoord.client.connect.runtime import ConnectRuntime, item_label
from groupcoord.client.connect.worker import EAGER, INCREMENTAL_COOPERATIVE, PROTOCOLS
from groupcoord.client.connection import ConnectionLost, UnsupportedApi
from groupcoord.client.member_driver import DEFAULT_CLOSE_TIMEOUT_MS
from groupcoord.commands import bootstrap_servers, command, int_at_least
from groupcoord.server.cli import add_connectors_commands

__all__ = ["CONNECT", "COOPERATIVE", "resolve_protocol"]


#: ``--protocol connect``: the new protocol (the ``connect`` group type).
CONNECT = "connect"
#: ``--assignor cooperative`` (KIP-415's incremental cooperative assignor).
COOPERATIVE = "cooperative"
_ASSIGNORS = {EAGER: EAGER, COOPERATIVE: INCREMENTAL_COOPERATIVE,
              INCREMENTAL_COOPERATIVE: INCREMENTAL_COOPERATIVE}


def resolve_protocol(protocol: str | None, assignor: str | None) -> tuple[bool, str]:
    """``--protocol`` and ``--assignor`` -> (classic?, the worker's ``protocol``): for the new
    protocol the assignors it advertises (``eager`` or ``sessioned``), for a classic worker its
    ``connect.protocol``. ValueError when they contradict each other."""
    protocol = protocol or CONNECT
    family = None if assignor is None else _ASSIGNORS.get(assignor)
    if assignor is not None and family is None:
        raise ValueError(f"unknown assignor {assignor!r}")
    if protocol == CONNECT:
        return False, "eager" if family == EAGER else "sessioned"
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}")
    if family is not None and (family == EAGER) != (protocol == "eager"):
        raise ValueError(f"--assignor {assignor} contradicts --protocol {protocol} (a classic "
                         f"group's leader uses the assignor of its connect.protocol)")
    return True, protocol


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or ():
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} takes KEY=VALUE, got {v!r}")
        out[key] = value
    return out


_non_negative = int_at_least(0)


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
        classic, protocol = resolve_protocol(ns.protocol, ns.assignor)
        if classic and (ns.instance_id or ns.member_id):
            raise ValueError("--instance-id and --member-id apply to --protocol connect only "
                             "(classic Connect has no static membership; the coordinator names "
                             "its members)")
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
    worker: AsyncConnectWorker | AsyncClassicConnectWorker
    if classic:
        client_id = ns.client_id or f"connect-{socket.gethostname()}-{os.getpid()}"
        worker = AsyncClassicConnectWorker(
            ns.bootstrap_server, ns.group, url=url, protocol=protocol, listener=runtime,
            config_group=ns.config_group, config_poll_ms=ns.config_poll_ms,
            max_delay_ms=ns.scheduled_rebalance_max_delay_ms,
            session_timeout_ms=ns.session_timeout_ms,
            rebalance_timeout_ms=ns.rebalance_timeout_ms,
            heartbeat_interval_ms=ns.heartbeat_interval_ms, client_id=client_id,
            close_timeout_ms=ns.close_timeout_ms)
        kind = "classic connect group"
        what = f"protocol {protocol}, connectors from connect group {worker.config_group} " \
               f"or {ns.group} once it is one"
    else:
        worker = AsyncConnectWorker(ns.bootstrap_server, ns.group, url=url, protocol=protocol,
                                    listener=runtime, instance_id=ns.instance_id,
                                    member_id=ns.member_id,
                                    max_delay_ms=ns.scheduled_rebalance_max_delay_ms,
                                    rebalance_timeout_ms=ns.rebalance_timeout_ms,
                                    close_timeout_ms=ns.close_timeout_ms,
                                    **({"client_id": ns.client_id} if ns.client_id else {}))
        kind = "connect group"
        what = f"protocol {protocol}"

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        main_task = asyncio.current_task()
        assert main_task is not None

        def on_signal() -> None:  # the first one stops gracefully, a second one at once
            if stop.is_set():
                main_task.cancel()
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await worker.start()
        except (ConnectionLost, OSError, RuntimeError, UnsupportedApi) as e:
            print(f"error: cannot join group {ns.group}: {e}", file=sys.stderr)
            return 1
        name = worker.member_id or worker.client_id
        print(f"worker {name} ({url}) joining {kind} {ns.group} ({what})", flush=True)
        while not stop.is_set() and worker.error is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        code = 0
        if worker.error is not None:
            print(f"error: {worker.error}", file=sys.stderr)
            code = 1
        try:
            await worker.close()
            try:  # what the close timeout left running (a revocation cut short) stops too
                async with asyncio.timeout(max(1.0, ns.close_timeout_ms / 1000)):
                    await runtime.stop_all()
            except TimeoutError:
                print("warning: connectors or tasks did not stop in time", file=sys.stderr)
        except asyncio.CancelledError:
            print(f"worker {name} stopped at once (second signal)", file=sys.stderr)
            return 1
        if not worker.leave_delivered:
            print(f"worker {name} stopped; its leave of {kind} {ns.group} was not delivered "
                  f"(the coordinator expires it after its session timeout)", flush=True)
        else:
            print(f"worker {name} left {kind} {ns.group}", flush=True)
        return code

    return asyncio.run(main())


@command("connect", "Kafka Connect: run a worker (new or classic protocol), manage connectors")
def _connect_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="connect_command", required=True)
    w = sub.add_parser("worker", help="run a worker until Ctrl-C (then it leaves the group)")
    w.add_argument("--bootstrap-server", type=bootstrap_servers, default="127.0.0.1:9092")
    w.add_argument("--group", required=True, help="the worker group")
    w.add_argument("--url", default=None, help="the REST url advertised (default "
                                               "http://HOSTNAME:8083)")
    w.add_argument("--protocol", choices=[CONNECT, *sorted(PROTOCOLS)], default=None,
                   help="connect (default): the new protocol, a member of a connect group; "
                        "eager|compatible|sessioned: Connect's classic connect.protocol")
    w.add_argument("--assignor", choices=sorted(_ASSIGNORS), default=None,
                   help="--protocol connect: the assignor (default cooperative)")
    w.add_argument("--instance-id", default=None, help="static membership (--protocol connect)")
    w.add_argument("--member-id", default=None,
                   help="--protocol connect: the member id (default: a random id)")
    w.add_argument("--client-id", default=None,
                   help="the client id (classic: the worker's name, default connect-HOST-PID)")
    w.add_argument("--config-group", default=None,
                   help="classic: the connect group holding the connectors (default GROUP-configs)")
    w.add_argument("--config-poll-ms", type=int, default=500,
                   help="classic: how often the connectors configuration is read")
    w.add_argument("--session-timeout-ms", type=int, default=10_000, help="classic")
    w.add_argument("--heartbeat-interval-ms", type=int, default=3_000, help="classic")
    w.add_argument("--scheduled-rebalance-max-delay-ms", type=int, default=DEFAULT_MAX_DELAY_MS,
                   help="KIP-415's delay before lost work is reassigned")
    w.add_argument("--rebalance-timeout-ms", type=int, default=60_000)
    w.add_argument("--close-timeout-ms", type=_non_negative, default=DEFAULT_CLOSE_TIMEOUT_MS,
                   help="on SIGINT/SIGTERM: how long stopping the work and delivering the leave "
                        "may take before the leave is abandoned (a second signal exits at once)")
    w.add_argument("--connector-class", action="append", metavar="NAME=CLASS",
                   help=f"connector NAME runs class CLASS (known: {', '.join(DEMO_REGISTRY.names())})")
    w.add_argument("--default-class", default=COUNTER,
                   help="the class of connectors without --connector-class")
    w.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="connector configuration, for every connector (repeatable)")
    w.add_argument("--output", default=None,
                   help="the demo connector's JSON-lines record of what ran where")
    w.set_defaults(func=_run_worker)
    c = sub.add_parser("connectors", help="create, update, delete and list the connectors of a "
                                          "connect group (= groupcoord connectors)")
    add_connectors_commands(c)

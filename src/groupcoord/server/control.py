"""The control plane for tests: actions on a running server (docs/testing.md).

One entry point, :meth:`ControlPlane.run` ``(command, arguments) -> result``, reached three
ways: in process (``groupcoord.testing.Control`` on an embedded server), over the wire with the
extension API GroupcoordControl (API key 1010, ``protocol/schemas/GroupcoordControl*.json``:
a command name and a JSON object of arguments; the answer's Result is JSON), and from the
command line (``groupcoord control COMMAND ... --bootstrap-server H:P``, which sends that
request). The wire was chosen over a separate admin port so that a test needs nothing but the
bootstrap servers it already has; any client able to send an extension request can use it.
Every action is written to the server log (logger ``groupcoord.server.control``, level WARNING,
so it shows without ``-v``) with its arguments.

Commands (arguments in brackets are optional):

- ``inject-error`` api, error [count=1, group, client_id, broker]: answer the next ``count``
  requests of ``api`` with ``error`` instead of handling them (``server/faults.py``);
- ``add-latency`` ms [api, broker, client_id]: delay matching requests by ``ms``;
- ``clear-faults``: remove every error and latency rule;
- ``faults``: the rules in force and how many errors were injected;
- ``drop-connections`` client_id (or ``all: true``): close those client connections now (once
  this answer is written: with ``all`` the asking connection is closed too, after its answer);
- ``connections``: the open connections, each with its listener and principal
  (``server/security/``);
- ``expire-session`` group, member: the member's session timer fires now (a KIP-848 consumer
  or connect member, or a classic member's heartbeat timer), as if it had stopped heartbeating
  for its session timeout;
- ``fail-next-append`` [count=1]: the next appends to the record log fail; the shard is
  reloaded from its log (``server/runtime.py`` "Write before respond");
- with several brokers (``server/brokers.py``): ``move-coordinator`` group [to]: the group's
  coordinator (its whole ``__consumer_offsets`` partition) moves to broker ``to`` (default the
  next live one), which loads it from the log (COORDINATOR_LOAD_IN_PROGRESS meanwhile) while the
  old one answers NOT_COORDINATOR; ``broker-down`` broker: its
  connections close, so does every new one (its port stays bound), its partitions and
  coordinators go to the next live broker;
  ``broker-up`` broker: it comes back and leads what it prefers again; ``brokers`` [group]:
  the brokers, those down, and the group's coordinator.

Bad arguments raise :class:`InvalidControlCommand` (a one-line message; the wire answers INVALID_REQUEST
with it). The coordinator core is untouched but for the hold (above): faults live in dispatch and around
the log, and expiring a session moves the driver-owned timer (timers are not records; firing one goes through
the core's ``expire_timers``, whose records are replayed like any other).

- transactions (``server/transaction_runtime.py``): ``expire-transaction`` transactional_id:
  the id's open transaction times out now (the coordinator fences its producer with an epoch
  bump and aborts it, markers written, as at its ``transaction.timeout.ms``);
  ``move-transaction-coordinator`` transactional_id [to] (several brokers): the coordinator of
  the id's transaction-log partition moves to broker ``to`` (default the next live one), which
  takes it over with the next coordinator epoch and writes its pending markers again, while the
  old one answers NOT_COORDINATOR. Errors on EndTxn, AddPartitionsToTxn (every partition),
  AddOffsetsToTxn, InitProducerId: ``inject-error`` with that API.

- ``hold-rebalance`` group / ``release-rebalance`` group: while held, the heartbeats of the
  group's KIP-848 consumer or connect members are answered as usual (sessions renewed, members
  joining and leaving are recorded, the group epoch moves) but no new target assignment is
  computed, so nobody's assignment changes; on release the next heartbeat computes it. This is a
  record-free setting the driver gives the core (``Shard.held_groups``, as it gives the topic
  image): the records written meanwhile are ordinary ones, so replay is unaffected.

Not here: holding classic groups (JoinGroup / SyncGroup rounds) or the classic members of a
consumer group; a target computed by a shard's load duties is not held either.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from groupcoord.coordinator.classic.handlers import HEARTBEAT
from groupcoord.coordinator.modern.connect.handlers import CONNECT_SESSION
from groupcoord.coordinator.modern.consumer.handlers import SESSION
from groupcoord.protocol.errors import error_name
from groupcoord.server.brokers import BrokerSet
from groupcoord.server.connection import ServedConnection
from groupcoord.server.faults import FailingAppendLog, FaultInjector
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.transaction_runtime import TransactionRuntime

log = logging.getLogger(__name__)

__all__ = ["COMMANDS", "ControlPlane", "InvalidControlCommand", "parse_error_code"]


class ControlledServer(Protocol):
    """What the control plane reads and calls of its server (``server/app.py``'s
    ``KafkaServer``)."""

    @property
    def connections(self) -> Collection[ServedConnection]: ...

    @property
    def runtime(self) -> CoordinatorRuntime | None: ...

    @property
    def brokerset(self) -> BrokerSet | None: ...

    def move_coordinator(self, group_id: str, to: int | None = None) -> tuple[int, int]: ...

    def move_transaction_coordinator(self, transactional_id: str,
                                     to: int | None = None) -> tuple[int, int]: ...

    @property
    def transactions(self) -> TransactionRuntime | None: ...

    def broker_down(self, broker: int) -> list[str]: ...

    def broker_up(self, broker: int) -> None: ...


class InvalidControlCommand(ValueError):
    """A control command that cannot be run as given (its message says why)."""


def parse_error_code(error: str | int) -> int:
    """An error code by number (``16``) or Kafka name (``NOT_COORDINATOR``, any case)."""
    if isinstance(error, int) or (isinstance(error, str) and error.strip().lstrip("-").isdigit()):
        code = int(error)
        try:
            ErrorCode(code)
        except ValueError:
            raise InvalidControlCommand(f"unknown error code {code}") from None
        return code
    try:
        return int(ErrorCode[str(error).strip().lower()])
    except KeyError:
        raise InvalidControlCommand(f"unknown error {error!r} (a Kafka error name such as "
                           f"NOT_COORDINATOR, or a code)") from None


def _opt_int(args: dict[str, Any], name: str) -> int | None:
    v = args.get(name)
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        raise InvalidControlCommand(f"{name} must be an integer, got {v!r}") from None


def _count(args: dict[str, Any]) -> int:
    count = _opt_int(args, "count")
    return 1 if count is None else count


def _req(args: dict[str, Any], name: str) -> Any:
    v = args.get(name)
    if v is None or v == "":
        raise InvalidControlCommand(f"missing argument {name}")
    return v


class ControlPlane:
    """The actions on one :class:`~groupcoord.server.app.KafkaServer` (module doc). Runs on the
    server's event loop."""

    def __init__(self, server: ControlledServer) -> None:
        self.server = server
        self.faults = FaultInjector()
        self._commands: dict[str, Callable[[dict[str, Any]], Any]] = {
            "inject-error": self._inject_error,
            "add-latency": self._add_latency,
            "clear-faults": self._clear_faults,
            "faults": lambda args: self.faults.describe(),
            "drop-connections": self._drop_connections,
            "connections": self._connections,
            "expire-session": self._expire_session,
            "fail-next-append": self._fail_next_append,
            "move-coordinator": self._move_coordinator,
            "expire-transaction": self._expire_transaction,
            "move-transaction-coordinator": self._move_transaction_coordinator,
            "broker-down": self._broker_down,
            "broker-up": self._broker_up,
            "brokers": self._brokers,
            "hold-rebalance": lambda args: self._hold(args, True),
            "release-rebalance": lambda args: self._hold(args, False),
        }

    @property
    def commands(self) -> list[str]:
        return sorted(self._commands)

    def run(self, command: str, args: dict[str, Any] | None = None) -> Any:
        """Run ``command`` with ``args``; its JSON-able result. InvalidControlCommand on bad input."""
        fn = self._commands.get(command)
        if fn is None:
            raise InvalidControlCommand(f"unknown control command {command!r} (known: "
                               f"{', '.join(self.commands)})")
        args = dict(args or {})
        result = fn(args)
        log.warning("control: %s %s -> %s", command, json.dumps(args, sort_keys=True),
                    json.dumps(result, sort_keys=True, default=str))
        return result

    # ------------------------------------------------------------------ commands

    def _inject_error(self, args: dict[str, Any]) -> Any:
        code = parse_error_code(_req(args, "error"))
        try:
            rule = self.faults.inject_error(
                _req(args, "api"), code, _count(args),
                group=args.get("group"), client_id=args.get("client_id"),
                broker=_opt_int(args, "broker"))
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None
        return rule.describe()

    def _add_latency(self, args: dict[str, Any]) -> Any:
        ms = _opt_int(args, "ms")
        if ms is None:
            raise InvalidControlCommand("missing argument ms")
        try:
            rule = self.faults.add_latency(ms, api=args.get("api"),
                                           broker=_opt_int(args, "broker"),
                                           client_id=args.get("client_id"))
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None
        return rule.describe()

    def _clear_faults(self, args: dict[str, Any]) -> Any:
        return {"removed": self.faults.clear()}

    def _drop_connections(self, args: dict[str, Any]) -> Any:
        client_id = args.get("client_id")
        every = bool(args.get("all"))
        if client_id is None and not every:
            raise InvalidControlCommand("drop-connections needs client_id (or all)")
        dropped = []
        loop = asyncio.get_running_loop()
        for conn in list(self.server.connections):
            if every or conn.client_id == client_id:
                dropped.append(conn.peer)
                # once this answer is written: with ``all`` the connection that asked is one of
                # them, and its client gets the answer before the close
                loop.call_soon(conn.abort)
        return {"dropped": sorted(dropped)}

    def _connections(self, args: dict[str, Any]) -> Any:
        """The open connections: peer, broker, listener, principal, last client id."""
        return {"connections": sorted(
            ({"peer": c.peer, "broker": c.broker, "listener": c.listener,
              "principal": c.principal, "client_id": c.client_id}
             for c in self.server.connections), key=lambda c: str(c["peer"]))}

    def _expire_session(self, args: dict[str, Any]) -> Any:
        group = str(_req(args, "group"))
        member = str(_req(args, "member"))
        runtime = self.server.runtime
        assert runtime is not None
        i = runtime.shard_of(group)
        shard = runtime.shards[i]
        if shard is None:
            raise InvalidControlCommand(f"the coordinator of group {group} is not loaded")
        now = runtime.clock.now_ms()
        for kind in (SESSION, CONNECT_SESSION, HEARTBEAT):
            key = (kind, group, member)
            if key in shard.timers:
                # The driver moves its own timer (soft state, not a record); the core's
                # expire_timers then does what a real expiry does.
                shard.timers.schedule(key, now, shard.timers.payload(key))
                runtime.expire_now()
                return {"expired": kind}
        raise InvalidControlCommand(f"group {group} has no member {member} with a session")

    def _move_coordinator(self, args: dict[str, Any]) -> Any:
        group = str(_req(args, "group"))
        try:
            old, new = self.server.move_coordinator(group, _opt_int(args, "to"))
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None
        return {"group": group, "from": old, "to": new}

    def _expire_transaction(self, args: dict[str, Any]) -> Any:
        tid = str(_req(args, "transactional_id"))
        txns = self.server.transactions
        if txns is None:
            raise InvalidControlCommand("the transaction coordinator is not running")
        result = txns.run(lambda c: c.expire_now(tid, txns.clock.now_ms()))
        if result.error:
            raise InvalidControlCommand(result.message or error_name(result.error))
        meta = txns.coordinator.describe(tid)
        assert meta is not None
        return {"transactional_id": tid, "state": meta.state.label,
                "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch}

    def _move_transaction_coordinator(self, args: dict[str, Any]) -> Any:
        tid = str(_req(args, "transactional_id"))
        try:
            old, new = self.server.move_transaction_coordinator(tid, _opt_int(args, "to"))
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None
        return {"transactional_id": tid, "from": old, "to": new}

    def _broker_down(self, args: dict[str, Any]) -> Any:
        broker = _opt_int(args, "broker")
        if broker is None:
            raise InvalidControlCommand("missing argument broker")
        try:
            return {"broker": broker, "dropped": self.server.broker_down(broker)}
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None

    def _broker_up(self, args: dict[str, Any]) -> Any:
        broker = _opt_int(args, "broker")
        if broker is None:
            raise InvalidControlCommand("missing argument broker")
        try:
            self.server.broker_up(broker)
        except ValueError as e:
            raise InvalidControlCommand(str(e)) from None
        return {"broker": broker}

    def _brokers(self, args: dict[str, Any]) -> Any:
        """The brokers, which are down, and (with ``group``) the group's coordinator."""
        bs = self.server.brokerset
        runtime = self.server.runtime
        assert runtime is not None
        if bs is None:
            out: dict[str, Any] = {"brokers": [0], "down": []}
            if args.get("group"):
                out["coordinator"] = 0
            return out
        out = {"brokers": bs.ids, "down": sorted(bs.down),
               "ports": [b.port for b in bs.brokers]}
        if args.get("group"):
            out["coordinator"] = bs.coordinator_of_shard(runtime.shard_of(str(args["group"])))
        return out

    def _hold(self, args: dict[str, Any], hold: bool) -> Any:
        group = str(_req(args, "group"))
        runtime = self.server.runtime
        assert runtime is not None
        if not hold and group not in runtime.held_groups:
            raise InvalidControlCommand(f"the rebalance of group {group} is not held")
        runtime.hold_rebalance(group, hold)
        return {"group": group, "held": sorted(runtime.held_groups)}

    def _fail_next_append(self, args: dict[str, Any]) -> Any:
        count = _count(args)
        if count < 1:
            raise InvalidControlCommand(f"count must be at least 1, got {count}")
        runtime = self.server.runtime
        assert runtime is not None
        failing = runtime.log
        if not isinstance(failing, FailingAppendLog):
            failing = FailingAppendLog(runtime.log)
            runtime.log = failing
        failing.fail_next += count
        return {"pending": failing.fail_next}


#: The commands, for the CLI's help.
COMMANDS = ["inject-error", "add-latency", "clear-faults", "faults", "drop-connections",
            "expire-session", "fail-next-append", "move-coordinator", "broker-down", "broker-up",
            "brokers", "hold-rebalance", "release-rebalance"]

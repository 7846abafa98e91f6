"""One consumer of the lab's calibration on the wire: a confluent-kafka (librdkafka) consumer
in its own process that polls, "processes" each record by sleeping, and logs what it did.

``python -m groupcoord.lab.wire_member --bootstrap HOST:PORT --group G --name c1 --protocol
eager|cooperative|consumer|consumer-range --topics foo,bar --log FILE [--max-poll-records N]
[--processing-ms X] [--auto-commit-interval-ms MS] [--max-poll-interval-ms MS]
[--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--metadata-max-age-ms MS]
[--slow FROM:UNTIL:DELAY_MS[,...]] [--wait-go]``

The poll loop is the Java client's as ``lab calibrate`` models it: a poll returns as soon as a
record is there, with what else is fetched, up to ``max.poll.records`` (:meth:`Member.poll`),
each record takes ``processing_ms`` (a sleep, which releases the GIL, so librdkafka's threads
keep heartbeating), then the next poll. Rebalance callbacks run inside the
poll (librdkafka queues them for the application, as the Java client runs them in ``poll()``):

- ``eager``: classic protocol, ``partition.assignment.strategy=range`` (everything revoked
  before the JoinGroup);
- ``cooperative``: classic protocol, ``cooperative-sticky`` (KIP-429);
- ``consumer``: ``group.protocol=consumer`` (KIP-848; the server's default assignor, uniform);
- ``consumer-range``: the same with ``group.remote.assignor=range`` (KIP-848's server-side
  range assignor).

``--metadata-max-age-ms`` is the periodic metadata refresh (librdkafka's
``topic.metadata.refresh.interval.ms``, the Java client's ``metadata.max.age.ms``; librdkafka's
own ``metadata.max.age.ms``, the cache's expiry, is set to three times it, its default ratio):
a classic member sees a topic's new partitions at its next refresh.

Commits as the Java client does them with auto-commit: an offset is *stored* once its record is
processed (``enable.auto.offset.store=false`` + ``store_offsets``: librdkafka's own default
stores it when the record is handed out, before processing), stored offsets are committed every
``auto.commit.interval.ms`` and synchronously in the revocation callback (the Java client's
commit in ``onJoinPrepare`` / before revoking). With ``--auto-commit-interval-ms 0`` only the
revocation commit happens.

``--slow``: the scenario's ``slow`` events (``sim.scenario``; ``lab.wire`` passes them with
wall-clock times): a revocation callback that runs within ``[FROM, UNTIL)`` sleeps
``DELAY_MS`` after its commit before it returns, as the simulator's slow member's revocation
ends ``delay_ms`` later (``sim.application``: after the revocation's commit). Only a process
that was running when the window began is slow (the simulator's ``slow`` event marks the live
process; one restarted later is a new process); a later window replaces an earlier one, as a
later ``slow`` event does in the simulator. The sleep holds the application's thread inside
``poll()`` (or ``close()``), as a slow ``onPartitionsRevoked`` does in the Java client.

SIGTERM stops the loop after the record in hand and closes the consumer (revocation callback,
commit, leave). A member whose parent (the harness) dies exits at once. ``--wait-go`` makes
the process import and parse first, then wait for a line ``go`` on stdin before it creates the
consumer: the harness starts processes ahead of their scheduled time so Python's start-up
does not delay a restart.

The log (JSON lines, appended, line-buffered) has one line per record processed
``{"t": end time, "e": "rec", "tp": topic, "p": partition, "o": offset}`` and one per
callback ``{"t", "e": "assign"|"revoke"|"lost", "parts": [[topic, partition], ...]}``, plus
``start`` (consumer created), ``closing`` (SIGTERM heard) and ``closed``. Times are wall-clock
seconds (``time.time()``), the clock the harness and the producer share.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from typing import IO, Any

PROTOCOLS = ("eager", "cooperative", "consumer", "consumer-range")


def consumer_config(ns: argparse.Namespace) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": ns.bootstrap,
        "group.id": ns.group,
        "client.id": ns.name,
        "auto.offset.reset": "earliest",
        "enable.auto.offset.store": False,
        "enable.auto.commit": ns.auto_commit_interval_ms > 0,
        "max.poll.interval.ms": ns.max_poll_interval_ms,
        "fetch.wait.max.ms": 50,
        "topic.metadata.refresh.interval.ms": ns.metadata_max_age_ms,
        "metadata.max.age.ms": 3 * ns.metadata_max_age_ms,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 50,
    }
    if ns.auto_commit_interval_ms > 0:
        conf["auto.commit.interval.ms"] = ns.auto_commit_interval_ms
    if ns.protocol in ("consumer", "consumer-range"):
        conf["group.protocol"] = "consumer"
        if ns.protocol == "consumer-range":
            conf["group.remote.assignor"] = "range"
    else:
        conf["group.protocol"] = "classic"
        conf["partition.assignment.strategy"] = ("range" if ns.protocol == "eager"
                                                 else "cooperative-sticky")
        conf["session.timeout.ms"] = ns.session_timeout_ms
        conf["heartbeat.interval.ms"] = ns.heartbeat_interval_ms
    return conf


def parse_slow(spec: str) -> list[tuple[float, float, float]]:
    """``FROM:UNTIL:DELAY_MS,...`` -> [(from s, until s, delay s)]; ValueError names a bad one."""
    out: list[tuple[float, float, float]] = []
    for part in filter(None, (x.strip() for x in spec.split(","))):
        bits = part.split(":")
        if len(bits) != 3:
            raise ValueError(f"--slow takes FROM:UNTIL:DELAY_MS, got {part!r}")
        try:
            start, until, delay_ms = (float(b) for b in bits)
        except ValueError:
            raise ValueError(f"--slow takes numbers FROM:UNTIL:DELAY_MS, got {part!r}") from None
        if not until >= start or delay_ms < 0:
            raise ValueError(f"--slow {part!r}: UNTIL before FROM or a negative delay")
        out.append((start, until, delay_ms / 1000))
    return out


def slow_delay_s(windows: list[tuple[float, float, float]], started: float, now: float) -> float:
    """How long a revocation at ``now`` sleeps (module doc): the delay of the latest window
    begun since the process started, while it lasts; 0 otherwise."""
    begun = [w for w in windows if started <= w[0] <= now]
    if not begun:
        return 0.0
    _start, until, delay = max(begun, key=lambda w: w[0])
    return delay if now < until else 0.0


class Member:
    def __init__(self, ns: argparse.Namespace, out: IO[str]) -> None:
        self.ns = ns
        self.out = out
        self.stop = False
        self.consumer: Any = None
        self.slow = parse_slow(getattr(ns, "slow", ""))
        self.started = time.time()

    def log(self, event: str, **kw: Any) -> None:
        self.out.write(json.dumps({"t": time.time(), "e": event, **kw}) + "\n")

    def _parts(self, partitions: list[Any]) -> list[list[Any]]:
        return [[p.topic, p.partition] for p in partitions]

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.log("assign", parts=self._parts(partitions))

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._commit()
        self.log("revoke", parts=self._parts(partitions))
        delay_s = slow_delay_s(self.slow, self.started, time.time())
        if delay_s > 0:
            self.log("slow", ms=round(delay_s * 1000))
            time.sleep(delay_s)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        self.log("lost", parts=self._parts(partitions))

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        # nothing stored to commit (_NO_OFFSET), or the group moved on: nothing to do
        with contextlib.suppress(KafkaException):
            self.consumer.commit(asynchronous=False)

    def poll(self, timeout_s: float) -> list[Any]:
        """The Java client's ``poll(timeout)``: waits until a record is there (at most
        ``timeout_s``), then returns it with what else is already fetched, up to
        ``max.poll.records``. librdkafka's ``consume(n, timeout)`` instead waits until it has
        ``n`` records or the timeout passed: at this lab's rates (tens of records a second per
        member, ``max.poll.records`` 500) every poll would wait the whole timeout, holding that
        much more production in flight than the Java client the simulator models."""
        first = self.consumer.poll(timeout_s)
        if first is None:
            return []
        if self.ns.max_poll_records <= 1:
            return [first]
        return [first, *self.consumer.consume(self.ns.max_poll_records - 1, timeout=0)]

    def run(self) -> int:
        from confluent_kafka import Consumer

        self.consumer = Consumer(consumer_config(self.ns))
        self.started = time.time()
        self.log("start")
        self.consumer.subscribe(self.ns.topics.split(","), on_assign=self.on_assign,
                                on_revoke=self.on_revoke, on_lost=self.on_lost)
        processing_s = self.ns.processing_ms / 1000
        while not self.stop:
            batch = self.poll(0.1)
            for m in batch:
                if self.stop:
                    break
                if m.error() is not None:
                    self.log("error", error=str(m.error()))
                    continue
                if processing_s:
                    time.sleep(processing_s)
                self.log("rec", tp=m.topic(), p=m.partition(), o=m.offset())
                self.consumer.store_offsets(message=m)
        self.log("closing")
        self.consumer.close()
        self.log("closed")
        return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m groupcoord.lab.wire_member")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--protocol", choices=PROTOCOLS, required=True)
    p.add_argument("--topics", required=True, help="comma-separated")
    p.add_argument("--log", required=True)
    p.add_argument("--max-poll-records", type=int, default=500)
    p.add_argument("--processing-ms", type=float, default=0.0)
    p.add_argument("--auto-commit-interval-ms", type=int, default=5000)
    p.add_argument("--max-poll-interval-ms", type=int, default=300_000)
    p.add_argument("--session-timeout-ms", type=int, default=45_000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=3_000)
    p.add_argument("--metadata-max-age-ms", type=int, default=5_000)
    p.add_argument("--slow", default="", type=_slow_arg, help="FROM:UNTIL:DELAY_MS windows (wall-clock "
                   "seconds), comma-separated")
    p.add_argument("--wait-go", action="store_true")
    return p.parse_args(argv)


def _slow_arg(spec: str) -> str:
    try:
        parse_slow(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return spec


def _exit_with_parent() -> None:
    """A member whose harness died exits too (no orphan consumers in a group)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(argv)
    return run_member_process(ns, Member)


def run_member_process(ns: argparse.Namespace, make: Any) -> int:
    """A wire member process's life, for every kind of member (``make(ns, log)`` builds one with
    a ``stop`` flag and a ``run()``): it exits with the harness, waits for the harness's "go"
    if asked (after paying confluent_kafka's import), logs to ``ns.log`` line by line, and stops
    cleanly on SIGTERM or SIGINT."""
    _exit_with_parent()
    if ns.wait_go:
        import confluent_kafka  # noqa: F401 - pay the import before the go

        if sys.stdin.readline().strip() != "go":
            return 0  # the harness gave up on this member
    with open(ns.log, "a", buffering=1, encoding="utf-8") as out:
        member = make(ns, out)

        def _stop(signum: int, frame: Any) -> None:
            member.stop = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        return int(member.run())


if __name__ == "__main__":
    sys.exit(main())

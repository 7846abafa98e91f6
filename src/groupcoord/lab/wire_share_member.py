"""One share consumer of the share calibration on the wire (KIP-932): confluent-kafka's
``ShareConsumer`` (librdkafka 2.16, preview) in its own process that polls a batch, "processes"
each record by sleeping, and logs what it did.

``python -m groupcoord.lab.wire_share_member --bootstrap HOST:PORT --group G --name c1
--topics foo --log FILE [--max-poll-records N] [--processing-ms X] [--seed S] [--wait-go]``

The application is the simulator's share consumer's (``sim.share``): a poll returns a batch of
acquired records (up to ``max.poll.records``), each record takes a draw of the processing time
(exponential with mean ``--processing-ms``, as the share spec's workload; a sleep, which
releases the GIL, so librdkafka's threads keep heartbeating) and is acknowledged ACCEPT
(``share.acknowledgement.mode=explicit``; librdkafka sends the acknowledgements with the next
poll, as the simulated consumer carries them on its next ShareFetch). A record counts as done at the
end of its batch: the log has one line per batch processed, ``{"t": end time, "e": "batch",
"recs": [[partition, offset, delivery count], ...]}``, written before the next poll sends the
acknowledgement (a member killed between the two leaves a logged batch unacknowledged: its
records are delivered again after their lock, and count twice, as they were processed twice).
A line ``poll`` (same shape) lists each poll's records when it returns them (acquired: a
member stopped before the batch's line holds them until their lock expires). Lines ``start``
(consumer created), ``closing`` (SIGTERM heard) and ``closed`` (close()
returned: acknowledgements sent, the group left) mark its life. Times are wall-clock seconds.

SIGTERM stops the loop after the record in hand: the batch's records not processed yet are
acknowledged RELEASE (available again at once, their delivery counted), then close() sends the
acknowledgements and leaves the group, as the simulated consumer's leave does (implicit mode
would ACCEPT the unprocessed records on close). SIGKILL closes its connections (the server
releases what it had acquired at once); SIGSTOP (a lost host) leaves everything acquired until
the locks expire. A member whose parent (the harness) dies exits.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import IO, Any

from groupcoord.lab.wire_member import run_member_process


def share_consumer_config(ns: argparse.Namespace) -> dict[str, Any]:
    return {
        "bootstrap.servers": ns.bootstrap,
        "group.id": ns.group,
        "client.id": ns.name,
        "max.poll.records": ns.max_poll_records,
        "share.acknowledgement.mode": "explicit",
        "fetch.wait.max.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 50,
    }


class ShareMember:
    def __init__(self, ns: argparse.Namespace, out: IO[str]) -> None:
        self.ns = ns
        self.out = out
        self.stop = False
        self.rng = random.Random(f"share-member/{ns.seed}/{ns.name}")

    def log(self, event: str, **kw: Any) -> None:
        self.out.write(json.dumps({"t": time.time(), "e": event, **kw}) + "\n")

    def processing_s(self) -> float:
        mean = self.ns.processing_ms / 1000
        return self.rng.expovariate(1 / mean) if mean > 0 else 0.0

    def run(self) -> int:
        from confluent_kafka import AcknowledgeType, ShareConsumer

        consumer = ShareConsumer(share_consumer_config(self.ns))
        self.log("start")
        consumer.subscribe(self.ns.topics.split(","))
        while not self.stop:
            batch = consumer.poll(0.1)
            if batch:  # what the member now holds acquired (a lost host's wait their lock)
                self.log("poll", recs=[[m.partition() or 0, m.offset() or 0,
                                        m.delivery_count() or 1] for m in batch
                                       if m.error() is None])
            done: list[list[int]] = []
            for m in batch:
                if m.error() is not None:
                    self.log("error", error=str(m.error()))
                    continue
                if self.stop:
                    consumer.acknowledge(m, AcknowledgeType.RELEASE)
                    continue
                time.sleep(self.processing_s())
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                done.append([m.partition() or 0, m.offset() or 0, m.delivery_count() or 1])
            if done:
                self.log("batch", recs=done)
        self.log("closing")
        consumer.close()
        self.log("closed")
        return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m groupcoord.lab.wire_share_member")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--topics", required=True, help="comma-separated")
    p.add_argument("--log", required=True)
    p.add_argument("--max-poll-records", type=int, default=100)
    p.add_argument("--processing-ms", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wait-go", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run_member_process(parse_args(argv), ShareMember)


if __name__ == "__main__":
    sys.exit(main())

"""A consume-transform-produce worker with exactly-once semantics (KIP-98, KIP-447), run as a
process by ``tests/test_exactly_once.py``: ``python -m tests.eos_worker BOOTSTRAP GROUP
TRANSACTIONAL_ID PROTOCOL [BATCH [PACE_MS]]`` (records per transaction, at most; a pause inside
each transaction, between its records and its commit, so that a kill finds one open).

confluent-kafka (librdkafka): a read_committed consumer of the group (``PROTOCOL``: classic or
consumer), a transactional producer; each poll's records are written to the output topic as
``out:<value>`` in one transaction with the consumed offsets (``send_offsets_to_transaction``
with the consumer's group metadata). An abortable error aborts and rewinds the consumer to the
group's committed offsets; a fatal one (fenced) ends the process with exit code 3. It prints
``committed N`` after each commit and ``fenced`` when fenced, and stops on SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

IN, OUT = "eos-in", "eos-out"


def commit(producer: Any) -> None:
    """``commit_transaction``, again while it fails with a retriable error that does not
    require an abort (librdkafka's documented loop: a timeout, the coordinator moving)."""
    from confluent_kafka import KafkaException

    for _ in range(10):
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as e:
            err = e.args[0]
            if not err.retriable() or err.txn_requires_abort() or err.fatal():
                raise
    producer.commit_transaction(30)


def main(argv: list[str]) -> int:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    bootstrap, group, tid, protocol = argv[:4]
    batch = int(argv[4]) if len(argv) > 4 else 20
    pace_s = int(argv[5]) / 1000 if len(argv) > 5 else 0.0
    stop = False

    def on_term(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "isolation.level": "read_committed", "group.protocol": protocol}
    if protocol == "classic":
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": "cooperative-sticky"})
    consumer = Consumer(conf)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 10_000, "linger.ms": 5})
    producer.init_transactions(60)
    consumer.subscribe([IN])
    committed = 0

    def rewind() -> None:
        assigned = consumer.assignment()
        if not assigned:
            return
        for tp in consumer.committed(assigned, 30):
            consumer.seek(TopicPartition(tp.topic, tp.partition,
                                         tp.offset if tp.offset >= 0 else -2))

    try:
        while not stop:
            msgs = [m for m in consumer.consume(batch, 0.5) if m.error() is None]
            if not msgs:
                continue
            positions: dict[tuple[str, int], int] = {}
            for m in msgs:
                positions[(m.topic(), m.partition())] = m.offset() + 1
            try:
                producer.begin_transaction()
                for m in msgs:
                    producer.produce(OUT, value=b"out:" + m.value(), key=m.key())
                if pace_s:
                    producer.flush(10)  # the records are in the partitions, uncommitted
                    time.sleep(pace_s)
                producer.send_offsets_to_transaction(
                    [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())],
                    consumer.consumer_group_metadata(), 30)
                commit(producer)
            except KafkaException as e:
                err = e.args[0]
                if err.fatal():
                    print(f"fenced {err.name()}", flush=True)
                    return 3
                print(f"aborted {err.name()}", flush=True)
                try:
                    producer.abort_transaction(30)
                except KafkaException as abort_error:
                    if abort_error.args[0].fatal():
                        print(f"fenced {abort_error.args[0].name()}", flush=True)
                        return 3
                rewind()
                continue
            committed += len(msgs)
            print(f"committed {committed}", flush=True)
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

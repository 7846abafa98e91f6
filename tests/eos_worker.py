"""A consume-transform-produce worker with exactly-once semantics (KIP-98, KIP-447), run as a
process by ``tests/test_exactly_once.py``: ``python -m tests.eos_worker BOOTSTRAP GROUP
TRANSACTIONAL_ID PROTOCOL [BATCH [PACE_MS [CLIENT]]]`` (records per transaction, at most; a
pause inside each transaction, between its records and its commit, so that a kill finds one
open; ``CLIENT``: confluent (default), kafka-python or aiokafka, the last two classic only).

A read_committed consumer of the group (``PROTOCOL``: classic or consumer), a transactional
producer; each poll's records are written to the output topic as ``out:<value>`` in one
transaction with the consumed offsets (``send_offsets_to_transaction`` with the consumer's group
metadata, KIP-447; aiokafka sends the group id only). An abortable error aborts and rewinds the
consumer to the group's committed offsets; a fatal one (fenced) ends the process with exit code
3. It prints ``committed N`` after each commit and ``fenced`` when fenced, and stops on SIGTERM.

SIGUSR1 (the confluent-kafka worker) makes a zombie with an open transaction: the next
transaction, once its records are written to the output partitions (flushed, uncommitted),
prints ``paused N LEFT`` (N records written, LEFT of them not flushed) and stops its own process
(SIGSTOP) before its offsets and its commit; SIGCONT resumes it there, and its next call
(``send_offsets_to_transaction``) is the one a successor with the same transactional id
fences. Each blocking call of a transaction waits at most :data:`CALL_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

IN, OUT = "eos-in", "eos-out"


#: Seconds each blocking transactional call waits at most (send offsets, commit, abort).
CALL_TIMEOUT_S = 30

STOP = False
#: Set by SIGUSR1: stop inside the next transaction (module doc).
PAUSE = False


def _on_term(signum: int, frame: Any) -> None:
    global STOP
    STOP = True


def _on_pause(signum: int, frame: Any) -> None:
    global PAUSE
    PAUSE = True


def pause_in_transaction(producer: Any, records: int) -> None:
    """Stop this process inside the open transaction, its records written (module doc)."""
    global PAUSE
    PAUSE = False
    left = producer.flush(CALL_TIMEOUT_S)
    print(f"paused {records} {left}", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)


def commit(producer: Any) -> None:
    """``commit_transaction``, again while it fails with a retriable error that does not
    require an abort (librdkafka's documented loop: a timeout, the coordinator moving)."""
    from confluent_kafka import KafkaException

    for _ in range(10):
        try:
            producer.commit_transaction(CALL_TIMEOUT_S)
            return
        except KafkaException as e:
            err = e.args[0]
            if not err.retriable() or err.txn_requires_abort() or err.fatal():
                raise
    producer.commit_transaction(CALL_TIMEOUT_S)


def main(argv: list[str]) -> int:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    bootstrap, group, tid, protocol = argv[:4]
    batch = int(argv[4]) if len(argv) > 4 else 20
    pace_s = int(argv[5]) / 1000 if len(argv) > 5 else 0.0
    client = argv[6] if len(argv) > 6 else "confluent"
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGUSR1, _on_pause)
    if client == "kafka-python":
        return kafka_python_worker(bootstrap, group, tid, batch, pace_s)
    if client == "aiokafka":
        import asyncio

        return asyncio.run(aiokafka_worker(bootstrap, group, tid, batch, pace_s))
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
        for tp in consumer.committed(assigned, CALL_TIMEOUT_S):
            consumer.seek(TopicPartition(tp.topic, tp.partition,
                                         tp.offset if tp.offset >= 0 else -2))

    try:
        while not STOP:
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
                if PAUSE:
                    pause_in_transaction(producer, len(msgs))
                producer.send_offsets_to_transaction(
                    [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())],
                    consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
                commit(producer)
            except KafkaException as e:
                err = e.args[0]
                if err.fatal():
                    print(f"fenced {err.name()}", flush=True)
                    return 3
                print(f"aborted {err.name()}", flush=True)
                try:
                    producer.abort_transaction(CALL_TIMEOUT_S)
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


def kafka_python_worker(bootstrap: str, group: str, tid: str, batch: int, pace_s: float) -> int:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError, ProducerFencedError
    from kafka.structs import OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(IN, bootstrap_servers=bootstrap, group_id=group,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed", session_timeout_ms=6000,
                             heartbeat_interval_ms=500)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                             transaction_timeout_ms=10_000)
    producer.init_transactions()
    committed = 0
    try:
        while not STOP:
            polled = consumer.poll(timeout_ms=500, max_records=batch)
            msgs = [m for records in polled.values() for m in records]
            if not msgs:
                continue
            positions: dict[Any, Any] = {}
            for m in msgs:
                positions[TopicPartition(m.topic, m.partition)] = OffsetAndMetadata(
                    m.offset + 1, "", -1)
            try:
                producer.begin_transaction()
                for m in msgs:
                    producer.send(OUT, value=b"out:" + m.value, key=m.key)
                if pace_s:
                    producer.flush(10)
                    time.sleep(pace_s)
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                producer.commit_transaction()
            except ProducerFencedError as e:
                print(f"fenced {type(e).__name__}", flush=True)
                return 3
            except KafkaError as e:
                print(f"aborted {type(e).__name__}", flush=True)
                try:
                    producer.abort_transaction()
                except ProducerFencedError:
                    print("fenced", flush=True)
                    return 3
                for tp in consumer.assignment():
                    offset = consumer.committed(tp)
                    consumer.seek(tp, offset if offset is not None and offset >= 0 else 0)
                continue
            committed += len(msgs)
            print(f"committed {committed}", flush=True)
    finally:
        consumer.close()
    return 0


async def aiokafka_worker(bootstrap: str, group: str, tid: str, batch: int,
                          pace_s: float) -> int:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import KafkaError, ProducerFenced

    consumer = AIOKafkaConsumer(IN, bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                isolation_level="read_committed", session_timeout_ms=6000,
                                heartbeat_interval_ms=500)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                transaction_timeout_ms=10_000)
    await producer.start()
    await consumer.start()
    committed = 0
    try:
        while not STOP:
            polled = await consumer.getmany(timeout_ms=500, max_records=batch)
            msgs = [m for records in polled.values() for m in records]
            if not msgs:
                continue
            positions: dict[Any, int] = {}
            for tp, records in polled.items():
                positions[tp] = records[-1].offset + 1
            try:
                async with producer.transaction():
                    for m in msgs:
                        await producer.send(OUT, value=b"out:" + m.value, key=m.key)
                    await producer.flush()
                    if pace_s:
                        await asyncio.sleep(pace_s)
                    await producer.send_offsets_to_transaction(positions, group)
            except ProducerFenced as e:
                print(f"fenced {type(e).__name__}", flush=True)
                return 3
            except KafkaError as e:
                print(f"aborted {type(e).__name__}", flush=True)
                for tp in consumer.assignment():
                    offset = await consumer.committed(tp)
                    consumer.seek(tp, offset if offset is not None and offset >= 0 else 0)
                continue
            committed += len(msgs)
            print(f"committed {committed}", flush=True)
    finally:
        await consumer.stop()
        await producer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

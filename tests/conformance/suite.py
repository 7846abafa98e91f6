"""The curated list of librdkafka's own tests that ``make conformance`` runs against groupcoord,
and what is known about them.

librdkafka's test runner (``tests/test-runner`` of librdkafka's source) selects tests by their
four-digit number (``TESTS=0045`` runs every ``0045_*`` cluster test), so a case here is one
number; its rows in the result table are the test names the runner reports.

Not run: a number's tests of librdkafka's ``noautocreate`` scenario (0045's
``subscribe_update_topic_remove`` and ``subscribe_update_non_exist_and_partchange``): they delete
topics and add partitions with Kafka's own ``kafka-topics.sh`` (``KAFKA_PATH``), which a
groupcoord server does not come with; the runner skips them in the default scenario.

A *known failure* is a test name that is expected to fail, with the reason; the run stays green
when it fails and says so when it passes. The transactional sub-tests of 0061 and 0137, listed
before groupcoord served transactions, pass now.

0103 (transactions) runs against three brokers (``Case.brokers``): its topics are created with
a replication factor of 3. It passes on both group protocols (its consumers subscribe with
``group.protocol=consumer`` in the KIP-848 column; docs/clients.md). Not run: 0098 (a Java
producer, ``KAFKA_PATH``); 0105 (the mock cluster only).

The suite is built with zstd (``librdkafka.CONFIGURE``), so 0171's sub-test of every
compression codec runs (the broker stores and serves compressed batches as they came); 0170's
DeleteRecords sub-test passes since DeleteRecords is served.
The share consumer tests' ``_local`` and ``_mock`` tests run against librdkafka's mock broker and
are left out like every local test.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The npm package carrying librdkafka's whole source, its test suite included, under
#: ``package/deps/librdkafka/`` (librdkafka 2.15.1 in this version).
PACKAGE = "@confluentinc/kafka-javascript"
PACKAGE_VERSION = "1.10.1"
LIBRDKAFKA_VERSION = "2.15.1"

PROTOCOLS = ("classic", "consumer")
SECURITIES = ("plaintext", "sasl_ssl")


@dataclass(frozen=True)
class Case:
    """One test number of librdkafka's suite and what it checks."""

    number: str
    about: str
    #: Run over SASL_SSL with SCRAM-SHA-512 too (the security subset).
    sasl_ssl: bool = False
    #: In CI's subset (``--subset ci``): short tests of commits (the simple consumer's too)
    #: that keep CI's run within its budget (about 5 minutes with the build cached).
    ci: bool = False
    #: The broker version the runner is told (``TEST_KAFKA_VERSION``): it skips a test that
    #: asks for a newer broker. The share consumer tests (KIP-932) ask for Kafka 4.2.
    kafka_version: str = "4.0.0"
    #: A share consumer test: ``group.protocol`` means nothing to it, so it runs once, in the
    #: protocol column ``share``, not once per consumer group protocol.
    share: bool = False
    #: Brokers of the server (``groupcoord serve --brokers N``): 0103 creates its topics with
    #: replication factor 3.
    brokers: int = 1


CASES: tuple[Case, ...] = (
    Case("0018", "consumer group termination with rebalance callbacks"),
    Case("0026", "pause and resume of an assigned consumer", sasl_ssl=True),
    Case("0029", "assign() with explicit offsets"),
    Case("0030", "offset commit: sync, async, auto, stored; committed() and position()",
         sasl_ssl=True, ci=True),
    Case("0033", "regex subscription"),
    Case("0040", "event-based IO with a consumer group"),
    Case("0045", "subscription updates: new topics, removed topics, partition changes, "
                 "regex resubscription"),
    Case("0050", "subscribe() to more topics"),
    Case("0051", "assign() more partitions; the simple consumer's commit", ci=True),
    Case("0056", "balanced group consumer, multi-threaded"),
    Case("0060", "op priority with a rebalance"),
    Case("0061", "consumer lag, transactional and non-transactional"),
    Case("0089", "max.poll.interval.ms exceeded and rejoin"),
    Case("0091", "max.poll.interval.ms with a slow poll"),
    Case("0099", "commit metadata", ci=True),
    Case("0102", "static group membership"),
    Case("0103", "transactions: commit, abort, fencing, read_committed (3 brokers)",
         brokers=3),
    Case("0112", "assign() of an unknown partition"),
    Case("0118", "commit during a rebalance"),
    Case("0122", "buffer cleaning after a rebalance"),
    Case("0129", "read_committed fetches past aborted transactions"),
    Case("0130", "store_offsets() on assigned and unassigned partitions", sasl_ssl=True),
    Case("0132", "assignment strategy ordering"),
    Case("0137", "consume_batch across a barrier, transactional and not"),
    Case("0140", "commit metadata with the simple consumer"),
    # KIP-932 share consumers (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge)
    *(Case(n, about, kafka_version="4.2.0", share=True) for n, about in (
        ("0170", "share consumer subscriptions: subscribe, unsubscribe, resubscribe, topics "
                 "created and deleted, share.auto.offset.reset, two groups"),
        ("0171", "share consumer consumption: topics, partitions, volumes, codecs, headers"),
        ("0172", "share consumer acknowledgements: ACCEPT, RELEASE, REJECT, delivery limit"),
        ("0173", "share consumer commit_async, lock timeouts"),
        ("0174", "share consumers on several threads"),
        ("0175", "several share groups on one topic, each receiving every record"),
        ("0176", "share consumer commit_sync"),
        ("0177", "share consumers and transactions (share.isolation.level)"),
        ("0178", "share consumer close"),
        ("0179", "share consumer destroy"),
        ("0180", "share consumer configuration"),
        ("0181", "share consumer: a subscribed topic deleted"),
        ("0184", "share consumer with a recreated topic"),
        ("0185", "share consumer: max.poll.interval.ms exceeded, leave and rejoin"))),
)

#: Test names (as the runner reports them) expected to fail, each with a part of the name of
#: the sub-test it must fail in (another failing sub-test is a failure) and the reason.
KNOWN_FAILURES: dict[str, tuple[str, str]] = {}


def select(subset: str, numbers: list[str] | None = None) -> list[Case]:
    """The cases of ``subset`` (``ci`` or ``full``), or those whose number is in ``numbers``."""
    if numbers:
        wanted = set(numbers)
        unknown = wanted - {c.number for c in CASES}
        if unknown:
            raise ValueError(f"not in the curated list: {', '.join(sorted(unknown))}")
        return [c for c in CASES if c.number in wanted]
    if subset == "ci":
        return [c for c in CASES if c.ci]
    if subset == "full":
        return list(CASES)
    raise ValueError(f"unknown subset {subset!r} (ci or full)")

"""Real clients over TLS and SASL (``server/security/``): confluent-kafka (librdkafka),
kafka-python and aiokafka, each on SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512, on SSL, and on
SASL_PLAINTEXT with PLAIN. With the right credentials a client produces, joins a group,
consumes and commits (the committed offsets read back); with wrong ones it fails with the
authentication error, and the server stays up."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.versions import ApiKey
from tests.security_support import Certs, SecureServer, add_user, make_certs, start_secure_server

TIMEOUT_S = 40.0
MESSAGES = 6
USER, PASSWORD = "alice", "alice-secret"

# (listener, mechanism): the combinations every client runs
CASES = [("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SSL", None),
         ("SASL_PLAINTEXT", "PLAIN")]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[SecureServer]:
    data = tmp_path_factory.mktemp("clients") / "data"
    data.mkdir()
    add_user(data, USER, PASSWORD)
    srv = start_secure_server(
        data, ["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0",
               "SASL_SSL://127.0.0.1:0"],
        "--config", f"ssl.keystore.certificate.chain={certs.server_cert}",
        "--config", f"ssl.keystore.key={certs.server_key}",
        "--config", "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        "--config", "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN")
    try:
        yield srv
    finally:
        srv.server.stop()
        assert "Traceback" not in srv.server.stderr(), srv.server.stderr()[-3000:]


def _topic(secure: SecureServer, partitions: int = 2) -> str:
    name = f"sec-{uuid.uuid4().hex[:8]}"
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0
    return name


def _committed(secure: SecureServer, group: str, topic: str) -> int:
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": [0, 1]}]}])
    return sum(max(int(p.committed_offset), 0) for t in r.groups[0].topics for p in t.partitions)


def _principals(secure: SecureServer, listener: str) -> set[str]:
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        r = c.call(ApiKey.GROUPCOORD_CONTROL, 0, command="connections", arguments="{}")
    return {x["principal"] for x in json.loads(r.result)["connections"] if x["listener"] == listener}


def _alive(secure: SecureServer) -> None:
    assert secure.server.proc.poll() is None
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        assert c.api_versions()


# ------------------------------------------------------------------------------ confluent-kafka


def _ck_conf(secure: SecureServer, certs: Certs, listener: str, mechanism: str | None,
             password: str) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": secure.bootstrap(listener),
                            "security.protocol": listener, "socket.connection.setup.timeout.ms": 5000,
                            "reconnect.backoff.ms": 100, "reconnect.backoff.max.ms": 1000}
    if listener.endswith("SSL"):
        conf["ssl.ca.location"] = str(certs.ca)
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": USER,
                     "sasl.password": password})
    return conf


@pytest.mark.parametrize("listener,mechanism", CASES)
def test_confluent_kafka(secure: SecureServer, certs: Certs, listener: str,
                         mechanism: str | None) -> None:
    ck = pytest.importorskip("confluent_kafka")
    topic, group = _topic(secure), f"ck-{uuid.uuid4().hex[:6]}"
    conf = _ck_conf(secure, certs, listener, mechanism, PASSWORD)
    p = ck.Producer(conf)
    for i in range(MESSAGES):
        p.produce(topic, b"m%d" % i, partition=i % 2)
    assert p.flush(TIMEOUT_S) == 0
    c = ck.Consumer({**conf, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "fetch.wait.max.ms": 100})
    try:
        c.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + TIMEOUT_S
        while seen < MESSAGES and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen += 1
                c.commit(m, asynchronous=False)
        assert seen == MESSAGES
        assert _principals(secure, listener) >= {
            f"User:{USER}" if mechanism else "User:ANONYMOUS"}
    finally:
        c.close()
    assert _committed(secure, group, topic) == MESSAGES


@pytest.mark.parametrize("listener,mechanism", [c for c in CASES if c[1]])
def test_confluent_kafka_wrong_password(secure: SecureServer, certs: Certs, listener: str,
                                        mechanism: str) -> None:
    ck = pytest.importorskip("confluent_kafka")
    errors: list[Any] = []
    p = ck.Producer({**_ck_conf(secure, certs, listener, mechanism, "wrong"),
                     "error_cb": errors.append})
    deadline = time.monotonic() + TIMEOUT_S
    while not any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors):
        assert time.monotonic() < deadline, errors
        p.poll(0.2)
    assert "Authentication failed" in str(next(e for e in errors
                                               if e.code() == ck.KafkaError._AUTHENTICATION))
    del p
    _alive(secure)


# ------------------------------------------------------------------------------ kafka-python


def _kp_conf(secure: SecureServer, certs: Certs, listener: str, mechanism: str | None,
             password: str) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": secure.bootstrap(listener),
                            "security_protocol": listener}
    if listener.endswith("SSL"):
        conf["ssl_cafile"] = str(certs.ca)
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": USER,
                     "sasl_plain_password": password})
    return conf


@pytest.mark.parametrize("listener,mechanism", CASES)
def test_kafka_python(secure: SecureServer, certs: Certs, listener: str,
                      mechanism: str | None) -> None:
    kafka = pytest.importorskip("kafka")
    topic, group = _topic(secure), f"kp-{uuid.uuid4().hex[:6]}"
    conf = _kp_conf(secure, certs, listener, mechanism, PASSWORD)
    p = kafka.KafkaProducer(**conf)
    for i in range(MESSAGES):
        p.send(topic, b"m%d" % i, partition=i % 2)
    p.flush(TIMEOUT_S)
    p.close()
    c = kafka.KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                            enable_auto_commit=False, session_timeout_ms=6000,
                            heartbeat_interval_ms=500, **conf)
    try:
        seen = 0
        deadline = time.monotonic() + TIMEOUT_S
        while seen < MESSAGES and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                seen += len(records)
                c.commit()
        assert seen == MESSAGES
    finally:
        c.close()
    assert _committed(secure, group, topic) == MESSAGES


#: How kafka-python 3.0.12 ends a bootstrap attempt against a wrong password: the server's
#: answer, or, when that answer was dropped by the client (test_kafka_python_wrong_password),
#: the close that follows it.
_KP_AUTH_FAILED = "SaslAuthenticationFailedError"
_KP_DROPPED = "KafkaConnectionError: socket disconnected"
#: Bootstraps of 3 s (about fifteen attempts each) a kafka-python client may make until one
#: of its attempts reads the failure answer.
_KP_BOOTSTRAPS = 4


@pytest.mark.parametrize("listener,mechanism", [c for c in CASES if c[1]])
def test_kafka_python_wrong_password(secure: SecureServer, certs: Certs, listener: str,
                                     mechanism: str, caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python retries its bootstrap until ``bootstrap_timeout_ms``, logging each
    SaslAuthenticationFailedError, then raises KafkaTimeoutError.

    kafka-python 3.0.12 does not always see the answer: its transport reads a socket until it
    would block (``KafkaTCPTransport._sock_recv``), and when that read pass ends at the end of
    the stream it aborts the connection with "socket disconnected" without handing the bytes
    read before it to the protocol (``_read_from_sock``). Kafka's broker closes right after the
    failure answer (``Selector.handleCloseOnAuthenticationFailure`` sends the response, then
    closes the channel), and so did this server: when the client's read came after both, the
    answer was lost with them. On a loaded 2-core machine: over SASL_SSL, where the
    close_notify record followed the answer at once, 27 of 48 attempts at load average 4-5 and
    85 of 150 at 8; over SASL_PLAINTEXT, where the FIN followed an event-loop turn later, 0 of
    24 at 4-5 but 38 of 85 at 8, lost in runs of up to 11 attempts. The server's close now waits
    a little for the client's (``FAILURE_CLOSE_LINGER_S``, ``tests/test_security_sasl_close.py``),
    which leaves the client that read time on an ordinary machine, not a guarantee under any
    load. Each attempt is a new connection and a new chance, so the client is given a short
    constant reconnect backoff (about fifteen attempts in a 3 s bootstrap instead of five or
    six: the default backoff doubles from 50 ms), and bootstraps again, up to
    :data:`_KP_BOOTSTRAPS` times, while none of its attempts has read the answer. Every attempt
    must have been refused by the server and must end with the answer or with that disconnect
    (the last of a bootstrap may be cut short by its deadline), and one must show the answer
    with its message."""
    kafka = pytest.importorskip("kafka")
    caplog.set_level(logging.WARNING, logger="kafka")
    refused_before = secure.server.stderr().count("SASL authentication failed")
    attempts: list[str] = []
    ended: list[str] = []
    failures: list[str] = []
    for _ in range(_KP_BOOTSTRAPS):
        caplog.clear()
        with pytest.raises(kafka.errors.KafkaTimeoutError):
            kafka.KafkaConsumer(bootstrap_timeout_ms=3000, reconnect_backoff_ms=50,
                                reconnect_backoff_max_ms=50,
                                **_kp_conf(secure, certs, listener, mechanism, "wrong"))
        these = [r.getMessage().partition(" failed: ")[2] for r in caplog.records
                 if r.getMessage().startswith("Bootstrap connection to")]
        done = [a for a in these if a.startswith(_KP_DROPPED) or _KP_AUTH_FAILED in a]
        # the last attempt may instead be cut short by the bootstrap deadline
        assert these[:-1] == done[:len(these) - 1], these
        assert len(done) == len(these) or re.search(r"time(d )?out", these[-1], re.I), these
        attempts += these
        ended += done
        failures += [r.getMessage() for r in caplog.records if _KP_AUTH_FAILED in r.getMessage()]
        if failures:
            break
    assert failures and "Authentication failed" in failures[0], attempts
    refused = secure.server.stderr().count("SASL authentication failed") - refused_before
    assert refused >= len(ended), (refused, attempts)
    _alive(secure)


# ------------------------------------------------------------------------------ aiokafka


def _aio_conf(secure: SecureServer, certs: Certs, listener: str, mechanism: str | None,
              password: str) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    conf: dict[str, Any] = {"bootstrap_servers": secure.bootstrap(listener),
                            "security_protocol": listener}
    if listener.endswith("SSL"):
        conf["ssl_context"] = create_ssl_context(cafile=str(certs.ca))
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": USER,
                     "sasl_plain_password": password})
    return conf


@pytest.mark.parametrize("listener,mechanism", CASES)
def test_aiokafka(secure: SecureServer, certs: Certs, listener: str, mechanism: str | None) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    topic, group = _topic(secure), f"aio-{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        conf = _aio_conf(secure, certs, listener, mechanism, PASSWORD)
        p = aiokafka.AIOKafkaProducer(**conf)
        await p.start()
        try:
            for i in range(MESSAGES):
                await p.send(topic, b"m%d" % i, partition=i % 2)
            await p.flush()
        finally:
            await p.stop()
        c = aiokafka.AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                                      enable_auto_commit=False, session_timeout_ms=6000,
                                      heartbeat_interval_ms=300, **conf)
        await c.start()
        try:
            seen = 0
            deadline = time.monotonic() + TIMEOUT_S
            while seen < MESSAGES and time.monotonic() < deadline:
                batches = await c.getmany(timeout_ms=200)
                for records in batches.values():
                    seen += len(records)
                if batches:
                    await c.commit()
            assert seen == MESSAGES
        finally:
            await c.stop()

    asyncio.run(asyncio.wait_for(main(), TIMEOUT_S + 10))
    assert _committed(secure, group, topic) == MESSAGES


@pytest.mark.parametrize("listener,mechanism", [c for c in CASES if c[1]])
def test_aiokafka_wrong_password(secure: SecureServer, certs: Certs, listener: str,
                                 mechanism: str) -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def main() -> None:
        c = aiokafka.AIOKafkaConsumer(request_timeout_ms=10_000,
                                      **_aio_conf(secure, certs, listener, mechanism, "wrong"))
        try:
            await c.start()
        finally:
            await c.stop()

    with pytest.raises(aiokafka.errors.KafkaError) as info:
        asyncio.run(asyncio.wait_for(main(), TIMEOUT_S))
    assert "Authentication failed" in str(info.value) or isinstance(
        info.value, aiokafka.errors.KafkaConnectionError), info.value
    _alive(secure)


def test_confluent_admin_scram_credentials(secure: SecureServer, certs: Certs) -> None:
    """AdminClient.alter_user_scram_credentials / describe_user_scram_credentials, then the new
    user authenticates; deleting it ends that."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka import admin

    a = admin.AdminClient(_ck_conf(secure, certs, "SASL_SSL", "SCRAM-SHA-512", PASSWORD))
    up = admin.UserScramCredentialUpsertion(
        "zoe", admin.ScramCredentialInfo(admin.ScramMechanism.SCRAM_SHA_256, 8192), b"zoe-pw")
    futs = a.alter_user_scram_credentials([up], request_timeout=TIMEOUT_S)
    futs["zoe"].result(TIMEOUT_S)
    described = a.describe_user_scram_credentials(["zoe"], request_timeout=TIMEOUT_S)
    infos = described["zoe"].result(TIMEOUT_S).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(admin.ScramMechanism.SCRAM_SHA_256,
                                                              8192)]
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=("PLAIN", "zoe", "zoe-pw")) as c:
        assert c.api_versions()
    missing = a.describe_user_scram_credentials(["nobody"], request_timeout=TIMEOUT_S)
    with pytest.raises(ck.KafkaException, match="does not exist"):
        missing["nobody"].result(TIMEOUT_S)
    rm = admin.UserScramCredentialDeletion("zoe", admin.ScramMechanism.SCRAM_SHA_256)
    a.alter_user_scram_credentials([rm], request_timeout=TIMEOUT_S)["zoe"].result(TIMEOUT_S)
    with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED"):
        KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=("PLAIN", "zoe", "zoe-pw"))

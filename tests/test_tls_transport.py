"""The TLS transport of the SSL and SASL_SSL listeners (``server/security/tls_transport.py``)
with several event loops in one process: two embedded servers, each on its own loop and thread,
with an SSL listener, served at once by clients on four threads, every answer whole and right.

Each loop's thread has its own receive buffer: with one buffer for the process, a socket read
on one thread (which releases the GIL) could overwrite bytes another thread has not copied yet.
That race is rare; this test did not catch it with a shared buffer in 600 requests, so it
checks that several loops serve TLS at once, not the race itself."""

from __future__ import annotations

import ssl
import threading
from pathlib import Path

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing import embedded_cluster
from groupcoord.testing.certs import make_certs

ROUNDS = 150


def test_two_embedded_tls_servers_served_at_once_from_several_threads(tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(certs.server),
              "allow.everyone.if.no.acl.found": "true"}
    topics = {f"topic-{i:03d}-{'x' * 100}": 4 for i in range(40)}  # Metadata of ~10 KB
    errors: list[BaseException] = []
    answered = [0]
    lock = threading.Lock()

    def client(bootstrap: str) -> None:
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        try:
            with KafkaClient(bootstrap, ssl_context=ctx) as c:
                for _ in range(ROUNDS):
                    r = c.call(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False)
                    assert len(r.topics) == len(topics)
                    with lock:
                        answered[0] += 1
        except BaseException as e:  # reported by the test thread
            errors.append(e)

    with embedded_cluster(topics=topics, config=config) as a, \
            embedded_cluster(topics=topics, config=config) as b:
        threads = [threading.Thread(target=client, args=(cl.bootstrap_servers,))
                   for cl in (a, b, a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
    assert errors == []
    assert answered[0] == 4 * ROUNDS

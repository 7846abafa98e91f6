"""Wire-level tests against a real ``groupcoord serve``: the server, bad input, fuzzing.

ApiVersions advertises exactly the implemented table; an ApiVersions version it does not have
gets UNSUPPORTED_VERSION, any other API or version outside it closes the connection; malformed,
oversized and random frames close only their own connection and never stop the server;
pipelined requests are answered in order.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.versions import API_VERSIONS, ApiKey
from groupcoord.server.runtime import java_string_hash, partition_for

from .conftest import ServerProcess


def _connect(server: ServerProcess) -> socket.socket:
    s = socket.create_connection((server.host, server.port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _recv_frame(s: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _recv_exactly(s, 4))
    return _recv_exactly(s, size)


def _is_closed(s: socket.socket, timeout: float = 5.0) -> bool:
    s.settimeout(timeout)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _raw_request(key: int, version: int, corr: int, body: bytes = b"", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", key, version, corr, 4) + b"test"
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _alive(server: ServerProcess) -> None:
    assert server.proc.poll() is None, server.stderr()[-3000:]
    with KafkaClient(server.bootstrap) as c:
        assert c.api_versions() == {int(k): v for k, v in API_VERSIONS.items()}


def test_api_versions_advertises_exactly_the_table(gc_server: ServerProcess) -> None:
    for version in (0, 1, 2, 3):
        cls = request_class(ApiKey.API_VERSIONS, version)
        assert cls is not None
        with KafkaClient(gc_server.bootstrap) as c:
            r = c.send(build(cls, client_software_name="t", client_software_version="1"))
        assert r.error_code == ErrorCode.none
        got = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in r.api_keys}
        assert got == {int(k): v for k, v in API_VERSIONS.items()}
    # what real clients need (docs/wire.md)
    assert API_VERSIONS[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert API_VERSIONS[ApiKey.METADATA] == (0, 13)
    assert API_VERSIONS[ApiKey.FIND_COORDINATOR] == (0, 6)
    assert API_VERSIONS[ApiKey.JOIN_GROUP] == (0, 9)
    assert API_VERSIONS[ApiKey.SYNC_GROUP] == (0, 5)
    assert API_VERSIONS[ApiKey.HEARTBEAT] == (0, 4)
    assert API_VERSIONS[ApiKey.LEAVE_GROUP] == (0, 5)
    assert API_VERSIONS[ApiKey.DESCRIBE_GROUPS] == (0, 6)
    assert API_VERSIONS[ApiKey.OFFSET_COMMIT] == (2, 10)
    assert API_VERSIONS[ApiKey.OFFSET_FETCH] == (1, 10)


def test_api_versions_unsupported_version_answers_v0_with_the_list(gc_server: ServerProcess) -> None:
    with _connect(gc_server) as s:
        s.sendall(_raw_request(ApiKey.API_VERSIONS, 9, 77, b"\x00\x00\x00", flexible=True))
        corr, r = decode_response(ApiKey.API_VERSIONS, 0, _recv_frame(s))
    assert corr == 77
    assert r.error_code == ErrorCode.unsupported_version
    assert {int(k.api_key) for k in r.api_keys} == set(API_VERSIONS)


@pytest.mark.parametrize("key, version", [
    pytest.param(60, 0, id="known-to-kafka-not-served"),  # DescribeCluster
    pytest.param(ApiKey.METADATA, 14, id="served-api-unserved-version"),
    pytest.param(2000, 0, id="unknown-api-key"),
])
def test_a_request_outside_the_advertised_table_closes_the_connection(
        gc_server: ServerProcess, key: int, version: int) -> None:
    """As Kafka 4's ``SocketServer.parseRequestHeader`` ("Received request api key ... which
    is not enabled", an InvalidRequestException that closes the channel): only ApiVersions is
    answered whatever its version. The requests before it on the connection are answered."""
    cls = request_class(ApiKey.API_VERSIONS, 0)
    assert cls is not None
    with _connect(gc_server) as s, _connect(gc_server) as good:
        s.sendall(encode_request(build(cls), 4) + _raw_request(key, version, 5, b"\x00" * 8,
                                                               flexible=True))
        corr, r = decode_response(ApiKey.API_VERSIONS, 0, _recv_frame(s))
        assert corr == 4 and r.error_code == ErrorCode.none
        assert _is_closed(s)
        good.sendall(encode_request(build(cls), 8))  # other connections go on
        corr, r = decode_response(ApiKey.API_VERSIONS, 0, _recv_frame(good))
        assert corr == 8 and r.error_code == ErrorCode.none
    assert "which is not enabled" in gc_server.stderr()


@pytest.mark.parametrize("bad", [
    pytest.param(struct.pack(">i", 200 * 1024 * 1024) + b"x" * 16, id="oversized"),
    pytest.param(struct.pack(">i", -5), id="negative-size"),
    pytest.param(_raw_request(ApiKey.METADATA, 12, 1, b"\xff" * 7, flexible=True), id="bad-body"),
    pytest.param(struct.pack(">i", 3) + b"abc", id="short-header"),
    pytest.param(_raw_request(ApiKey.METADATA, 12, 1, b"", flexible=False)[:-1]
                 + b"\x02", id="bad-header-tags"),
])
def test_bad_frame_closes_only_its_connection(gc_server: ServerProcess, bad: bytes) -> None:
    with _connect(gc_server) as good, _connect(gc_server) as victim:
        victim.sendall(bad)
        assert _is_closed(victim)
        cls = request_class(ApiKey.API_VERSIONS, 3)
        assert cls is not None
        good.sendall(encode_request(build(cls, client_software_name="t",
                                          client_software_version="1"), 42))
        corr, r = decode_response(ApiKey.API_VERSIONS, 3, _recv_frame(good))
        assert corr == 42 and r.error_code == ErrorCode.none
    _alive(gc_server)


def test_pipelined_requests_are_answered_in_order(gc_server: ServerProcess) -> None:
    md = request_class(ApiKey.METADATA, 12)
    av = request_class(ApiKey.API_VERSIONS, 3)
    lg = request_class(ApiKey.LIST_GROUPS, 5)
    assert md is not None and av is not None and lg is not None
    bodies = []
    for i in range(60):
        bodies.append([build(md, topics=None, allow_auto_topic_creation=False),
                       build(av, client_software_name="t", client_software_version="1"),
                       build(lg)][i % 3])
    with KafkaClient(gc_server.bootstrap) as c:
        responses = c.send_many(bodies)  # checks correlation ids in order
    assert [type(r).__name__ for r in responses] == [
        ["MetadataResponse", "ApiVersionsResponse", "ListGroupsResponse"][i % 3] for i in range(60)]


def test_fuzz_random_and_truncated_frames_never_stop_the_server(gc_server: ServerProcess) -> None:
    rng = random.Random(20240611)
    md = request_class(ApiKey.METADATA, 12)
    hb = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    assert md is not None and hb is not None
    valid = [
        encode_request(build(md, topics=[{"name": "fuzz", "topic_id": None}],
                             allow_auto_topic_creation=False), 1),
        encode_request(build(hb, group_id="fuzz-g", member_id="m", member_epoch=0,
                             rebalance_timeout=1000, subscribed_topic_names=["x"],
                             topic_partitions=[]), 2),
    ]
    deadline = time.monotonic() + 20
    for i in range(150):
        if time.monotonic() > deadline:
            break
        choice = i % 4
        if choice == 0:  # random bytes, random size prefix
            payload = rng.randbytes(rng.randrange(0, 200))
            data = struct.pack(">i", len(payload)) + payload
        elif choice == 1:  # a valid request with its body cut short (size fixed up)
            v = rng.choice(valid)
            body = v[4:4 + rng.randrange(0, len(v) - 4)]
            data = struct.pack(">i", len(body)) + body
        elif choice == 2:  # a valid request with random bytes flipped
            flipped = bytearray(rng.choice(valid))
            for _ in range(rng.randrange(1, 6)):
                pos = rng.randrange(12, len(flipped))
                flipped[pos] = rng.randrange(256)
            data = bytes(flipped)
        else:  # a frame cut mid-way, then the connection is dropped
            v = rng.choice(valid)
            data = v[:rng.randrange(1, len(v))]
        with _connect(gc_server) as s:
            s.sendall(data)
            s.settimeout(0.05)
            with contextlib.suppress(TimeoutError, ConnectionResetError):
                s.recv(65536)
    _alive(gc_server)


def test_partition_for_is_kafkas() -> None:
    # Java: "".hashCode() == 0, "hello".hashCode() == 99162322, "Aa" and "BB" collide (2112),
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE (Utils.abs maps it to 0).
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("Hello World") == -862545276
    assert partition_for("Hello World", 50) == 862545276 % 50
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("my-group", 1) == 0


def test_every_advertised_version_answers_a_minimal_request(gc_server: ServerProcess) -> None:
    """A zero-valued request of every advertised (API, version) is decoded, handled and answered
    in that version's schema: no handler trips over a field its version lacks."""
    special: dict[int, dict[str, object]] = {
        ApiKey.PRODUCE: {"acks": 1},  # acks=0 would get no response at all
        ApiKey.FETCH: {"max_wait": 0},
    }
    with KafkaClient(gc_server.bootstrap) as c:
        for key, (lo, hi) in sorted(API_VERSIONS.items()):
            for version in range(lo, hi + 1):
                cls = request_class(key, version)
                assert cls is not None, (key, version)
                response = c.send(build(cls, special.get(key, {})))
                assert type(response).__name__.endswith("Response"), (key, version)
    _alive(gc_server)

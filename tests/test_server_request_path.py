"""The server's per-request path in pieces: the response frame of an encoded body with the
header version known ahead, the client id and body offset without a header object, and the
request context a connection's requests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.protocol.codec import (
    build,
    encode_entity,
    encode_request,
    encode_response,
    request_class,
    request_client_id,
    response_class,
    response_frame,
    response_header_version,
)
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.app import Connection, KafkaServer


@pytest.mark.parametrize("key, version", [(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1),
                                          (ApiKey.METADATA, 4), (ApiKey.API_VERSIONS, 3),
                                          (ApiKey.FIND_COORDINATOR, 4)])
def test_response_frame_equals_encode_response(key: int, version: int) -> None:
    cls = response_class(key, version)
    assert cls is not None
    entity = build(cls)
    v1 = response_header_version(key, version) == 1
    assert response_frame(7, encode_entity(entity), v1) == encode_response(key, version, 7, entity)


def test_api_versions_answers_with_header_v0_even_when_flexible() -> None:
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0
    assert response_header_version(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1) == 1


def test_request_client_id_and_body_offset() -> None:
    cls = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    assert cls is not None
    body = build(cls, group_id="g", member_id="m", member_epoch=3, topic_partitions=None)
    raw = encode_request(body, 5, "cid")[4:]
    assert request_client_id(raw, True) == ("cid", 10 + 3 + 1)
    raw = encode_request(body, 5, None)[4:]
    assert request_client_id(raw, True) == (None, 11)


def test_requests_share_a_context_until_what_it_says_changes(tmp_path: Path) -> None:
    conn = Connection(KafkaServer(port=0, data_dir=tmp_path, storage="memory"))
    conn.client_host = "10.0.0.1"
    a = conn.context(68, 1, "c1")
    assert (a.api_key, a.api_version, a.client_id, a.client_host, a.principal, a.listener) == (
        68, 1, "c1", "10.0.0.1", "User:ANONYMOUS", "PLAINTEXT")
    assert conn.context(68, 1, "c1") is a
    assert conn.context(68, 1, "c2").client_id == "c2"
    assert conn.context(68, 0, "c2").api_version == 0
    assert conn.context(3, 0, "c2").api_key == 3
    conn.principal = "User:alice"  # authenticated (SASL) after the first requests
    assert conn.context(3, 0, "c2").principal == "User:alice"

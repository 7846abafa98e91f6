"""The extension APIs' wire schemas (``protocol/schemas/*.json``, ``protocol/extensions.py``).

Checked here, without a server: every bundled schema loads, sits in the extension key block and
agrees with the advertised version table; every message round-trips through kio's readers and
writers; the bytes follow Kafka's flexible encoding (compact strings and arrays as unsigned
varint length + 1, nullable structs as int8 -1/1, tagged fields at the end of each struct),
written out by hand from the JSON definitions; version gating of fields, nullability and tags
works on a multi-version schema; malformed schemas are refused; and the wire carries every field
of the coordinator's messages.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import uuid
from typing import Any

import pytest
from kio.serial import entity_reader, entity_writer

from groupcoord.coordinator.modern.connect import messages as cn
from groupcoord.coordinator.modern.consumer import messages as m
from groupcoord.protocol.codec import build, request_class, response_class
from groupcoord.protocol.extensions import (
    EXTENSION_KEY_RANGE,
    MessageSchema,
    SchemaError,
    entity_class,
    extension_schemas,
    extension_versions,
    parse_versions,
    snake_case,
)
from groupcoord.protocol.versions import API_VERSIONS, ApiKey

EXTENSION_KEYS = {
    ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: "ConsumerGroupPrepareAssignment",
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: "ConsumerGroupInstallAssignment",
    ApiKey.CONNECT_GROUP_HEARTBEAT: "ConnectGroupHeartbeat",
    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: "ConnectGroupPrepareAssignment",
    ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: "ConnectGroupInstallAssignment",
    ApiKey.CONNECT_GROUP_CONFIG: "ConnectGroupConfig",
    ApiKey.CONNECT_GROUP_DESCRIBE: "ConnectGroupDescribe",
}


def encode(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def decode(cls: type[Any], data: bytes) -> Any:
    entity, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    return entity


def test_every_extension_api_has_a_request_and_a_response_schema_in_the_block() -> None:
    schemas = extension_schemas()
    assert {k for k, _ in schemas} == set(EXTENSION_KEYS)
    for key, name in EXTENSION_KEYS.items():
        assert schemas[(key, "request")].name == f"{name}Request"
        assert schemas[(key, "response")].name == f"{name}Response"
        assert EXTENSION_KEY_RANGE[0] <= key <= EXTENSION_KEY_RANGE[1]


def test_advertised_versions_are_the_schema_files_valid_versions() -> None:
    for key, rng in extension_versions().items():
        assert API_VERSIONS[key] == rng
    assert {k for k in API_VERSIONS if k >= EXTENSION_KEY_RANGE[0]} == set(extension_versions())


def test_codec_serves_extension_classes_in_kio_shape() -> None:
    for key, (lo, hi) in extension_versions().items():
        for v in range(lo, hi + 1):
            req, resp = request_class(key, v), response_class(key, v)
            assert req is not None and resp is not None
            assert (req.__api_key__, req.__version__, req.__flexible__) == (key, v, True)
            assert resp.__name__.endswith("Response")
            assert "error_code" in resp.__dataclass_fields__ or key == ApiKey.CONNECT_GROUP_DESCRIBE
        assert request_class(key, hi + 1) is None and response_class(key, hi + 1) is None


# ----------------------------------------------------------------------------- round trips

CAT = {"connectors": ("A", "B"), "tasks": [{"connector": "A", "task": 0}, {"connector": "B", "task": 2}]}
ASSIGNOR = {"name": "incremental-cooperative", "minimum_version": 0, "maximum_version": 2,
            "reason": 1, "version": 2, "metadata": b"\x00\x01"}
TID = uuid.UUID("0b7f4e0c-7b49-4e1f-9d2c-3a6f3e2b1a90")
TPS = [{"topic_id": TID, "partitions": (0, 3, 7)}]

FULL: dict[tuple[int, str], dict[str, Any]] = {
    (1000, "request"): {"group_id": "g", "member_id": "m", "member_epoch": 4},
    (1000, "response"): {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "group_epoch": 5,
        "assignor_name": "range", "members": [{
            "member_id": "m", "member_epoch": 4, "instance_id": "i", "rack_id": None,
            "subscribed_topic_ids": (TID,), "assignor": {"reason": 1, "metadata_version": 3,
                                                         "metadata_bytes": b"x"},
            "topic_partitions": TPS}],
        "topics": [{"topic_id": TID, "topic_name": "t", "num_partitions": 8}]},
    (1001, "request"): {"group_id": "g", "member_id": "m", "member_epoch": 4, "group_epoch": 5,
                        "error": 0, "members": [{"member_id": "m", "topic_partitions": TPS,
                                                 "metadata_version": 1, "metadata_bytes": b""}]},
    (1001, "response"): {"throttle_time_ms": 0, "error_code": 1001, "error_message": "bad"},
    (1002, "request"): {"group_id": "g", "member_id": "w", "member_epoch": 0, "instance_id": None,
                        "rebalance_timeout_ms": 30000, "server_assignor": None,
                        "client_assignors": [ASSIGNOR], "connectors_and_tasks": CAT,
                        "url": "http://w:8083"},
    (1002, "response"): {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                         "member_id": "w", "member_epoch": 3, "heartbeat_interval_ms": 500,
                         "assignment": {"error": 0, "connectors_and_tasks": CAT,
                                        "pending_connectors_and_tasks": {"connectors": (), "tasks": ()},
                                        "metadata_version": 0, "metadata_bytes": b""},
                         "should_compute_assignment": True},
    (1003, "request"): {"group_id": "g", "member_id": "w", "member_epoch": 3},
    (1003, "response"): {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                         "group_epoch": 4, "assignment_epoch": 3, "assignor_name": "eager",
                         "members": [{"member_id": "w", "member_epoch": 3, "instance_id": None,
                                      "url": "u", "assignor": {"version": 1, "reason": 0,
                                                               "metadata": b""},
                                      "connectors_and_tasks": CAT}],
                         "departed_members": [{"member_id": "gone", "connectors_and_tasks": CAT}],
                         "config_offset": 2**40, "connectors": [{"name": "A", "task_count": 1}]},
    (1004, "request"): {"group_id": "g", "member_id": "w", "member_epoch": 3, "group_epoch": 4,
                        "error": 0, "members": [{"member_id": "w", "connectors_and_tasks": CAT,
                                                 "error": 0, "metadata_version": 0,
                                                 "metadata_bytes": b"z"}],
                        "scheduled_rebalance_delay_ms": 300000},
    (1004, "response"): {"throttle_time_ms": 0, "error_code": 0, "error_message": None},
    (1005, "request"): {"group_id": "g", "ops": [{"op": 0, "connector": "A", "task_count": 3},
                                                 {"op": 2, "connector": "B", "task_count": 0}]},
    (1005, "response"): {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                         "group_epoch": 7, "config_offset": 9},
    (1006, "request"): {"group_ids": ("g", "h")},
    (1006, "response"): {"throttle_time_ms": 0, "groups": [{
        "error_code": 0, "error_message": None, "group_id": "g", "group_state": "Stable",
        "group_epoch": 4, "assignment_epoch": 4, "assignment_error": 0,
        "scheduled_rebalance_delay_ms": 0, "assignor_name": "eager", "assigner": None,
        "config_offset": 2, "connectors": [{"name": "A", "task_count": 1}],
        "members": [{"member_id": "w", "instance_id": None, "url": "u", "member_epoch": 4,
                     "state": "STABLE", "client_id": "c", "client_host": "h",
                     "client_assignors": [ASSIGNOR], "assignment": CAT,
                     "pending_revocation": {"connectors": (), "tasks": ()},
                     "target_assignment": CAT}]}]},
}


@pytest.mark.parametrize("key_kind", sorted(FULL), ids=lambda k: f"{k[0]}-{k[1]}")
def test_every_message_round_trips_with_every_field_set(key_kind: tuple[int, str]) -> None:
    key, kind = key_kind
    lo, hi = extension_versions()[key]
    for v in range(lo, hi + 1):
        cls = (request_class if kind == "request" else response_class)(key, v)
        assert cls is not None
        entity = build(cls, FULL[key_kind])
        data = encode(entity)
        back = decode(cls, data)
        assert back == entity
        assert encode(back) == data
        # every field of the schema was given a value above (none left to a default)
        assert set(FULL[key_kind]) == set(cls.__dataclass_fields__)


def test_zero_valued_messages_round_trip() -> None:
    for schema in extension_schemas().values():
        for v in schema.versions:
            cls = entity_class(schema, v)
            entity = build(cls)
            assert decode(cls, encode(entity)) == entity


# ----------------------------------------------------------------------------- bytes by hand


def req_cls(key: int) -> type[Any]:
    cls = request_class(key, 0)
    assert cls is not None
    return cls


def resp_cls(key: int) -> type[Any]:
    cls = response_class(key, 0)
    assert cls is not None
    return cls


def cstr(s: str) -> bytes:
    b = s.encode()
    return bytes((len(b) + 1,)) + b


def test_connect_group_config_request_bytes_follow_the_schema() -> None:
    cls = req_cls(ApiKey.CONNECT_GROUP_CONFIG)
    entity = build(cls, FULL[(1005, "request")])
    expected = (cstr("g") + b"\x03"  # GroupId, Ops: 2 entries
                + b"\x00" + cstr("A") + struct.pack(">i", 3) + b"\x00"  # Op, Connector, TaskCount, tags
                + b"\x02" + cstr("B") + struct.pack(">i", 0) + b"\x00"
                + b"\x00")  # top-level tagged fields
    assert encode(entity) == expected


def test_heartbeat_url_is_a_tagged_field() -> None:
    cls = req_cls(ApiKey.CONNECT_GROUP_HEARTBEAT)
    base = {"group_id": "g", "member_id": "w", "member_epoch": 1, "rebalance_timeout_ms": -1}
    without = encode(build(cls, base))
    prefix = (cstr("g") + cstr("w") + struct.pack(">i", 1) + b"\x00"  # InstanceId null
              + struct.pack(">i", -1) + b"\x00"  # ServerAssignor null
              + b"\x00"  # ClientAssignors null (compact array length 0)
              + b"\xff")  # ConnectorsAndTasks null struct
    assert without == prefix + b"\x00"
    url = cstr("http://w:8083")
    with_url = encode(build(cls, {**base, "url": "http://w:8083"}))
    assert with_url == prefix + b"\x01" + b"\x00" + bytes((len(url),)) + url
    assert decode(cls, with_url).url == "http://w:8083"
    assert decode(cls, without).url is None


def test_heartbeat_response_assignment_is_a_nullable_struct() -> None:
    cls = resp_cls(ApiKey.CONNECT_GROUP_HEARTBEAT)
    data = encode(build(cls, throttle_time_ms=0, error_code=25, error_message=None, member_id=None,
                        member_epoch=0, heartbeat_interval_ms=0, assignment=None))
    assert data == (struct.pack(">ih", 0, 25) + b"\x00\x00" + struct.pack(">ii", 0, 0)
                    + b"\xff" + b"\x00" + b"\x00")  # null assignment, ShouldCompute false, tags


# ----------------------------------------------------------------------------- the generator itself

MULTI = """
// a test schema with fields that come and go between versions
{
  "apiKey": 1099, "type": "request", "name": "DemoRequest",
  "validVersions": "0-2", "flexibleVersions": "1+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+" },
    { "name": "Note", "type": "string", "versions": "1+", "nullableVersions": "2+", "default": "x" },
    { "name": "Ids", "type": "[]int64", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Extra", "type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 5,
      "default": "-1" }
  ]
}
"""


def test_fields_follow_versions_nullability_tags_and_flexibility() -> None:
    schema = MessageSchema.parse(MULTI)
    v0, v1, v2 = (entity_class(schema, v) for v in (0, 1, 2))
    assert set(v0.__dataclass_fields__) == {"group_id", "ids"}
    assert set(v1.__dataclass_fields__) == {"group_id", "note", "ids", "extra"}
    assert not v0.__flexible__ and v1.__flexible__
    # v0 is not flexible: int16 string length, int32 array length
    assert encode(build(v0, group_id="ab", ids=(7,))) == (
        struct.pack(">h", 2) + b"ab" + struct.pack(">iq", 1, 7))
    # v1: compact string/array, tagged Extra written only when set
    assert encode(build(v1, group_id="ab", note="n", ids=())) == cstr("ab") + cstr("n") + b"\x01\x00"
    tagged = encode(build(v1, group_id="ab", note="n", ids=(), extra=9))
    assert tagged == cstr("ab") + cstr("n") + b"\x01" + b"\x01\x05\x04" + struct.pack(">i", 9)
    assert decode(v1, tagged).extra == 9
    # v2: Note becomes nullable
    assert decode(v2, encode(build(v2, group_id="", note=None, ids=None))).note is None
    assert v1.__dataclass_fields__["note"].default == "x"


@pytest.mark.parametrize("text, message", [
    ("{", "not a JSON"),
    ('{"apiKey": 1, "type": "request", "name": "X", "validVersions": "0"}', "without 'fields'"),
    ('{"apiKey": 1, "type": "header", "name": "X", "validVersions": "0", "fields": []}',
     "request or response"),
])
def test_malformed_schemas_are_refused(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        MessageSchema.parse(text)


def test_bad_fields_are_refused() -> None:
    def schema(field: str) -> MessageSchema:
        return MessageSchema.parse('{"apiKey": 1001, "type": "request", "name": "X", '
                                   '"validVersions": "0", "flexibleVersions": "none", '
                                   f'"fields": [{field}]}}')
    with pytest.raises(SchemaError, match="tagged field in a non-flexible"):
        entity_class(schema('{"name": "A", "type": "int8", "versions": "0+", '
                            '"taggedVersions": "0+", "tag": 0, "default": 0}'), 0)
    with pytest.raises(SchemaError, match="unknown struct type"):
        entity_class(schema('{"name": "A", "type": "Nope", "versions": "0+"}'), 0)
    with pytest.raises(SchemaError, match="default null but not nullable"):
        entity_class(schema('{"name": "A", "type": "string", "versions": "0+", "default": "null"}'), 0)
    with pytest.raises(SchemaError, match="no version 3"):
        entity_class(schema('{"name": "A", "type": "string", "versions": "0+"}'), 3)


def test_version_ranges_and_names() -> None:
    assert 0 in parse_versions("0") and 1 not in parse_versions("0")
    assert 7 in parse_versions("3+") and 2 not in parse_versions("3+")
    assert 2 in parse_versions("1-3") and 4 not in parse_versions("1-3")
    assert 0 not in parse_versions("none") and 0 not in parse_versions(None)
    with pytest.raises(SchemaError):
        parse_versions("a+")
    assert snake_case("ConnectorsAndTasks") == "connectors_and_tasks"
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("SubscribedTopicIds") == "subscribed_topic_ids"


# ----------------------------------------------------------------------------- wire vs coordinator

# coordinator fields that come from the connection or request header, not the body
_FROM_CONTEXT = {"client_id", "client_host", "version"}


@pytest.mark.parametrize("key, kind, dc", [
    (1000, "request", m.ConsumerGroupPrepareAssignmentRequest),
    (1000, "response", m.ConsumerGroupPrepareAssignmentResponse),
    (1001, "request", m.ConsumerGroupInstallAssignmentRequest),
    (1001, "response", m.ConsumerGroupInstallAssignmentResponse),
    (1002, "request", cn.ConnectGroupHeartbeatRequest),
    (1002, "response", cn.ConnectGroupHeartbeatResponse),
    (1003, "request", cn.ConnectGroupPrepareAssignmentRequest),
    (1003, "response", cn.ConnectGroupPrepareAssignmentResponse),
    (1004, "request", cn.ConnectGroupInstallAssignmentRequest),
    (1004, "response", cn.ConnectGroupInstallAssignmentResponse),
    (1005, "request", cn.ConnectGroupConfigRequest),
    (1005, "response", cn.ConnectGroupConfigResponse),
    (1006, "request", cn.ConnectGroupDescribeRequest),
    (1006, "response", cn.ConnectGroupDescribeResponse),
])
def test_the_wire_carries_every_field_of_the_coordinator_message(key: int, kind: str, dc: type) -> None:
    cls = (request_class if kind == "request" else response_class)(key, 0)
    assert cls is not None
    wire = set(cls.__dataclass_fields__)
    core = {f.name for f in dataclasses.fields(dc)} - _FROM_CONTEXT
    assert core <= wire, core - wire

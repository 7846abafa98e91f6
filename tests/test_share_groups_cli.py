"""``groupcoord groups describe`` of a share group (``server/share_groups_cli.py``) from
ShareGroupDescribe and, when the broker serves it, DescribeShareGroupOffsets (the share
partitions' admin API): members, the members sharing each partition, start offsets and lag.
The broker's answers are kio entities of those APIs' schemas (what the client decodes); the
over-the-wire describe without offsets is in ``test_share_group_wire.py``."""

from __future__ import annotations

import uuid
from typing import Any

from groupcoord.protocol.codec import build, response_class
from groupcoord.protocol.versions import API_VERSIONS, ApiKey
from groupcoord.server.cli import _table
from groupcoord.server.share_groups_cli import DESCRIBE_SHARE_GROUP_OFFSETS, describe_share, share_lines

TOPIC_ID = uuid.UUID(int=7)


class Broker:
    """Answers the two APIs with fixed responses; ``offsets``: serve API 90 or not."""

    def __init__(self, offsets: bool) -> None:
        self.versions = {int(k): v for k, v in API_VERSIONS.items()}
        if offsets:
            self.versions[DESCRIBE_SHARE_GROUP_OFFSETS] = (0, 1)
        else:  # a broker without share partitions (the server advertises API 90 now)
            self.versions.pop(DESCRIBE_SHARE_GROUP_OFFSETS, None)
        self.calls: list[tuple[int, int]] = []

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return self.versions

    def call(self, api_key: int, wanted_max: int, values: Any = None, wanted_min: int = 0,
             **kw: Any) -> Any:
        self.calls.append((api_key, wanted_max))
        cls = response_class(api_key, wanted_max)
        assert cls is not None
        if api_key == ApiKey.SHARE_GROUP_DESCRIBE:
            member = {"member_id": "m-{}", "rack_id": None, "member_epoch": 3,
                      "client_id": "c", "client_host": "/h", "subscribed_topic_names": ["t"]}
            return build(cls, throttle_time=0, groups=[{
                "error_code": 0, "group_id": kw["group_ids"][0], "group_state": "Stable",
                "group_epoch": 3, "assignment_epoch": 3, "assignor_name": "simple",
                "authorized_operations": 0,
                "members": [dict(member, member_id=f"m-{i}", assignment={"topic_partitions": [
                    {"topic_id": TOPIC_ID, "topic_name": "t", "partitions": ps}]})
                    for i, ps in enumerate([[0], [0, 1], [1]])]}])
        assert api_key == DESCRIBE_SHARE_GROUP_OFFSETS and wanted_max == 1
        return build(cls, throttle_time=0, groups=[{
            "group_id": kw["groups"][0]["group_id"], "error_code": 0, "topics": [{
                "topic_name": "t", "topic_id": TOPIC_ID, "partitions": [
                    {"partition_index": 0, "start_offset": 40, "leader_epoch": 0, "lag": 2,
                     "error_code": 0},
                    {"partition_index": 1, "start_offset": 7, "leader_epoch": 0, "lag": -1,
                     "error_code": 0},
                    {"partition_index": 2, "start_offset": 0, "leader_epoch": 0, "lag": 0,
                     "error_code": 0}]}]}])


def test_a_share_group_with_its_offsets() -> None:
    b = Broker(offsets=True)
    g: dict[str, Any] = {"group_id": "sg"}
    assert describe_share(b, "sg", g)  # type: ignore[arg-type]
    assert (g["type"], g["state"], g["group_epoch"], g["assignor"]) == ("share", "Stable", 3,
                                                                       "simple")
    assert g["partitions"] == [
        {"topic": "t", "partition": 0, "members": ["m-0", "m-1"], "start_offset": 40, "lag": 2},
        {"topic": "t", "partition": 1, "members": ["m-1", "m-2"], "start_offset": 7, "lag": None},
        {"topic": "t", "partition": 2, "members": [], "start_offset": 0, "lag": 0}]
    text = "\n".join(share_lines(g, _table))
    assert "START-OFFSET" in text and "LAG" in text
    row = next(line for line in text.splitlines() if line.startswith("t ") and " 1 " in line)
    assert row.split()[2:] == ["7", "-", "m-1,m-2"]


def test_without_the_offsets_api_the_columns_are_absent() -> None:
    b = Broker(offsets=False)
    g: dict[str, Any] = {"group_id": "sg"}
    assert describe_share(b, "sg", g)  # type: ignore[arg-type]
    assert [c for c, _ in b.calls] == [ApiKey.SHARE_GROUP_DESCRIBE]
    assert all("start_offset" not in p for p in g["partitions"])
    assert "START-OFFSET" not in "\n".join(share_lines(g, _table))

"""``groupcoord groups describe`` for share groups (KIP-932), as ``kafka-share-groups.sh
--describe --members`` shows them: the group's state, epochs and assignor, each member with the
partitions it is assigned, and each partition with every member sharing it (a share partition
may be assigned to several members). Asked with ShareGroupDescribe v1; ``server/cli.py`` calls
:func:`describe_share` for a group that is not a consumer or connect group.

A share group has no committed offsets: where it stands in each partition is its
share-partition state. When the broker serves DescribeShareGroupOffsets (API 90, the share
partitions' admin API, KIP-932), each partition row carries its start offset and lag (v1) as
``kafka-share-groups.sh --describe`` shows them, every partition of the topics the members
subscribe to included; otherwise those columns are absent.
"""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

#: DescribeShareGroupOffsets (KIP-932), served by the share partitions when they are there.
DESCRIBE_SHARE_GROUP_OFFSETS = 90


def describe_share(c: KafkaClient, group_id: str, group: dict[str, Any]) -> bool:
    """Fill ``group`` from ShareGroupDescribe; False if no share group has that id (or the
    broker does not serve the API)."""
    if ApiKey.SHARE_GROUP_DESCRIBE not in c.api_versions():
        return False
    d = c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group_id],
               include_authorized_operations=False).groups[0]
    if d.error_code:
        return False
    members = []
    shared: dict[tuple[str, int], list[str]] = {}
    for mb in d.members:
        assigned = {tp.topic_name: sorted(int(p) for p in tp.partitions)
                    for tp in mb.assignment.topic_partitions}
        members.append({"member_id": mb.member_id, "rack_id": mb.rack_id,
                        "client_id": mb.client_id, "client_host": mb.client_host,
                        "member_epoch": int(mb.member_epoch),
                        "subscribed_topic_names": list(mb.subscribed_topic_names),
                        "assignment": assigned})
        for topic, ps in assigned.items():
            for p in ps:
                shared.setdefault((topic, p), []).append(mb.member_id)
    offsets = _share_offsets(c, group_id)
    keys = sorted(set(shared) | set(offsets))
    partitions = []
    for key in keys:
        row: dict[str, Any] = {"topic": key[0], "partition": key[1],
                               "members": sorted(shared.get(key, []))}
        if key in offsets:
            row["start_offset"], row["lag"] = offsets[key]
        partitions.append(row)
    group.update(type="share", state=d.group_state, group_epoch=int(d.group_epoch),
                 assignment_epoch=int(d.assignment_epoch), assignor=d.assignor_name,
                 members=members, partitions=partitions)
    return True


def _share_offsets(c: KafkaClient, group_id: str) -> dict[tuple[str, int], tuple[int, int | None]]:
    """(topic, partition) -> (start offset, lag or None) from DescribeShareGroupOffsets, for
    the partitions with share state; empty when the broker does not serve the API."""
    versions = c.api_versions().get(DESCRIBE_SHARE_GROUP_OFFSETS)
    if versions is None:
        return {}
    r = c.call(DESCRIBE_SHARE_GROUP_OFFSETS, min(versions[1], 1), wanted_min=versions[0],
               groups=[{"group_id": group_id, "topics": None}])
    out: dict[tuple[str, int], tuple[int, int | None]] = {}
    for g in r.groups:
        if int(g.error_code):
            continue
        for t in g.topics:
            for p in t.partitions:
                if int(p.error_code) or int(p.start_offset) < 0:
                    continue
                lag = int(getattr(p, "lag", -1))
                out[(t.topic_name, int(p.partition_index))] = (int(p.start_offset),
                                                               None if lag < 0 else lag)
    return out


def share_lines(g: dict[str, Any], table: Any) -> list[str]:
    """The text of a described share group (``table`` formats rows, ``server/cli.py``'s)."""
    lines = [f"Group {g['group_id']}: share, state {g['state']}, epoch {g['group_epoch']}, "
             f"assignment epoch {g['assignment_epoch']}, assignor {g['assignor']}, "
             f"{len(g['members'])} members"]
    rows = [["MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"]] + [
        [mb["member_id"], mb["client_id"], mb["client_host"], str(mb["member_epoch"]),
         ",".join(f"{t}-{p}" for t, ps in sorted(mb["assignment"].items()) for p in ps) or "-"]
        for mb in g["members"]]
    if len(rows) > 1:
        lines.append(table(rows))
    with_offsets = any("start_offset" in p for p in g["partitions"])

    def shown(v: Any) -> str:
        return "-" if v is None else str(v)

    parts = [["TOPIC", "PARTITION", *(["START-OFFSET", "LAG"] if with_offsets else []),
              "MEMBERS"]] + [
        [p["topic"], str(p["partition"]),
         *([shown(p.get("start_offset")), shown(p.get("lag"))] if with_offsets else []),
         ",".join(p["members"]) or "-"] for p in g["partitions"]]
    if len(parts) > 1:
        lines.append(table(parts))
    return lines

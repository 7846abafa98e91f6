"""``groupcoord groups describe`` for share groups (KIP-932), as ``kafka-share-groups.sh
--describe --members`` shows them: the group's state, epochs and assignor, each member with the
partitions it is assigned, and each partition with every member sharing it (a share partition
may be assigned to several members). Asked with ShareGroupDescribe v1; ``server/cli.py`` calls
:func:`describe_share` for a group that is not a consumer or connect group.

A share group has no committed offsets and no lag in the consumer sense: where it stands in
each partition is its share-partition state (DescribeShareGroupOffsets), not shown here.
"""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey


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
    group.update(type="share", state=d.group_state, group_epoch=int(d.group_epoch),
                 assignment_epoch=int(d.assignment_epoch), assignor=d.assignor_name,
                 members=members,
                 partitions=[{"topic": t, "partition": p, "members": sorted(ms)}
                             for (t, p), ms in sorted(shared.items())])
    return True


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
    parts = [["TOPIC", "PARTITION", "MEMBERS"]] + [
        [p["topic"], str(p["partition"]), ",".join(p["members"])] for p in g["partitions"]]
    if len(parts) > 1:
        lines.append(table(parts))
    return lines

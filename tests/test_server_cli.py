"""``groupcoord topics ...`` and ``groupcoord groups ...`` against a real server."""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import GROUPCOORD, ServerProcess


def run(server: ServerProcess, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [*GROUPCOORD, *args[:2], "--bootstrap-server", server.bootstrap, *args[2:]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def run_json(server: ServerProcess, *args: str) -> Any:
    return json.loads(run(server, *args, "--json").stdout)


def test_topics_create_list_add_partitions_delete(gc_server: ServerProcess) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = run_json(gc_server, "topics", "create", name, "--partitions", "3")
    assert created["name"] == name and created["partitions"] == 3 and created["error"] is None
    assert uuid.UUID(created["topic_id"]).int != 0

    listed = {t["name"]: t for t in run_json(gc_server, "topics", "list")}
    assert listed[name] == {"name": name, "topic_id": created["topic_id"], "partitions": 3}
    text = run(gc_server, "topics", "list").stdout
    assert "TOPIC" in text.splitlines()[0] and name in text

    again = run(gc_server, "topics", "create", name, "--partitions", "3", ok=False)
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr

    grown = run_json(gc_server, "topics", "add-partitions", name, "--partitions", "5")
    assert grown["partitions"] == 5
    listed = {t["name"]: t for t in run_json(gc_server, "topics", "list")}
    assert listed[name]["partitions"] == 5
    shrink = run(gc_server, "topics", "add-partitions", name, "--partitions", "2", ok=False)
    assert shrink.returncode == 1 and "INVALID_PARTITIONS" in shrink.stderr

    bad = run(gc_server, "topics", "create", "bad/name", ok=False)
    assert bad.returncode == 1 and "INVALID_TOPIC_EXCEPTION" in bad.stderr

    run(gc_server, "topics", "delete", name)
    assert name not in {t["name"] for t in run_json(gc_server, "topics", "list")}


def test_groups_list_and_describe(gc_server: ServerProcess) -> None:
    topic = f"cli-g-{uuid.uuid4().hex[:8]}"
    group = f"cli-group-{uuid.uuid4().hex[:8]}"
    run(gc_server, "topics", "create", topic, "--partitions", "2")
    with KafkaClient(gc_server.bootstrap, client_id="cli-test") as c:
        # a long session for this group: the CLI runs below must not outlive the member
        r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[{
            "resource_type": 16, "resource_name": group, "configs": [
                {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "60000"}]}])
        assert int(r.responses[0].error_code) == 0
        # a consumer-protocol member (v0: the coordinator names it) ...
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="",
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    topic_partitions=[])
        assert int(hb.error_code) == 0 and hb.member_id
        assert len(hb.member_id) == 22  # Kafka's base64 UUID text form
        # ... and committed offsets for an admin-managed group
        admin_group = group + "-admin"
        r = c.call(ApiKey.OFFSET_COMMIT, 9, group_id=admin_group, generation_id_or_member_epoch=-1,
                   member_id="", topics=[{"name": topic, "partitions": [
                       {"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}]}])
        assert int(r.topics[0].partitions[0].error_code) == 0

        listed = {g["group_id"]: g for g in run_json(gc_server, "groups", "list")}
        assert listed[group]["type"] == "consumer"
        assert listed[group]["state"] in ("Stable", "Reconciling", "Assigning")
        assert admin_group in listed
        only_consumer = run_json(gc_server, "groups", "list", "--type", "consumer")
        assert admin_group not in {g["group_id"] for g in only_consumer}

        described = run_json(gc_server, "groups", "describe", group)[0]
        assert described["group_epoch"] >= 1
        [member] = described["members"]
        assert member["member_id"] == hb.member_id
        assert member["client_id"] == "cli-test"
        assert member["subscribed_topic_names"] == [topic]
        assert member["target_assignment"] == {topic: [0, 1]}
        text = run(gc_server, "groups", "describe", group).stdout
        assert f"Group {group}" in text

        admin = run_json(gc_server, "groups", "describe", admin_group)[0]
        assert admin["partitions"] == [{"topic": topic, "partition": 0, "current_offset": 0,
                                        "log_end_offset": 0, "lag": 0, "member_id": None,
                                        "client_id": None, "host": None}]

        # leave, so the group does not wait for a session timeout
        c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id=hb.member_id,
               member_epoch=-1, topic_partitions=None)

    missing = run(gc_server, "groups", "describe", "no-such-group", ok=False)
    assert missing.returncode == 1 and "GROUP_ID_NOT_FOUND" in missing.stdout

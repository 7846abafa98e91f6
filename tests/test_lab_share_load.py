"""The share comparison's load per member (ninth outside review of the share page): at 12
members on 4 partitions a share group's members are each 20 % busy, a consumer group's 4
working members each 60 % (8 idle); condition (a) says both, the redundancy condition says
the load is 3x lighter per member, and a consumer-only grid's load column names its working
members, not the rate spread over all 12."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.mechanism import busy_clause, member_load, share_capacity

SHARE, KIP848 = "share:simple", "consumer:uniform"
WORK = "60 rec/s, exponential:10 ms/rec, max.poll.records 100"


def _run(protocol: str, size: int, workload: str = "1x4-busy", parts: int = 4) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "rolling-bounce", "size": size, "members": size,
            "workload": workload, "fault_rate": 0.0, "seed": 0, "ok": True,
            "total_partitions": parts, "total_topics": 1, "work_model": WORK}


def test_condition_a_says_each_protocols_busy_share() -> None:
    ld = member_load(_run(KIP848, 12))
    assert ld is not None
    text = busy_clause(ld, [SHARE, KIP848])
    assert "share:simple's members 20% busy" in text
    assert "consumer:uniform's 4 working members of 12 (8 idle) 60% busy" in text
    # one member per partition: one load for both protocols, said once
    even = member_load(_run(KIP848, 12, "1x12-busy", 12))
    assert even is not None
    assert busy_clause(even, [SHARE, KIP848]).startswith("members 60% busy, polls of about")


def test_the_redundancy_condition_says_the_load_per_member_too() -> None:
    runs = [_run(SHARE, 12), _run(KIP848, 12)]
    text = share_capacity(12, [SHARE, KIP848], runs)
    assert "redundancy" in text
    assert "3x less load per member (20% busy against the consumer group's working " \
           "members' 60%" in text
    assert "not spare capacity" not in text


def test_a_consumer_only_grid_names_its_working_members() -> None:
    ld = member_load(_run(KIP848, 12))
    assert ld is not None
    assert ld.text(consumer=True).startswith(
        "4 of 12 members work, 60 rec/s, 60.0% busy each (8 idle)")
    assert ld.text().startswith("20 rec/s, 20.0% busy per member")
    four = member_load(_run(KIP848, 4))
    assert four is not None and four.text(consumer=True) == four.text()

"""A share run's settings as the lab records them (``settings_json``, the report's Settings
table): the share group's own, under Kafka's group.share names, with the record lock duration,
delivery count limit and assignment interval the share simulation ran with."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from groupcoord.lab.runs import build_scenario
from groupcoord.lab.spec import expand, load_spec
from groupcoord.sim.settings import effective_settings
from groupcoord.sim.share import ShareSimulation


def test_a_share_run_records_its_share_settings() -> None:
    spec = Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data" / "share.toml"
    run = next(r for r in expand(load_spec(str(spec))) if r.protocol == "share:simple")
    sc = replace(build_scenario(run), assignment_interval_ms=1_000)
    got = effective_settings(sc, "share:simple")
    s = ShareSimulation.settings
    assert got["group.share.record.lock.duration.ms"] == s.lock_duration_ms == 30_000
    assert got["group.share.delivery.count.limit"] == s.delivery_count_limit == 5
    assert got["group.share.assignment.interval.ms"] == 1_000
    assert got["group.share.heartbeat.interval.ms"] == sc.heartbeat_interval_ms
    assert got["group.share.session.timeout.ms"] == sc.session_timeout_ms
    # no consumer-group names on a share run (nor auto-commits: a share consumer acknowledges)
    assert not any(k.startswith("group.consumer.") for k in got)
    assert "auto.commit.interval.ms" not in got
    # a consumer group's settings are unchanged
    assert "group.consumer.heartbeat.interval.ms" in effective_settings(sc, "consumer:uniform")

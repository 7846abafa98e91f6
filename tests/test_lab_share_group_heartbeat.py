"""KIP-848's and KIP-932's heartbeat interval is the group's (the eleventh outside share
review): a group config (consumer.heartbeat.interval.ms, share.heartbeat.interval.ms) the
broker bounds (group.consumer.min.heartbeat.interval.ms, group.share.min.heartbeat.interval.ms,
5 s by default: KIP-848, Kafka's group configs), not a client knob. The protocol line and the
sentences' heartbeat clause say so; a classic label's heartbeat stays the client's."""

from __future__ import annotations

from groupcoord.lab.report import timing_text
from groupcoord.lab.share_marks import group_heartbeat_words


def test_the_protocol_line_names_the_group_config_and_the_brokers_bounds() -> None:
    text = timing_text("consumer:uniform@hb1s", share=True)
    assert text.startswith("consumer:uniform with its group's heartbeat interval 1 s "
                           "(the group config consumer.heartbeat.interval.ms, within the "
                           "broker's group.consumer.min.heartbeat.interval.ms, 5 s by default, "
                           "so 1 s needs it lowered)"), text
    assert "share.heartbeat.interval.ms, within the broker's " \
           "group.share.min.heartbeat.interval.ms, 5 s by default" in timing_text(
               "share:simple@hb1s", share=True)
    # the paper page's wording is the paper page's (its own branch)
    assert timing_text("consumer:uniform@hb1s") == (
        "consumer:uniform with its heartbeat 1 s instead of the field's default (the same "
        "seeds)")


def test_the_sentences_heartbeat_clause_says_it_is_the_groups() -> None:
    assert group_heartbeat_words(1000.0) == "A 1 s group heartbeat (a broker-side config, " \
                                            "under its 5 s default minimum)"

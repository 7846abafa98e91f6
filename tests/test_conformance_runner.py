"""The ``make conformance`` runner (tests/conformance/librdkafka.py) without building librdkafka:
how it reads the test runner's output, applies the known failures and selects the curated list.
The output samples are librdkafka 2.15.1's test runner's own lines (colour codes included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.librdkafka import (
    Row,
    classify,
    markdown,
    parse_output,
    rows_of,
    summary_line,
)
from tests.conformance.suite import CASES, KNOWN_FAILURES, select

GRN, RED, MAG, CLR = "\x1b[32m", "\x1b[31m", "\x1b[35m", "\x1b[0m"

T30 = "[0030_offset_commit          /  0.061s] "
T61 = "[0061_consumer_lag           /  4.000s] "
LAG = "do_test_consumer_lag:192: Test consumer lag"

PASSING = "\n".join([
    f"{T30}{MAG}[ do_empty_commit:414 ]{CLR}",
    f"{T30}[ do_empty_commit group.id 4041001529711704513 ]",
    f"{T30}{GRN}[ do_empty_commit:414: PASS (0.73s) ]{CLR}",
    f"{T30}{MAG}[ do_offset_test:122: AUTO.COMMIT & AUTO.STORE ]{CLR}",
    f"{T30}{GRN}[ do_offset_test:122: AUTO.COMMIT & AUTO.STORE: PASS (1.38s) ]{CLR}",
    f"|{GRN} <MAIN>                                   |     PASSED |  10.002s {CLR}|",
    f"|{GRN} 0030_offset_commit                       |     PASSED |   9.495s {CLR}|",
])

FAILING = "\n".join([
    f"{T61}{MAG}[ {LAG} without transactions ]{CLR}",
    f"{T61}{GRN}[ {LAG} without transactions: PASS (3.90s) ]{CLR}",
    f"{T61}{MAG}[ {LAG} with transactions ]{CLR}",
    f"|{RED} 0061_consumer_lag                        |     FAILED |  30.250s {CLR}|"
    f"{RED} init_transactions() failed{CLR}",
])


def test_a_passing_run_is_read_from_its_summary() -> None:
    results, open_subtests = parse_output(PASSING)
    assert results == {"0030_offset_commit": ("PASSED", 9.495, "")}  # <MAIN> is no test
    # a line in brackets that names no function:line is no sub-test
    assert open_subtests == {}


def test_a_failing_run_names_the_sub_test_it_stopped_in() -> None:
    results, open_subtests = parse_output(FAILING)
    assert results["0061_consumer_lag"][0] == "FAILED"
    assert "init_transactions() failed" in results["0061_consumer_lag"][2]
    assert open_subtests == {
        "0061_consumer_lag": "do_test_consumer_lag:192: Test consumer lag with transactions"}


def test_a_known_failure_counts_only_in_its_sub_test(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "0061_consumer_lag"
    # an entry of the kind the list held before transactions were served
    monkeypatch.setitem(KNOWN_FAILURES, name, ("with transactions",
                                               "transactions: not served by groupcoord"))
    pattern, _ = KNOWN_FAILURES[name]
    result, reason = classify(name, "FAILED", "boom", f"do_test_consumer_lag:192: Test consumer "
                                                      f"lag {pattern}")
    assert result == "known failure" and "transactions" in reason
    # the same test failing in another sub-test is a failure
    result, reason = classify(name, "FAILED", "boom",
                              "do_test_consumer_lag:192: Test consumer lag without transactions")
    assert result == "failed" and "boom" in reason
    # and passing is said, so the entry gets removed
    assert classify(name, "PASSED", "", None)[0] == "known failure passed"
    assert classify("0030_offset_commit", "FAILED", "x", None) == ("failed", "x")
    assert classify("0030_offset_commit", "SKIPPED", "needs 0.9", None) == ("skipped", "needs 0.9")


def test_rows_summary_and_markdown() -> None:
    rows = [Row("0030_offset_commit", "consumer", "plaintext", "passed", 9.5),
            Row("0061_consumer_lag", "classic", "plaintext", "known failure", 30.2, "a | b"),
            Row("0045_subscribe_update", "consumer", "sasl_ssl", "failed", 1.0, "why")]
    assert summary_line(rows) == "1 passed, 1 failed, 1 skipped"
    assert [r.ok for r in rows] == [True, True, False]
    md = markdown(rows).splitlines()
    assert md[0] == "| test | protocol | security | result | seconds | reason |"
    assert md[3] == "| 0061_consumer_lag | classic | plaintext | known failure | 30.2 | a \\| b |"


def test_subsets() -> None:
    full = select("full")
    assert [c.number for c in full] == sorted(c.number for c in CASES)
    ci = select("ci")
    assert ci and set(ci) < set(full) and all(c.ci for c in ci)
    assert [c.number for c in select("full", ["0045", "0030"])] == ["0030", "0045"]
    with pytest.raises(ValueError, match="9999"):
        select("full", ["9999"])
    # every known failure belongs to a test of the list
    assert {k[:4] for k in KNOWN_FAILURES} <= {c.number for c in CASES}


def test_share_consumer_cases_ask_for_kafka_4_2_and_run_once() -> None:
    """librdkafka's share consumer tests are declared for Kafka 4.2 (the runner skips them for
    an older broker) and do not depend on the consumer group protocol."""
    share = [c for c in CASES if c.share]
    assert share and all(c.kafka_version == "4.2.0" and c.number.startswith("01")
                         for c in share)
    assert all(c.kafka_version == "4.0.0" for c in CASES if not c.share)


def test_local_tests_and_other_scenarios_are_left_out() -> None:
    """``TESTS=0045`` reports every 0045 test: the mock ones (``-L`` filters them) and those of
    the ``noautocreate`` scenario (skipped silently in the default one) are no rows."""
    text = "\n".join([
        "[0045_subscribe_update_mock  /  0.000s] WARN: SKIPPING TEST: Filtered due to negative "
        "test flags",
        "[0045_subscribe_update      /  1.000s] Creating topic",
        "| 0045_subscribe_update_topic_remove       |    SKIPPED |   0.000s | ",
        "| 0045_subscribe_update_mock               |    SKIPPED |   0.000s | Filtered due to "
        "negative test flags",
        "| 0045_subscribe_update                    |     PASSED |  20.600s | ",
    ])
    rows = rows_of(text, "classic", "plaintext")
    assert [(r.test, r.result, r.seconds) for r in rows] == [
        ("0045_subscribe_update", "passed", 20.6)]


def test_an_aborted_run_is_read_from_each_tests_own_lines() -> None:
    """A failing test makes the runner abort before its summary: each test's end line says."""
    text = "\n".join([
        "[0045_resubscribe_with_regex /  0.000s] [ do_test_resubscribe_with_regex:704: "
        "Resubscribe with Regex ]",
        "[0045_resubscribe_with_regex / 18.204s] TEST FAILURE",
        '### Test "0045_resubscribe_with_regex (do_test_resubscribe_with_regex:704: Resubscribe '
        'with Regex)" failed at 0045-subscribe_update.c:40:await_assignment() at now: ###',
        "Test assertion failed: expected assignment of 2 partitions, got 10",
        "[0045_subscribe_update       / 26.220s] ================= Test 0045_subscribe_update "
        "PASSED =================",
        "test-runner: test.c:7706: test_fail0: Assertion `0' failed.",
    ])
    rows = rows_of(text, "consumer", "plaintext")
    assert [(r.test, r.result, r.seconds) for r in rows] == [
        ("0045_resubscribe_with_regex", "failed", 18.204),
        ("0045_subscribe_update", "passed", 26.22)]
    assert rows[0].reason == ("in sub-test do_test_resubscribe_with_regex:704: Resubscribe with "
                              "Regex: Test assertion failed: expected assignment of 2 "
                              "partitions, got 10")


def test_server_configs_of_a_run_reach_its_servers(tmp_path: Path) -> None:
    """``--server-config KEY=VALUE`` (here through ``serve``'s ``extra_configs``) is a broker
    config of the run's servers: DescribeConfigs of a group shows it."""
    from groupcoord.protocol.client import KafkaClient
    from groupcoord.protocol.versions import ApiKey
    from tests.conformance.librdkafka import serve

    work = tmp_path / "run"
    work.mkdir()
    with serve("plaintext", work, tmp_path / "certs", work / "server.log",
               extra_configs=["group.consumer.assignment.interval.ms=250"]) as server, \
            KafkaClient(server.bootstrap) as c:
        d = c.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
            {"resource_type": 16, "resource_name": "g", "configuration_keys": None}])
        values = {x.name: x.value for x in d.results[0].configs}
    assert values["group.consumer.assignment.interval.ms"] == "250"


def test_the_builds_cache_is_keyed_by_its_configure_flags(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """A build made with other configure flags (one without zstd) is another directory: never
    taken for this one."""
    from tests.conformance import librdkafka

    monkeypatch.setenv("GROUPCOORD_CONFORMANCE_CACHE", str(tmp_path))
    here = librdkafka.cache_dir()
    assert here.parent == tmp_path and librdkafka.build_key() in here.name
    assert "--enable-zstd" in librdkafka.CONFIGURE and "libzstd-dev" in librdkafka.BUILD_DEPS
    without = [f for f in librdkafka.CONFIGURE if f != "--enable-zstd"] + ["--disable-zstd"]
    assert librdkafka.build_key(without) != librdkafka.build_key()
    monkeypatch.setattr(librdkafka, "CONFIGURE", without)
    assert librdkafka.cache_dir() != here


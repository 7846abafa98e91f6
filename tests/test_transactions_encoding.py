"""The transaction's hand-encoded answers (``protocol/fast.py``): AddPartitionsToTxn v0-v3,
AddOffsetsToTxn, EndTxn, TxnOffsetCommit and Produce, byte for byte kio's encoding of the same
response in every version the broker advertises (and one beyond, for the flexible layout)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.codec import build, encode_entity, response_class
from groupcoord.protocol.fast import (
    add_partitions_to_txn_response,
    produce_response,
    throttle_and_error_response,
    txn_offset_commit_response,
)
from groupcoord.protocol.versions import ApiKey

codes = st.integers(min_value=-1, max_value=120)
names = st.text(min_size=1, max_size=40)
results = st.dictionaries(
    names, st.lists(st.tuples(st.integers(0, 2**31 - 1), codes), min_size=1, max_size=5),
    max_size=4)


def kio(api: ApiKey, version: int, **values: object) -> bytes:
    cls = response_class(api, version)
    assert cls is not None
    return encode_entity(build(cls, **values))


@pytest.mark.parametrize("api,versions", [(ApiKey.END_TXN, range(0, 5)),
                                          (ApiKey.ADD_OFFSETS_TO_TXN, range(0, 5))])
@given(code=codes, throttle=st.integers(0, 2**31 - 1))
@settings(max_examples=30, deadline=None)
def test_throttle_and_error_answers_are_kio_s_bytes(api: ApiKey, versions: range, code: int,
                                                    throttle: int) -> None:
    for v in versions:
        assert throttle_and_error_response(v, code, throttle) == kio(
            api, v, throttle_time=throttle, error_code=code), v


@given(by_topic=results, throttle=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_add_partitions_to_txn_answers_are_kio_s_bytes(
        by_topic: dict[str, list[tuple[int, int]]], throttle: int) -> None:
    for v in range(0, 4):
        assert add_partitions_to_txn_response(v, by_topic.items(), throttle) == kio(
            ApiKey.ADD_PARTITIONS_TO_TXN, v, throttle_time=throttle,
            results_by_topic_v3_and_below=[
                {"name": t, "results_by_partition": [
                    {"partition_index": p, "partition_error_code": c} for p, c in parts]}
                for t, parts in by_topic.items()]), v


def test_the_batched_add_partitions_to_txn_form_is_refused() -> None:
    with pytest.raises(ValueError, match="v4"):
        add_partitions_to_txn_response(4, [])


@given(by_topic=results, throttle=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_txn_offset_commit_answers_are_kio_s_bytes(
        by_topic: dict[str, list[tuple[int, int]]], throttle: int) -> None:
    for v in range(0, 6):
        assert txn_offset_commit_response(v, by_topic.items(), throttle) == kio(
            ApiKey.TXN_OFFSET_COMMIT, v, throttle_time=throttle, topics=[
                {"name": t, "partitions": [
                    {"partition_index": p, "error_code": c} for p, c in parts]}
                for t, parts in by_topic.items()]), v


int64 = st.integers(-1, 2**63 - 1)
partition_results = st.lists(st.fixed_dictionaries({
    "index": st.integers(0, 2**31 - 1), "error_code": codes, "base_offset": int64,
    "log_append_time": st.just(-1) | st.integers(0, 2**45), "log_start_offset": int64,
    "error_message": st.none() | st.text(max_size=60), "record_errors": st.just(())}),
    min_size=1, max_size=4)


@given(by_topic=st.dictionaries(names, partition_results, max_size=3),
       throttle=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_produce_answers_are_kio_s_bytes(by_topic: dict[str, list[dict[str, object]]],
                                         throttle: int) -> None:
    for v in range(3, 13):
        assert produce_response(v, by_topic.items(), throttle) == kio(
            ApiKey.PRODUCE, v, throttle_time=throttle, responses=[
                {"name": t, "partition_responses": parts} for t, parts in by_topic.items()]), v


def test_versions_beyond_the_layouts_are_refused() -> None:
    with pytest.raises(ValueError, match="v13"):
        produce_response(13, [])
    with pytest.raises(ValueError, match="v6"):
        txn_offset_commit_response(6, [])

"""Subscriptions: topic names and RE2 regular expressions (KIP-848 "Regex Based Subscription").

A member subscribes to topic names, or to a regular expression evaluated by the coordinator with
Google's RE2 engine against whole topic names (``fullmatch``). An invalid expression is
INVALID_REGULAR_EXPRESSION. The group's *subscription metadata* is the metadata of every existing
topic some member subscribes to; a change of it bumps the group epoch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from uuid import UUID

import re2

from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode


@lru_cache(maxsize=4096)
def compile_regex(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern)
    except Exception as e:  # re2.error and friends
        raise CoordinatorError(ErrorCode.invalid_regular_expression,
                               f"SubscribedTopicRegex {pattern!r} is not a valid RE2 regular "
                               f"expression: {e}") from None


def regex_matches(pattern: str, names: Iterable[str]) -> list[str]:
    rx = compile_regex(pattern)
    return [n for n in names if rx.fullmatch(n) is not None]


def subscribed_topics(names: Iterable[str], regex: str | None,
                      image: MetadataImage) -> dict[str, TopicMetadata]:
    """Existing topics a single subscription covers, by name."""
    out: dict[str, TopicMetadata] = {}
    for n in names:
        t = image.by_name.get(n)
        if t is not None:
            out[n] = t
    if regex:
        for n in regex_matches(regex, image.by_name):
            out[n] = image.by_name[n]
    return out


def subscribed_topic_ids(names: Iterable[str], regex: str | None,
                         metadata: Mapping[str, TopicMetadata]) -> frozenset[UUID]:
    """Topic ids a member subscribes to, resolved against the group's subscription metadata."""
    ids = {metadata[n].topic_id for n in names if n in metadata}
    if regex:
        ids.update(metadata[n].topic_id for n in regex_matches(regex, metadata))
    return frozenset(ids)

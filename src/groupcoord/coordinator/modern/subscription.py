"""Subscriptions: topic names and RE2 regular expressions (KIP-848 "Regex Based Subscription").

A member subscribes to topic names, or to a regular expression evaluated by the coordinator with
Google's RE2 engine against whole topic names (``fullmatch``). An invalid expression is
INVALID_REGULAR_EXPRESSION. The group's *subscription metadata* is the metadata of every existing
topic some member subscribes to; a change of it bumps the group epoch.

A regular expression is resolved as Kafka 4 resolves it (``GroupMetadataManager.
refreshRegularExpressions`` with ``filterTopicDescribeAuthorizedTopics``, since 4.1 in
``TopicRegexResolver``): once per group for all the group's expressions, by a heartbeat, to the
matching topics that the heartbeat's principal may DESCRIBE (:func:`resolve_regexes`; the
server passes its authorizer with the request, ``TopicFilter``; without one every match
stands). The resolution is recorded (``ConsumerGroupRegularExpression``) and is what the
subscription metadata and the assignor use (:func:`subscribed_topic_ids` with ``resolved``).
When it is refreshed is the consumer group handler's (``modern/consumer/handlers.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
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


#: The topic names of the given ones that the requesting principal may DESCRIBE (the server's
#: authorizer for the request's principal and host); the coordinator only calls it.
TopicFilter = Callable[[Collection[str]], Collection[str]]


def resolve_regexes(regexes: Iterable[str], image: MetadataImage,
                    describable: TopicFilter | None) -> dict[str, frozenset[str]]:
    """Each regular expression's topics: the image's names it matches, less those
    ``describable`` refuses (every distinct matched name asked once; a name refused is removed
    from every expression, as Kafka's ``filterTopicDescribeAuthorizedTopics``). None: no
    authorizer, every match stands. An expression that no longer compiles (they are checked
    when a member sends them) resolves to nothing, as Kafka logs and ignores it."""
    names = sorted(image.by_name)
    matched: dict[str, list[str]] = {}
    for rx in regexes:
        try:
            matched[rx] = regex_matches(rx, names)
        except CoordinatorError:
            matched[rx] = []
    if describable is not None:
        candidates = sorted({n for ns in matched.values() for n in ns})
        allowed = set(describable(candidates)) if candidates else set()
        return {rx: frozenset(n for n in ns if n in allowed) for rx, ns in matched.items()}
    return {rx: frozenset(ns) for rx, ns in matched.items()}


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
                         metadata: Mapping[str, TopicMetadata],
                         resolved: Mapping[str, frozenset[str]] | None = None) -> frozenset[UUID]:
    """Topic ids a member subscribes to, resolved against the group's subscription metadata.
    A regex covers the topics of its recorded resolution (``resolved``, the group's: none if
    it has none yet); without ``resolved`` it is matched against the metadata's names."""
    ids = {metadata[n].topic_id for n in names if n in metadata}
    if regex:
        if resolved is None:
            ids.update(metadata[n].topic_id for n in regex_matches(regex, metadata))
        else:
            ids.update(metadata[n].topic_id for n in resolved.get(regex, ()) if n in metadata)
    return frozenset(ids)

"""Member ids: drawn from a source the driver injects (the core draws no randomness).

Upstream (v0) member ids are random UUIDs; the server injects ``server/app.py``'s
``random_member_id`` (a random UUID in Kafka's textual form, :func:`uuid_member_id`), the
simulator a seeded source, tests a counter (:func:`counter_member_ids`, also a shard's
deterministic default).
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Iterator

MemberIdSource = Callable[[], str]


def counter_member_ids(prefix: str = "member-") -> MemberIdSource:
    counter: Iterator[int] = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def uuid_member_id(raw16: bytes) -> str:
    """Kafka's textual form of a UUID: url-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw16).decode().rstrip("=")

"""Member ids: drawn from a source the driver injects (the core draws no randomness).

Upstream (v0) member ids are random UUIDs; the server injects :func:`random_member_ids`, the
simulator a seeded source, tests a counter. The default of a shard is deterministic.
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

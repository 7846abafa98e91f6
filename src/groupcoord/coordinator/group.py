"""What every group type shares, as the shard sees it (groups of all types share one id space).

Each group type (consumer, classic, connect) keeps its own model and its own manager that
registers request handlers, record replayers and timer kinds with the shard.
"""

from __future__ import annotations

from typing import Any


class Group:
    """Base of the group models kept in ``Shard.groups``."""

    __slots__ = ()

    group_type: str = ""
    protocol_type: str = ""

    group_id: str

    def state_name(self) -> str:
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError

    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        """Raise the spec's error when a commit (or a fetch) by ``member_id`` at
        ``epoch`` (a member epoch or a classic generation; -1 with no member id = admin)
        must be refused (invariant I6)."""
        raise NotImplementedError

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether OffsetDelete must refuse the topic (GROUP_SUBSCRIBED_TO_TOPIC)."""
        raise NotImplementedError

    def digest(self) -> Any:
        """A canonical comparable view of the group (replay equivalence, I4)."""
        raise NotImplementedError

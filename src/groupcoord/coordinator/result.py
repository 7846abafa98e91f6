"""What a handler returns: the response, the records it applied, and its timer changes."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from groupcoord.coordinator.records import Record
from groupcoord.coordinator.timers import TimerChange

R = TypeVar("R")


class _Deferred:
    """The response to this request comes later, as a completion (classic JoinGroup waits for
    the other members, SyncGroup for the leader's assignment)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFERRED"


DEFERRED: Any = _Deferred()


@dataclass(slots=True)
class Result(Generic[R]):
    """``records`` are already applied to the shard: the driver persists them, then answers.

    ``response`` is :data:`DEFERRED` when the request is answered later. ``completions`` are
    responses to earlier deferred requests, each with the ``token`` the driver passed to
    ``Shard.handle``; the driver sends them (after persisting ``records``) like responses.
    """

    response: R
    records: list[Record] = field(default_factory=list)
    timers: list[TimerChange] = field(default_factory=list)
    completions: list[tuple[Hashable, Any]] = field(default_factory=list)

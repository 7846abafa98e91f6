"""Server-side assignors (KIP-848 "Assignor": ``group.consumer.assignors``, ``range``, ``uniform``).

``ASSIGNORS`` holds the built-in assignors by name; :func:`get_assignor` looks one up. The
interface types are re-exported from :mod:`.base`.
"""

from __future__ import annotations

from groupcoord.coordinator.assignors.base import (
    EMPTY_ASSIGNMENT,
    Assignment,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
    PartitionAssignorError,
)
from groupcoord.coordinator.assignors.range import RangeAssignor
from groupcoord.coordinator.assignors.uniform import UniformAssignor

__all__ = [
    "ASSIGNORS",
    "EMPTY_ASSIGNMENT",
    "Assignment",
    "GroupAssignment",
    "GroupSpec",
    "MemberSubscription",
    "PartitionAssignor",
    "PartitionAssignorError",
    "RangeAssignor",
    "UniformAssignor",
    "get_assignor",
]

#: The built-in server-side assignors, by name. Both are stateless and safe to share.
ASSIGNORS: dict[str, PartitionAssignor] = {
    UniformAssignor.name: UniformAssignor(),
    RangeAssignor.name: RangeAssignor(),
}


def get_assignor(name: str) -> PartitionAssignor | None:
    """The built-in assignor called ``name``, or None (the caller answers UNSUPPORTED_ASSIGNOR)."""
    return ASSIGNORS.get(name)

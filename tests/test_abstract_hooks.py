"""The hooks a base class leaves to its subclasses are abstract: a subclass that misses one
cannot be instantiated (TypeError naming the hook), instead of failing on first call."""

from __future__ import annotations

import inspect

import pytest

from groupcoord.client.member_driver import SansIODriver
from groupcoord.client.offset_commits import OffsetCommits
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.modern.classic_bridge import ClassicBridge
from groupcoord.coordinator.modern.group_manager import NewProtocolGroupManager
from groupcoord.sim.engine import Simulation

BASES = [Group, Simulation, SansIODriver, OffsetCommits, NewProtocolGroupManager, ClassicBridge]


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.__name__)
def test_a_subclass_missing_a_hook_cannot_be_instantiated(base: type) -> None:
    assert inspect.isabstract(base) and base.__abstractmethods__
    missing = sorted(base.__abstractmethods__)[0]
    incomplete = type("Incomplete", (base,), {})
    with pytest.raises(TypeError, match=missing):
        incomplete()


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.__name__)
def test_no_hook_is_left_raising_not_implemented(base: type) -> None:
    """Every method of the base that only raises NotImplementedError is declared abstract."""
    for name, fn in inspect.getmembers(base, inspect.isfunction):
        src = inspect.getsource(fn)
        body = [line.strip() for line in src.splitlines()[1:] if line.strip()]
        if body and body[-1] == "raise NotImplementedError" and len(body) <= 6:
            assert name in base.__abstractmethods__, f"{base.__name__}.{name}"

"""The Kafka API edge by family (``server/apis/``): every advertised API is served by exactly
one family, and a newcomer finds it by its name in that family's module docstring."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

from groupcoord.protocol.versions import API_VERSIONS, ApiKey
from groupcoord.server.apis import FAMILIES, ApiFamily


def _broker() -> Any:
    """What the families read of the broker state when they are built (no server needed)."""
    return SimpleNamespace(registry=None, runtime=None, host="h", port=1, broker_configs={},
                           auto_create=False, default_partitions=1, producer_ids=None,
                           credentials=None, authorizer=None, endpoints={}, control=None,
                           brokers=None, on_append=[], share_partitions=None)


def _wire_name(key: int) -> str:
    """The API's name as Kafka's protocol guide writes it (CONSUMER_GROUP_HEARTBEAT ->
    ConsumerGroupHeartbeat)."""
    return "".join(w.capitalize() for w in ApiKey(key).name.split("_"))


def test_every_advertised_api_has_one_family() -> None:
    served: dict[int, list[str]] = {}
    for family in FAMILIES:
        assert issubclass(family, ApiFamily)
        for key in family(_broker()).handlers:
            served.setdefault(key, []).append(family.__name__)
    assert set(served) == set(API_VERSIONS)
    assert {k: v for k, v in served.items() if len(v) > 1} == {}


def test_each_api_is_named_in_its_family_module_docstring() -> None:
    unnamed = []
    for family in FAMILIES:
        module = sys.modules[family.__module__]
        assert module.__name__.startswith("groupcoord.server.apis.")
        doc = module.__doc__ or ""
        for key in family(_broker()).handlers:
            if _wire_name(key) not in doc:
                unnamed.append((module.__name__, _wire_name(key)))
    assert unnamed == []

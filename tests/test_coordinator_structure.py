"""The coordinator's module structure (docs/design.md "The coordinator, by concept"): what the
new-protocol group types share is in ``coordinator/modern/`` on the bases ``ModernGroup`` and
``ModernGroupMember``, so no coordinator module outside ``modern/consumer/`` imports the consumer
model, and no two coordinator modules import each other, type-only imports included.

Read from the source with ``ast`` (every ``import`` statement, those under ``TYPE_CHECKING`` and
inside functions too), not from ``sys.modules``.
"""

from __future__ import annotations

from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.modern.connect.model import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import ModernGroupMember
from tests.import_graph import cycles, import_graph

PACKAGE = "groupcoord.coordinator"
CONSUMER = f"{PACKAGE}.modern.consumer"


def _graph() -> dict[str, set[str]]:
    """The coordinator's modules and the coordinator modules each imports (the import graph of
    ``tests/import_graph.py``, which the architecture tests read too)."""
    inside = (PACKAGE, f"{PACKAGE}.")
    return {m: {t for t in deps if t.startswith(inside)}
            for m, deps in import_graph().items() if m.startswith(inside)}


def test_no_module_outside_the_consumer_group_type_imports_the_consumer_model() -> None:
    model = f"{CONSUMER}.model"
    outside = sorted(name for name, deps in _graph().items()
                     if model in deps and not name.startswith(f"{CONSUMER}."))
    assert outside == []


def test_no_import_circle_in_the_coordinator() -> None:
    assert cycles(_graph()) == []


def test_the_graph_sees_a_known_import() -> None:
    """The checks above read real edges (a parser that found none would pass them)."""
    graph = _graph()
    assert f"{CONSUMER}.model" in graph[f"{CONSUMER}.handlers"]
    assert f"{PACKAGE}.modern.group" in graph[f"{CONSUMER}.model"]
    assert f"{PACKAGE}.assignors.target_index" in graph[f"{PACKAGE}.assignors.base"]


def test_the_new_protocol_group_types_share_the_modern_bases() -> None:
    for group, member in ((ConsumerGroup, ConsumerGroupMember), (ConnectGroup, ConnectGroupMember)):
        assert issubclass(group, ModernGroup)
        assert issubclass(member, ModernGroupMember)
    assert issubclass(ClassicGroup, Group) and not issubclass(ClassicGroup, ModernGroup)
    # what the shard, offsets and retention ask of a group is answered by each type
    for cls in (ConsumerGroup, ConnectGroup, ClassicGroup):
        g = cls("g") if cls is not ClassicGroup else cls("g", 0)
        assert g.is_empty()
        assert g.state_name() == "Empty"
        assert g.older_epoch_commit_check("m", 0) is None
    assert ConsumerGroup.converted_to_classic_when_empty
    assert not ConnectGroup.converted_to_classic_when_empty
    assert not ConnectGroup.deleted_by_offsets_retention
    assert ConsumerGroup.deleted_by_offsets_retention and ClassicGroup.deleted_by_offsets_retention

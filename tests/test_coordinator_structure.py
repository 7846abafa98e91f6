"""The coordinator's module structure (docs/design.md "The coordinator, by concept"): what the
new-protocol group types share is in ``coordinator/modern/`` on the bases ``ModernGroup`` and
``ModernGroupMember``, so no coordinator module outside ``modern/consumer/`` imports the consumer
model, and no two coordinator modules import each other, type-only imports included.

Read from the source with ``ast`` (every ``import`` statement, those under ``TYPE_CHECKING`` and
inside functions too), not from ``sys.modules``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import groupcoord.coordinator
from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.modern.connect.model import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import ModernGroupMember

ROOT = Path(groupcoord.coordinator.__file__).resolve().parent
PACKAGE = "groupcoord.coordinator"
CONSUMER = f"{PACKAGE}.modern.consumer"


def _modules() -> dict[str, Path]:
    """Every coordinator module by dotted name (a package by its own name)."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([PACKAGE, *parts])] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The coordinator modules ``name`` imports (``from a import b`` counts ``a.b`` when ``b`` is
    a module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_no_module_outside_the_consumer_group_type_imports_the_consumer_model() -> None:
    model = f"{CONSUMER}.model"
    outside = sorted(name for name, deps in _graph().items()
                     if model in deps and not name.startswith(f"{CONSUMER}."))
    assert outside == []


def test_no_import_circle_in_the_coordinator() -> None:
    graph = _graph()
    # Tarjan's strongly connected components: a component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


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

"""Widgets draw and forward; the composition root builds the state they show.

A widget that makes its own state object (an undo history, a cache of results, an inspector) hides a second
owner from the root, which can then neither share it nor replace it. Constructing immutable messages (frozen
dataclasses, enums) is fine: they are values, not owners.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDGETS = REPO / "visualizer" / "widgets"


def _state_names(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Names a module imports from visualizer.state.*: local name -> (module, attribute)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("visualizer.state."):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def _is_value(obj: object) -> bool:
    """An immutable message: a frozen dataclass, an enum, or not a class at all (a function, a constant)."""
    if not inspect.isclass(obj):
        return True
    if issubclass(obj, enum.Enum) or issubclass(obj, Exception):
        return True
    params = getattr(obj, "__dataclass_params__", None)
    return dataclasses.is_dataclass(obj) and params is not None and params.frozen


def state_built_in_widgets(root: Path = WIDGETS) -> list[str]:
    """file:line and class of every state object built under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _state_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                module, attr = names[node.func.id]
                if not _is_value(getattr(importlib.import_module(module), attr)):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} builds {attr}")
    return found


def test_widgets_build_no_state_objects():
    built = state_built_in_widgets()
    assert not built, "widgets that build state the root should hand them:\n" + "\n".join(built)


def test_the_check_sees_a_widget_building_state(tmp_path):
    """The scan itself: a widget module that builds a MaskPainter is reported, a message it builds is not."""
    widgets = tmp_path / "widgets"
    widgets.mkdir()
    (widgets / "fake.py").write_text(
        "from visualizer.state.playground_mask_painter import MaskPainter\n"
        "from visualizer.state.snapshots import InputError\n"
        "def build():\n    return MaskPainter(None, None), InputError('source', 'x', 'y')\n"
    )
    assert state_built_in_widgets(widgets) == ["widgets/fake.py:4 builds MaskPainter"]

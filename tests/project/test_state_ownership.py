"""Widgets draw and forward; the composition root builds the state they show.

A widget that makes its own state object (an undo history, a cache of results, an inspector) hides a second
owner from the root, which can then neither share it nor replace it. Building immutable messages (frozen
dataclasses, enums) is fine: they are values, not owners. So is calling the few state functions that compute a
value (VALUE_FUNCTIONS); any other state function may build state (a factory such as playground_tools).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WIDGETS = REPO / "visualizer" / "widgets"
VALUE_FUNCTIONS = {"format_dims", "stored_training", "kind_maps", "symbol_outputs", "head_name"}  # text and arrays out


def _state_imports(tree: ast.Module) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(names imported from state modules -> (module, attribute), names bound to state modules -> module)."""
    names, modules = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "visualizer.state":
            for alias in node.names:
                modules[alias.asname or alias.name] = f"visualizer.state.{alias.name}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("visualizer.state."):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("visualizer.state.") and alias.asname:
                    modules[alias.asname] = alias.name
    return names, modules


def _called(func: ast.expr, names: dict, modules: dict) -> tuple[str, str] | None:
    """(module, attribute) of a call's target when it comes from a state module, else None."""
    if isinstance(func, ast.Name) and func.id in names:
        return names[func.id]
    if isinstance(func, ast.Attribute):
        dotted = ast.unparse(func.value)
        if dotted in modules:
            return modules[dotted], func.attr
        if dotted.startswith("visualizer.state."):
            return dotted, func.attr
    return None


def _builds_state(obj: object, attr: str) -> bool:
    """A class that is not an immutable message, or a function that is not known to compute a value."""
    if not inspect.isclass(obj):
        return callable(obj) and attr not in VALUE_FUNCTIONS
    if issubclass(obj, (enum.Enum, Exception)):
        return False
    params = getattr(obj, "__dataclass_params__", None)
    return not (dataclasses.is_dataclass(obj) and params is not None and params.frozen)


def state_built_in_widgets(root: Path = WIDGETS) -> list[str]:
    """file:line and name of every state object (or state factory) a module under `root` calls."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names, modules = _state_imports(tree)
        for node in ast.walk(tree):
            target = _called(node.func, names, modules) if isinstance(node, ast.Call) else None
            if target is not None and _builds_state(getattr(importlib.import_module(target[0]), target[1]), target[1]):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} builds {target[1]}")
    return found


def test_widgets_build_no_state_objects():
    built = state_built_in_widgets()
    assert not built, "widgets that build state the root should hand them:\n" + "\n".join(built)


def test_the_check_sees_a_widget_building_state(tmp_path):
    """The scan itself: every way of reaching a state class or factory is reported; messages and values are not."""
    widgets = tmp_path / "widgets"
    widgets.mkdir()
    (widgets / "fake.py").write_text(
        "import visualizer.state.playground_mask_painter as mp\n"
        "from visualizer.state import training_forming\n"
        "from visualizer.state.playground_cell_tools import cell_inspectors\n"
        "from visualizer.state.playground_mask_painter import MaskPainter\n"
        "from visualizer.state.pe_lab import format_dims\n"
        "from visualizer.state.snapshots import InputError\n"
        "def build():\n"
        "    return (MaskPainter(None, None), mp.MaskPainter(None, None), training_forming.FormingRecorder(),\n"
        "            cell_inspectors(None), InputError('source', 'x'), format_dims(None))\n"
    )
    assert state_built_in_widgets(widgets) == [
        "widgets/fake.py:8 builds MaskPainter",
        "widgets/fake.py:8 builds MaskPainter",
        "widgets/fake.py:8 builds FormingRecorder",
        "widgets/fake.py:9 builds cell_inspectors",
    ]

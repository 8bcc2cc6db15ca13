"""Architecture rules checked from source with `ast`: no import cycles, one-way dependencies, no monster files.

Every import counts, wherever it is written: at module level, inside a function or method, or under
`if TYPE_CHECKING:`. A lazy or type-only import still couples two modules, so it cannot hide a cycle.
An edge `a -> b` means module `a` names module `b` in an import; parent packages that Python also runs on the
way (`a.b.__init__` for `import a.b.c`) are not counted, as import linters do not count them.
"""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = ("core_model", "visualizer", "resources")
SIZE_CHECKED_DIRS = ("core_model", "visualizer", "resources", "examples")
# a guard against monsters, not a shape for the code: a module is one concept, split when it holds two (STYLE.md)
MAX_LINES = 600
QT_LIBRARIES = ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6")
CYCLE_LIMIT = 1000  # enumeration stops here; the message says so


@dataclass
class ImportGraph:
    """Project modules, the project modules each one imports, and every dotted name each one imports."""

    modules: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)  # modules that are a package's __init__
    edges: dict[str, set[str]] = field(default_factory=dict)
    imported_names: dict[str, set[str]] = field(default_factory=dict)  # absolute names, project or not

    def package_of(self, module: str) -> str:
        """The package that holds a module; a package's __init__ belongs to the package itself."""
        return module if module in self.packages else module.rpartition(".")[0] or module

    def package_edges(self) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {self.package_of(m): set() for m in self.modules}
        for src, targets in self.edges.items():
            for dst in targets:
                a, b = self.package_of(src), self.package_of(dst)
                if a != b:
                    graph[a].add(b)
        return graph


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _resolve_base(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The absolute module an ImportFrom reads from (None when a relative import climbs above the top)."""
    if node.level == 0:
        return node.module
    package = module if is_package else module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts) - 1:
        return None
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _dynamic_import(node: ast.Call) -> str | None:
    """`importlib.import_module("x.y")` or `__import__("x.y")` with a literal absolute name."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    ok = isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith(".")
    return arg.value if ok else None


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every absolute dotted name the file imports, at any depth; `from p import n` yields `p.n`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_base(node, module, is_package)
            if base:  # `p.n` resolves later to the submodule p.n when there is one, else to p
                names.update(base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and (dynamic := _dynamic_import(node)):
            names.add(dynamic)
    return names


def _project_target(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest project module a dotted name refers to (`p.sub.func` -> `p.sub`), or None if external."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def build_import_graph(root: Path, packages: tuple[str, ...]) -> ImportGraph:
    """Parse every .py under root/<package> and link the project modules each one imports."""
    graph = ImportGraph()
    trees: dict[str, ast.AST] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            name, is_package = _module_name(path, root)
            graph.modules[name] = path
            if is_package:
                graph.packages.add(name)
            trees[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for name, tree in trees.items():
        imported = _imported_names(tree, name, name in graph.packages)
        graph.imported_names[name] = imported
        targets = {_project_target(n, graph.modules) for n in imported}
        graph.edges[name] = {t for t in targets if t is not None and t != name}
    return graph


class _Enough(Exception):
    pass


def _component(start: str, edges: dict[str, set[str]], allowed: set[str]) -> set[str]:
    """Nodes of `allowed` that start reaches and that reach start (its strongly connected component)."""

    def reach(step) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for w in step(todo.pop()):
                if w in allowed and w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    reverse: dict[str, set[str]] = defaultdict(set)
    for v, ws in edges.items():
        for w in ws:
            reverse[w].add(v)
    return reach(lambda v: edges.get(v, ())) & reach(lambda v: reverse[v])


def _cycles_through(
    start: str, comp: set[str], edges: dict[str, set[str]], cycles: list[list[str]], limit: int
) -> None:
    """Johnson's search from `start` inside its component: appends each cycle found; _Enough at the limit."""
    blocked: set[str] = set()
    blocked_by: dict[str, set[str]] = defaultdict(set)
    path: list[str] = []

    def unblock(u: str) -> None:
        blocked.discard(u)
        for w in blocked_by.pop(u, set()):
            if w in blocked:
                unblock(w)

    def circuit(v: str) -> bool:
        found = False
        path.append(v)
        blocked.add(v)
        for w in sorted(edges.get(v, set()) & comp):
            if w == start:
                cycles.append(path.copy())
                found = True
                if len(cycles) >= limit:
                    raise _Enough
            elif w not in blocked and circuit(w):
                found = True
        if found:
            unblock(v)
        else:
            for w in edges.get(v, set()) & comp:
                blocked_by[w].add(v)
        path.pop()
        return found

    circuit(start)


def find_cycles(edges: dict[str, set[str]], limit: int = CYCLE_LIMIT) -> list[list[str]]:
    """Every elementary cycle (Johnson 1975), each starting at its smallest node; stops after `limit`."""
    nodes = sorted(set(edges) | {w for ws in edges.values() for w in ws})
    cycles: list[list[str]] = []
    try:
        for i, start in enumerate(nodes):
            _cycles_through(start, _component(start, edges, set(nodes[i:])), edges, cycles, limit)
    except _Enough:
        pass
    return sorted(cycles, key=lambda c: (len(c), c))


def describe_cycles(cycles: list[list[str]], what: str) -> str:
    lines = [
        f"{len(cycles)} {what} cycle(s){' (enumeration stopped at the limit)' if len(cycles) >= CYCLE_LIMIT else ''}:"
    ]
    lines += ["  " + " -> ".join(c + [c[0]]) for c in cycles]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def project_graph() -> ImportGraph:
    return build_import_graph(ROOT, PROJECT_PACKAGES)


def test_graph_sees_the_project(project_graph: ImportGraph) -> None:
    """Guard against a vacuous pass: the real tree has many modules and the known core imports."""
    assert len(project_graph.modules) > 30
    assert "core_model.model" in project_graph.edges["core_model.training"]
    assert any(e for m, e in project_graph.edges.items() if m.startswith("visualizer."))


def test_no_module_cycles(project_graph: ImportGraph) -> None:
    cycles = find_cycles(project_graph.edges)
    assert not cycles, describe_cycles(cycles, "module import")


def test_no_package_cycles(project_graph: ImportGraph) -> None:
    cycles = find_cycles(project_graph.package_edges())
    assert not cycles, describe_cycles(cycles, "package import")


def test_no_cycles_between_the_apps_layers(project_graph: ImportGraph) -> None:
    """visualizer's subpackages (state, widgets, lessons, controllers, …) as whole layers: one way between any two.

    A cycle between two leaf packages is caught above; this one sees `widgets.lessons -> lessons -> widgets.training`.
    """

    def layer(module: str) -> str:
        return ".".join(module.split(".")[:2])

    edges: dict[str, set[str]] = defaultdict(set)
    for src, targets in project_graph.edges.items():
        edges[layer(src)].update(layer(t) for t in targets if layer(t) != layer(src))
    cycles = find_cycles(dict(edges))
    assert not cycles, describe_cycles(cycles, "layer import")


def test_core_model_imports_no_ui(project_graph: ImportGraph) -> None:
    offending = sorted(
        f"{module} imports {name}"
        for module, names in project_graph.imported_names.items()
        if module.split(".")[0] == "core_model"
        for name in names
        if name.split(".")[0] in ("visualizer", *QT_LIBRARIES)
    )
    assert not offending, "core_model must stay free of the UI:\n  " + "\n  ".join(offending)


def test_no_source_file_over_the_size_limit() -> None:
    too_long = []
    for folder in SIZE_CHECKED_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name.startswith("test_") or "tests" in path.relative_to(ROOT).parts:
                continue
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_LINES:
                too_long.append(f"{path.relative_to(ROOT).as_posix()}: {n} lines")
    assert not too_long, f"{len(too_long)} file(s) over {MAX_LINES} lines:\n  " + "\n  ".join(too_long)


# --- the graph builder itself, on synthetic packages -------------------------------------------------------------


def _write_package(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_builder_finds_a_cycle_through_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": """
            def later():
                from . import b
                return b
        """,
            "pkg/b.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from pkg.sub.c import Thing
        """,
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": """
            class Thing:
                def method(self):
                    from .. import a
        """,
        },
    )
    graph = build_import_graph(tmp_path, ("pkg",))
    assert graph.edges["pkg.a"] == {"pkg.b"}  # `from . import b` goes to the submodule, not to pkg
    assert graph.edges["pkg.b"] == {"pkg.sub.c"}  # `from pkg.sub.c import Thing`: Thing is a name, not a module
    assert graph.edges["pkg.sub.c"] == {"pkg.a"}  # `from .. import a` climbs one package
    assert find_cycles(graph.edges) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    assert find_cycles(graph.package_edges()) == [["pkg", "pkg.sub"]]
    message = describe_cycles(find_cycles(graph.edges), "module import")
    assert "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a" in message


def test_builder_passes_an_acyclic_package(tmp_path: Path) -> None:
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from .api import run\n",
            "pkg/api.py": "from .core import engine\nfrom .core.engine import start as run\n",
            "pkg/core/__init__.py": "",
            "pkg/core/engine.py": "import os\nfrom .util import helper\n\ndef start():\n    import json\n",
            "pkg/core/util.py": "import importlib\nhelper = importlib.import_module('math')\n",
        },
    )
    graph = build_import_graph(tmp_path, ("pkg",))
    assert graph.edges["pkg"] == {"pkg.api"}
    assert graph.edges["pkg.api"] == {"pkg.core.engine"}
    assert graph.edges["pkg.core.engine"] == {"pkg.core.util"}
    assert {"os", "json"} <= graph.imported_names["pkg.core.engine"]
    assert "math" in graph.imported_names["pkg.core.util"]
    assert find_cycles(graph.edges) == []
    assert find_cycles(graph.package_edges()) == []


def test_find_cycles_reports_every_elementary_cycle() -> None:
    edges = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a"}, "d": {"d"}}
    assert find_cycles(edges) == [["d"], ["a", "b"], ["a", "c"], ["a", "b", "c"]]


ENTRY_POINTS = {"visualizer.app", "resources.make_screenshot", "resources.make_length_lab_screenshot"}  # start the app


def test_only_the_entry_points_import_the_composition_root(project_graph: ImportGraph) -> None:
    importers = {src for src, targets in project_graph.edges.items() if "visualizer.composition" in targets}
    assert importers <= ENTRY_POINTS, f"visualizer.composition imported by {sorted(importers - ENTRY_POINTS)}"


def test_workers_depend_only_on_core_model_and_the_message_types(project_graph: ImportGraph) -> None:
    allowed = (
        "core_model",
        "visualizer.workers",
        "visualizer.state.snapshots",
        "visualizer.state.failures",
        "visualizer.state.origins",  # the origin line a loaded model carries, made where it is read back
    )
    wrong = {
        f"{src} -> {dst}"
        for src, targets in project_graph.edges.items()
        if src.startswith("visualizer.workers")
        for dst in targets
        if not dst.startswith(allowed)
    }
    assert not wrong, "workers import beyond core_model, state.snapshots and state.failures:\n" + "\n".join(
        sorted(wrong)
    )


def test_widgets_never_import_the_workers(project_graph: ImportGraph) -> None:
    """A widget renders the state it is given; the composition root builds that state and injects its workers."""
    assert any(m.startswith("visualizer.widgets.") for m in project_graph.modules)  # guard against a vacuous pass
    wrong = sorted(
        f"{module} imports {name}"
        for module, names in project_graph.imported_names.items()
        if module.startswith("visualizer.widgets")
        for name in names
        if name == "visualizer.workers" or name.startswith("visualizer.workers.")
    )
    assert not wrong, "widgets must be given their workers by the composition root:\n  " + "\n  ".join(wrong)


def test_every_package_is_installed():
    """pyproject lists packages by name, so a new folder left out works from a checkout (tests run from the root)
    but is missing after `pip install .`: the installed app then fails at start-up with ModuleNotFoundError."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("core_model", "visualizer")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"


# --- who may start threads ---------------------------------------------------------------------------------------

THREAD_MAKERS = ("threading.Thread(", "QThread(", "QRunnable", "QThreadPool", "moveToThread")
THREAD_OWNERS = {
    "visualizer/workers/tasks.py",  # the task layer: every other piece of background work goes through it
    "visualizer/workers/training_worker.py",  # training's worker and the QThread each TrainingRun moves it to
}


def thread_makers(root: Path, folders: tuple[str, ...]) -> dict[str, list[str]]:
    """Each source file that names a way of starting a thread, and which ways it names."""
    found: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if names := [name for name in THREAD_MAKERS if name in text]:
                found[path.relative_to(root).as_posix()] = names
    return found


def test_only_the_task_layer_and_the_measured_workers_start_threads() -> None:
    makers = thread_makers(ROOT, SIZE_CHECKED_DIRS)
    assert "visualizer/workers/tasks.py" in makers  # guard against a vacuous pass: the layer itself is seen
    wrong = sorted(f"{path}: {', '.join(names)}" for path, names in makers.items() if path not in THREAD_OWNERS)
    assert not wrong, (
        "background work must go through visualizer/workers/tasks.py (TaskSlot, run_task):\n  " + "\n  ".join(wrong)
    )

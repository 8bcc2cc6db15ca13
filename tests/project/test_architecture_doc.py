"""docs/ARCHITECTURE.md is a map of the code, not an inventory: what it names must exist, and its tables must hold.

The page describes the layers, the packages, the data flow and the analysis seam, naming the modules a reader needs
(not every one). These tests keep those names true, so a move or a rename cannot leave the map pointing at nothing:

- the tab table: each row's state modules and view folders exist, every tab the app installs has a row, every view
  folder is in it, and every state module goes with a tab or is listed as shared;
- every file and folder the page names (`visualizer/state/analysis.py`, `analysis_tabs.py`, `heatmap/`), short names
  resolved against the tree;
- every module attribute (`circuits_report.read_circuits`), class attribute (`LazyTab.deliver`) and class
  (`AnalysisState`) it names in backticks;
- every package of visualizer is described, and every document in docs/ is in the list of the other documents.
"""

from __future__ import annotations

import ast
import builtins
import functools
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ARCHITECTURE.md"
STATE, WIDGETS = REPO / "visualizer" / "state", REPO / "visualizer" / "widgets"
SOURCE_FOLDERS = ("core_model", "visualizer", "resources", "tests", "examples")  # where named modules are looked up
SKIPPED_DIRS = {".git", ".venv", ".hypothesis", "__pycache__", "node_modules"}  # and *_cache, *.egg-info

SHARED_VIEWS = ("common", "heatmap", "lessons")  # drawn for several tabs, or (lessons) driven by visualizer/lessons/
SHARED_STATE = ("model_hub", "model_history", "origins", "snapshots", "failures", "source_check", "worker_api")
SHARED_STATE += ("inline_slot", "analysis")  # ARCHITECTURE.md names what they serve

FILE_NAME = re.compile(r"(?<![\w./-])((?:\.?[\w-]+/)*[\w-]+\.(?:py|md|toml|pt|png))(?![\w/])")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH_SPAN = re.compile(r"\.?[\w-]+(?:/[\w-]+)*(?:/|\.(?:py|md|toml|pt|png))?")  # a span that is a path alone
DOTTED_SPAN = re.compile(r"((?:[\w-]+/)*\w+(?:\.\w+)+)(?:\(.*)?")  # `a.b`, `state/worker_api.SlotFactory`, `a.f(x)`
CLASS_SPAN = re.compile(r"([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\(.*)?")  # `AnalysisState`, `TrainingDiverged(...)`
PLACEHOLDER = re.compile(r"[A-Z]+\*?(?:\.py)?")  # NAME in `visualizer/widgets/NAME/`: not a real path segment
EXTENSION = re.compile(r"\.(?:py|md|toml|pt|png)$")


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text under '## title', up to the next '## ' heading."""
    text = doc_text()
    assert f"\n## {title}\n" in text, f"docs/ARCHITECTURE.md has no section '## {title}'"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_spans() -> list[str]:
    return [span.strip() for span in CODE_SPAN.findall(doc_text())]


# --- the tree ----------------------------------------------------------------------------------------------------


@functools.cache
def tree() -> tuple[frozenset[str], frozenset[str]]:
    """(files, folders) of the repository as paths from its root; git, the virtual environment and caches left out."""
    files, folders = set(), set()
    for root, dirs, names in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(("_cache", ".egg-info"))]
        here = Path(root).relative_to(REPO).as_posix()
        prefix = "" if here == "." else here + "/"
        folders.update(prefix + d for d in dirs)
        files.update(prefix + n for n in names)
    return frozenset(files), frozenset(folders)


def resolves(name: str) -> bool:
    """Whether a path the doc names exists, from the repository root or as the tail of a path in the tree
    (`analysis_tabs.py`, `state/playground_inference.py`, `heatmap/`): a name ending in / is a folder, one with a
    file extension a file, any other (`.ci/run`) either."""
    bare = name.rstrip("/")
    files, folders = tree()
    kinds = (folders,) if name.endswith("/") else (files,) if EXTENSION.search(name) else (files, folders)
    return any(bare in paths or any(path.endswith("/" + bare) for path in paths) for paths in kinds)


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Every source module by dotted name ('core_model.circuits_report'); packages' __init__ files left out, so
    `state.report(...)` (a variable named state) is not read as the package visualizer.state."""
    found = {}
    for top in SOURCE_FOLDERS:
        for path in (REPO / top).rglob("*.py"):
            if path.name != "__init__.py":
                name = ".".join(path.relative_to(REPO).with_suffix("").parts)
                found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def bound_names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body defines: functions, classes, assignments, imports."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` and the like
            names |= bound_names(node.body) | bound_names(node.orelse)
    return names


@functools.cache
def classes() -> dict[str, set[str]]:
    """Every class defined in the project, with the names its body defines (same-named classes merged)."""
    found: dict[str, set[str]] = {}
    for tree_ in modules().values():
        for node in ast.walk(tree_):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, set()).update(bound_names(node.body))
    return found


@functools.cache
def defined_anywhere() -> frozenset[str]:
    """Every name bound at the top of some project module (classes, type aliases, functions)."""
    return frozenset(name for tree_ in modules().values() for name in bound_names(tree_.body))


# --- what the doc names ------------------------------------------------------------------------------------------


def named_paths() -> list[str]:
    """Every file named anywhere in the text, and every path written as a code span (a folder ends in /)."""
    named = FILE_NAME.findall(doc_text())
    for span in code_spans():
        if "/" not in span or not PATH_SPAN.fullmatch(span):
            continue  # a name, a glob (`playground*.py`: the tab table's check) or a dotted name
        if not any(PLACEHOLDER.fullmatch(part) for part in span.rstrip("/").split("/")):
            named.append(span)
    return named


def missing_paths() -> list[str]:
    return sorted({name for name in named_paths() if not resolves(name)})


def wrong_references(spans: list[str]) -> list[str]:
    """The dotted names and class names among `spans` that name nothing in the project."""
    wrong = []
    for span in spans:
        if EXTENSION.search(span.split("(")[0]):
            continue  # a file name: the path check covers it
        if match := DOTTED_SPAN.fullmatch(span):
            if problem := dotted_problem(match.group(1).replace("/", ".")):
                wrong.append(f"`{span}`: {problem}")
        elif (match := CLASS_SPAN.fullmatch(span)) and not is_external(match.group(1)):
            if match.group(1) not in defined_anywhere():
                wrong.append(f"`{span}`: no module defines {match.group(1)}")
    return wrong


def is_external(name: str) -> bool:
    """Python's own names (RuntimeError, True) and Qt's classes (QThread, QRunnable)."""
    return hasattr(builtins, name) or re.fullmatch(r"Q[A-Z]\w*", name) is not None


def dotted_problem(dotted: str) -> str:
    """Why `dotted` names nothing ('' when it resolves, or when it is no project name at all: `torch.inference_mode`).

    The longest leading part that is the tail of a module's name is the module (`circuits_report` is
    core_model.circuits_report); the next part must be defined there. Else a leading class name (`LazyTab.deliver`)
    must define the next part in its body."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        found = [tree_ for name, tree_ in modules().items() if name == prefix or name.endswith("." + prefix)]
        if found:
            if end == len(parts) or any(parts[end] in bound_names(tree_.body) for tree_ in found):
                return ""
            return f"no module {prefix} defines {parts[end]}"
    if parts[0] in classes() and parts[1] not in classes()[parts[0]]:
        return f"class {parts[0]} defines no {parts[1]}"
    return ""


# --- the tab table -----------------------------------------------------------------------------------------------


def tab_table() -> list[tuple[str, str, str]]:
    """The rows (tab, state, view) of the table under '## Where each tab lives' (its header and rule left out)."""
    lines = [line for line in section("Where each tab lives").splitlines() if line.startswith("| ")]
    rows = [line.strip("|").split("|") for line in lines if not re.fullmatch(r"[|\s:-]+", line)]
    return [tuple(cell.strip() for cell in row) for row in rows[1:]]  # type: ignore[misc]


def installed_tabs() -> set[str]:
    """The titles of the tabs the app installs: composition.py's TAB_TITLES and analysis_tabs.py's AnalysisTab rows."""
    titles: set[str] = set()
    for node in ast.walk(ast.parse((REPO / "visualizer" / "composition.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TAB_TITLES" for t in node.targets):
            titles.update(title.replace("&", "") for title in ast.literal_eval(node.value))
    for node in ast.walk(ast.parse((REPO / "visualizer" / "analysis_tabs.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "AnalysisTab" and node.args:
            titles.add(ast.literal_eval(node.args[0]))
    return titles


def tab_folders() -> list[str]:
    """The widget folders of one tab each (the shared ones left out)."""
    return [p.name for p in WIDGETS.iterdir() if (p / "__init__.py").is_file() and p.name not in SHARED_VIEWS]


def test_the_tab_table_names_what_exists():
    rows = tab_table()
    assert len(rows) >= 6, f"the tab table has {len(rows)} rows: is it still a Markdown table of tab | state | view?"
    for tab, state_cell, view_cell in rows:
        patterns, folders = re.findall(r"`([\w*.]+\.py)`", state_cell), re.findall(r"`(\w+)/`", view_cell)
        assert patterns and folders, f"{tab}: a row names its state modules (`NAME*.py`) and view folders (`NAME/`)"
        for pattern in patterns:
            assert list(STATE.glob(pattern)), f"{tab}: no state module {pattern} in visualizer/state/"
        for folder in folders:
            assert (WIDGETS / folder / "__init__.py").is_file(), f"{tab}: no view folder visualizer/widgets/{folder}/"
    listed = {folder for row in rows for folder in re.findall(r"`(\w+)/`", row[2])}
    left_out = sorted(set(tab_folders()) - listed)
    assert not left_out, f"widget folders the tab table leaves out: {left_out}"


def test_the_tab_table_is_the_apps_tabs():
    """Every tab the app installs has a row; a row for no installed tab says where it lives ('Compare (in the
    Playground)')."""
    installed = installed_tabs()
    assert {"Playground", "Trainer", "Heads", "Circuits"} <= installed  # guard: the titles were found in the source
    rows = {re.sub(r"\s*\(in the (.+)\)$", "", tab): tab for tab, _, _ in tab_table()}
    assert installed <= rows.keys(), f"tabs the table has no row for: {sorted(installed - rows.keys())}"
    for name, tab in rows.items():
        inside = re.search(r"\(in the (.+)\)$", tab)
        assert name in installed or (inside and inside.group(1) in installed), f"the table's {tab!r} is no tab"


def test_each_tabs_state_and_view_share_a_name():
    """A reader finds a tab's state from its view's folder: widgets/NAME/ goes with state/NAME*.py."""
    unpaired = sorted(name for name in tab_folders() if not list(STATE.glob(f"{name}*.py")))
    assert not unpaired, f"widget folders with no state module of their name: {unpaired}"


def test_each_state_module_names_its_tab_or_is_shared():
    """The other way round: state/NAME*.py goes with widgets/NAME/, unless it serves several tabs."""
    tabs = tab_folders()
    names = [p.stem for p in STATE.glob("*.py") if p.stem != "__init__"]
    orphans = sorted(m for m in names if m not in SHARED_STATE and not any(m.startswith(tab) for tab in tabs))
    assert not orphans, f"state modules named after no tab (name a tab, or add to SHARED_STATE): {orphans}"
    gone = sorted(m for m in SHARED_STATE if not (STATE / f"{m}.py").is_file())
    assert not gone, f"SHARED_STATE lists state modules that do not exist: {gone}"


# --- the names in the text ---------------------------------------------------------------------------------------


def test_every_path_the_doc_names_exists():
    named = named_paths()
    assert len(named) > 30 and "visualizer/state/analysis.py" in named  # guard against a vacuous pass
    missing = missing_paths()
    assert not missing, f"docs/ARCHITECTURE.md names files or folders that do not exist: {missing}"


def test_every_code_name_the_doc_names_exists():
    spans = code_spans()
    assert "circuits_report.read_circuits" in spans and "AnalysisState" in spans  # guard: the seam is named
    wrong = wrong_references(spans)
    assert not wrong, "docs/ARCHITECTURE.md names what the code does not define:\n  " + "\n  ".join(wrong)


def test_the_reference_check_can_fail():
    """The resolver itself: a name that is gone is caught, one that is there or is not the project's is not."""
    assert wrong_references(["circuits_report.read_circuits", "LazyTab.deliver", "AnalysisState", "QThread"]) == []
    assert wrong_references(["torch.inference_mode", "state.report(...)", "RuntimeError", "analysis_tabs.py"]) == []
    assert len(wrong_references(["circuits_report.read_circits", "LazyTab.deliverx", "AnalysisStat"])) == 3
    assert resolves("analysis_tabs.py") and resolves("state/analysis.py") and resolves(".ci/run")
    assert not resolves("no_such_module.py") and not resolves("workers/analysis.py")
    assert resolves("heatmap/") and not resolves("heatmapx/") and not resolves("analysis_tabs.py/")


def test_every_package_of_visualizer_is_described():
    text = section("The packages of visualizer")
    packages = sorted(p.name for p in (REPO / "visualizer").iterdir() if (p / "__init__.py").is_file())
    assert len(packages) >= 7  # guard: state, workers, widgets, controllers, cli, headless, lessons
    undescribed = [name for name in packages if f"**`{name}/`" not in text]
    assert not undescribed, f"visualizer packages with no paragraph ('**`NAME/`: ...**') of their own: {undescribed}"
    unnamed = [name for name in SHARED_VIEWS if f"`{name}/`" not in text]
    assert not unnamed, f"shared widget folders the packages section does not name: {unnamed}"


def test_every_document_is_in_the_list_of_docs():
    listing = section("Other documents")
    docs = sorted(p.name for p in (REPO / "docs").glob("*.md") if p != DOC)
    assert len(docs) > 10  # guard against a vacuous pass
    unlisted = [name for name in docs if f"`{name}`" not in listing]
    assert not unlisted, f"documents in docs/ that ARCHITECTURE.md's '## Other documents' leaves out: {unlisted}"
    listed = re.findall(r"`([\w-]+\.md)`", listing)
    gone = sorted(set(listed) - set(docs) - {"README.md"})
    assert not gone, f"'## Other documents' lists documents docs/ does not hold: {gone}"

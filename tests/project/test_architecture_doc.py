"""docs/ARCHITECTURE.md's layout names every module there is, and no module that is gone.

A newcomer reads that layout to find where a feature lives; a file missing from it, or a name left behind by a
move, sends them looking for nothing. Modules are checked by name within their folder: core_model/, visualizer/,
and visualizer's state/, workers/, controllers/ and cli/ one by one; widgets/ by its top files and sub-folders.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ARCHITECTURE.md"
BY_FILE = ("state", "workers", "controllers", "cli")  # visualizer's folders listed module by module
FILE = re.compile(r"(?:(\w+)/)?(\w+\.py)\b")


def layout_block() -> list[str]:
    """The lines of the fenced block under '## Layout'."""
    text = DOC.read_text(encoding="utf-8")
    after = text.split("## Layout", 1)[1]
    return after.split("```", 2)[1].splitlines()


def named_in_doc() -> set[str]:
    """Every module the layout names, as a path from the repository root ('visualizer/state/playground_beam.py')."""
    named: set[str] = set()
    top = sub = ""
    for line in layout_block():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if indent == 0:
            top, sub = first.rstrip("/").rstrip(","), ""
        elif indent == 2 and first.endswith("/"):
            sub = first.rstrip("/")
        elif indent == 2:
            sub = ""
        if indent > 4 and not first.endswith(".py") and not first.endswith(".py,"):
            continue  # a description's continuation line: names in it are mentions, not entries
        for folder, name in FILE.findall(line):
            where = folder or sub
            named.add("/".join(part for part in (top, where, name) if part))
    return named


def modules_in_tree() -> set[str]:
    """The modules the layout must list (package __init__ files aside)."""
    wanted = {f"core_model/{p.name}" for p in (REPO / "core_model").glob("*.py")}
    wanted |= {f"visualizer/{p.name}" for p in (REPO / "visualizer").glob("*.py")}
    for folder in BY_FILE:
        wanted |= {f"visualizer/{folder}/{p.name}" for p in (REPO / "visualizer" / folder).glob("*.py")}
    wanted |= {f"visualizer/widgets/{p.name}" for p in (REPO / "visualizer" / "widgets").glob("*.py")}
    return {path for path in wanted if not path.endswith("__init__.py")}


def test_every_module_is_in_the_layout():
    missing = sorted(modules_in_tree() - named_in_doc())
    assert not missing, f"modules docs/ARCHITECTURE.md's layout does not name: {missing}"


def test_every_module_the_layout_names_exists():
    gone = sorted(
        path
        for path in named_in_doc()
        if path.startswith(("core_model/", "visualizer/"))
        and not (REPO / path).is_file()
        and not any((REPO / path.split("/")[0]).rglob(Path(path).name))
    )
    assert not gone, f"docs/ARCHITECTURE.md's layout names modules that do not exist: {gone}"


def test_every_widget_folder_is_in_the_layout():
    block = "\n".join(layout_block())
    folders = sorted(
        p.name for p in (REPO / "visualizer" / "widgets").iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    )
    missing = [name for name in folders if not re.search(rf"^\s+{name}/", block, re.MULTILINE)]
    assert not missing, f"widget folders docs/ARCHITECTURE.md's layout does not name: {missing}"


SHARED_VIEWS = ("common", "heatmap", "lessons")  # drawn for several tabs, or (lessons) driven by visualizer/lessons/
SHARED_STATE = ("model_hub", "model_history", "origins", "snapshots", "failures", "source_check", "worker_api")
SHARED_STATE += ("inline_slot", "analysis")  # ARCHITECTURE.md names what they serve


def tab_table() -> list[tuple[str, str, str]]:
    """The rows (tab, state, view) of the table under '## Where each tab lives'."""
    section = DOC.read_text(encoding="utf-8").split("## Where each tab lives", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return [tuple(cell.strip() for cell in row) for row in rows[1:]]  # type: ignore[misc]


def test_each_tabs_state_and_view_share_a_name():
    """A reader finds a tab's state from its view's folder: widgets/NAME/ goes with state/NAME*.py."""
    widgets, state = REPO / "visualizer" / "widgets", REPO / "visualizer" / "state"
    folders = [p.name for p in widgets.iterdir() if (p / "__init__.py").is_file() and p.name not in SHARED_VIEWS]
    unpaired = sorted(name for name in folders if not list(state.glob(f"{name}*.py")))
    assert not unpaired, f"widget folders with no state module of their name: {unpaired}"


def test_the_tab_table_names_what_exists():
    rows = tab_table()
    assert {row[0] for row in rows} >= {"Playground", "Trainer", "Heads", "Length lab", "Causal", "Circuits"}
    for tab, state_cell, view_cell in rows:
        for pattern in re.findall(r"`([\w*.]+\.py)`", state_cell):
            assert list((REPO / "visualizer" / "state").glob(pattern)), f"{tab}: no state module {pattern}"
        for folder in re.findall(r"`(\w+)/`", view_cell):
            assert (REPO / "visualizer" / "widgets" / folder / "__init__.py").is_file(), f"{tab}: no view {folder}/"
    listed = {folder for row in rows for folder in re.findall(r"`(\w+)/`", row[2])}
    widgets = REPO / "visualizer" / "widgets"
    folders = {p.name for p in widgets.iterdir() if (p / "__init__.py").is_file() and p.name not in SHARED_VIEWS}
    assert folders <= listed, f"widget folders the tab table leaves out: {sorted(folders - listed)}"


def test_each_state_module_names_its_tab_or_is_shared():
    """The other way round: state/NAME*.py goes with widgets/NAME/, unless it serves several tabs."""
    widgets, state = REPO / "visualizer" / "widgets", REPO / "visualizer" / "state"
    tabs = [p.name for p in widgets.iterdir() if (p / "__init__.py").is_file() and p.name not in SHARED_VIEWS]
    modules = [p.stem for p in state.glob("*.py") if p.stem != "__init__"]
    orphans = sorted(m for m in modules if m not in SHARED_STATE and not any(m.startswith(tab) for tab in tabs))
    assert not orphans, f"state modules named after no tab: {orphans}"

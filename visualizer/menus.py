"""The window's menus: File (open, save, export, quit), View (tabs, analyses, square cells), Model (undo, redo, device).

Built once the tabs exist, from the actions their controllers own and a few of their own (square cells, undo and
redo, the device menu), which `build_menus` returns to the composition root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu

REDO_KEY = "Ctrl+Alt+Shift+Z"  # Model > Undo's Ctrl+Alt+Z plus Shift, as Ctrl+Shift+Z redoes Ctrl+Z in editors


@dataclass(frozen=True)
class MenuActions:
    """The menu entries made here that other code toggles or triggers."""

    square_cells: QAction  # View > Square cells (checkable)
    undo: QAction  # Model > Undo, named after what it undoes
    redo: QAction
    device: QMenu  # Model > Device: off while training runs


def build_menus(app: Any) -> MenuActions:
    """Fill the menu bar of `app` (the composition's Application, untyped here: it imports this module)."""
    win, ck, fm = app.window, app.checkpoints, app.window.file_menu
    fm.addAction(ck.open_action)
    fm.addMenu(ck.recent_menu)
    fm.addAction(ck.save_action)
    fm.addAction(ck.save_as_action)
    fm.addSeparator()
    export_menu = fm.addMenu("&Export")
    for entry in app.exporter.actions():
        if entry is None:
            export_menu.addSeparator()
        else:
            win.add_action(export_menu, *entry)
    fm.addSeparator()
    win.add_action(fm, "&Quit", win.close, "Ctrl+Q")
    for i, name in enumerate(("Playground", "Positional encoding", "Trainer")):
        win.add_action(
            win.view_menu, f"&{i + 1} {name}", lambda _c=False, i=i: win.tabs.setCurrentIndex(i), f"Ctrl+{i + 1}"
        )
    win.view_menu.addSeparator()  # the tabs installed later go above it, after these three, in their order
    win.add_action(
        win.view_menu,
        "&Analyse heads",
        app.heads_view.run,
        "Ctrl+Shift+A",
        tip="Score every head's role and ablate each in turn (Heads tab)",
    )
    win.view_menu.addSeparator()
    square_cells = win.add_action(
        win.view_menu,
        "&Square cells",
        app.playground.set_square_cells,
        tip="Keep every attention cell square instead of filling the view",
    )
    square_cells.setCheckable(True)
    undo = win.add_action(
        win.model_menu,
        "&Undo architecture change",
        app.architecture.restore_previous,
        "Ctrl+Alt+Z",
        tip="Bring back the model before the last architecture change, weights included",
    )
    redo = win.add_action(
        win.model_menu,
        "&Redo",
        app.architecture.restore_next,
        REDO_KEY,
        tip="Bring back the model the last Undo replaced, weights and training included",
    )
    app.architecture.track_undo(undo, redo)  # names what they do: Apply, a task switch...
    return MenuActions(square_cells, undo, redo, _build_device_menu(app))


def _build_device_menu(app: Any) -> QMenu:
    """Model > Device: where inference runs (training picks its own device in the Trainer tab)."""
    from core_model.device import available_devices

    menu = app.window.model_menu.addMenu("&Device")
    group = QActionGroup(menu)
    current = str(app.hub.device)
    for name in available_devices():
        action = QAction(name, menu, checkable=True)
        action.setChecked(name == current)
        action.triggered.connect(lambda _c=False, name=name: app.architecture.switch_device(name))
        group.addAction(action)
        menu.addAction(action)
    return menu

"""Builds the window's tabs once the model is loaded, wires them together, and saves/restores preferences."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray
from PySide6.QtWidgets import QMessageBox

from core_model.tasks import TASK_NAMES
from visualizer.resources_path import SHIPPED_CHECKPOINTS, resource_path
from visualizer.settings import load_json, mask_spec_from_dict, mask_spec_to_dict, save_json
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import DEFAULT_SOURCE, PlaygroundSession
from visualizer.workers.background import run_in_background

if TYPE_CHECKING:
    from visualizer.main_window import MainWindow

log = logging.getLogger(__name__)


def build_tabs(window: MainWindow, startup) -> None:
    """Create the state objects and tabs, connect them, restore the user's last session."""
    from visualizer.state.pe_lab import PELabState
    from visualizer.state.training import TrainingState
    from visualizer.controllers.checkpoints import CheckpointActions
    from visualizer.widgets.pe.tab import PETab
    from visualizer.widgets.playground.view import PlaygroundView
    from visualizer.widgets.trainer.tab import TrainerTab

    hub = ModelHub(startup.model, startup.task, device=startup.device, origin=startup.origin,
                   history=startup.history, path=startup.path, extra=startup.extra)
    window.hub = hub
    window.session = PlaygroundSession(hub)
    window.playground = PlaygroundView(window.session)
    window.pe_state = PELabState()
    window.pe_tab = PETab(window.pe_state)
    window.training = TrainingState(hub)
    window.trainer_tab = TrainerTab(hub, window.training)
    window.checkpoints = CheckpointActions(hub, window, window.training)
    window.tabs.addTab(window.playground, "&Playground")
    window.tabs.addTab(window.pe_tab, "Positional &encoding")
    window.tabs.addTab(window.trainer_tab, "&Trainer")
    _build_menus(window)
    hub.info_changed.connect(window.update_status)
    hub.info_changed.connect(lambda info: _sync_model_views(window, info))
    hub.training_active_changed.connect(lambda active: window.playground.model_panel.setEnabled(not active))
    window.session.maps_changed.connect(window.show_forward_time)
    window.playground.config_requested.connect(lambda config: request_new_architecture(window, config))
    if startup.history:  # the shipped model's own training curves, as File > Open shows a checkpoint's
        window.training.restore(startup.history, startup.extra)
    _restore_settings(window)
    info = hub.info()
    window.update_status(info)
    _sync_model_views(window, info)


def _sync_model_views(window: MainWindow, info) -> None:
    c = info.config
    window.playground.model_panel.set_config(c, info.origin, info.parameters)
    window.pe_tab.set_model_pe(c.positional, c.d_model, c.pe_base, c.head_dim)


def request_new_architecture(window: MainWindow, config) -> None:
    """Build a new, untrained model for a changed architecture, after asking when trained work would be lost."""
    hub = window.hub
    if hub.training_active:
        QMessageBox.information(window, "Training in progress", "Stop training before changing the architecture.")
        _sync_model_views(window, hub.info())
        return
    if hub.dirty:
        answer = QMessageBox.question(
            window, "Discard trained weights?",
            "The current model has unsaved training. Building a new architecture replaces it.\n\nSave it first "
            "with File > Save, or continue and discard it?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel)
        if answer != QMessageBox.StandardButton.Discard:
            _sync_model_views(window, hub.info())
            return
    run_in_background(lambda: find_shipped_checkpoint(config), lambda found: _apply_architecture(window, config, found),
                      lambda message: _apply_architecture(window, config, None))


def find_shipped_checkpoint(config):
    """A shipped trained checkpoint whose architecture equals `config` (runs off the GUI thread), or None."""
    from core_model.checkpoint import CheckpointError, load_checkpoint

    for name in SHIPPED_CHECKPOINTS:
        path = resource_path(name)
        if not path.is_file():
            continue
        try:
            ckpt = load_checkpoint(path)
        except CheckpointError:
            continue
        if not ckpt.config.architecture_differs(config):
            return path, ckpt
    return None


def _apply_architecture(window: MainWindow, config, found) -> None:
    """Use the matching shipped model when there is one, else a new untrained model; say which."""
    from core_model.tasks import TaskSpec

    hub = window.hub
    if found is not None:
        path, ckpt = found
        task = TaskSpec(**ckpt.extra["task"]) if isinstance(ckpt.extra.get("task"), dict) else hub.task
        hub.set_model(ckpt.build(hub.device), task, origin=f"trained checkpoint {path.name}", history=ckpt.history,
                      path=path, extra=ckpt.extra, keep_previous=True)
        window.training.restore(ckpt.history, ckpt.extra)
        message = f"Loaded the shipped trained model for this architecture ({path.name})."
    else:
        hub.new_untrained(config)
        message = ("Built a new, untrained model for the changed architecture: its maps mean nothing until it is "
                   "trained (Trainer tab) or a matching checkpoint is opened. Model > Restore previous model undoes it.")
    window.statusBar().showMessage(message, 12000)


def _build_menus(window: MainWindow) -> None:
    ck, fm = window.checkpoints, window.file_menu
    fm.addAction(ck.open_action)
    fm.addMenu(ck.recent_menu)
    fm.addAction(ck.save_action)
    fm.addAction(ck.save_as_action)
    fm.addSeparator()
    from visualizer.controllers.export import add_export_actions

    add_export_actions(window, fm)
    fm.addSeparator()
    window._add_action(fm, "&Quit", window.close, "Ctrl+Q")
    for i, name in enumerate(("Playground", "Positional encoding", "Trainer")):
        window._add_action(window.view_menu, f"&{i + 1} {name}", lambda _c=False, i=i: window.tabs.setCurrentIndex(i),
                           f"Ctrl+{i + 1}")
    window._add_action(window.model_menu, "&Restore previous model", lambda: _restore_previous(window),
                       tip="Undo the last architecture change")
    _build_device_menu(window)


def _build_device_menu(window: MainWindow) -> None:
    """Model > Device: where inference runs (training picks its own device in the Trainer tab)."""
    from PySide6.QtGui import QAction, QActionGroup

    from core_model.device import available_devices

    menu = window.model_menu.addMenu("&Device")
    group = QActionGroup(menu)
    current = str(window.hub.device)
    for name in available_devices():
        action = QAction(name, menu, checkable=True)
        action.setChecked(name == current or (name == "cpu" and current == "cpu"))
        action.triggered.connect(lambda _c=False, name=name: _switch_device(window, name))
        group.addAction(action)
        menu.addAction(action)
    window.device_menu = menu
    window.hub.training_active_changed.connect(lambda active: menu.setEnabled(not active))


def _switch_device(window: MainWindow, name: str) -> None:
    import torch

    try:
        window.hub.set_device(torch.device(name))
    except (RuntimeError, ValueError) as exc:
        QMessageBox.warning(window, "Device", f"Could not move the model to {name}: {exc}")
        return
    window.statusBar().showMessage(f"Inference now runs on {name}", 6000)


def _restore_previous(window: MainWindow) -> None:
    if not window.hub.restore_previous():
        window.statusBar().showMessage("There is no previous model to restore", 5000)


def shortcut_help(window: MainWindow) -> str:
    lines = ["Ctrl+1/2/3: switch tabs", "Ctrl+O / Ctrl+S / Ctrl+Shift+S: open / save / save as", "Ctrl+Q: quit",
             "Ctrl+Shift+H: restore all heads", "Alt+E / Alt+D / Alt+R: encoder / decoder / cross grids"]
    if window.playground is not None:
        for name, seq in window.playground.decoder_panel.shortcuts().items():
            lines.append(f"{seq.toString()}: {name}")
    return "\n".join(lines)


def _restore_settings(window: MainWindow) -> None:
    st, session, view = window.settings, window.session, window.playground
    source = str(st.value("input/source", DEFAULT_SOURCE))
    task = str(st.value("input/task", session.task))
    task = task if task in TASK_NAMES else session.task
    prefix = str(st.value("input/prefix", ""))
    try:
        pads = int(st.value("input/pads", 2))
    except (TypeError, ValueError):
        pads = 2
    view.input_panel.set_values(source, task, prefix, pads)
    session.task, session.extra_pads = task, max(0, min(16, pads))
    spec = mask_spec_from_dict(load_json(st, "masks/spec", {}))
    view.mask_panel.set_spec(spec)
    session.masks = spec
    if not session.set_source(source):
        session.set_source(DEFAULT_SOURCE)
    if prefix:
        session.set_target_prefix(prefix)
    tab = st.value("window/tab", 0)
    window.tabs.setCurrentIndex(int(tab) if str(tab).isdigit() else 0)
    splitter = st.value("window/splitter")
    if isinstance(splitter, QByteArray):
        view.splitter.restoreState(splitter)


def save_settings(window: MainWindow) -> None:
    st = window.settings
    st.setValue("window/geometry", window.saveGeometry())
    if window.session is None:
        return
    view = window.playground
    st.setValue("input/source", view.input_panel.source.text())
    st.setValue("input/task", window.session.task)
    st.setValue("input/prefix", view.input_panel.prefix.text())
    st.setValue("input/pads", window.session.extra_pads)
    save_json(st, "masks/spec", mask_spec_to_dict(window.session.masks))
    st.setValue("window/tab", window.tabs.currentIndex())
    st.setValue("window/splitter", view.splitter.saveState())
    st.sync()



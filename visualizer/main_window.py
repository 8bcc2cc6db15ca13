"""Main window: composes the tabs, menus and status bar and wires them; behaviour lives in state/ and widgets/.

The window appears before torch is imported; the model loads in the background and the tabs are built then.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QStackedWidget, QTabWidget

from visualizer.resources_path import DEFAULT_CHECKPOINT, resource_path
from visualizer.widgets.common.stable_label import fix_label_size
from visualizer.workers.background import run_in_background

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """Attention Playground's window."""

    def __init__(self, checkpoint: Path | None = None, device: str | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Attention Playground")
        self.resize(1400, 900)
        self._checkpoint = checkpoint if checkpoint is not None else resource_path(DEFAULT_CHECKPOINT)
        self._device_name = device
        self.settings = QSettings()
        self.hub = self.session = self.training = self.checkpoints = None
        self.playground = self.pe_tab = self.trainer_tab = None
        self._loading_jobs = None
        self.loaded_at: float | None = None
        self.stack = QStackedWidget()
        self.loading_label = QLabel("Loading the model…")
        self.loading_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.loading_label.setStyleSheet("font-size: 18px; color: gray;")
        self.tabs = QTabWidget()
        self.stack.addWidget(self.loading_label)
        self.stack.addWidget(self.tabs)
        self.setCentralWidget(self.stack)
        self._build_status_bar()
        self.file_menu = self.menuBar().addMenu("&File")
        self.model_menu = self.menuBar().addMenu("&Model")
        self.view_menu = self.menuBar().addMenu("&View")
        self.help_menu = self.menuBar().addMenu("&Help")
        self._add_action(self.help_menu, "&Keyboard shortcuts", self.show_shortcuts, "F1")
        self._add_action(self.help_menu, "&About", self.show_about)
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)

    # ----- construction -----
    def _add_action(self, menu, text: str, slot, shortcut: str | None = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_status_bar(self) -> None:
        self.device_label, self.model_label = QLabel("device: …"), QLabel("")
        self.params_label, self.forward_label = QLabel(""), QLabel("")
        self.warning_label = QLabel("")
        self.warning_label.setStyleSheet("color: #c77c02;")
        fix_label_size(self.forward_label, "forward 9999.9 ms")  # new per keystroke: must not re-lay out the bar
        self.forward_label.setToolTip("Time of the last forward pass that captured the maps")
        for w in (self.warning_label, self.model_label, self.params_label, self.forward_label, self.device_label):
            self.statusBar().addPermanentWidget(w)

    def start_loading(self) -> None:
        """Import torch and load the model off the GUI thread; build the tabs when it is ready."""
        from visualizer.workers.loader import load_startup_model

        path, device = self._checkpoint, self._device_name
        self._loading_jobs = run_in_background(lambda: load_startup_model(path, device), self._on_loaded,
                                               self._on_load_failed)

    def _on_load_failed(self, message: str) -> None:
        self.loading_label.setText(f"Could not start the model: {message}")
        QMessageBox.critical(self, "Attention Playground", f"Could not start the model:\n{message}")

    def _on_loaded(self, startup) -> None:
        from visualizer.composition import build_tabs

        build_tabs(self, startup)
        self.stack.setCurrentWidget(self.tabs)
        self.loaded_at = time.perf_counter()
        if startup.warning:
            self.warning_label.setText(startup.warning)
            self.statusBar().showMessage(startup.warning, 15000)

    # ----- menus' actions -----
    def show_shortcuts(self) -> None:
        from visualizer.composition import shortcut_help

        QMessageBox.information(self, "Keyboard shortcuts", shortcut_help(self))

    def show_about(self) -> None:
        QMessageBox.about(self, "About Attention Playground",
                          "<b>Attention Playground</b><br>An encoder-decoder Transformer (Vaswani et al., 2017) "
                          "whose every head you can watch, mask, ablate, step and train.")

    def update_status(self, info) -> None:
        self.device_label.setText(f"device: {info.device}")
        dirty = " • unsaved training" if info.dirty else ""
        self.model_label.setText(f"{info.summary}{dirty}")
        self.params_label.setText(f"{info.parameters:,} params")
        untrained = info.origin.startswith("untrained")
        self.warning_label.setText("Untrained model: train it in the Trainer tab or open a checkpoint" if untrained else "")
        title = info.path.name if info.path else info.origin
        self.setWindowTitle(f"Attention Playground — {title}{' *' if info.dirty else ''}")

    def show_forward_time(self, snap) -> None:
        self.forward_label.setText(f"forward {snap.forward_ms:.1f} ms")

    # ----- closing -----
    def closeEvent(self, event: QCloseEvent) -> None:  # Qt's name
        if self.checkpoints is not None and not self.checkpoints.confirm_close():
            event.ignore()
            return
        if self.training is not None:
            self.training.shutdown(5000)
        from visualizer.composition import save_settings

        save_settings(self)
        super().closeEvent(event)


"""The window shell: a loading screen, tabs, menus and a status bar, with public methods to fill them.

It knows no model, session or controller. `visualizer.composition` builds those and hands the window their
widgets, actions and hooks (what closing must do, what F1 lists); the window only shows them.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMenu, QMessageBox, QStackedWidget, QTabWidget, QWidget

from visualizer.widgets.common.stable_label import fix_label_size

if TYPE_CHECKING:  # the window paints before torch is imported; the snapshot types import it
    from visualizer.state.snapshots import ModelInfo

log = logging.getLogger(__name__)
UNTRAINED_WARNING = "Untrained model: train it in the Trainer tab or open a checkpoint"


class MainWindow(QMainWindow):
    """Attention Playground's window: paints at once, before torch is imported."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Attention Playground")
        self.resize(1400, 900)
        self._close_guard: Callable[[], bool] | None = None
        self._shortcut_help: Callable[[], str] = lambda: ""
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
        self.add_action(self.help_menu, "&Keyboard shortcuts", self.show_shortcuts, "F1")
        self.add_action(self.help_menu, "&About", self.show_about)

    # ----- filling the shell -----
    def add_action(self, menu: QMenu, text: str, slot: Callable[[], object], shortcut: str | None = None,
                   tip: str = "") -> QAction:
        """A menu entry with an optional shortcut and status tip."""
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def add_tab(self, widget: QWidget, title: str) -> int:
        return self.tabs.addTab(widget, title)

    def show_tabs(self) -> None:
        """Replace the loading screen by the tabs."""
        self.stack.setCurrentWidget(self.tabs)

    def show_load_error(self, message: str) -> None:
        self.loading_label.setText(f"Could not start the model: {message}")
        QMessageBox.critical(self, "Attention Playground", f"Could not start the model:\n{message}")

    def set_close_guard(self, guard: Callable[[], bool]) -> None:
        """`guard()` runs when the user closes the window; False keeps it open (e.g. Cancel on unsaved work)."""
        self._close_guard = guard

    def set_shortcut_help(self, provider: Callable[[], str]) -> None:
        """What F1 lists, one shortcut per line."""
        self._shortcut_help = provider

    # ----- status -----
    def _build_status_bar(self) -> None:
        self.device_label, self.model_label = QLabel("device: …"), QLabel("")
        self.params_label, self.forward_label = QLabel(""), QLabel("")
        self.warning_label = QLabel("")
        self.warning_label.setStyleSheet("color: #c77c02;")
        fix_label_size(self.forward_label, "forward 9999.9 ms")  # new per keystroke: must not re-lay out the bar
        self.forward_label.setToolTip("Time of the last forward pass that captured the maps")
        for w in (self.warning_label, self.model_label, self.params_label, self.forward_label, self.device_label):
            self.statusBar().addPermanentWidget(w)

    def show_message(self, text: str, timeout_ms: int = 8000) -> None:
        self.statusBar().showMessage(text, timeout_ms)

    def set_warning(self, text: str) -> None:
        self.warning_label.setText(text)

    def show_model_info(self, info: ModelInfo) -> None:
        self.device_label.setText(f"device: {info.device}")
        dirty = " • unsaved training" if info.dirty else ""
        self.model_label.setText(f"{info.summary}{dirty}")
        self.params_label.setText(f"{info.parameters:,} params")
        self.warning_label.setText(UNTRAINED_WARNING if info.origin.startswith("untrained") else "")
        title = info.path.name if info.path else info.origin
        self.setWindowTitle(f"Attention Playground — {title}{' *' if info.dirty else ''}")

    def show_forward_time(self, forward_ms: float) -> None:
        self.forward_label.setText(f"forward {forward_ms:.1f} ms")

    # ----- help -----
    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard shortcuts", self._shortcut_help())

    def show_about(self) -> None:
        QMessageBox.about(self, "About Attention Playground",
                          "<b>Attention Playground</b><br>An encoder-decoder Transformer (Vaswani et al., 2017) "
                          "whose every head you can watch, mask, ablate, step and train.")

    # ----- closing -----
    def closeEvent(self, event: QCloseEvent) -> None:  # Qt's name
        if self._close_guard is not None and not self._close_guard():
            event.ignore()
            return
        super().closeEvent(event)

"""The window shell: a loading screen, tabs, menus and a status bar, with public methods to fill them.

It knows no model, session or controller. `visualizer.composition` builds those and hands the window their
widgets, actions and hooks (what closing must do, what F1 lists); the window only shows them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from visualizer.widgets.common.message_bar import MessageBar
from visualizer.widgets.common.plain_message import show_plain_message
from visualizer.widgets.common.shortcut_dialog import Group, ShortcutDialog
from visualizer.widgets.common.stable_label import fix_label_size
from visualizer.widgets.common.styles import WARNING_STYLE
from visualizer.widgets.common.wheel_guard import guard_wheel

if TYPE_CHECKING:  # the window paints before torch is imported; the snapshot types import it
    from visualizer.state.snapshots import ModelInfo

log = logging.getLogger(__name__)
UNTRAINED_WARNING = "Untrained model: train it in the Trainer tab or open a checkpoint"
TRAINING_NOTICE = "Training this model (Trainer tab): the maps show the weights of the last pause or stop"
PREFERRED_SIZE = QSize(1400, 900)
FRAME_ROOM = QSize(16, 48)  # a window manager's borders and title bar: unknown until the window is shown


def initial_geometry(available: QRect) -> QRect:
    """A window with no saved geometry fits the screen's free area, frame included: 1400x900 or less, centred.

    The rectangle's size is the inside (QWidget.resize), its corner the frame's (QWidget.move)."""
    size = PREFERRED_SIZE.boundedTo(available.size() - FRAME_ROOM)
    free = available.size() - size - FRAME_ROOM
    return QRect(available.topLeft() + QPoint(max(free.width() // 2, 0), max(free.height() // 2, 0)), size)


class MainWindow(QMainWindow):
    """Attention Playground's window: paints at once, before torch is imported."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Attention Playground")
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            place = initial_geometry(screen.availableGeometry())
            self.resize(place.size())
            self.move(place.topLeft())
        self._close_guard: Callable[[], bool] | None = None
        self._shortcut_help: Callable[[], list[Group]] = list
        self._shortcut_dialog: ShortcutDialog | None = None
        self._untrained, self._training, self._warning = False, False, ""
        self.stack = QStackedWidget()
        self.loading_label = QLabel("Loading the model…")
        self.loading_label.setTextFormat(Qt.TextFormat.PlainText)  # a start-up error names the checkpoint file
        self.loading_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.loading_label.setStyleSheet("font-size: 18px; color: gray;")
        self.tabs = QTabWidget()
        self.stack.addWidget(self.loading_label)
        self.stack.addWidget(self.tabs)
        # the warning is a banner above the tabs, not a status-bar widget: status messages never run into it
        self.warning_label = QLabel("")
        self.warning_label.setTextFormat(Qt.TextFormat.PlainText)  # a warning may quote a file name or field
        self.warning_label.setWordWrap(True)
        self.warning_label.setStyleSheet(WARNING_STYLE)
        self.warning_label.hide()
        central = QWidget()
        self._central_layout = central_lay = QVBoxLayout(central)  # banners go in above the warning
        central_lay.setContentsMargins(0, 0, 0, 0)
        central_lay.setSpacing(0)
        central_lay.addWidget(self.warning_label)
        central_lay.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self._build_status_bar()
        self.file_menu = self.menuBar().addMenu("&File")
        self.model_menu = self.menuBar().addMenu("&Model")
        self.view_menu = self.menuBar().addMenu("&View")
        self.help_menu = self.menuBar().addMenu("&Help")
        keys_help = self.add_action(self.help_menu, "&Keyboard shortcuts", self.show_shortcuts, "F1")
        keys_help.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)  # also from the large map view
        self.add_action(self.help_menu, "&About", self.show_about)

    # ----- filling the shell -----
    def add_action(
        self, menu: QMenu, text: str, slot: Callable[[], object], shortcut: str | None = None, tip: str = ""
    ) -> QAction:
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
        guard_wheel(widget)  # a lazy tab guards its content when it builds it
        return self.tabs.addTab(widget, title)

    def show_tabs(self) -> None:
        """Replace the loading screen by the tabs."""
        self.stack.setCurrentWidget(self.tabs)

    def show_load_error(self, message: str) -> None:
        self.loading_label.setText(f"Could not start the model: {message}")
        show_plain_message(
            self, QMessageBox.Icon.Critical, "Attention Playground", f"Could not start the model:\n{message}"
        )

    def add_banner(self, widget: QWidget) -> None:
        """A bar above the tabs that shows and hides itself (e.g. an offer to restore unsaved training)."""
        self._central_layout.insertWidget(0, widget)

    def set_close_guard(self, guard: Callable[[], bool]) -> None:
        """`guard()` runs when the user closes the window; False keeps it open (e.g. Cancel on unsaved work)."""
        self._close_guard = guard

    def set_shortcut_help(self, provider: Callable[[], list[Group]]) -> None:
        """What F1 lists: (heading, [(keys, what they do)]) per place where keys work."""
        self._shortcut_help = provider

    # ----- status -----
    def _build_status_bar(self) -> None:
        self.setStatusBar(MessageBar())  # a long message ends with "…" before the model summary, never over it
        self.device_label, self.model_label = QLabel("device: …"), QLabel("")
        self.params_label, self.forward_label = QLabel(""), QLabel("")
        fix_label_size(self.forward_label, "forward 9999.9 ms")  # new per keystroke: must not re-lay out the bar
        self.forward_label.setToolTip("Time of the last forward pass that captured the maps")
        for w in (self.model_label, self.params_label, self.forward_label, self.device_label):
            self.statusBar().addPermanentWidget(w)

    def show_message(self, text: str, timeout_ms: int = 8000) -> None:
        self.statusBar().showMessage(text, timeout_ms)

    def withdraw_message(self, text: str) -> None:
        """Take `text` off the status bar if it is still shown there (it described a model that is gone)."""
        if self.statusBar().currentMessage() == text:
            self.statusBar().clearMessage()

    def set_warning(self, text: str) -> None:
        """A warning about the present model (e.g. why it is untrained); the next model replaces it."""
        self._warning = text
        self._show_warning()

    def set_training_active(self, active: bool) -> None:
        """While the Trainer trains this model, the banner says so instead of calling it untrained."""
        self._training = active
        self._show_warning()

    def _show_warning(self) -> None:
        text = TRAINING_NOTICE if self._training else self._warning or (UNTRAINED_WARNING if self._untrained else "")
        self.warning_label.setText(text)
        self.warning_label.setVisible(bool(text))

    def show_model_info(self, info: ModelInfo) -> None:
        self.device_label.setText(f"device: {info.device}")
        dirty = " • unsaved training" if info.dirty else ""
        self.model_label.setText(f"{info.summary}{dirty}")
        self.params_label.setText(f"{info.parameters:,} params")
        self._untrained, self._warning = info.untrained, ""
        self._show_warning()
        title = info.path.name if info.path else info.origin
        self.setWindowTitle(f"Attention Playground — {title}{' *' if info.dirty else ''}")

    def show_forward_time(self, forward_ms: float) -> None:
        self.forward_label.setText(f"forward {forward_ms:.1f} ms")

    # ----- help -----
    def show_shortcuts(self) -> None:
        """The list as the window is now (a tab built since the last F1 adds its keys), fitted to the screen."""
        if self._shortcut_dialog is None:
            self._shortcut_dialog = ShortcutDialog(self)
        self._shortcut_dialog.set_groups(self._shortcut_help())
        self._shortcut_dialog.fit_to_screen()
        self._shortcut_dialog.show()
        self._shortcut_dialog.fit_to_screen()  # again with the window manager's frame, known once shown
        self._shortcut_dialog.raise_()
        self._shortcut_dialog.activateWindow()

    def show_about(self) -> None:
        QMessageBox.about(
            self,
            "About Attention Playground",
            "<b>Attention Playground</b><br>An encoder-decoder Transformer (Vaswani et al., 2017) "
            "whose every head you can watch, mask, ablate, step and train.",
        )

    # ----- closing -----
    def closeEvent(self, event: QCloseEvent) -> None:  # Qt's name
        if self._close_guard is not None and not self._close_guard():
            event.ignore()
            return
        super().closeEvent(event)

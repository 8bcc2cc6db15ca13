"""The Trainer tab's questions to the user: modal boxes kept apart from the tab, each one function tests replace."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

ConfirmDiscard = Callable[[str], bool]  # asked before unsaved training is replaced; True: go on (saved or let go)
SCRATCH_QUESTION = (
    "The current model has unsaved training. Train from scratch replaces it with fresh random "
    "weights.\n\nModel > Undo Train from scratch can bring it back while the app runs (it keeps "
    "the last five models)."
)


def ask_yes_no(parent: QWidget, title: str, text: str) -> bool:
    """A real question box in the app; tests replace this function."""
    answer = QMessageBox.question(parent, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


def ask_discard(parent: QWidget, text: str) -> bool:
    """Discard or Cancel, as Model > Apply asks; in the window the File menu's question (with Save) is used."""
    buttons = QMessageBox.StandardButton
    answer = QMessageBox.question(parent, "Unsaved training", text, buttons.Discard | buttons.Cancel, buttons.Cancel)
    return answer == buttons.Discard


def choose_folder(parent: QWidget) -> str | None:
    """Folder for the movie frames (non-native dialog); tests replace this function."""
    folder = QFileDialog.getExistingDirectory(
        parent, "Export attention movie to folder", "", QFileDialog.Option.DontUseNativeDialog
    )
    return folder or None

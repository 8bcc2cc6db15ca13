"""The suite's guard against modal dialogs: offscreen nobody clicks, so a dialog would hang its test (and CI)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox


@pytest.mark.parametrize(
    "open_dialog",
    [
        lambda: QMessageBox(QMessageBox.Icon.Question, "Load?", "Replace your model?").exec(),
        lambda: QDialog().exec(),
        lambda: QFileDialog().exec(),
        lambda: QMessageBox.question(None, "Quit?", "Quit now?"),
    ],
    ids=["message-box-exec", "dialog-exec", "file-dialog-exec", "static-question"],
)
def test_a_modal_dialog_fails_the_test_at_once_naming_itself(qtbot, open_dialog):
    with pytest.raises(AssertionError, match="unexpected modal dialog"):
        open_dialog()

"""File › Export › Interactive page (Ctrl+Shift+E): the page holds the numbers the Playground draws, and the status
line names what the page cannot hold."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from qt_helpers import CTRL, SHIFT, key, retype, shown_app, wait_frame
from test_page import embedded

from core_model.shipped import resource_path


def export_page(qtbot, app, monkeypatch, answer) -> str:
    """Press Ctrl+Shift+E, answer the save dialog with `answer`, wait for the status line to report the file."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(answer), "HTML page (*.html)"))
    key(qtbot, app, Qt.Key.Key_E, CTRL | SHIFT)
    status = app.window.statusBar()
    qtbot.waitUntil(lambda: status.currentMessage().startswith("Exported"), timeout=30_000)
    return status.currentMessage()


def test_the_exported_page_holds_what_the_playground_draws(qtbot, tmp_path, monkeypatch):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.hub is not None and app.session is not None, timeout=60_000)
    wait_frame(qtbot, app.session, 30_000)
    view = app.playground
    retype(qtbot, view.input_panel.source, "31415")
    combo = view.view_modes.combo
    combo.setCurrentIndex(combo.findData("scores"))
    wait_frame(qtbot, app.session)
    message = export_page(qtbot, app, monkeypatch, tmp_path / "mine")  # no suffix typed: .html is added
    page = tmp_path / "mine.html"
    assert message.startswith(f"Exported {page} (") and "source '31415', scores view, 2 pads" in message
    assert "leaves out" not in message
    data = embedded(page.read_text(encoding="utf-8"))
    assert data["view"] == "scores"
    for kind, grid in view.grids.items():
        maps = data["kinds"][kind]["maps"]
        for layer in range(len(maps)):
            for head in range(len(maps[layer])):
                drawn = grid.displayed_matrix(layer, head)
                written = np.array(maps[layer][head], dtype=float)  # JSON null -> nan where the cell is masked
                np.testing.assert_allclose(written, drawn, rtol=1e-5, atol=1e-6, err_msg=f"{kind} L{layer} H{head}")

    causal = view.mask_panel.flag_boxes["decoder_causal"]
    qtbot.mouseClick(causal, Qt.MouseButton.LeftButton)  # the learner turns the causal mask off
    wait_frame(qtbot, app.session)
    message = export_page(qtbot, app, monkeypatch, tmp_path / "second.html")
    assert "the page shows every head and mask on, so it leaves out the changed masks" in message
    app.hub.dirty = False
    app.window.close()

"""The playground's control column at real window sizes: nothing cut off, nothing pushed off screen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QLineEdit, QWidget
from qt_helpers import start_app

from visualizer.composition import Application

SIZES = ((1280, 800), (1400, 900), (1600, 1000))


def open_app(qtbot, size: tuple[int, int]) -> Application:
    app = start_app(qtbot, size)
    QApplication.processEvents()
    return app


def type_source(app: Application, text: str) -> None:
    field = app.playground.input_panel.source
    field.setText(text)
    field.textEdited.emit(text)
    for _ in range(4):  # a line shown or hidden relays its parents out one level per turn of the event loop
        QApplication.sendPostedEvents()
        QApplication.processEvents()


def clipped_widgets(app: Application) -> list[str]:
    """Visible widgets of the control column that are cut off (not merely scrolled out of view)."""
    scroll = app.playground.control_scroll
    content = scroll.widget()
    problems = []
    if content.width() > scroll.viewport().width():
        problems.append(f"column {content.width()} px wider than its viewport {scroll.viewport().width()} px")
    for w in content.findChildren(QWidget):
        if not w.isVisibleTo(content) or isinstance(w.parentWidget(), (QAbstractScrollArea, QLineEdit)):
            continue
        parent = w.parentWidget()
        if parent is not None and parent.objectName() == "qt_scrollarea_viewport":
            continue  # inside a nested scroll area: reachable by scrolling it
        if not parent.rect().contains(w.geometry()):
            problems.append(
                f"{type(w).__name__} {w.objectName() or getattr(w, 'text', lambda: '')()!r} "
                f"{w.geometry()} outside {parent.rect()}"
            )
        if w.minimumSizeHint().width() > w.width() and w.sizePolicy().horizontalPolicy().name != "Ignored":
            problems.append(
                f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} squeezed to {w.width()} px "
                f"below its minimum {w.minimumSizeHint().width()} px"
            )
    window_rect = QRect(QPoint(0, 0), app.window.size())
    for part in (scroll, app.playground.grid_tabs):
        rect = QRect(part.mapTo(app.window, QPoint(0, 0)), part.size())
        if not window_rect.contains(rect):
            problems.append(f"{type(part).__name__} {rect} leaves the window {window_rect}")
    return problems


@pytest.mark.parametrize("size", SIZES)
def test_control_column_is_never_cut_off(qtbot, size):
    app = open_app(qtbot, size)
    assert clipped_widgets(app) == []
    source = "0123456789" * 2  # the longest source the model was trained on, stepped to the end
    type_source(app, source[: min(app.session.max_source_len, app.hub.task.max_len)])
    app.session.run_to_end()
    QApplication.processEvents()
    assert app.window.size().width() == size[0]
    assert clipped_widgets(app) == []
    type_source(app, "0123456789?" * 8)  # refused: the error message with the marked symbol
    assert app.playground.input_panel.error.isVisible()
    assert clipped_widgets(app) == []
    app.hub.dirty = False
    app.window.close()


def test_column_does_not_re_lay_out_between_decoder_steps(qtbot):
    app = open_app(qtbot, (1400, 900))
    type_source(app, "0123456789")
    app.session.reset_decoding()
    QApplication.processEvents()
    content = app.playground.control_scroll.widget()
    before = {id(w): w.geometry() for w in content.findChildren(QWidget)}
    for _ in range(4):
        app.session.step()
        QApplication.processEvents()
        after = {id(w): w.geometry() for w in content.findChildren(QWidget) if id(w) in before}
        moved = [k for k, g in after.items() if g != before[k]]
        assert moved == []
    app.hub.dirty = False
    app.window.close()


def test_sections_fold_away_and_back(qtbot):
    app = open_app(qtbot, (1280, 800))
    section = app.playground.sections["Masks"]
    qtbot.mouseClick(section.header, Qt.MouseButton.LeftButton)
    assert not app.playground.mask_panel.isVisible() and section.header.isVisible()
    qtbot.mouseClick(section.header, Qt.MouseButton.LeftButton)
    assert app.playground.mask_panel.isVisible()
    app.hub.dirty = False
    app.window.close()


@pytest.mark.parametrize("size", SIZES)
def test_the_prediction_line_shows_every_token_of_a_ten_symbol_input(qtbot, size):
    """The tokens, not the caption, get the width of the prediction line: the whole prediction (10 symbols,
    <eos>, one token per extra pad position) fits on screen at every window size."""
    from qt_helpers import wait_frame

    app = open_app(qtbot, size)
    type_source(app, "3141592653")
    wait_frame(qtbot, app.session)
    label = app.playground.output_label
    text = label.text()
    assert text.startswith("3 1 4 1 5 9 2 6 5 3 <eos>") and len(text.split()) == 11 + app.session.extra_pads
    assert label.fontMetrics().horizontalAdvance(text) <= label.width()  # drawn whole, not clipped
    right = label.mapTo(app.window, label.rect().topRight())
    assert app.window.rect().contains(right)
    app.hub.dirty = False

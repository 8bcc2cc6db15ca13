"""Helpers several widget tests share: reading what a pyqtgraph item would draw."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication, QMenu


def axis_texts(grid, name: str) -> list[str]:
    """The tick texts an axis of `grid.plot_item` draws at its current size (pyqtgraph leaves out crowded levels)."""
    axis = grid.plot_item.getAxis(name)
    image = QImage(axis.boundingRect().size().toSize(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in specs[2]]


def seen_text(widget) -> str:
    """A label's or message box's text as a person reads it: Qt draws rich text (RichText, or AutoText whose start
    looks like HTML) as a document, whose tags vanish and whose links are live."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import Qt as GuiQt  # Qt's namespace with QtGui's functions (mightBeRichText)
    from PySide6.QtGui import QTextDocumentFragment

    text, shape = widget.text(), widget.textFormat()
    rich = shape == Qt.TextFormat.RichText or (shape == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text))
    return QTextDocumentFragment.fromHtml(text).toPlainText() if rich else text


def shown_menu(widget) -> QMenu | None:
    """The newest context menu open over `widget` (its menus are its children, oldest first); None when none is."""
    shown = [menu for menu in widget.findChildren(QMenu) if menu.isVisible()]
    return shown[-1] if shown else None


def wait_frame(qtbot, session, timeout_ms: int = 10_000) -> None:
    """Wait until the session's newest forward pass has been drawn (the app runs passes on a worker thread)."""
    qtbot.waitUntil(lambda: session.idle, timeout=timeout_ms)


def show_widget(qtbot, widget, size: tuple[int, int]):
    """`widget` on screen at `size`, exposed (laid out and painted once), closed with the test."""
    qtbot.addWidget(widget)
    widget.resize(*size)
    with qtbot.waitExposed(widget):  # QT-NOTES: called bare it waits for nothing
        widget.show()
    return widget


def show_grid(qtbot, kind: str, size: tuple[int, int]):
    """An AttentionGrid of `kind` on screen at `size` (exposed: its view laid out) before any maps arrive."""
    from visualizer.widgets.heatmap.grid import AttentionGrid

    return show_widget(qtbot, AttentionGrid(kind), size)


def show_trainer_tab(qtbot, hub, state, size: tuple[int, int]):
    """A TrainerTab on `hub` and `state`, shown at `size`, training in batches of 16 (quick runs)."""
    from visualizer.state.inline_slot import InlineSlot
    from visualizer.widgets.training.tab import TrainerTab

    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    tab.resize(*size)
    with qtbot.waitExposed(tab):  # QT-NOTES: called bare it waits for nothing
        tab.show()
    tab.form.batch_spin.setValue(16)
    return tab


def show_playground(qtbot, session, size: tuple[int, int] = (1300, 850), tools=None, **view_kw):
    """A PlaygroundView on `session` with `tools` (inline ones by default; `view_kw` go to the view), shown at
    `size`, with the source "0123" set."""
    from visualizer.state.playground_tools import playground_tools
    from visualizer.widgets.playground.view import PlaygroundView

    view = PlaygroundView(session, tools or playground_tools(session), **view_kw)
    qtbot.addWidget(view)
    view.resize(*size)
    with qtbot.waitExposed(view):
        view.show()
    session.set_source("0123")
    return view


def start_app(qtbot, size: tuple[int, int] = (1400, 900)):
    """The whole application, shown at `size`, with its model loaded and the first frame drawn."""
    from visualizer.composition import Application

    app = Application()
    qtbot.addWidget(app.window)
    app.window.resize(*size)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=30000)
    wait_frame(qtbot, app.session)
    return app


def shown_app(qtbot, checkpoint, size: tuple[int, int] = (1280, 800)):
    """The whole application on `checkpoint` (CPU), shown at `size` and loading; each caller waits for what it needs."""
    from visualizer.composition import Application

    app = Application(checkpoint=checkpoint, device="cpu")
    qtbot.addWidget(app.window)
    app.window.resize(*size)
    app.window.show()
    app.start_loading()
    return app


def retype(qtbot, field, text: str) -> None:
    """Replace a line edit's text the way a user does: select all, Backspace, type."""
    from PySide6.QtCore import Qt

    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)


def type_number(qtbot, box, value: int) -> None:
    """Type a number into a spin box and press Return, as a user does; the box then holds it."""
    from PySide6.QtCore import Qt

    box.selectAll()
    qtbot.keyClicks(box, str(value))
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert box.value() == value


def readout(grid) -> str:
    """The hovered cell's text as the line above the grid shows it ("" off the maps)."""
    return grid.header.hover_label.text().strip()


def rest_mouse_on_cell(qtbot, grid, layer: int, head: int, i: int, j: int) -> str:
    """Move the mouse onto a map cell and hold it there until the readout above the grid names that cell; returns
    the readout. QTest moves the cursor (a new frame names the cell under QCursor.pos() again); real move events
    follow, as a resting hand sends them, because the view can drop QTest's moves after the first on a busy
    machine, or the maps can still shift by a line when the mouse arrives."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    viewport, none = grid.graphics.viewport(), Qt.MouseButton.NoButton

    def centre() -> QPointF:
        rect = grid.map_rect(layer, head)
        return QPointF(
            grid.graphics.mapFromScene(grid.atlas_plot.to_scene(QPointF(rect.x() + j + 0.5, rect.y() + i + 0.5)))
        )

    qtbot.mouseMove(viewport, centre().toPoint())

    def move() -> None:
        pos = centre()  # again: the maps may have moved since
        QApplication.sendEvent(
            viewport,
            QMouseEvent(
                QEvent.Type.MouseMove, pos, viewport.mapToGlobal(pos), none, none, Qt.KeyboardModifier.NoModifier
            ),
        )

    def shows_the_cell() -> bool:  # this cell's own text: a neighbour in the same row names the same query
        return readout(grid) == grid.tooltip_text_at(layer, head, i, j)

    def named() -> bool:
        if shows_the_cell():
            return True
        move()
        return False

    qtbot.waitUntil(named)
    # a new frame can name the cell under the cursor with no mouse event at all: one more move, as a resting hand
    # sends, so whatever follows the view's mouse moves (a lesson's step) sees the cell too
    move()
    qtbot.waitUntil(shows_the_cell)
    return readout(grid)


CTRL, SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


def key(qtbot, app, k, modifiers=Qt.KeyboardModifier.NoModifier) -> None:
    """A key pressed in the main window (made the active window first: a closed menu may still hold that role)."""
    app.window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is app.window)
    qtbot.keyClick(app.window, k, modifiers)


def cell_pos(dialog, i: int, j: int) -> QPoint:
    """Viewport pixel of the centre of cell (query i, key j)."""
    scene = dialog.plot_item.getViewBox().mapViewToScene(QPointF(j + 0.5, i + 0.5))
    return dialog.graphics.mapFromScene(scene)

"""No plot in the app labels a subset of tokens: walked over every plot of the real window (and the large view
with its cell panel) at several sizes, each axis that names tokens draws all of them in order (as written or
abbreviated, none touching another) or none, and then says how to read them (hover).

A subset misleads: every other output row of 4 9 3 0 3 9 7 3 reads "4 3 3 7", another sequence; labels that run
into each other or are thinned to every k-th read no better. The Length lab's maps, the Trainer probe view, the
large view and the cell panel's charts are walked here.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
import torch
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication
from qt_helpers import retype, start_app, wait_frame
from widget_readers import axis_title

from visualizer.state.snapshots import ProbeSnapshot
from visualizer.widgets.heatmap.atlas import abbreviate
from visualizer.widgets.heatmap.token_axis import TokenAxis
from visualizer.workers.training_worker import probe_maps

SOURCE = "49303973"
LAB_LENGTH = 20  # long enough (21 output rows) to crowd a map's axis
SIZES = ((1400, 900), (1000, 720), (760, 600))  # the last narrower than most laptops' half screen
WAIT_MS = 120_000
SETTLE_MS = 80  # a resize, the paint after it and the relayout the paint asks for


def drawn(axis: pg.AxisItem) -> list[tuple[object, str]]:
    """(rect, text) of every label the axis draws at its size now: pyqtgraph's own layout (the grid's fast
    LabelAxis draws exactly these boxes: test_label_axis.py)."""
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [] if specs is None else [(rect, text) for rect, _flags, text in specs[2]]


def apart(axis: pg.AxisItem, rects: list) -> bool:
    vertical = axis.orientation in ("left", "right")
    rects = sorted(rects, key=lambda r: r.top() if vertical else r.left())
    if vertical:
        return all(a.bottom() <= b.top() for a, b in zip(rects, rects[1:]))
    return all(a.right() <= b.left() for a, b in zip(rects, rects[1:]))


def ticked_axes(widget) -> list[pg.AxisItem]:
    """The visible axes of every pyqtgraph view inside `widget` that carry labels of their own (not numbers)."""
    found = []
    for view in [widget, *widget.findChildren(pg.GraphicsView)]:
        if not isinstance(view, pg.GraphicsView) or not view.isVisible():
            continue
        for item in view.scene().items():
            if (
                isinstance(item, pg.AxisItem)
                and item.isVisible()
                and (isinstance(item, TokenAxis) or item._tickLevels is not None)
            ):  # noqa: SLF001 - explicit ticks
                if not isinstance(item.parentItem(), pg.ColorBarItem):  # a colour scale's numbers
                    found.append(item)
    return found


class Walk:
    """What each labelled axis should read, filled in from the app's own data (maps, probes, snapshots)."""

    def __init__(self) -> None:
        self.tokens: dict[int, tuple[tuple[str, ...], str]] = {}  # id(axis) -> (tokens in order, where)
        self.other: dict[int, str] = {}  # id(axis) -> why its labels are not tokens (titles, dimension numbers)
        self.hover: dict[int, object] = {}  # id(axis) -> how a hidden token is named (callable -> text)
        self.checked = 0

    def grid(self, grid, where: str) -> None:
        maps, plot = grid.current_maps(), grid.plot_item
        self.tokens[id(plot.getAxis("right"))] = (maps.query_labels * maps.n_layers, f"{where} queries")
        self.tokens[id(plot.getAxis("bottom"))] = (maps.key_labels * (maps.n_heads + 1), f"{where} keys")
        self.hover[id(plot.getAxis("right"))] = self.hover[id(plot.getAxis("bottom"))] = grid.header.legend_label.text
        self.other[id(plot.getAxis("left"))] = self.other[id(plot.getAxis("top"))] = "layer and head titles"

    def axis(self, axis: pg.AxisItem, tokens, where: str) -> None:
        self.tokens[id(axis)] = (tuple(str(t) for t in tokens), where)
        if isinstance(axis, TokenAxis):
            self.hover[id(axis)] = lambda: axis_title(axis)

    def check(self, widget, size) -> None:
        for _ in range(2):  # paint, then the relayout an axis asks for when its labels need more room
            widget.grab()
            QApplication.processEvents()
        for axis in ticked_axes(widget):
            if id(axis) in self.other:
                continue
            assert id(axis) in self.tokens, f"an unclassified labelled axis: {axis.orientation} of {axis.parentItem()}"
            tokens, where = self.tokens[id(axis)]
            boxes = drawn(axis)
            texts = tuple(text for _, text in boxes)
            context = f"{where} at {size}: drew {texts}"
            assert texts in ((), tokens, tuple(map(abbreviate, tokens))), context
            assert apart(axis, [rect for rect, _ in boxes]), context + " overlapping"
            if not texts and tokens:
                assert "hover" in self.hover[id(axis)](), context + " and never says how to read them"
            self.checked += 1


def click_cell(qtbot, dialog, i: int, j: int) -> None:
    scene = dialog.plot_item.getViewBox().mapViewToScene(QPointF(j + 0.5, i + 0.5))
    qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=dialog.graphics.mapFromScene(scene))


def click_length(qtbot, lab, length: int) -> None:
    view = lab.plot.mapFromScene(lab.plot.scene_point(length, 0.5))
    qtbot.mouseClick(lab.plot.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(int(view.x()), int(view.y())))


@pytest.fixture
def app(qtbot, one_torch_thread):
    app = start_app(qtbot)
    yield app
    assert app.length_lab.shutdown(30_000)
    app.hub.dirty = False
    app.window.close()


def _playground(qtbot, app, walk: Walk):
    """The three grids on the example input, one map large and one of its cells taken apart."""
    retype(qtbot, app.playground.input_panel.source, SOURCE)
    wait_frame(qtbot, app.session)
    for kind, grid in app.playground.grids.items():
        app.playground.grid_tabs.setCurrentWidget(grid)
        walk.grid(grid, f"Playground {kind}")
    grid = app.playground.grids["cross"]
    app.playground.grid_tabs.setCurrentWidget(grid)
    maps = grid.current_maps()
    dialog = grid.open_large_view(0, 0)
    with qtbot.waitExposed(dialog):
        dialog.show()
    walk.axis(dialog.plot_item.getAxis("left"), maps.query_labels, "large view queries")
    walk.axis(dialog.plot_item.getAxis("bottom"), maps.key_labels, "large view keys")
    positions = {
        side: tuple(map(str, range(len(t)))) for side, t in (("right", maps.query_labels), ("top", maps.key_labels))
    }
    walk.axis(dialog.plot_item.getAxis("right"), positions["right"], "large view query positions")
    walk.axis(dialog.plot_item.getAxis("top"), positions["top"], "large view key positions")
    dialog.graphics.grab()  # laid out at the dialog's first size: room for every number
    assert [text for _, text in drawn(dialog.plot_item.getAxis("right"))] == list(positions["right"])
    click_cell(qtbot, dialog, 2, 3)
    panel = dialog.cell_panel
    qtbot.waitUntil(lambda: panel.cell is not None, timeout=10_000)
    for name in ("mask", "softmax"):
        walk.axis(panel.charts[name].getAxis("bottom"), maps.key_labels, f"cell panel {name} chart")
    walk.axis(panel.charts["values"].getAxis("left"), maps.key_labels, "cell panel weighted values")
    for name in ("q", "k", "product", "output"):
        walk.other[id(panel.charts[name].getAxis("bottom"))] = "dimension numbers"
    walk.other[id(panel.charts["values"].getAxis("bottom"))] = "dimension numbers"
    axis = app.playground.decoder_panel.chart.getPlotItem().getAxis("left")  # the next-token candidates, best first
    candidates = [text for _, text in axis._tickLevels[0]] if axis._tickLevels else []  # noqa: SLF001 - its ticks
    walk.axis(axis, candidates, "next-token candidates")
    return dialog


def _compare(qtbot, app, walk: Walk) -> None:
    qtbot.mouseClick(app.playground.compare_button, Qt.MouseButton.LeftButton)
    panel = app.playground.compare_panel
    panel.source.setCurrentIndex(panel.source.findData("ablated"))
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=20_000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    for name in ("grid_a", "grid_b", "grid_diff"):
        grid = getattr(panel, name)
        if grid.current_maps() is not None:
            walk.grid(grid, f"Compare {name}")


def show_tab(app, page) -> None:
    """Bring the window's tab holding `page` to the front."""
    tabs = app.window.tabs
    tabs.setCurrentIndex(
        next(i for i in range(tabs.count()) if tabs.widget(i) is page or tabs.widget(i).isAncestorOf(page))
    )


def _length_lab(qtbot, app, walk: Walk):
    lab = app.length_lab_tab
    show_tab(app, lab)
    qtbot.waitUntil(lab.isVisible, timeout=10_000)
    lab.state.cancel()  # the first showing starts the shipped pair at n = 100: one source a length is enough here
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=WAIT_MS)
    lab.n_spin.setValue(1)
    qtbot.mouseClick(lab.evaluate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=WAIT_MS)
    assert LAB_LENGTH in lab.state.curves.lengths
    with qtbot.waitSignal(lab.state.probe_changed, timeout=WAIT_MS) as got:
        click_length(qtbot, lab, LAB_LENGTH)
    pair = got.args[0]
    for slot, probe in enumerate(pair.probes):
        vocab = pair.tasks[slot].vocabulary
        outputs = [vocab.token(t) if t < len(vocab) else "?" for t in probe.output] or ["(nothing)"]
        walk.axis(
            lab.maps.plots[slot].getAxis("bottom"), vocab.tokens(probe.encoder_input), f"Length lab {slot} source"
        )
        walk.axis(lab.maps.plots[slot].getAxis("left"), outputs, f"Length lab {slot} outputs")
    return lab


def _trainer(qtbot, app, walk: Walk):
    tab = app.trainer_tab
    show_tab(app, tab)
    qtbot.waitUntil(tab.isVisible, timeout=10_000)
    snap = ProbeSnapshot(1, SOURCE, probe_maps(app.hub.model, app.hub.task, SOURCE, torch.device("cpu")))
    tab.probe.set_snapshots((snap,))
    maps = snap.maps[tab.probe.selection()[0]]
    walk.axis(tab.probe.plot.getAxis("bottom"), maps.key_labels, "Trainer probe keys")
    walk.axis(tab.probe.plot.getAxis("left"), maps.query_labels, "Trainer probe queries")
    tab.probe.graphics.grab()  # laid out: the map where the mouse goes
    QApplication.processEvents()
    image = tab.probe.image.image  # hidden labels are named by the hover: query 0, key 1
    scene = tab.probe.plot.vb.mapViewToScene(QPointF(1.5, 0.5))
    qtbot.mouseMove(tab.probe.graphics.viewport(), tab.probe.graphics.mapFromScene(scene))
    expected = f"query 0 '{maps.query_labels[0]}' -> key 1 '{maps.key_labels[1]}': {float(image[0, 1]):.3f}"
    qtbot.waitUntil(lambda: tab.probe.image.toolTip() == expected, timeout=5000)
    return tab


def test_every_plot_labels_all_its_tokens_in_order_or_none_at_every_size(qtbot, app):
    walk = Walk()
    dialog = _playground(qtbot, app, walk)
    _compare(qtbot, app, walk)
    lab = _length_lab(qtbot, app, walk)
    trainer = _trainer(qtbot, app, walk)
    pages = {"playground": app.playground, "length lab": lab, "trainer": trainer}
    for size in SIZES:
        app.window.resize(*size)
        dialog.resize(size[0] // 2, size[1] * 2 // 3)
        for name, page in pages.items():
            show_tab(app, page)
            qtbot.waitUntil(page.isVisible, timeout=10_000)
            QApplication.processEvents()
            if name == "playground":
                app.playground.grid_stack.setCurrentWidget(app.playground.grid_tabs)
                for grid in app.playground.grids.values():
                    app.playground.grid_tabs.setCurrentWidget(grid)
                    QApplication.processEvents()
                    walk.check(app.playground, size)
                app.playground.grid_stack.setCurrentWidget(app.playground.compare_panel)
                QApplication.processEvents()
                walk.check(app.playground, size)
            else:
                walk.check(page, size)
        QApplication.processEvents()
        walk.check(dialog, size)
    assert walk.checked >= 3 * 20  # grids, compare, large view, cell panel, length lab, trainer: at every size


class PaintCounter(QObject):
    """Counts the paint events a widget receives (an event filter: the widget itself is untouched)."""

    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def _settle(qtbot, view, width: int, height: int) -> None:
    view.resize(width, height)
    qtbot.wait(SETTLE_MS)


def _first_size(low: int, high: int, size_at, fits) -> int:
    """The smallest size in [low, high] (bisected; `size_at(n)` applies it) at which `fits()` holds."""
    while low < high:
        middle = (low + high) // 2
        size_at(middle)
        low, high = (low, middle) if fits() else (middle + 1, high)
    return low


def test_two_axes_at_the_edge_of_fitting_settle_instead_of_repainting_forever(qtbot):
    """Whether the bottom labels fit depends on the left axis's width, whether the left ones fit on the bottom axis's
    height. At the size where each just fits only when the other draws less, the plot must settle: a few paints,
    then none, with each axis drawing all its labels (or all abbreviated) or none, its title saying which."""
    tokens = ("<bos>", *"3141592653", "<eos>")
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    bottom, left = TokenAxis("bottom"), TokenAxis("left")  # no titles: the title row holds only the notes
    plot = view.addPlot(axisItems={"bottom": bottom, "left": left})
    plot.addItem(pg.ImageItem(np.zeros((len(tokens), len(tokens))), axisOrder="row-major"))
    plot.setRange(xRange=(0, len(tokens)), yRange=(0, len(tokens)), padding=0)
    bottom.set_tokens(tokens)
    left.set_tokens(tokens)
    view.resize(900, 600)
    with qtbot.waitExposed(view):
        view.show()
    qtbot.wait(SETTLE_MS)
    assert bottom.shown == tokens and left.shown == tokens  # room for both: the search below starts from there
    # the narrowest view where the bottom labels fit whole beside a left axis drawing all its labels
    width = _first_size(100, 900, lambda w: _settle(qtbot, view, w, 600), lambda: bottom.shown == tokens)
    # the lowest view where the left labels fit whole above a bottom axis drawing all its labels
    height = _first_size(60, 600, lambda h: _settle(qtbot, view, width + 40, h), lambda: left.shown == tokens)
    counter = PaintCounter()
    view.viewport().installEventFilter(counter)
    _settle(qtbot, view, width - 1, height)  # bottom fits only beside a narrower left, left only above a lower bottom
    counter.paints = 0
    qtbot.wait(600)
    assert counter.paints <= 2, f"{counter.paints} paints in 0.6 s of a plot nobody changed at {width - 1}x{height}"
    for axis in (bottom, left):
        texts = tuple(text for _, text in drawn(axis))
        assert texts in ((), tokens, tuple(map(abbreviate, tokens))), texts
        note = axis_title(axis)
        assert ("hover" in note) if not texts else (("B = <bos>" in note) == (texts != tokens)), (texts, note)

"""The A/B compare page: where B comes from, both grids side by side or their difference, and both outputs.

Render only: choices go to the CompareSession, which loads and runs B off the GUI thread; this page draws the
CompareFrames it emits. The file dialog is a provider passed in, so tests give a path without a dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from visualizer.state.compare import CompareFrame, CompareSession, kind_maps, symbol_outputs
from visualizer.state.compare_sources import SOURCES
from visualizer.state.snapshots import KIND_TITLES, MapsSnapshot
from visualizer.widgets.common.rich_text import escape
from visualizer.widgets.heatmap.grid import AttentionGrid
from visualizer.widgets.heatmap.grid_interaction import HEAD_SWITCH_ACTIONS

PathProvider = Callable[[QWidget], "str | None"]
ANCHOR_NOTE = (
    "One model reads its source as <bos> symbols <eos>, the other reads the bare symbols: each side-by-side "
    "grid is labelled with its own tokens, and this difference pairs the source positions by symbol "
    "(1st with 1st, …, then the padding) and leaves the <bos>/<eos> anchors out."
)
TRAININGS_SIDE = (
    "A and B have different weights (separate trainings, or one trained further): their head numbers "
    "need not correspond (A's H2 may do what B's H4 does). Match heads by what they do, not by their "
    "numbers."
)
TRAININGS_DIFF = (
    "A and B have different weights (separate trainings, or one trained further): their head numbers "
    "need not correspond, so this map may subtract unrelated heads (A's H2 may do what B's H4 does). "
    "Read it with care, or compare side by side."
)
WARNING_STYLE = "QLabel { background: #fff3cd; color: #664d03; border: 1px solid #e0b800; padding: 3px; }"
DIFFER_STYLE = "background:#ffd84d; color:#000; text-decoration:underline"  # marks a position where A and B differ


class ViewOnlyGrid(AttentionGrid):
    """A grid whose heads cannot be switched from here (B's ablations are frozen; a difference has no heads)."""

    def build_context_menu(self, layer: int, head: int):
        menu = super().build_context_menu(layer, head)
        for action in menu.actions():
            if action.objectName() in HEAD_SWITCH_ACTIONS:
                menu.removeAction(action)
        return menu


def ask_checkpoint_path(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getOpenFileName(
        parent,
        "Open model B",
        "",
        "Attention Playground checkpoints (*.pt)",
        options=QFileDialog.Option.DontUseNativeDialog,
    )
    return path or None


def outputs_html(frame: CompareFrame) -> str:
    """Both outputs token by token up to the padding; positions where they differ are highlighted and counted."""

    def row(name: str, tokens: tuple[str, ...]) -> str:
        cells = []
        for i, differs in enumerate(frame.differs):
            token = escape(tokens[i]) if i < len(tokens) else "–"
            cells.append(f"<span style='{DIFFER_STYLE}'>[{token}]</span>" if differs else token)
        return f"<b>{name}</b> " + " ".join(cells)

    n, total = sum(frame.differs), len(frame.differs)
    summary = (
        (
            f"outputs agree at all {total} positions compared"
            if total != 1
            else "outputs agree at the one position compared"
        )
        if n == 0
        else f"{n} of {total} positions differ (marked [ ]): "
        + ", ".join(str(i) for i, d in enumerate(frame.differs) if d)
    )
    return f"{row('A', symbol_outputs(frame.a))}<br>{row('B', symbol_outputs(frame.b))}<br><i>{summary}</i>"


def _page(*widgets: QWidget) -> QWidget:
    """A page of the widgets one above the other, the last one taking the height left."""
    page = QWidget()
    lay = QVBoxLayout(page)
    lay.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        lay.addWidget(widget, 1 if widget is widgets[-1] else 0)
    return page


class ComparePanel(QWidget):
    """Controls on top, then the outputs, then grids A | B (or A − B) of the chosen attention kind."""

    def __init__(
        self, compare: CompareSession, ask_path: PathProvider = ask_checkpoint_path, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.compare, self._ask_path = compare, ask_path
        self.source = QComboBox()
        for key, text in SOURCES.items():
            self.source.addItem(text, key)
        self.source.setToolTip("Where model B comes from")
        self.load_button = QPushButton("Load B")
        self.load_button.setToolTip("Load model B from the chosen source (in the background)")
        self.view = QComboBox()
        self.view.addItem("Side by side: A | B", "side_by_side")
        self.view.addItem("Difference A − B", "difference")
        self.view.setToolTip(
            "Both grids next to each other, or one grid of A − B on a diverging scale (blue < 0 < yellow)"
        )
        self.kind = QComboBox()
        for kind, title in KIND_TITLES.items():
            self.kind.addItem(title, kind)
        self.b_label = QLabel("B: none loaded yet: choose a source and press Load B")
        self.b_label.setTextFormat(Qt.TextFormat.PlainText)  # B's name is often its file's
        self.b_label.setWordWrap(True)
        self.b_label.setStyleSheet("QLabel { font-weight: bold; }")
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # a failure names B's file
        self.status.setWordWrap(True)
        self.status.hide()  # shown only while it has something to say
        self.scale_note = QLabel(
            "In this view each side's colour bar spans its own range: compare values by "
            "hovering, or use Difference A − B"
        )
        self.scale_note.setStyleSheet("color: #a05000")
        self.diff_hint = QLabel("Yellow: A puts more there than B · blue: B puts more than A · white: equal")
        for note in (self.scale_note, self.diff_hint):
            note.setWordWrap(True)  # a note never widens the page past the grids' side of the window
        self.anchor_note = QLabel(ANCHOR_NOTE)
        self.anchor_note.setTextFormat(Qt.TextFormat.PlainText)
        self.anchor_note.setWordWrap(True)
        self.anchor_note.setStyleSheet("color: #a05000")
        self.trainings_side, self.trainings_diff = QLabel(TRAININGS_SIDE), QLabel(TRAININGS_DIFF)
        for note in (self.trainings_side, self.trainings_diff):
            note.setTextFormat(Qt.TextFormat.PlainText)
            note.setWordWrap(True)
            note.setStyleSheet(WARNING_STYLE)
            note.setVisible(False)  # said while A and B are different trainings
        self.outputs = QLabel("")
        self.outputs.setTextFormat(Qt.TextFormat.RichText)
        self.outputs.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.grid_a, self.grid_b, self.grid_diff = AttentionGrid(), ViewOnlyGrid(), ViewOnlyGrid()
        for grid, text in (
            (self.grid_a, "A's maps appear here as soon as the playground has run its input."),
            (self.grid_b, "No model B yet: choose where it comes from and press Load B."),
            (self.grid_diff, "No model B yet: choose where it comes from and press Load B."),
        ):
            grid.placeholder.setText(text)  # until B runs, no side has maps to show
            grid.placeholder.setWordWrap(True)
        self.scale_note.setVisible(False)  # said once there are maps whose scales differ
        self._build_layout()
        self._wire()

    def _build_layout(self) -> None:
        controls = QGridLayout()  # two rows: one row of six needs ~790 px, wider than a 1280-px window's map side
        controls.addWidget(QLabel("B from:"), 0, 0)
        controls.addWidget(self.source, 0, 1)
        controls.addWidget(self.load_button, 0, 2)
        controls.addWidget(QLabel("Compare as:"), 1, 0)
        controls.addWidget(self.view, 1, 1)
        controls.addWidget(self.kind, 1, 2)
        controls.setColumnStretch(3, 1)
        side = QWidget()
        side_lay = QHBoxLayout(side)
        side_lay.setContentsMargins(0, 0, 0, 0)
        titles: list[QLabel] = []
        for name, grid in (("A: the playground's model", self.grid_a), ("B", self.grid_b)):
            for line in (grid.header.title_label, grid.header.legend_label, grid.header.hover_label):
                line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # half width: clip
            column = QVBoxLayout()
            label = QLabel(f"<b>{name}</b>")
            label.setWordWrap(True)
            column.addWidget(label)
            column.addWidget(grid, 1)
            side_lay.addLayout(column, 1)
            titles.append(label)
        self.a_title, self.b_title = titles
        self.pages = QStackedWidget()
        self.pages.addWidget(_page(self.trainings_side, self.scale_note, side))
        # the trainings warning right above the map it warns about
        self.pages.addWidget(_page(self.diff_hint, self.anchor_note, self.trainings_diff, self.grid_diff))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(controls)
        lay.addWidget(self.b_label)
        lay.addWidget(self.status)
        lay.addWidget(self.outputs)
        lay.addWidget(self.pages, 1)

    def _wire(self) -> None:
        c = self.compare
        self.load_button.clicked.connect(self._on_load)
        self.view.currentIndexChanged.connect(lambda _i: c.set_view(self.view.currentData()))
        self.kind.currentIndexChanged.connect(lambda _i: self._redraw())
        self.grid_a.head_toggled.connect(c.session.set_head_enabled)  # A's heads are the playground's
        self.grid_a.restore_all_requested.connect(c.session.restore_all_heads)
        for grid in (self.grid_a, self.grid_b, self.grid_diff):
            grid.map_clicked.connect(lambda _kind, layer, head, g=grid: g.open_large_view(layer, head))
        c.b_changed.connect(self._on_b_changed)
        c.frame_changed.connect(self.show_frame)
        c.a_ready.connect(self._show_a_alone)
        c.view_changed.connect(self._show_view)
        c.failed.connect(self._say)
        c.busy_changed.connect(lambda busy: self._say("Loading model B…" if busy else ""))

    def _show_view(self, view: str) -> None:
        """The compare session switched the view itself: the combo says so without counting as the user's pick."""
        with QSignalBlocker(self.view):
            self.view.setCurrentIndex(self.view.findData(view))

    def _show_a_alone(self, a: MapsSnapshot) -> None:
        """A's maps on the side-by-side page while B is not loaded or has not run yet."""
        kind = self.kind.currentData()
        self.pages.setCurrentIndex(0)
        self.scale_note.setVisible(False)
        self.grid_a.set_maps(a.maps[kind], mode=a.mode)
        self.grid_a.set_ablated(~self.compare.session.gates()[kind])

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def _on_load(self) -> None:
        source = self.source.currentData()
        path: Path | None = None
        if source == "file":
            chosen = self._ask_path(self)
            if not chosen:
                return
            path = Path(chosen)
        self.compare.load(source, path)

    def _on_b_changed(self, label: str) -> None:
        self.b_label.setText(f"B: {label}")
        self._titles()

    def _titles(self, frame: CompareFrame | None = None) -> None:
        """Each column names its model and, when A and B read the source differently, the tokens it reads."""
        titles = {"a": "A: the playground's model", "b": f"B: {self.compare.b_label}"}
        for side, label in ((self.a_title, "a"), (self.b_title, "b")):
            text = f"<b>{escape(titles[label])}</b>"
            if frame is not None and frame.anchors_dropped:
                keys = (frame.a if label == "a" else frame.b).maps["cross"].key_labels
                text += " · reads the source as " + escape(" ".join(k for k in keys if k != "<pad>"))
            side.setText(text)

    def show_frame(self, frame: CompareFrame) -> None:
        """Draw both outputs and the chosen kind's grids (or their difference)."""
        self.outputs.setText(outputs_html(frame))
        self._titles(frame)
        self._redraw()

    def _redraw(self) -> None:
        frame = self.compare.last_frame
        if frame is None:
            if self.compare.session.last_snapshot is not None:
                self._show_a_alone(self.compare.session.last_snapshot)
            return
        kind = self.kind.currentData()
        difference = self.compare.view == "difference"
        self.pages.setCurrentIndex(1 if difference else 0)
        self.trainings_side.setVisible(frame.different_trainings)
        self.trainings_diff.setVisible(frame.different_trainings)
        if self.status.text().startswith("A and B have different"):
            self._say("")
        if difference:
            self.anchor_note.setVisible(frame.anchors_dropped and kind != "decoder_self")
            diff = kind_maps(frame, "diff", kind)
            self.grid_diff.set_maps(diff, mode="difference")
            if diff is None:
                self._say(
                    "A and B have different numbers of layers or heads: no difference to draw; "
                    "compare them side by side."
                )
            return
        self.scale_note.setVisible(frame.a.mode != "weights")  # only weights have a fixed 0-1 scale
        self.grid_a.set_maps(kind_maps(frame, "a", kind), mode=frame.a.mode)
        self.grid_b.set_maps(kind_maps(frame, "b", kind), mode=frame.b.mode)
        self.grid_a.set_ablated(~self.compare.session.gates()[kind])  # each side marks its own ablated heads
        b = self.compare.b
        off = b.ablated.get(kind) if b is not None else None
        self.grid_b.set_ablated(off if off is not None else np.zeros((0, 0), bool))

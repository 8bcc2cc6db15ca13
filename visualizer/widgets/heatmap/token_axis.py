"""An axis that labels every token of a map or none, decided where pyqtgraph lays the labels out.

A stock AxisItem given one label per cell draws them all, overlapping into one unreadable word, or leaves out
the ones reaching past its ends; thinned by hand (every k-th) they read as another sequence: every other token of
"4 9 3 0 3 9 7 3" reads "4 3 3 7". This axis tries the tokens as written, then abbreviated ("<bos>" -> "B", as
the grids do: atlas.readable_labels), and draws them only when pyqtgraph's own layout (generateDrawSpecs, the
method its documentation names for overriding) places every one of them without overlap; else it draws none and
its title says that hovering names them. The title also keys the abbreviations.

The title never changes inside paint: pyqtgraph resizes an axis whose label changes, and a resize during its own
paint can change which labels fit, then the title again, without end. The layout only decides the title; it is
set from the event loop after that paint. Once the axis has tokens, its title row stays (blank when there is
nothing to say), and the labels' room stays too (pyqtgraph's autoReduceTextSpace off), so the axis keeps its size
whichever of the three it draws. Were the room given back whenever no label is drawn, a map whose labels only just
fit would grow, fit them, shrink, not fit them, and repaint without end.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QPainter

from visualizer.widgets.heatmap.atlas import abbreviation_legend, readable_labels

GAP_PX = 2.0  # side by side, labels closer than this run together ("<eos><pad>")
HOVER_NOTE = "hover a cell to name them"


class TokenAxis(pg.AxisItem):
    """Token k labelled at k + offset (cell centres by default): all of them, all abbreviated, or none."""

    def __init__(
        self, orientation: str, title: str = "", *, offset: float = 0.5, hidden_note: str = HOVER_NOTE
    ) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)  # labels, not numbers
        self.setStyle(autoReduceTextSpace=False)  # the labels' room stays when none are drawn: see the docstring
        self._tokens: tuple[str, ...] = ()
        self._strings: tuple[str, ...] = ()  # the labels tickStrings hands out in the layout being tried
        self._offset = offset
        self._title, self._hidden_note = title, hidden_note
        self._label_text = title  # the title for what the last layout drew
        self._label_set: tuple[str, bool] | None = None  # (text, visible) of the label as drawn
        self._title_queued = False
        self.shown: tuple[str, ...] | None = ()  # what the last layout drew: tokens, abbreviated, None = too small
        self._apply_title()

    def set_tokens(self, tokens: Sequence[str]) -> None:
        """The tokens of the axis's cells, in order (none: an empty axis)."""
        tokens = tuple(str(t) for t in tokens)
        if tokens != self._tokens:
            self._tokens = tokens
            self._apply_title()  # the title row appears (or goes) here, outside paint
            self.setTicks(None)  # pyqtgraph's invalidation: the labels are laid out again at the next paint

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:  # pyqtgraph's name
        return [(1.0, [k + self._offset for k in range(len(self._strings))])] if self._strings else []

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:  # pyqtgraph's name
        return list(self._strings[: len(values)])

    def generateDrawSpecs(self, p: QPainter):  # pyqtgraph's name
        """The layout of the first of (tokens, abbreviated, none) whose every label pyqtgraph draws apart."""
        shown = readable_labels(self._tokens, lambda labels: self._all_apart(p, labels)) if self._tokens else ()
        self._strings = shown or ()
        specs = super().generateDrawSpecs(p)
        if specs is not None and shown and [text for _, _, text in specs[2]] != self._in_range(shown):
            specs = (specs[0], specs[1], [])  # wider than the axis until its next layout widens it: none till then
        self.shown = shown
        self._want_title(self._titled(shown))
        return specs

    def _in_range(self, labels: tuple[str, ...]) -> list[str]:
        """The labels whose cells lie in the axis's range (the ones pyqtgraph places)."""
        low, high = sorted(self.range)
        return [t for k, t in enumerate(labels) if low <= k + self._offset <= high]

    def _all_apart(self, p: QPainter, labels: tuple[str, ...]) -> bool:
        """Whether pyqtgraph's layout of `labels` draws each label in the view, in order, none touching another."""
        self._strings = labels
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return False
        expected = self._in_range(labels)
        if self.orientation in ("left", "right"):
            return self._rows_apart(p, expected, specs[1])
        texts = specs[2]
        if [text for _, _, text in texts] != expected:
            return False  # some label left out (past the axis's ends)
        rects = sorted((rect for rect, _, _ in texts), key=lambda r: r.left())
        return all(a.right() + GAP_PX <= b.left() for a, b in zip(rects, rects[1:]))

    def _rows_apart(self, p: QPainter, labels: list[str], ticks: list) -> bool:
        """Labels stacked along a vertical axis: each within the axis's height, none over the next. Their width
        does not decide: pyqtgraph widens the axis to its widest label at the next layout."""
        if len(ticks) != len(labels):
            return False
        bounds = self.mapRectFromParent(self.geometry())
        spans = []
        for (_pen, start, _end), text in zip(ticks, labels):
            half = p.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter, text).height() * 0.4
            spans.append((start.y() - half, start.y() + half))  # pyqtgraph's box: 80 % of the text's height
        spans.sort()
        inside = all(bounds.top() <= top and bottom <= bounds.bottom() for top, bottom in spans)
        return inside and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))

    def _titled(self, shown: tuple[str, ...] | None) -> str:
        """The title, plus the abbreviations' key or where the hidden tokens can be read."""
        if shown is None:
            note = self._hidden_note
        elif shown != self._tokens:
            note = abbreviation_legend(self._tokens)
        else:
            note = ""
        return f"{self._title} ({note})" if note and self._title else note or self._title

    def _want_title(self, text: str) -> None:
        """Called during paint: remember the title and set it once this paint is over (only when it changes)."""
        if text == self._label_text:
            return
        self._label_text = text
        if not self._title_queued:
            self._title_queued = True
            QTimer.singleShot(0, self, self._apply_title)  # dropped with the axis if it goes first

    def _apply_title(self) -> None:
        """Show the wanted title; with tokens or a title the row stays, blank when there is nothing to say."""
        self._title_queued = False
        text = self._label_text
        wanted = (text, bool(text or self._tokens))
        if wanted == self._label_set:
            return
        self._label_set = wanted
        if wanted[1]:
            self.setLabel(html.escape(text) or "&nbsp;")  # the label is HTML: "<bos>" would vanish as a tag
            self.resizeEvent()  # centre the new text: pyqtgraph places its label only when the axis is resized
        else:
            self.showLabel(False)

    @contextmanager
    def hidden_note_as(self, note: str) -> Iterator[None]:
        """While an image is exported: the title says `note` where it says hover on screen (an image has no
        mouse), drawn at once; the screen's title comes back after."""
        saved = self._hidden_note
        self._hidden_note = note
        self._show_title_now()
        try:
            yield
        finally:
            self._hidden_note = saved
            self._show_title_now()

    def _show_title_now(self) -> None:
        self._label_text = self._titled(self.shown)
        self._apply_title()


def token_axes(**sides: str) -> dict[str, TokenAxis]:
    """{side: TokenAxis(side, title)} for PlotItem(axisItems=...)."""
    return {side: TokenAxis(side, title) for side, title in sides.items()}

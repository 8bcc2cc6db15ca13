"""An axis that labels every token of a map or none, decided where pyqtgraph lays the labels out.

A stock AxisItem given one label per cell draws them all, overlapping into one unreadable word, or leaves out
the ones reaching past its ends; thinned by hand (every k-th) they read as another sequence: every other token of
"4 9 3 0 3 9 7 3" reads "4 3 3 7". This axis tries the tokens as written, then abbreviated ("<bos>" -> "B", as
the grids do: atlas.readable_labels), and draws them only when pyqtgraph's own layout (generateDrawSpecs, the
method its documentation names for overriding) places every one of them without overlap; else it draws none and
its title says that hovering names them. The title also keys the abbreviations.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainter

from visualizer.widgets.heatmap.atlas import abbreviation_legend, readable_labels

GAP_PX = 2.0  # side by side, labels closer than this run together ("<eos><pad>")
HOVER_NOTE = "hover a cell to name them"


class TokenAxis(pg.AxisItem):
    """Token k labelled at k + offset (cell centres by default): all of them, all abbreviated, or none."""

    def __init__(self, orientation: str, title: str = "", *, offset: float = 0.5, hidden_note: str = HOVER_NOTE
                 ) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)  # labels, not numbers
        self._tokens: tuple[str, ...] = ()
        self._strings: tuple[str, ...] = ()  # the labels tickStrings hands out in the layout being tried
        self._offset = offset
        self._title, self._hidden_note = title, hidden_note
        self._label_text: str | None = None
        self.shown: tuple[str, ...] | None = ()  # what the last layout drew: tokens, abbreviated, None = too small
        self._set_title(title)

    def set_tokens(self, tokens: Sequence[str]) -> None:
        """The tokens of the axis's cells, in order (none: an empty axis)."""
        tokens = tuple(str(t) for t in tokens)
        if tokens != self._tokens:
            self._tokens = tokens
            self.setTicks(None)  # pyqtgraph's invalidation: the labels are laid out again at the next paint

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:  # pyqtgraph's name
        return [(1.0, [k + self._offset for k in range(len(self._strings))])] if self._strings else []

    def tickStrings(self, values: list, scale: float, spacing: float) -> list[str]:  # pyqtgraph's name
        return list(self._strings[:len(values)])

    def generateDrawSpecs(self, p: QPainter):  # pyqtgraph's name
        """The layout of the first of (tokens, abbreviated, none) whose every label pyqtgraph draws apart."""
        shown = readable_labels(self._tokens, lambda labels: self._all_apart(p, labels)) if self._tokens else ()
        self._strings = shown or ()
        specs = super().generateDrawSpecs(p)
        if specs is not None and shown and [text for _, _, text in specs[2]] != self._in_range(shown):
            specs = (specs[0], specs[1], [])  # wider than the axis until its next layout widens it: none till then
        self.shown = shown
        self._note(shown)
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

    def _note(self, shown: tuple[str, ...] | None) -> None:
        """The title, plus the abbreviations' key or where the hidden tokens can be read."""
        if shown is None:
            note = self._hidden_note
        elif shown != self._tokens:
            note = abbreviation_legend(self._tokens)
        else:
            note = ""
        self._set_title(f"{self._title} ({note})" if note and self._title else note or self._title)

    def _set_title(self, text: str) -> None:
        if text == self._label_text:
            return
        self._label_text = text
        if text:
            self.setLabel(html.escape(text))  # the label is HTML: "<bos>" would vanish as a tag
        else:
            self.showLabel(False)

    def title_text(self) -> str:
        """The axis title as drawn (plain text)."""
        return self._label_text or ""


def token_axes(**sides: str) -> dict[str, TokenAxis]:
    """{side: TokenAxis(side, title)} for PlotItem(axisItems=...)."""
    return {side: TokenAxis(side, title) for side, title in sides.items()}

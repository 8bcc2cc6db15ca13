"""Inside one cell: the steps of softmax(q·k/√d_k)·V for the clicked (query, key) of one head, with the real numbers.

Render only: it draws a `CellDecomposition` (numpy) computed by core_model; every figure shown is a number of that
object, formatted. Hovering a dimension in any per-dimension chart highlights it in all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from core_model.cell_decomposition import CellDecomposition
from visualizer.state.snapshots import KIND_TITLES
from visualizer.widgets.common.rich_text import escape
from visualizer.widgets.heatmap.cell_charts import BarChart, MatrixChart

KEY_CHARTS = ("mask", "softmax")  # charts over the row's keys, not over dimensions
PLACEHOLDER = (
    "Click a cell of the map to see how its number is made: the query and key vectors, their product, "
    "the scaling, the mask, the softmax across the row and the weighted values."
)


def summary_text(c: CellDecomposition) -> str:
    """Steps 4 to 7 in one line: q·k, scaled to the score, the row's mask, the softmax's weight."""
    hidden = int((~c.row_visible).sum())
    masked = f"{hidden} of {len(c.row_visible)} keys masked"
    weight = f"weight <b>{fmt(c.weight, 6)}</b>" if c.visible else "this key masked: weight <b>0</b>"
    return (
        f"q·k {fmt(c.dot)} → ÷ √d<sub>k</sub> {fmt(c.sqrt_d)} → score {fmt(c.scaled)} → {masked} → softmax: "
        f"{weight} (steps 4–7 below)"
    )


def fmt(x: float, digits: int = 4) -> str:
    """A number as the panel shows it: fixed decimals, −∞ for masked scores."""
    if not np.isfinite(x):
        return "−∞" if x < 0 else "∞"
    return f"{x:.{digits}f}"


class CellPanel(QWidget):
    """The steps of one attention cell, top to bottom, each a formula with its numbers and a chart."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumWidth(400)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self._layout = outer
        self.cell: CellDecomposition[np.ndarray] | None = None
        self.header = self._label(PLACEHOLDER)
        # the way from q·k to the weight in one line, above the steps: in view at once, however far they scroll
        self.summary = self._label("")
        self.dim_info = self._label("")
        self.dim_info.setStyleSheet("background: #fff8e1; padding: 3px;")  # stays in sight while scrolling
        self.body_scroll = QScrollArea()
        self.body_scroll.setWidgetResizable(True)
        self.body_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.addWidget(self.body_scroll, 1)
        body = QWidget()
        self._layout = QVBoxLayout(body)
        self.body_scroll.setWidget(body)
        self.steps: dict[str, QLabel] = {}
        self.charts: dict[str, BarChart | MatrixChart] = {}
        for name, chart in (
            ("q", BarChart("dimension d")),
            ("k", BarChart("dimension d")),
            ("product", BarChart("dimension d")),
            ("sum", None),
            ("scale", None),
            ("mask", BarChart("key", tokens=True)),
            ("softmax", BarChart("key", tokens=True)),
            ("values", MatrixChart()),
            ("output", BarChart("dimension d")),
            ("final", None),
        ):
            self.steps[name] = self._label("")
            if chart is not None:
                self.charts[name] = chart
                self._layout.addWidget(chart)
                if name not in KEY_CHARTS:
                    chart.hovered.connect(self.highlight_dimension)
        self._layout.addStretch(1)
        self.highlighted: int | None = None
        self.show_cell(None)

    def _label(self, text: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._layout.addWidget(label)
        return label

    def show_message(self, text: str) -> None:
        """A sentence instead of the steps (nothing inspected, the average column, a failed recomputation)."""
        self.show_cell(None)
        self.header.setText(escape(text))

    def show_cell(
        self,
        cell: CellDecomposition[np.ndarray] | None,
        query_labels: Sequence[str] = (),
        key_labels: Sequence[str] = (),
        map_value: float | None = None,
        mode: str = "weights",
    ) -> None:
        """Draw every step of `cell` (numpy); `map_value` is the map's own figure for this cell.

        mode: "weights" or "scores" (the map shows this cell's weight or score), else the text of another view.
        """
        self.cell = cell
        for widget in (*self.steps.values(), *self.charts.values(), self.dim_info, self.summary):
            widget.setVisible(cell is not None)
        self.body_scroll.setVisible(cell is not None)
        if cell is None:
            self.header.setText(PLACEHOLDER)
            return
        keys = [str(k) for k in key_labels] or [str(k) for k in range(len(cell.row_weights))]
        q_tok = str(query_labels[cell.query]) if cell.query < len(query_labels) else str(cell.query)
        k_tok = keys[cell.key] if cell.key < len(keys) else str(cell.key)
        self.header.setText(
            f"<b>{escape(KIND_TITLES.get(cell.kind, cell.kind))} · L{cell.layer + 1} H{cell.head + 1}"
            f"</b> · query {cell.query} '{escape(q_tok)}' → key {cell.key} '{escape(k_tok)}'"
        )
        self.summary.setText(summary_text(cell))
        self._draw_vectors(cell)
        self._draw_score(cell)
        self._draw_row(cell, keys, map_value, mode)
        self.highlight_dimension(self.highlighted if self.highlighted is not None else -1)

    def _draw_vectors(self, c: CellDecomposition) -> None:
        d = len(c.q)
        if c.rope:
            rope = (
                f" RoPE then rotates each pair (2p, 2p+1) by the angle position·θ<sub>p</sub>, "
                f"θ<sub>p</sub> = base<sup>−2p/d<sub>k</sub></sup> (query position {c.query_position}, "
                f"key position {c.key_position}); grey = before, blue = after."
            )
            self.charts["q"].set_series([("before RoPE", c.q_raw), ("after RoPE", c.q)])
            self.charts["k"].set_series([("before RoPE", c.k_raw), ("after RoPE", c.k)])
        else:
            rope = " (sinusoidal PE was added to the embeddings, so q and k already carry position.)"
            self.charts["q"].set_series([("q", c.q)])
            self.charts["k"].set_series([("k", c.k)])
        self.steps["q"].setText(
            f"<b>1. Query</b> q = W<sub>Q</sub>·x<sub>{c.query}</sub> + b<sub>Q</sub>, "
            f"this head's {d} dimensions.{rope}"
        )
        self.steps["k"].setText(f"<b>2. Key</b> k = W<sub>K</sub>·x<sub>{c.key}</sub> + b<sub>K</sub>.")
        self.steps["product"].setText("<b>3. Elementwise product</b> q<sub>d</sub>·k<sub>d</sub> for each dimension d.")
        self.charts["product"].set_series([("q·k", c.product)])

    def _draw_score(self, c: CellDecomposition) -> None:
        self.steps["sum"].setText(f"<b>4. Sum</b> q·k = Σ<sub>d</sub> q<sub>d</sub>k<sub>d</sub> = <b>{fmt(c.dot)}</b>")
        self.steps["scale"].setText(
            f"<b>5. Scale</b> q·k / √d<sub>k</sub> = {fmt(c.dot)} / {fmt(c.sqrt_d)} = <b>{fmt(c.scaled)}</b>"
        )
        hidden = int((~c.row_visible).sum())
        if c.visible:
            text = f"<b>6. Mask</b> this key is visible: add 0 → score s = <b>{fmt(c.scaled)}</b>"
        else:
            text = "<b>6. Mask</b> this key is <b>masked</b>: its score becomes −∞, so its weight will be 0"
        self.steps["mask"].setText(
            f"{text} ({hidden} of {len(c.row_visible)} keys in this row are masked). "
            f"The whole row's scores (masked keys, −∞, are left empty; orange = this key):"
        )

    def _draw_row(self, c: CellDecomposition, keys: list[str], map_value: float | None, mode: str) -> None:
        empty = not c.row_visible.any()
        rule = (
            "every key of this row is masked, so the model gives the whole row weight 0"
            if empty
            else (
                f"w<sub>{c.key}</sub> = e<sup>s<sub>{c.key}</sub> − m</sup> / "
                f"Σ<sub>k</sub> e<sup>s<sub>k</sub> − m</sup>"
                f" with m = max<sub>k</sub> s<sub>k</sub> = {fmt(c.row_max)}: {fmt(c.numerator, 6)} / "
                f"{fmt(c.denominator, 6)}"
            )
        )
        self.steps["softmax"].setText(
            f"<b>7. Softmax across row {c.query}</b>: {rule} = <b>{fmt(c.weight, 6)}</b> "
            f"(the row sums to {fmt(float(c.row_weights.sum()), 6)}; orange = this key)."
        )
        self.charts["softmax"].set_series([("weight", c.row_weights)], picked=c.key, ticks=keys)
        self.charts["mask"].set_series([("score", c.row_scores)], picked=c.key, ticks=keys)
        self.steps["values"].setText(
            f"<b>8. Values weighted by the row</b> w<sub>k</sub>·v<sub>k</sub>, "
            f"v = W<sub>V</sub>·x + b<sub>V</sub>: one row per key, key {c.key} outlined."
        )
        self.charts["values"].set_matrix(c.weighted_values, keys, c.key)
        gate = "" if c.gate == 1.0 else f" × head gate {fmt(c.gate, 2)}"
        self.steps["output"].setText(
            f"<b>9. Head output</b> o<sub>{c.query}</sub> = Σ<sub>k</sub> w<sub>k</sub>"
            f"v<sub>k</sub>{gate}: this head's part of the layer's output."
        )
        self.charts["output"].set_series([("output", c.gated_output)])
        shown = (
            ""
            if map_value is None
            else (f" — the map shows {'masked' if not np.isfinite(map_value) else fmt(map_value, 3)}")
        )
        if mode not in ("weights", "scores"):  # norms, rollout, a difference: another quantity than this cell's
            shown = (
                f" — the map shows {escape(mode)}, built from these weights; switch the view to weights or "
                "scores to see this number in the map"
            )
        what = (
            f"score s = <b>{fmt(c.scaled if c.visible else -np.inf)}</b>"
            if mode == "scores"
            else f"weight = <b>{fmt(c.weight, 6)}</b>"
        )
        self.steps["final"].setText(f"<b>Cell ({c.query}, {c.key})</b>: {what}{shown}.")

    def highlight_dimension(self, index: int) -> None:
        """Light up dimension `index` in every per-dimension chart (-1: none) and say its numbers."""
        c = self.cell
        self.highlighted = index if c is not None and 0 <= index < len(c.q) else None
        for name, chart in self.charts.items():
            if name not in KEY_CHARTS:
                chart.set_highlight(self.highlighted)
        self.dim_info.setText(self.dimension_text() or "Hover a dimension to follow it through every chart.")

    def dimension_text(self) -> str:
        """The hovered dimension's numbers, '' when none."""
        c, d = self.cell, self.highlighted
        if c is None or d is None:
            return ""
        rope = ""
        if c.angle_q is not None and c.angle_k is not None:  # RoPE
            p = d // 2
            rope = (
                f" (before RoPE {fmt(c.q_raw[d])} and {fmt(c.k_raw[d])}; pair {p} rotated by "
                f"{fmt(c.angle_q[p])} rad for the query, {fmt(c.angle_k[p])} rad for the key)"
            )
        return (
            f"Dimension {d}: q = {fmt(c.q[d])}, k = {fmt(c.k[d])}{rope}, q·k = {fmt(c.product[d])}, "
            f"output = {fmt(c.gated_output[d])}"
        )

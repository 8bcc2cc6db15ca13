"""Head importance as a layer x head table per attention kind, coloured by how much ablating the head costs."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core_model.head_importance import HeadAnalysis, HeadSummary
from core_model.model import ATTENTION_KINDS
from visualizer.widgets.common.empty_hint import HintTable

KIND_NAMES = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention",
    "cross": "Cross-attention",
}
IDLE_HINT = "Filled by Analyse heads: one cell per head, the change when that head alone is switched off."
RUNNING_HINT = "Analysing: the cells fill in once every head has been switched off in turn."
METRICS = {"delta_exact_match": "Δ exact match (ablated − baseline)", "delta_loss": "Δ loss (ablated − baseline)"}


def delta_text(value: float, decimals: int) -> str:
    """A change with its sign, never a signed zero: 0 exactly is "0.000"; a change too small for `decimals` places
    is written in full ("+4.6e-07"), since "+0.000" reads as no change at all and "-0.000" as a sign error."""
    if value == 0:
        return f"{0.0:.{decimals}f}"
    if abs(value) < 0.5 * 10.0**-decimals:
        return f"{value:+.1e}"
    return f"{value:+.{decimals}f}"


def amount_text(value: float, decimals: int) -> str:
    """A non-negative amount (a loss) at `decimals` places, or in full when it is too small for them."""
    return f"{value:.1e}" if 0 < abs(value) < 0.5 * 10.0**-decimals else f"{value:.{decimals}f}"


def cost(row: HeadSummary, metric: str) -> float:
    """How much worse the model gets without the head: a drop in exact match, a rise in loss (>= 0 = harm)."""
    return -row.delta_exact_match if metric == "delta_exact_match" else row.delta_loss


def cell_colour(harm: float, worst: float) -> QColor:
    """White for no harm, deepening red up to the worst head; a head whose removal helps is tinted blue."""
    if worst <= 0:
        return QColor(255, 255, 255)
    t = max(-1.0, min(1.0, harm / worst))
    if t >= 0:
        return QColor(255, int(255 - 190 * t), int(255 - 190 * t))
    return QColor(int(255 + 120 * t), int(255 + 60 * t), 255)


class ImportanceMaps(QWidget):
    """One small table per kind (rows L1.., columns H1..); clicking a cell asks to ablate that head."""

    head_chosen = Signal(str, int, int)  # kind, layer, head (0-based)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.metric_combo = QComboBox()
        for key, text in METRICS.items():
            self.metric_combo.addItem(text, key)
        self.metric_combo.setToolTip("What each cell shows: the change when only that head is switched off")
        self.metric_combo.currentIndexChanged.connect(lambda _i: self._fill())
        self.tables: dict[str, HintTable] = {}
        grid = QGridLayout()
        for col, kind in enumerate(ATTENTION_KINDS):
            title = QLabel(KIND_NAMES[kind])
            table = HintTable(IDLE_HINT)
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
            table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
            table.setToolTip("Click a head to switch it off in the Playground and look at its maps")
            table.cellClicked.connect(lambda r, c, kind=kind: self.head_chosen.emit(kind, r, c))
            grid.addWidget(title, 0, col)
            grid.addWidget(table, 1, col)
            self.tables[kind] = table
        self.baseline_label = QLabel("No importance yet: press Analyse heads.")
        self.baseline_label.setTextFormat(Qt.TextFormat.PlainText)
        top = QHBoxLayout()
        top.addWidget(QLabel("Colour:"))
        top.addWidget(self.metric_combo)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.baseline_label)
        layout.addLayout(grid, 1)
        self._analysis: HeadAnalysis | None = None

    def set_running(self, running: bool) -> None:
        """While an analysis runs and nothing is shown yet, say so (not "press Analyse heads", already pressed)."""
        for table in self.tables.values():
            table.set_hint(RUNNING_HINT if running else IDLE_HINT)
        if self._analysis is None:
            self.baseline_label.setText(
                "Analysing: the maps fill in once every head has been switched off in turn."
                if running
                else "No importance for this model yet: press Analyse heads."
            )

    def set_analysis(self, analysis: HeadAnalysis | None) -> None:
        self._analysis = analysis
        if analysis is None:
            self.baseline_label.setText("No importance for this model yet: press Analyse heads.")
        else:
            b = analysis.baseline
            self.baseline_label.setText(
                f"Baseline (all heads on): exact match {b.exact_match:.3f}, loss "
                f"{amount_text(b.loss, 4)}. Red = the model gets worse without the head."
            )
        self._fill()

    def _fill(self) -> None:
        metric = self.metric_combo.currentData()
        rows = self._analysis.heads if self._analysis is not None else ()
        worst = max((cost(r, metric) for r in rows), default=0.0)
        for kind, table in self.tables.items():
            mine = [r for r in rows if r.kind == kind]
            n_layers = 1 + max((r.layer for r in mine), default=-1)
            n_heads = 1 + max((r.head for r in mine), default=-1)
            table.setRowCount(n_layers)
            table.setColumnCount(n_heads)
            table.setVerticalHeaderLabels([f"L{i + 1}" for i in range(n_layers)])
            table.setHorizontalHeaderLabels([f"H{i + 1}" for i in range(n_heads)])
            for r in mine:
                value = getattr(r, metric)
                item = QTableWidgetItem(delta_text(value, 3))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QBrush(cell_colour(cost(r, metric), worst)))
                item.setForeground(QBrush(QColor(0, 0, 0)))
                item.setToolTip(
                    f"{KIND_NAMES[kind]} layer {r.layer + 1} head {r.head + 1}: Δ exact match "
                    f"{delta_text(r.delta_exact_match, 4)}, Δ loss {delta_text(r.delta_loss, 4)}; role {r.role} "
                    f"({r.role_score:.2f}). Click to ablate it in the Playground."
                )
                table.setItem(r.layer, r.head, item)

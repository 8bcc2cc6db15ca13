"""Step-by-step decoder controls: Step / Back / Run / Reset, the output so far, and the next-token top-k chart.

Render only: the panel receives a `DecoderView` (plain data) and emits intent signals; the session decides.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from .token_chips import TokenChips, chip_state

log = logging.getLogger(__name__)

EOS_LABEL = "<eos>"
BAR_THICKNESS = 0.7  # bar extent along y; rows sit at integer y
X_MAX = 1.18  # room right of a full bar for its value label
FORCE_COLUMNS = 5  # force buttons per row
# action -> keys; the first is the one shown in tooltips and `shortcuts()`. Ctrl+Left/Right (and Shift) are also
# word movement in a QLineEdit: a focused line edit keeps them (ShortcutOverride), so they never fire while typing;
# F10 / F5 act from anywhere in the window, including while typing.
SHORTCUT_KEYS = {
    "step": ("Ctrl+Right", "F10"),
    "back": ("Ctrl+Left",),
    "run": ("Ctrl+Shift+Right", "F5"),
    "reset": ("Ctrl+R",),
}
ACTION_TITLES = {"step": "Step", "back": "Back", "run": "Run to end", "reset": "Reset"}
ACTION_HELP = {
    "step": "Decode one more token",
    "back": "Undo the last decoded token",
    "run": "Decode until <eos> or the length limit",
    "reset": "Start again from <bos>",
}


@dataclass(frozen=True)
class DecoderView:
    """What the panel shows for one decoding state."""

    output_labels: tuple[str, ...]  # tokens decoded so far (after <bos>)
    correct: tuple[bool | None, ...]  # per output token vs the expected output; None = no expectation
    expected_labels: tuple[str, ...]  # the task's expected output incl. "<eos>"
    top_k: tuple[tuple[int, str, float], ...]  # next-token candidates (token id, label, probability), best first
    finished: bool  # <eos> produced or length limit: Step/Run disabled
    can_back: bool
    position: int  # index of the query that the top-k belongs to
    forced: tuple[bool, ...] = ()  # per output token: forced by the user


def summary_text(view: DecoderView) -> str:
    """One line on how the output compares with the expectation."""
    n = len(view.output_labels)
    known = [c for c in view.correct[:n] if c is not None]
    wrong = sum(1 for c in known if not c)
    if not view.finished:
        if n == 0:
            return "Nothing decoded yet: press Step"
        return f"{len(known) - wrong} / {len(known)} correct so far" if known else f"{n} tokens decoded"
    if not known:
        return f"Done: {n} tokens decoded (no expected output)"
    if wrong:
        return f"Done: {wrong} token{'s' if wrong != 1 else ''} wrong"
    if n != len(view.expected_labels):
        return "Done: output length differs from the expected output"
    return "Done: output matches the expected output"


def finished_reason(view: DecoderView) -> str:
    """Why decoding stopped, for the chart's caption."""
    if view.output_labels and view.output_labels[-1] == EOS_LABEL:
        return "Finished: the model produced <eos>. Back or Reset to continue exploring."
    return "Finished: the length limit was reached. Back or Reset to continue exploring."


class CandidateChart(pg.PlotWidget):
    """Horizontal bars of the next-token probabilities; clicking a bar (or its label) forces that token."""

    candidate_clicked = Signal(int)  # token id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ids: list[int] = []
        self._labels: tuple[str, ...] | None = None
        self._title: str | None = None
        self._text_colour = self.palette().color(QPalette.ColorRole.WindowText)
        self.setBackground(self.palette().color(QPalette.ColorRole.Base))
        item = self.getPlotItem()
        item.setMouseEnabled(x=False, y=False)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.invertY(True)  # best candidate on top
        item.setXRange(0.0, X_MAX, padding=0)
        for name in ("left", "bottom"):
            item.getAxis(name).setTextPen(self._text_colour)
        item.getAxis("bottom").setLabel("probability")
        self._bars = pg.BarGraphItem(x0=np.zeros(0), width=np.zeros(0), y=np.zeros(0), height=BAR_THICKNESS,
                                     brush="#5c8ddb", pen=None)
        item.addItem(self._bars)
        self._texts: list[pg.TextItem] = []  # pooled value labels
        self.scene().sigMouseClicked.connect(self._on_scene_clicked)
        self.setToolTip("Click a bar (or its token label) to force that token as the next output")

    def set_candidates(self, top_k: tuple[tuple[int, str, float], ...]) -> None:
        """Show the candidates in place (empty: no bars)."""
        self._ids = [token_id for token_id, _, _ in top_k]
        probs = np.array([p for _, _, p in top_k], dtype=np.float64)
        rows = np.arange(len(top_k), dtype=np.float64)
        brushes = ["#2f6fd0" if i == 0 else "#8fb3ea" for i in range(len(top_k))]  # greedy pick stands out
        self._bars.setOpts(x0=np.zeros(len(top_k)), width=probs, y=rows, height=BAR_THICKNESS, brushes=brushes)
        labels = tuple(label for _, label, _ in top_k)
        if labels != self._labels:  # ticks, range and title re-lay the plot out: only when they change
            self._labels = labels
            self.getPlotItem().getAxis("left").setTicks([[(float(i), label) for i, label in enumerate(labels)]])
            self.getPlotItem().setYRange(-0.5, max(len(top_k), 1) - 0.5, padding=0.02)
        self._update_texts(probs)

    def set_title(self, title: str) -> None:
        """The caption above the bars (set only when it changes: pyqtgraph re-lays the plot out for a title)."""
        if title != self._title:
            self._title = title
            self.setTitle(title)

    def bar_values(self) -> np.ndarray:
        """The bar lengths drawn (the probabilities), best first."""
        return np.asarray(self._bars.opts["width"], dtype=np.float64)

    def candidate_bar_rect(self, index: int) -> QRectF:
        """Bar `index` in view (data) coordinates."""
        width = float(self.bar_values()[index])
        return QRectF(0.0, index - BAR_THICKNESS / 2, width, BAR_THICKNESS)

    def _update_texts(self, probs: np.ndarray) -> None:
        while len(self._texts) < len(probs):
            text = pg.TextItem(anchor=(0, 0.5), color=self._text_colour)
            self.getPlotItem().addItem(text)
            self._texts.append(text)
        for i, text in enumerate(self._texts):
            text.setVisible(i < len(probs))
            if i < len(probs):
                value = f"{probs[i]:.2f}"
                if text.toPlainText() != value:
                    text.setText(value)
                text.setPos(float(probs[i]) + 0.01, float(i))

    def _on_scene_clicked(self, event) -> None:
        """Map a left click on the plot area or the token axis to the candidate row under it."""
        if event.button() != Qt.MouseButton.LeftButton or not self._ids or not self.isEnabled():
            return
        item = self.getPlotItem()
        pos = event.scenePos()
        on_axis = item.getAxis("left").sceneBoundingRect().contains(pos)
        if not (on_axis or item.vb.sceneBoundingRect().contains(pos)):
            return
        y = item.vb.mapSceneToView(pos).y()
        index = int(round(y))
        if 0 <= index < len(self._ids) and abs(y - index) <= BAR_THICKNESS / 2:
            log.debug("candidate %d clicked (token id %d)", index, self._ids[index])
            event.accept()
            self.candidate_clicked.emit(self._ids[index])


class DecoderPanel(QWidget):
    """Buttons and shortcuts to drive decoding, the output so far, and the next-token candidates."""

    step_requested = Signal()
    back_requested = Signal()
    run_requested = Signal()
    reset_requested = Signal()
    token_forced = Signal(int)  # the user picked this token id as the next output

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._view: DecoderView | None = None
        self._enabled = True
        self.buttons: dict[str, QPushButton] = {}
        self._shortcuts: dict[str, list[QShortcut]] = {}
        self.token_chips = TokenChips()
        self.summary = QLabel()
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.chart = CandidateChart()
        self.chart.setMinimumHeight(140)
        self.chart.setMaximumHeight(190)  # five bars; more height only adds empty space
        self.chart.candidate_clicked.connect(self.token_forced)
        self._force_buttons: list[QPushButton] = []
        self._force_grid = QGridLayout()
        self._build_layout()
        self._make_shortcuts()
        self.set_view(DecoderView((), (), (), (), False, False, 0))

    def _build_layout(self) -> None:
        row = QHBoxLayout()
        signals = {"step": self.step_requested, "back": self.back_requested, "run": self.run_requested,
                   "reset": self.reset_requested}
        for action, signal in signals.items():
            button = QPushButton(ACTION_TITLES[action])
            keys = ", ".join(QKeySequence(k).toString(QKeySequence.SequenceFormat.NativeText)
                             for k in SHORTCUT_KEYS[action])
            button.setToolTip(f"{ACTION_HELP[action]} ({keys})")
            button.clicked.connect(signal)
            self.buttons[action] = button
            row.addWidget(button)
        row.addStretch(1)
        self.chip_scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.token_chips)
        scroll.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        scroll.setMaximumHeight(90)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(scroll)
        layout.addWidget(self.summary)
        layout.addWidget(self.caption)
        layout.addWidget(self.chart, 1)
        layout.addLayout(self._force_grid)

    def _make_shortcuts(self) -> None:
        for action, keys in SHORTCUT_KEYS.items():
            button = self.buttons[action]
            self._shortcuts[action] = []
            for key in keys:
                shortcut = QShortcut(QKeySequence(key), self)
                shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
                shortcut.activated.connect(button.click)  # a disabled button ignores click()
                self._shortcuts[action].append(shortcut)

    def shortcuts(self) -> dict[str, QKeySequence]:
        """Primary key per action title, for the Help dialog."""
        return {ACTION_TITLES[a]: QKeySequence(keys[0]) for a, keys in SHORTCUT_KEYS.items()}

    def shortcut_keys(self) -> dict[str, tuple[QKeySequence, ...]]:
        """All keys per action title (Step and Run also have F10 / F5, which work while typing)."""
        return {ACTION_TITLES[a]: tuple(QKeySequence(k) for k in keys) for a, keys in SHORTCUT_KEYS.items()}

    def set_view(self, view: DecoderView) -> None:
        """Show a decoding state: chips, summary, candidates, button states."""
        self._view = view
        output = [(label, chip_state(view.correct[i] if i < len(view.correct) else None),
                   i < len(view.forced) and view.forced[i]) for i, label in enumerate(view.output_labels)]
        grew = len(output) > len(self.token_chips.chips(0))
        self.token_chips.set_rows(output, view.expected_labels)
        if grew:  # keep the newest token in sight once the scroll area has taken the chips' new width
            QTimer.singleShot(0, self._show_newest_chip)
        self.summary.setText(summary_text(view))
        candidates = () if view.finished else view.top_k
        self.chart.set_candidates(candidates)
        self.chart.set_title("" if view.finished else f"Next token at position {view.position}")
        self.caption.setText(finished_reason(view) if view.finished else "")
        self.caption.setVisible(view.finished)
        self._set_force_buttons(candidates)
        self._apply_enabled()

    def _show_newest_chip(self) -> None:
        chips = self.token_chips.chips(0)
        if chips:
            centre = chips[-1].rect.center()
            self.chip_scroll.ensureVisible(centre.x(), centre.y(), chips[-1].rect.width(), 0)

    def set_enabled_all(self, enabled: bool) -> None:
        """Enable or disable every control (e.g. while no model is loaded)."""
        self._enabled = enabled
        self._apply_enabled()

    def chip_states(self) -> list[tuple[str, str]]:
        """(label, state) per output chip; state is "correct", "wrong" or "unknown"."""
        return self.token_chips.chip_states()

    def force_buttons(self) -> list[QPushButton]:
        """The visible keyboard-accessible force buttons, best candidate first."""
        return [b for b in self._force_buttons if not b.isHidden()]

    def _apply_enabled(self) -> None:
        view, on = self._view, self._enabled
        finished = view is not None and view.finished
        self.buttons["step"].setEnabled(on and not finished)
        self.buttons["run"].setEnabled(on and not finished)
        self.buttons["back"].setEnabled(on and view is not None and view.can_back)
        self.buttons["reset"].setEnabled(on)
        self.chart.setEnabled(on)
        for button in self._force_buttons:
            button.setEnabled(on)

    def _set_force_buttons(self, top_k: tuple[tuple[int, str, float], ...]) -> None:
        while len(self._force_buttons) < len(top_k):
            button = QPushButton()
            button.clicked.connect(lambda _=False, b=button: self.token_forced.emit(int(b.property("token_id"))))
            n = len(self._force_buttons)
            self._force_grid.addWidget(button, n // FORCE_COLUMNS, n % FORCE_COLUMNS)
            self._force_buttons.append(button)
        for i, button in enumerate(self._force_buttons):
            button.setVisible(i < len(top_k))
            if i < len(top_k):
                token_id, label, prob = top_k[i]
                button.setText(f"force {label.replace('&', '&&')} ({prob:.2f})")
                button.setProperty("token_id", token_id)
                button.setToolTip(f"Use {label!r} as the next output instead of the model's choice")

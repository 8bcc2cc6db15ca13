"""Beam search and sampling controls under the decoder stepper: settings, Run/Cancel, the tree, the hypotheses.

The panel receives its BeamState and subscribes to it; the state runs the search off the GUI thread and drives
the stepper when a hypothesis is chosen, so the grids show that hypothesis' attention.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from visualizer.state.playground_beam import BeamOutcome, BeamSettings, BeamState
from visualizer.widgets.common.rich_text import escape

from .beam_tree import BeamTree, score_text

RUN_KEY = "Ctrl+B"
PANEL_MAX_WIDTH, PANEL_MAX_SAMPLES = 16, 32  # what a tree drawn here can show; `decode` takes up to 64 and 256
TIPS = {
    "mode": "Beam search keeps the K best partial outputs at each step; sampling draws outputs at random. Both choose"
    " among the task's symbols and <eos> only, never <pad> or <bos>",
    "width": "Beam width K: how many hypotheses survive each step (1 = greedy decoding); at most"
    f" {PANEL_MAX_WIDTH} here, where the tree stays readable (`attention-playground decode --beam` takes more)",
    "samples": f"How many outputs to draw: at most {PANEL_MAX_SAMPLES} here"
    " (`attention-playground decode --samples` takes more)",
    "temperature": "Divides the log-probabilities before sampling: below 1 sharper, above 1 flatter",
    "top_k": "Sample only among the k most likely tokens (0 = off)",
    "top_p": "Sample only among the most likely tokens whose probabilities add up to p (1 = off)",
    "seed": "The same seed draws the same samples (as `attention-playground decode --seed`)",
}


def legend_text(mode: str) -> str:
    """What the colours mean; samples are never pruned, so their legend has no grey."""
    grey = " &nbsp; <span style='color:#999'>■ grey</span>: left the beam" if mode == "beam" else ""
    return (
        f"<span style='color:#1f6fd1'>■</span> best &nbsp; <span style='color:#e07b00'>□</span> shown in the "
        f"grids{grey} &nbsp; edges: log p of the token; right: sum"
    )


def compare_text(outcome: BeamOutcome) -> str:
    """How the best hypothesis compares with greedy decoding and with the task's expected output."""
    best = outcome.hypotheses[0]
    words = outcome.words(best.tokens)
    greedy = outcome.words(outcome.greedy.tokens)
    vs_greedy = (
        "same as greedy"
        if best.tokens == outcome.greedy.tokens
        else (
            f"<span style='color:#b00020'>differs from greedy</span> ({escape(' '.join(greedy))}, "
            f"log p {score_text(outcome.greedy.log_prob)})"
        )
    )
    vs_expected = (
        "matches the expected output"
        if words == outcome.expected
        else (
            f"<span style='color:#b00020'>differs from the expected output</span> "
            f"({escape(' '.join(outcome.expected))})"
        )
    )
    return f"Best: {vs_greedy}; {vs_expected}"


class BeamPanel(QWidget):
    """Settings, Run and Cancel, the search tree and one row per final hypothesis."""

    def __init__(self, state: BeamState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.mode = QComboBox()
        self.mode.addItem("Beam search", "beam")
        self.mode.addItem("Sampling", "sample")
        d = state.settings
        self.width_spin = self._spin(QSpinBox(), 1, PANEL_MAX_WIDTH, d.width, "width")
        self.samples = self._spin(QSpinBox(), 1, PANEL_MAX_SAMPLES, d.samples, "samples")
        self.temperature = self._spin(QDoubleSpinBox(), 0.05, 5.0, d.temperature, "temperature", 0.1)
        self.top_k = self._spin(QSpinBox(), 0, 999, d.top_k, "top_k")
        self.top_p = self._spin(QDoubleSpinBox(), 0.01, 1.0, d.top_p, "top_p", 0.05)
        self.seed = self._spin(QSpinBox(), 0, 2**31 - 1, d.seed, "seed")
        self.mode.setToolTip(TIPS["mode"])
        self.run_button, self.cancel_button = QPushButton("Run search"), QPushButton("Cancel")
        self.run_button.setToolTip(f"Search with these settings, off the interface thread ({RUN_KEY})")
        self.run_button.setShortcut(QKeySequence(RUN_KEY))
        self.cancel_button.setToolTip("Stop the search before its next step")
        self.cancel_button.setEnabled(False)
        self.open_large = QPushButton("Open tree in a window")
        self.open_large.setToolTip("The whole tree in a window of its own, beside the grids; clicks there work too")
        self.open_large.setEnabled(False)
        self.large_tree: BeamTree | None = None
        self.large_legend: QLabel | None = None
        self.large_window: QWidget | None = None
        self.candidates = QCheckBox("Show pruned candidates")
        self.candidates.setToolTip(
            "Also draw (dashed, grey) the continuations that were scored but never entered the "
            "beam; grey solid branches entered it and were dropped later"
        )
        self.status = QLabel("Beam search: press Run search")
        self.status.setWordWrap(True)
        self.tree = BeamTree()
        self.tree_scroll = QScrollArea()
        self.tree_scroll.setWidget(self.tree)
        self.tree_scroll.setMinimumHeight(200)
        self.legend = QLabel(legend_text("beam"))
        self.legend.setWordWrap(True)
        self.legend.setToolTip("Click any node to see that (partial) hypothesis' attention in the grids")
        self.compare = QLabel()
        self.compare.setWordWrap(True)
        self.hyp_box = QVBoxLayout()
        self.hyp_rows: list[QPushButton] = []
        self._build()
        self.mode.setCurrentIndex(self.mode.findData(d.mode))
        self.mode.currentIndexChanged.connect(self._mode_changed)
        for box in self._boxes():
            box.valueChanged.connect(self._edited)
        self.mode.currentIndexChanged.connect(self._edited)
        self.run_button.clicked.connect(state.run)
        self.cancel_button.clicked.connect(state.cancel)
        self.tree.node_clicked.connect(state.show_node)
        self.candidates.toggled.connect(self.tree.set_show_candidates)
        self.open_large.clicked.connect(self.show_large_tree)
        state.outcome_changed.connect(self.set_outcome)
        state.running_changed.connect(self._set_running)
        state.message_changed.connect(self.status.setText)
        state.progressed.connect(lambda pos, limit: self.status.setText(f"Searching… position {pos + 1} of {limit}"))
        state.shown_changed.connect(self.tree.set_shown)
        state.settings_changed.connect(self._show_settings)
        self._mode_changed()

    def _spin(self, box, low, high, value, key: str, step: float | None = None):
        box.setRange(low, high)
        if step is not None:
            box.setSingleStep(step)
        box.setValue(value)
        box.setToolTip(TIPS[key])
        return box

    def _build(self) -> None:
        grid = QGridLayout()
        items = [
            ("Mode", self.mode),
            ("Beam width K", self.width_spin),
            ("Samples", self.samples),
            ("Temperature", self.temperature),
            ("Top-k", self.top_k),
            ("Top-p", self.top_p),
            ("Seed", self.seed),
        ]
        for i, (title, widget) in enumerate(items):
            label = QLabel(title)
            label.setToolTip(widget.toolTip())
            grid.addWidget(label, i // 2, (i % 2) * 2)
            grid.addWidget(widget, i // 2, (i % 2) * 2 + 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        buttons.addWidget(self.open_large)
        view_row = QHBoxLayout()
        view_row.addWidget(self.status, 1)
        view_row.addWidget(self.candidates)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 4, 0, 0)
        lay.addLayout(grid)
        lay.addLayout(buttons)
        lay.addLayout(view_row)
        lay.addWidget(self.tree_scroll, 1)
        lay.addWidget(self.legend)
        lay.addWidget(self.compare)
        lay.addLayout(self.hyp_box)

    def _boxes(self) -> tuple:
        return (self.width_spin, self.temperature, self.top_k, self.top_p, self.seed, self.samples)

    def _edited(self) -> None:
        self.state.set_settings(self.settings())

    def _show_settings(self, settings: BeamSettings) -> None:
        """Show the state's settings. A box that already shows its value is left alone, so a number being typed
        ("2." on the way to "2.5") keeps its text. Where a box cannot show a value (past its range, or finer than
        its decimals) the state takes what the panel shows: the two never differ."""
        values = (settings.width, settings.temperature, settings.top_k, settings.top_p, settings.seed, settings.samples)
        blockers = [QSignalBlocker(widget) for widget in (*self._boxes(), self.mode)]
        for box, value in zip(self._boxes(), values):
            if box.value() != value:
                box.setValue(value)
        self.mode.setCurrentIndex(self.mode.findData(settings.mode))
        for blocker in blockers:
            blocker.unblock()
        self._mode_changed()
        if self.settings() != settings:
            self.state.set_settings(self.settings())

    def settings(self) -> BeamSettings:
        """What the controls show, as settings."""
        return BeamSettings(
            self.mode.currentData(),
            self.width_spin.value(),
            self.temperature.value(),
            self.top_k.value(),
            self.top_p.value(),
            self.seed.value(),
            self.samples.value(),
        )

    def _mode_changed(self) -> None:
        sampling = self.mode.currentData() == "sample"
        self.width_spin.setEnabled(not sampling)
        self.candidates.setEnabled(not sampling)  # samples have no pruned candidates
        for box in (self.samples, self.temperature, self.top_k, self.top_p, self.seed):
            box.setEnabled(sampling)

    def show_large_tree(self) -> None:
        """A top-level window holding a second tree of the same result, kept in step with this one."""
        if self.large_tree is None or self.large_legend is None or self.large_window is None:
            self.large_tree, self.large_legend, self.large_window = self._build_large_window()
        self.large_tree.set_outcome(self.state.outcome)
        self.large_legend.setText(self.legend.text())
        self.large_tree.set_show_candidates(self.candidates.isChecked())
        self.large_tree.set_shown(self.state.shown)
        hint = self.large_tree.sizeHint()
        self.large_window.resize(min(hint.width() + 40, 1400), min(hint.height() + 70, 800))
        self.large_window.show()
        self.large_window.raise_()

    def _build_large_window(self) -> tuple[BeamTree, QLabel, QWidget]:
        """The large window's tree (wired to the state and the candidates box), its legend and the window."""
        tree = BeamTree()
        tree.node_clicked.connect(self.state.show_node)
        self.candidates.toggled.connect(tree.set_show_candidates)
        self.state.shown_changed.connect(tree.set_shown)
        self.state.outcome_changed.connect(tree.set_outcome)
        scroll = QScrollArea()
        scroll.setWidget(tree)
        legend = QLabel()  # the window's numbers need their key too (log p on edges, sum at right)
        window = QWidget(self, Qt.WindowType.Window)
        window.setWindowTitle("Beam search tree")
        lay = QVBoxLayout(window)
        lay.addWidget(legend)
        lay.addWidget(scroll, 1)
        return tree, legend, window

    def _set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def set_outcome(self, outcome: BeamOutcome | None) -> None:
        """Draw the tree, the comparison line and one button per final hypothesis."""
        self.tree.set_outcome(outcome)
        self.open_large.setEnabled(outcome is not None)
        for button in self.hyp_rows:
            self.hyp_box.removeWidget(button)
            button.deleteLater()
        self.hyp_rows = []
        if outcome is None or not outcome.hypotheses:
            self.compare.setText("")
            return
        self.compare.setText(compare_text(outcome))
        self.legend.setText(legend_text(outcome.settings.mode))
        if self.large_legend is not None:
            self.large_legend.setText(self.legend.text())
        for rank, hyp in enumerate(outcome.hypotheses, 1):
            words = " ".join(outcome.words(hyp.tokens))
            tags = [
                t
                for t, on in (
                    ("greedy", hyp.tokens == outcome.greedy.tokens),
                    ("expected", outcome.words(hyp.tokens) == outcome.expected),
                )
                if on
            ]
            text = f"{rank}. {words}   log p {score_text(hyp.log_prob)}" + (f"   = {', '.join(tags)}" if tags else "")
            button = QPushButton(text.replace("&", "&&"))
            button.setStyleSheet("text-align: left")
            button.setToolTip("Show this hypothesis' decoder self and cross attention in the grids")
            button.clicked.connect(lambda _=False, n=hyp.node: self.state.show_node(n))
            self.hyp_box.addWidget(button)
            self.hyp_rows.append(button)
        self.tree_scroll.setMinimumHeight(min(320, self.tree.sizeHint().height() + 6))
        self.tree.adjustSize()
        bar = self.tree_scroll.horizontalScrollBar()  # the end first: where hypotheses part and their sums
        bar.setValue(bar.maximum())

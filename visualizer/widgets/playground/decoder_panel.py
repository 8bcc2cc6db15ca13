"""Step-by-step decoder controls: Step / Back / Run / Reset, the output so far, and the next-token top-k chart.

Render only: the panel receives a `DecoderView` (plain data) and emits intent signals; the session decides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from visualizer.state.snapshots import DecodeSnapshot

from .candidate_chart import CandidateChart
from .chip import chip_state
from .chip_legend import ChipLegend
from .token_chips import TokenChips

log = logging.getLogger(__name__)

EOS_LABEL = "<eos>"
FORCE_COLUMNS = 3  # force buttons per row: five candidates in two rows fit the narrowest column
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


MODE_TEXTS = {"teacher": "Teacher forcing", "stepping": "Stepping"}
MODE_TIPS = {
    "teacher": "The decoder sees the whole expected output: one full map per position",
    "stepping": "The decoder sees only what it decoded so far: start again from <bos> (like Reset)",
}
MODE_STATES = {False: "decoder input: the expected output", True: "decoder input: decoded so far"}


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
    stepping: bool = False  # False: teacher forcing, the decoder sees the whole expected output


def decoder_view(snap: DecodeSnapshot) -> DecoderView:
    """Adapter from the session's plain snapshot to the panel's view type."""
    return DecoderView(
        output_labels=snap.output_labels,
        correct=snap.correct,
        expected_labels=snap.expected_labels,
        top_k=snap.top_k,
        finished=snap.finished,
        can_back=bool(snap.output_ids),
        position=snap.position,
        forced=snap.forced,
        stepping=snap.stepping,
    )


FINISHED_CHART = "No next token: decoding has finished"  # over the empty chart: it is empty on purpose
TEACHER_SUMMARY = "Teacher forcing: all positions at once; Step decodes one by one"


def summary_text(view: DecoderView) -> str:
    """One line on how the output compares with the expectation; tokens the user forced are counted apart from
    the model's: a forced token that differs from the expectation is no mistake of the model's."""
    n = len(view.output_labels)
    forced = [i < len(view.forced) and view.forced[i] for i in range(n)]
    known = [c for c, f in zip(view.correct[:n], forced) if c is not None and not f]
    wrong = sum(1 for c in known if not c)
    forced_wrong = sum(1 for c, f in zip(view.correct[:n], forced) if f and c is False)
    aside = f"; {forced_wrong} token{'s' * (forced_wrong != 1)} you forced differ{'s' * (forced_wrong == 1)}"
    aside = aside if forced_wrong else ""
    if not view.finished:
        if n == 0:  # teacher forcing: the Prediction line already shows a whole answer, made all at once
            return "Nothing decoded yet: press Step" if view.stepping else TEACHER_SUMMARY
        if known:
            return f"{len(known) - wrong} / {len(known)} of the model's tokens correct so far{aside}"
        return f"{n} tokens decoded{aside}"
    if not known and not forced_wrong:
        return f"Done: {n} tokens decoded (no expected output)" if not any(forced) else f"Done: {n} tokens decoded"
    if wrong:
        return f"Done: {wrong} token{'s' if wrong != 1 else ''} wrong{aside}"
    if forced_wrong:  # the difference first: the output is not the expected one
        s = "s" * (forced_wrong != 1)
        differ = f"{forced_wrong} token{s} you forced differ{'s' * (not s)} from the expected output"
        return f"Done: {differ}; the model's own match"
    if n != len(view.expected_labels):
        return "Done: output length differs from the expected output"
    return "Done: output matches the expected output"


def finished_reason(view: DecoderView) -> str:
    """Why decoding stopped, for the chart's caption."""
    if view.output_labels and view.output_labels[-1] == EOS_LABEL:
        forced = len(view.forced) >= len(view.output_labels) and view.forced[len(view.output_labels) - 1]
        who = "you forced <eos>" if forced else "the model produced <eos>"
        return f"Finished: {who}. Back or Reset to continue exploring."
    return "Finished: the length limit was reached. Back or Reset to continue exploring."


class DecoderPanel(QWidget):
    """Buttons and shortcuts to drive decoding, the output so far, and the next-token candidates."""

    step_requested = Signal()
    back_requested = Signal()
    run_requested = Signal()
    reset_requested = Signal()
    token_forced = Signal(int)  # the user picked this token id as the next output
    teacher_forcing_requested = Signal()  # back to the decoder seeing the expected output

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._view: DecoderView | None = None
        self.buttons: dict[str, QPushButton] = {}
        self._shortcuts: dict[str, list[QShortcut]] = {}
        self.token_chips = TokenChips()
        self.legend = ChipLegend()
        self.mode_buttons = {mode: QPushButton(text) for mode, text in MODE_TEXTS.items()}
        self.mode_label = QLabel()
        self.summary = QLabel()
        self.summary.setWordWrap(True)  # a longer sentence wraps: it never widens the column
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.chart = CandidateChart()
        self.chart.setMinimumHeight(140)
        self.chart.setMaximumHeight(190)  # five bars; more height only adds empty space
        self.chart.candidate_clicked.connect(self.token_forced)
        self._force_buttons: list[QPushButton] = []
        self._forces_shown: tuple = ()  # (id, label, 2-decimal probability) per force button, as set last
        self._force_grid = QGridLayout()
        self._build_layout()
        self._make_shortcuts()
        self.set_view(DecoderView((), (), (), (), False, False, 0))

    def _build_mode_row(self) -> QHBoxLayout:
        """Teacher forcing / Stepping: one is always down, and the line beside it says what the decoder sees."""
        row = QHBoxLayout()
        group = QButtonGroup(self)
        for mode, button in self.mode_buttons.items():
            button.setCheckable(True)
            button.setToolTip(MODE_TIPS[mode])
            group.addButton(button)
            row.addWidget(button)
        group.setExclusive(True)
        self.mode_buttons["teacher"].clicked.connect(self.teacher_forcing_requested)
        self.mode_buttons["stepping"].clicked.connect(self.reset_requested)
        # as wide as its longest text: switching mode never changes the column's minimum width (nor the splitter)
        self.mode_label.setMinimumWidth(
            max(self.mode_label.fontMetrics().horizontalAdvance(text) for text in MODE_STATES.values()) + 4
        )
        row.addWidget(self.mode_label, 1)
        return row

    def _build_layout(self) -> None:
        row = QHBoxLayout()
        signals = {
            "step": self.step_requested,
            "back": self.back_requested,
            "run": self.run_requested,
            "reset": self.reset_requested,
        }
        for action, signal in signals.items():
            button = QPushButton(ACTION_TITLES[action])
            keys = ", ".join(
                QKeySequence(k).toString(QKeySequence.SequenceFormat.NativeText) for k in SHORTCUT_KEYS[action]
            )
            button.setToolTip(f"{ACTION_HELP[action]} ({keys})")
            button.clicked.connect(signal)
            self.buttons[action] = button
            row.addWidget(button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(self._build_mode_row())
        layout.addLayout(row)
        layout.addWidget(self.token_chips)  # wraps to the panel's width; its height is reserved per source
        layout.addWidget(self.legend)
        layout.addWidget(self.summary)
        layout.addWidget(self.caption)
        layout.addWidget(self.chart, 1)
        layout.addLayout(self._force_grid)

    def add_extension(self, widget: QWidget) -> None:
        """Append a widget under the stepper's controls (the beam search panel)."""
        layout = self.layout()
        assert layout is not None  # _build_layout gave the panel its column
        layout.addWidget(widget)

    def _make_shortcuts(self) -> None:
        for action, keys in SHORTCUT_KEYS.items():
            button = self.buttons[action]
            self._shortcuts[action] = []
            for key in keys:
                shortcut = QShortcut(QKeySequence(key), self)
                shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
                shortcut.setWhatsThis(f"{ACTION_TITLES[action]} (decoder stepper): {ACTION_HELP[action]}")
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
        output = [
            (
                label,
                chip_state(view.correct[i] if i < len(view.correct) else None),
                i < len(view.forced) and view.forced[i],
            )
            for i, label in enumerate(view.output_labels)
        ]
        self.token_chips.set_rows(output, view.expected_labels)
        self.summary.setText(summary_text(view))
        self.mode_buttons["stepping" if view.stepping else "teacher"].setChecked(True)
        self.mode_label.setText(MODE_STATES[view.stepping])
        candidates = () if view.finished else view.top_k
        self.chart.set_candidates(candidates)
        self.chart.set_title(FINISHED_CHART if view.finished else f"Next token at position {view.position}")
        self.caption.setText(finished_reason(view) if view.finished else "")
        self.caption.setVisible(view.finished)
        self._set_force_buttons(candidates)
        self._apply_enabled()

    def _apply_enabled(self) -> None:
        """Step and Run wait for an unfinished sequence, Back for a step to undo."""
        view = self._view
        finished = view is not None and view.finished
        self.buttons["step"].setEnabled(not finished)
        self.buttons["run"].setEnabled(not finished)
        self.buttons["back"].setEnabled(view is not None and view.can_back)

    def _set_force_buttons(self, top_k: tuple[tuple[int, str, float], ...]) -> None:
        shown = tuple((token_id, label, f"{prob:.2f}") for token_id, label, prob in top_k)
        if shown == self._forces_shown:  # the same buttons, texts and tips: nothing to set (most keystrokes)
            return
        self._forces_shown = shown
        while len(self._force_buttons) < len(top_k):
            button = QPushButton()
            button.setObjectName("force_button")
            button.clicked.connect(lambda _=False, b=button: self.token_forced.emit(int(b.property("token_id"))))
            n = len(self._force_buttons)
            self._force_grid.addWidget(button, n // FORCE_COLUMNS, n % FORCE_COLUMNS)
            self._force_buttons.append(button)
        for i, button in enumerate(self._force_buttons):
            button.setVisible(i < len(top_k))
            if i < len(top_k):
                token_id, label, _ = top_k[i]
                button.setText(f"force {label.replace('&', '&&')} ({shown[i][2]})")
                button.setProperty("token_id", token_id)
                button.setToolTip(f"Use {label!r} as the next output instead of the model's choice")

"""The Causal tab's per-source page: the logit lens, attribution maps beside attention maps, and their agreement.

Render only: the source field and Analyse hand text to AttributionState; its frame is drawn here. When gradient x
delta vanishes while occlusion does not, a note says why (saturation), which is the lesson of putting them together.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core_model.attribution import MAX_IG_STEPS
from core_model.attribution_agreement import METHODS
from visualizer.state.causal_attribution import AttributionFrame, AttributionState
from visualizer.state.snapshots import InputError
from visualizer.widgets.common.scroll_page import ScrollPage
from visualizer.widgets.common.styles import WARNING_STYLE

from .agreement_table import AGREEMENT_CAPTION, AgreementTable
from .lens_table import LensTable, fit_rows
from .source_maps import METHOD_TITLES, SourceMaps

RUN_KEY = "Ctrl+Return"
MAPS_HINT = "Filled by Analyse: the three attributions of this source beside the attention maps of the same pass."
MAPS_RUNNING_HINT = "Analysing: the maps show here once every output token's gradients are done."
SATURATION_NOTE = (
    "Gradient × delta is almost 0 here while occlusion is not: the model is saturated. It is so sure of its answer "
    "that the log-probability hardly changes near the input, so the gradient at the input says little; integrated "
    "gradients walk from the baseline, where the change happens, and occlusion simply removes the symbol."
)
ROUGH_IG_NOTE = (
    "Integrated gradients leave {share:.0%} of f(x) − f(baseline) unexplained with {steps} steps (the completeness "
    "gap): their map is rough. Raise IG steps and press Analyse again."
)
LENS_CAPTION = (
    "Logit lens: the token the decoder would write if it stopped after each decoder layer, and its probability. "
    "Shade = that probability (dark = sure, which is not the same as right); ✓ = the token the model does write, "
    "✗ = another."
)
MAPS_CAPTION = (
    "Attributions (rows: output tokens, columns: source tokens; green raises the output's log p, red lowers it; one "
    "colour scale for the three, set by the largest) beside the attention views of the same pass (dark = 0, yellow = "
    "the map's maximum)."
)


def _captioned(text: str, widget: QWidget) -> QWidget:
    """The widget under a one-line caption that says how to read it."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    caption = QLabel(text)
    caption.setWordWrap(True)
    layout.addWidget(caption)
    layout.addWidget(widget, 1)
    return box


class SourceView(QWidget):
    """Source, Analyse (with progress and Cancel); the lens, the maps, the agreement table and the notes."""

    def __init__(self, state: AttributionState, default_source: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.source = QLineEdit(default_source)
        self.source.setObjectName("attribution_source")
        self.source.setToolTip(
            "The source: the model's own greedy output for it is what every number here explains. It follows the "
            "Playground's input until you edit it here"
        )
        self.error = QLabel()
        self.error.setObjectName("attribution_error")
        self.error.setStyleSheet("color: #c0392b;")
        self.error.setVisible(False)
        self.run_button = QPushButton("Analyse")
        self.run_button.setToolTip(f"Run the logit lens and the three attributions ({RUN_KEY})")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.steps = QSpinBox()
        self.steps.setObjectName("ig_steps")
        self.steps.setRange(1, MAX_IG_STEPS)
        self.steps.setValue(state.ig_steps)
        self.steps.setToolTip(
            f"Integrated gradients' steps from the baseline to the input (1-{MAX_IG_STEPS}, the CLI's --ig-steps): "
            "more steps shrink the completeness gap and take longer"
        )
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setTextVisible(False)  # "0%" when idle would read as a failed run
        self.progress.setVisible(False)
        self.status = QLabel()
        self.status.setObjectName("attribution_status")
        self.status.setWordWrap(True)
        self.saturation = QLabel(SATURATION_NOTE)
        self.saturation.setObjectName("saturation_note")
        self.saturation.setWordWrap(True)
        self.saturation.setStyleSheet(WARNING_STYLE)
        self.saturation.setVisible(False)
        self.rough = QLabel()
        self.rough.setObjectName("rough_ig_note")
        self.rough.setWordWrap(True)
        self.rough.setStyleSheet(self.saturation.styleSheet())
        self.rough.setVisible(False)
        self.lens = LensTable()
        self.maps = SourceMaps()
        self.maps.set_hint(MAPS_HINT)
        self.agreement = AgreementTable()
        self._layout()
        self._wire()
        self.show_frame(state.frame)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Source:"))
        bar.addWidget(self.source, 2)
        bar.addWidget(QLabel("IG steps:"))
        bar.addWidget(self.steps)
        for widget in (self.run_button, self.cancel_button):
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        page = QWidget()  # below the source bar, which stays in sight: the results, scrolled as one page
        results = QVBoxLayout(page)
        results.setContentsMargins(0, 0, 0, 0)
        results.addWidget(self.error)
        results.addWidget(self.status)
        results.addWidget(self.saturation)
        results.addWidget(self.rough)
        # the two tables keep the height of their rows (fit_rows); the maps take the rest, never under their minimum
        results.addWidget(_captioned(LENS_CAPTION, self.lens))
        results.addWidget(_captioned(MAPS_CAPTION, self.maps), 1)
        results.addWidget(_captioned(AGREEMENT_CAPTION, self.agreement))
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(ScrollPage(page), 1)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(self.run)
        self._edited = False  # typed into: the Playground's input no longer replaces it
        self.source.textEdited.connect(self._mark_edited)
        self.source.returnPressed.connect(self.run)
        run = QShortcut(QKeySequence(RUN_KEY), self, self.run, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Analyse (Lens and attribution page)")
        self.cancel_button.clicked.connect(st.cancel)
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        st.input_error.connect(self.show_error)

    def _mark_edited(self) -> None:
        self._edited = True

    def follow_source(self, text: str) -> None:
        """Take the Playground's input as the source unless it was edited here."""
        if not self._edited:
            self.source.setText(text)

    def run(self) -> None:
        self.state.run(self.source.text(), self.steps.value())

    def show_error(self, error: InputError | None) -> None:
        self.error.setText("" if error is None else error.message)
        self.error.setVisible(error is not None)

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)  # idle, an empty bar reads as a field to type into
        self.maps.set_hint(MAPS_RUNNING_HINT if running else MAPS_HINT)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setTextVisible(total > 0)
        self.progress.setFormat("gradients: %v of %m output tokens")

    def show_frame(self, frame: AttributionFrame | None) -> None:
        vocab = self.state.hub.task.vocabulary
        if frame is None:
            self.lens.set_lens(None, (), vocab.token)
            fit_rows(self.lens)
            self.maps.set_maps({}, set(), (), ())
            self.agreement.set_agreement(None)
            self.saturation.setVisible(False)
            self.rough.setVisible(False)
            self.status.setText(f"Press Analyse ({RUN_KEY}) for the logit lens and the three attributions.")
            return
        self.lens.set_lens(frame.lens, frame.output_tokens, vocab.token)
        fit_rows(self.lens)
        maps = {METHOD_TITLES[m]: getattr(frame.attribution, m) for m in METHODS} | frame.views
        signed = {METHOD_TITLES[m] for m in METHODS}
        self.maps.set_maps(maps, signed, frame.output_tokens, frame.source_tokens)
        self.agreement.set_agreement(frame.agreement, frame.top1, "gradient_x_delta" if frame.saturated else None)
        self.saturation.setVisible(frame.saturated)
        self.rough.setText(ROUGH_IG_NOTE.format(share=frame.ig_gap_share, steps=frame.attribution.ig_steps))
        self.rough.setVisible(frame.rough_ig)

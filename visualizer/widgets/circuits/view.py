"""The Circuits tab: the head list, the selected head's QK and OV tables, and the strongest composition links.

Render only: Compute hands the work to CircuitsState (a task slot, progress and Cancel) and its frame is drawn here.
The first time the tab is shown for a model (or a new model arrives while it is shown) it computes by itself: reading
the circuits of a shipped model takes a fraction of a second, off the GUI thread.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core_model.circuits import HeadRef
from core_model.head_roles import HeadRole
from core_model.run_agreement import PathAgreement
from visualizer.state.circuits import PRESS, CircuitsFrame, CircuitsState
from visualizer.state.snapshots import MapsSnapshot

from . import captions
from .composition_table import CompositionTable
from .head_list import HeadList, share_text
from .run_map import RunMap, column, position_pair
from .token_table import TokenTable, occurring, vocabulary_masks

RUN_KEY = "Ctrl+Return"
TABLE_SIDES = {  # (query side, key side) of each kind, as token_table.occurring names them
    "encoder_self": ("source", "source"),
    "decoder_self": ("decoder", "decoder"),
    "cross": ("decoder", "source"),
}


def _label(text: str = "", name: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName(name)
    return label


class CircuitsView(QWidget):
    """Compute (progress, Cancel), a status line; heads | QK over OV | composition, side by side."""

    head_chosen = Signal(str, int, int)  # kind, layer, head: show that head in the Playground

    def __init__(self, state: CircuitsState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.frame: CircuitsFrame | None = None
        self._shown_for = -1  # the hub generation the tab last computed by itself for
        self.run_button = QPushButton("Compute")
        self.run_button.setToolTip(f"Read every head's circuits and composition from the weights ({RUN_KEY})")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        self.status = _label(PRESS[0].upper() + PRESS[1:], "circuits_status")
        self.heads = HeadList()
        self.show_button = QPushButton("Show in Playground")
        self.show_button.setToolTip("The selected head's attention map, large, on the Playground's input")
        self.qk, self.ov = TokenTable(), TokenTable()
        self.positions = TokenTable(mark_winners=False)  # its winner is not the offset a real pass uses
        self.position_caption = _label(name="position_caption")
        self.run_map = RunMap()  # the selected head's map from the Playground's last run
        self.run: MapsSnapshot | None = None
        self._agreement: PathAgreement | None = None
        self.qk_tabs = QTabWidget()
        self._pick_tab = False  # a new result: open the QK tab that carries the opening head's choice
        self.centre_qk = QCheckBox("Centre QK rows")
        self.centre_qk.setToolTip(captions.CENTRE_QK_TIP)
        self.centre_ov = QCheckBox("Centre OV columns")
        self.centre_ov.setToolTip(captions.CENTRE_OV_TIP)
        for box in (self.centre_qk, self.centre_ov):
            box.setChecked(True)  # what decides and what depends on the token read; raw tables one click away
        self.only_selected = QCheckBox("Only the selected head's links")
        self.only_selected.setToolTip("List only the links into or out of the head selected on the left")
        self.qk_caption, self.ov_caption = _label(name="qk_caption"), _label(name="ov_caption")
        for caption in (self.qk_caption, self.ov_caption, self.position_caption):
            caption.setToolTip(captions.READING_TIP)
        self.composition = CompositionTable()
        self.composition_note = _label(name="composition_note")
        self._layout()
        self._wire()
        self._write_legend()
        self.show_frame(state.frame)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        for widget in (self.run_button, self.cancel_button):
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        bar.addStretch()
        for box in (self.centre_qk, self.centre_ov):
            bar.addWidget(box)
        splitter = self.splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        self.heads_legend = _label(name="heads_legend")
        self.heads_legend.setStyleSheet("color: #555;")
        splitter.addWidget(column(self.heads, self.heads_legend, self.show_button, stretch=(1,)))
        included = _label(captions.INCLUDED, "circuits_included")
        included.setStyleSheet("color: #555;")
        self.qk_tabs.addTab(column(self.qk_caption, self.qk, stretch=(0, 1)), "QK by token")
        self.qk_tabs.addTab(position_pair(self.position_caption, self.positions, self.run_map), "QK by position")
        for index, tip in enumerate(captions.QK_TAB_TIPS):
            self.qk_tabs.setTabToolTip(index, tip)
        splitter.addWidget(column(self.qk_tabs, self.ov_caption, self.ov, included, stretch=(3, 0, 2, 0)))
        links_caption = _label(captions.COMPOSITION_CAPTION)
        for label in (links_caption, self.composition_note):  # they wrap to the table's width, never widen it
            policy = label.sizePolicy()  # keeps the height-for-width a wrapped label needs
            policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)
            label.setSizePolicy(policy)
        links_column = column(
            links_caption,
            self.only_selected,
            self.composition,
            self.composition_note,
            stretch=(0, 0, 1),
        )
        splitter.addWidget(links_column)
        for index, share in enumerate((0, 1, 0)):  # the side tables keep their width (fit_width), QK and OV the rest
            splitter.setStretchFactor(index, share)
        layout = QVBoxLayout(self)
        layout.addWidget(_label(captions.INTRO, "circuits_intro"))
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(st.compute)
        self.cancel_button.clicked.connect(st.cancel)
        run = QShortcut(QKeySequence(RUN_KEY), self, st.compute, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Compute the circuits")  # as its page declares it (analysis_tabs.py)
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        self.heads.head_selected.connect(self.show_head)
        self.heads.head_selected.connect(
            lambda ref: self._filter_links(ref) if self.only_selected.isChecked() else None
        )
        self.only_selected.toggled.connect(lambda _on: self._filter_links(self.heads.selected()))
        self.centre_ov.toggled.connect(self.heads.set_centred)
        self.centre_ov.toggled.connect(self._write_legend)
        for table in (self.qk, self.ov, self.positions):
            table.compact_changed.connect(lambda _on: self._write_captions())
        for box in (self.centre_qk, self.centre_ov):
            box.toggled.connect(lambda _on: self.show_head(self.heads.selected()))
        self.heads.head_chosen.connect(self.head_chosen)
        self.show_button.clicked.connect(self.heads.choose_selected)
        self.composition.target_selected.connect(self.heads.select)

    def _write_legend(self) -> None:
        self.heads_legend.setText(captions.heads_legend(self.centre_ov.isChecked()))

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        super().showEvent(event)
        self._compute_if_due()

    def _compute_if_due(self) -> None:
        """Compute once per model while the tab is on screen; a cancelled run is not restarted behind one's back."""
        generation = self.state.hub.generation
        due = self.state.frame is None and not self.state.running and self._shown_for != generation
        if due and self.isVisible():
            self._shown_for = generation
            self.state.compute()

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        """The Heads tab's roles of the current model, beside each head."""
        self.heads.set_roles(roles)

    def show_frame(self, frame: CircuitsFrame | None) -> None:
        self.frame = frame
        self._pick_tab = frame is not None
        self.heads.set_heads(() if frame is None else frame.heads, () if frame is None else frame.positions)
        if frame is None:  # a new model: read it now if the tab is on screen
            QTimer.singleShot(0, self, self._compute_if_due)
        self.show_button.setEnabled(frame is not None)
        self._filter_links(self.heads.selected())

    def _filter_links(self, ref: HeadRef | None) -> None:
        """The composition table: the strongest links, or only the selected head's when that box is ticked."""
        frame = self.frame
        only = ref if self.only_selected.isChecked() else None
        self.composition.set_frame(frame, only)
        if frame is None:
            self.composition_note.setText("")
            return
        self.composition_note.setText(captions.composition_note(self.composition.links, frame, only))

    def show_head(self, ref: HeadRef | None) -> None:
        """The head's QK and OV tables (None: empty tables)."""
        frame = self.frame
        if frame is None or ref is None:
            for table, caption in (
                (self.qk, self.qk_caption),
                (self.ov, self.ov_caption),
                (self.positions, self.position_caption),
            ):
                table.setRowCount(0)
                table.setColumnCount(0)
                caption.setText("")
            self.run_map.clear()  # a map of an earlier run beside no table would read as this model's
            self._name_tabs(None)
            return
        circuit, tokens = frame.circuit(ref), frame.tokens
        query, key = (occurring(side, len(tokens), frame.anchored) for side in TABLE_SIDES[ref.kind])
        centre_qk, centre_ov = self.centre_qk.isChecked(), self.centre_ov.isChecked()
        qk = circuit.qk_centred if centre_qk else circuit.qk
        ov = circuit.ov_centred if centre_ov else circuit.ov
        greyed, scaled = vocabulary_masks(len(tokens), query, key)
        self.qk.set_table(qk, tokens, tokens, partial(captions.qk_tip, ref, centre_qk), greyed, scaled)
        greyed, scaled = vocabulary_masks(len(tokens), key, occurring("output", len(tokens), frame.anchored))
        self.ov.set_table(ov, tokens, tokens, partial(captions.ov_tip, ref, centre_ov), greyed, scaled)
        self._show_positions(frame, ref)
        self._write_captions()

    def _write_captions(self) -> None:
        """The three tables' captions for the head shown (their scale, centring and whether numbers fit)."""
        ref = self.heads.selected()
        if self.frame is None or ref is None:
            return
        centre_qk, centre_ov = self.centre_qk.isChecked(), self.centre_ov.isChecked()
        circuit = self.frame.circuit(ref)
        qk_units, ov_units = captions.qk_units(circuit), captions.ov_units(circuit)
        self.qk_caption.setText(captions.qk_caption(ref, self.qk.scale, centre_qk, self.qk.compact, qk_units))
        diagonal = captions.diagonal_line(circuit, centre_ov)
        self.ov_caption.setText(captions.ov_caption(ref, self.ov.scale, centre_ov, self.ov.compact, diagonal, ov_units))
        self.position_caption.setText(
            captions.position_caption(
                ref,
                self.positions.scale,
                self.positions.compact,
                self.frame.anchored,
                self.centre_qk.isChecked(),
                self.frame.positional,
                qk_units,
                self._agreement,
            )
        )

    def _show_positions(self, frame: CircuitsFrame, ref: HeadRef) -> None:
        """The head's QK by position; decoder self-attention's hidden keys (j > i) greyed."""
        circuit = frame.position(ref)
        n = circuit.scores.shape[0]
        greyed = np.triu(np.ones((n, n), dtype=bool), 1) if ref.kind == "decoder_self" else None
        labels = [str(i) for i in range(n)]
        scores = circuit.scores_centred if self.centre_qk.isChecked() else circuit.scores
        tip = partial(captions.position_tip, ref, self.centre_qk.isChecked())
        self.positions.set_table(scores, labels, labels, tip, greyed)
        self._agreement = self.run_map.show_head(ref, self.run, circuit.scores)
        self._name_tabs(circuit.position_share)
        if self._pick_tab:
            self._pick_tab = False
            self.qk_tabs.setCurrentIndex(1 if circuit.position_share > 0.5 else 0)

    def set_run(self, maps: MapsSnapshot | None) -> None:
        """The Playground's last run: the selected head's map from it sits beside its position table."""
        self.run = maps
        self.show_head(self.heads.selected())

    def _name_tabs(self, share: float | None) -> None:
        """The QK tabs' titles carry the head's split between symbol and position."""
        known = share is not None and share == share  # None, or NaN: no split to show
        by_token = f" ({share_text(1 - share)})" if known and share is not None else ""
        by_position = f" ({share_text(share)})" if known and share is not None else ""
        self.qk_tabs.setTabText(0, "QK by token" + by_token)
        self.qk_tabs.setTabText(1, "QK by position" + by_position)

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)
        if not running:  # a run cancelled by a new model: read the new one if the tab is on screen
            QTimer.singleShot(0, self, self._compute_if_due)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setTextVisible(total > 0)
        self.progress.setFormat("step %v of %m")

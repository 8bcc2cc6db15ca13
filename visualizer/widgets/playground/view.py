"""The Playground tab: controls on the left, the three attention grids on the right, wired to a PlaygroundSession."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core_model.model import ATTENTION_KINDS
from visualizer.state.compare import CompareSession
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import PlaygroundTools
from visualizer.state.snapshots import (
    KIND_SHORT_TITLES,
    KIND_TITLES,
    DecodeSnapshot,
    InputError,
    MapsSnapshot,
    ModelInfo,
    PlaygroundFrame,
)
from visualizer.widgets.common.shortcuts_first import ShortcutsFirst
from visualizer.widgets.common.wheel_guard import guard_wheel
from visualizer.widgets.compare.panel import ComparePanel, PathProvider, ask_checkpoint_path
from visualizer.widgets.heatmap.grid import AttentionGrid
from visualizer.widgets.heatmap.view_modes import ViewModeBar

from .busy_pill import BusyPill
from .decoder_panel import DecoderPanel, decoder_view
from .input_panel import InputPanel
from .mask_panel import MaskPanel
from .model_panel import ModelPanel
from .prediction_line import PredictionSlot
from .section import Section, scroll_column
from .tool_row import ToolRow

GRID_KEYS = {"encoder_self": "Alt+E", "decoder_self": "Alt+D", "cross": "Alt+R"}  # window-wide, also while typing


def stale_warning(error: InputError) -> str:
    """What the grids say while the typed input is refused."""
    return f"Not what you typed: these maps are for the last valid {error.field}, {error.showing_briefly}"


ENCODER_WHILE_STEPPING = "stepping: the encoder reads the source alone; Decoder self and Cross gain a row per Step"


class PlaygroundView(QWidget):
    """Composition of the playground panels; all behaviour lives in the session and the widgets."""

    config_requested = Signal(object)  # the model panel's Apply: a ModelConfig to build
    revert_requested = Signal()  # the model panel's Revert: drop the build still running
    task_selected = Signal(str)  # the user picked a task (the session has taken it; its shipped model may follow)

    def __init__(
        self,
        session: PlaygroundSession,
        tools: PlaygroundTools,
        parent: QWidget | None = None,
        *,
        compare: CompareSession | None = None,
        ask_b_path: PathProvider = ask_checkpoint_path,
        beam_panel: QWidget | None = None,
    ) -> None:
        """tools: the large views' inspectors and mask painter, the trained-length note (state/playground_tools.py).
        compare: the A/B compare state; without it the view has no Compare button. beam_panel: shown under the
        stepper's controls."""
        super().__init__(parent)
        self.session, self.tools = session, tools
        self.model_panel, self.input_panel = ModelPanel(), InputPanel()
        self.mask_panel, self.decoder_panel = MaskPanel(), DecoderPanel()
        if beam_panel is not None:
            self.decoder_panel.add_extension(beam_panel)
        left = QWidget()
        left_lay = QVBoxLayout(left)
        self.sections = {
            title: Section(title, w)
            for title, w in (
                ("Input", self.input_panel),
                ("Decoder stepper", self.decoder_panel),
                ("Masks", self.mask_panel),
                ("Model", self.model_panel),
            )
        }
        for section in self.sections.values():
            left_lay.addWidget(section)
        left_lay.addStretch(1)
        self.control_scroll = scroll = scroll_column(left)
        self.grids: dict[str, AttentionGrid] = {kind: AttentionGrid(kind) for kind in ATTENTION_KINDS}
        for grid in self.grids.values():  # one reader, one choice: the legend opens or closes on all three grids
            for other in self.grids.values():
                if other is not grid:
                    grid.header.legend_expanded.connect(other.header.set_legend_expanded)
        self.grid_tabs = QTabWidget()
        for kind in ATTENTION_KINDS:
            index = self.grid_tabs.addTab(self.grids[kind], KIND_SHORT_TITLES[kind])
            self.grid_tabs.setTabToolTip(index, f"{KIND_TITLES[kind]} ({GRID_KEYS[kind]})")
            shortcut = QShortcut(QKeySequence(GRID_KEYS[kind]), self)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            shortcut.setWhatsThis(f"Show the {KIND_TITLES[kind]} grid")
            shortcut.activated.connect(lambda i=index: self.grid_tabs.setCurrentIndex(i))
        self.scale = QComboBox()
        self.scale.addItem("Shared colour scale", "shared")
        self.scale.addItem("Per-map colour scale", "per_map")
        self.scale.setToolTip("Shared: one colour scale for every map. Per map: each map stretched to its own range.")
        self.restore_heads = QPushButton("Restore all heads")
        self.restore_heads.setToolTip("Switch every ablated head back on (Ctrl+Shift+H)")
        self.restore_heads.setShortcut("Ctrl+Shift+H")
        # new text per keystroke: in a LabelSlot it repaints only itself (in a layout it re-laid out the window)
        self.output_slot = PredictionSlot("Copy prediction")  # past the first <eos>: dimmed, its tooltip says why
        self.output_label = self.output_slot.label  # plain text in bold: rich text is laid out again every keystroke
        self.output_label.setTextFormat(Qt.TextFormat.PlainText)
        bold = self.output_label.font()
        bold.setBold(True)
        self.output_label.setFont(bold)
        self.output_caption = QLabel("Prediction:")  # per position; the decoder input is in its tooltip (and the
        # stepper says it): as a caption here it left the tokens a few pixels at 1400 px
        self.output_label.setToolTip("The model's argmax prediction at each decoder position")
        self.view_modes = ViewModeBar()
        cycle = QShortcut(QKeySequence("Ctrl+Shift+V"), self)
        cycle.setContext(Qt.ShortcutContext.WindowShortcut)
        cycle.setWhatsThis("Show the next view of the maps (weights, scores, norm-weighted, rollout)")
        cycle.activated.connect(self.view_modes.cycle)
        self.busy_label = BusyPill()  # shown only while a forward pass runs long (inference.BUSY_AFTER_MS)
        top = QHBoxLayout()
        top.addWidget(self.output_caption)
        top.addWidget(self.output_slot, 1)
        top.addWidget(self.busy_label)
        self.view_row = QHBoxLayout()  # the view choice; compare mode adds its controls here
        self.view_row.addWidget(self.view_modes)
        self.view_row.addStretch(1)
        right = QWidget()
        right_lay = QVBoxLayout(right)
        right_lay.setContentsMargins(0, 0, 0, 0)
        right_lay.addLayout(top)
        right_lay.addLayout(self.view_row)
        tools_below = QHBoxLayout()  # empty (and so without height) unless the column is too narrow
        right_lay.addLayout(tools_below)
        right_lay.addWidget(self.view_modes.formula_label)
        self.grid_stack = QStackedWidget()  # the three grids, or the A/B compare page
        self.grid_stack.addWidget(self.grid_tabs)
        right_lay.addWidget(self.grid_stack, 1)
        self._compare, self._ask_b_path = compare, ask_b_path
        self._compare_panel: ComparePanel | None = None
        if compare is not None:
            self._add_compare_button(compare)
        self.tool_row = ToolRow([self.restore_heads, self.scale], right, self.view_row, tools_below)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(scroll)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([540, 960])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.splitter)
        for name, grid in self.grids.items():  # each large view follows its own cell; one painter for all
            grid.large_view.attach(tools.inspectors[name], tools.painter)
        self._wire()
        self._show_gates(session.gates())  # nothing ablated yet: "Restore all heads" starts disabled

    def show_grid(self, kind: str) -> None:
        """Bring one kind's grid (encoder self, decoder self, cross) to the front."""
        self.grid_tabs.setCurrentWidget(self.grids[kind])

    def set_training_active(self, active: bool) -> None:
        """While training runs, the model and its task stay as they are: the panel is off and the task locked."""
        self.model_panel.setEnabled(not active)
        self.input_panel.set_task_locked(active)

    def show_model(self, info: ModelInfo, trained_lengths: str, residual_scales: dict) -> None:
        """The hub's model in the Model panel: its architecture, origin, size and the lengths it was trained on."""
        self.model_panel.set_trained_lengths(trained_lengths)
        self.model_panel.set_config(info.config, info.origin, info.parameters, residual_scales)

    def set_square_cells(self, square: bool) -> None:
        """View > Square cells: every grid keeps its cells square instead of filling its view."""
        for grid in self.grids.values():
            grid.set_square_cells(square)

    def current_grid(self) -> AttentionGrid:
        """The grid in front: what File > Export writes."""
        return self.grid_tabs.currentWidget()  # type: ignore[return-value]

    @property
    def compare_panel(self) -> ComparePanel | None:
        """The A/B compare page, built the first time it is needed (its three grids would lengthen start-up)."""
        if self._compare is not None and self._compare_panel is None:
            self._compare_panel = ComparePanel(self._compare, self._ask_b_path)
            guard_wheel(self._compare_panel)  # built after the window guarded the tab
            self.grid_stack.addWidget(self._compare_panel)
        return self._compare_panel

    def _add_compare_button(self, compare: CompareSession) -> None:
        """A "Compare A/B" toggle in the view row that swaps the grids for the compare page."""
        self.compare_button = QPushButton("Compare A/B")
        self.compare_button.setCheckable(True)
        self.compare_button.setToolTip("Compare this model (A) with a second model B on the same input (Ctrl+Shift+B)")
        self.compare_button.setShortcut("Ctrl+Shift+B")
        self.view_row.addWidget(self.compare_button)

        def toggled(on: bool) -> None:
            panel = self.compare_panel if on else self.grid_tabs
            assert panel is not None  # built on demand: this button exists only with a compare session
            self.grid_stack.setCurrentWidget(panel)
            self.compare_button.setText("Compare A/B: on" if on else "Compare A/B")
            compare.set_enabled(on)

        self.compare_button.toggled.connect(toggled)

    def _wire(self) -> None:
        s, ip, dp = self.session, self.input_panel, self.decoder_panel
        ip.source_edited.connect(s.set_source)
        ip.prefix_edited.connect(s.set_target_prefix)
        ip.task_selected.connect(s.set_task)
        ip.pads_changed.connect(s.set_extra_pads)
        s.input_error_changed.connect(ip.set_error)
        s.input_error_changed.connect(self._show_stale)
        s.task_note_changed.connect(ip.set_task_note)
        s.task_note_changed.connect(lambda _note: self._show_stale(s.last_error))
        ip.set_task_note(s.task_note)
        s.inputs_changed.connect(ip.show_values)  # the fields follow the session, whoever changed it
        s.masks_changed.connect(self.mask_panel.set_spec)
        ip.show_values(s.inputs())
        self.mask_panel.set_spec(s.masks)
        self.mask_panel.spec_changed.connect(s.set_masks)
        self.view_modes.mode_changed.connect(s.set_mode)
        self.mask_panel.reset_requested.connect(self.tools.painter.forget)
        dp.step_requested.connect(s.step)
        dp.back_requested.connect(s.back)
        dp.run_requested.connect(s.run_to_end)
        dp.reset_requested.connect(s.reset_decoding)
        dp.teacher_forcing_requested.connect(s.stop_stepping)
        dp.token_forced.connect(s.force)
        for field in (ip.source, ip.prefix):  # the focus stays there after typing: Ctrl+Left/Right step
            ShortcutsFirst(field, [key for keys in dp.shortcut_keys().values() for key in keys])
        s.frame_changed.connect(self.show_frame)
        s.frame_changed.connect(self._show_length_note)  # a bound slot: disconnected when this view is deleted
        s.gates_changed.connect(self._show_gates)
        s.busy_changed.connect(self.busy_label.set_busy)
        self.model_panel.config_requested.connect(self.config_requested)
        self.model_panel.revert_button.clicked.connect(self.revert_requested)
        ip.task_selected.connect(self.task_selected)
        self.restore_heads.clicked.connect(s.restore_all_heads)
        self.scale.currentIndexChanged.connect(self._scale_chosen)
        for grid in self.grids.values():
            grid.head_toggled.connect(s.set_head_enabled)
            grid.restore_all_requested.connect(s.restore_all_heads)
            grid.map_clicked.connect(lambda kind, layer, head: self.grids[kind].open_large_view(layer, head))

    def _scale_chosen(self, _index: int) -> None:
        for grid in self.grids.values():
            grid.set_scale_mode(self.scale.currentData())

    def _show_stale(self, error: InputError | None) -> None:
        """Over every grid while the input is refused, or the model cannot read the task picked: these maps belong to
        the last valid input, not to the text."""
        s = self.session
        if error is not None:
            warning = stale_warning(error)
        elif s.reading is None and s.last_frame is not None:
            warning = f"Not {s.task}: this {s.hub.task.task} model cannot read its sources; these maps are its last"
        else:
            warning = ""
        for grid in self.grids.values():
            grid.header.set_warning(warning)

    def _show_length_note(self, _frame: object) -> None:
        self.input_panel.set_length_note(*self.tools.trained_note(self.session.source_length))

    def show_frame(self, frame: PlaygroundFrame) -> None:
        """Draw one forward pass: expected output, mask previews, every grid, then the decoder state."""
        self.input_panel.set_expected(frame.expected)
        self.mask_panel.set_previews(frame.previews)
        self.show_maps(frame.maps, frame.decoder)
        self.decoder_panel.set_view(decoder_view(frame.decoder))

    def show_maps(self, snap: MapsSnapshot, decoder: DecodeSnapshot | None = None) -> None:
        """Push a new forward pass into every grid (hidden grids update their data and paint when shown)."""
        self.view_modes.set_mode(snap.mode)
        for kind, grid in self.grids.items():
            grid.set_maps(snap.maps[kind], mode=snap.mode)
        stepping = bool(snap.extra.get("stepping"))
        self.grids["encoder_self"].header.set_note(ENCODER_WHILE_STEPPING if stepping else "")
        source = "decoded so far" if stepping else "teacher-forced expected output"
        caption_tip = f"The model's argmax prediction at each decoder position; decoder input: {source}"
        if self.output_caption.toolTip() != caption_tip:  # changes with stepping only, not per keystroke
            self.output_caption.setToolTip(caption_tip)
        inputs, d = snap.maps["cross"].query_labels, decoder
        line = self.output_slot.show_prediction(
            snap.output_tokens, inputs, stepping, *((d.finished, d.forced, d.expected_labels) if d else ())
        )
        # a long prediction ends in "…" there (right-click copies it): the tooltip has it whole
        tip = f"The model's argmax prediction at each decoder position (decoder input: {source}):\n{line.text}"
        self.output_label.setToolTip(tip + line.notes)

    def _show_gates(self, gates: dict[str, np.ndarray]) -> None:
        for kind, enabled in gates.items():
            self.grids[kind].set_ablated(~enabled)
        self.restore_heads.setEnabled(not all(g.all() for g in gates.values()))

"""The lines above a grid: its title (kind, mode, what the average covers), the legend and the hovered cell.

All three are plain text: tokens such as `<bos>` are shown as typed, never read as HTML tags. The legend takes one
line until the reader asks for all of it (the Legend button): five grey lines above the maps pushed them down to a
few pixels a cell on a laptop, and most readers need only the first sentence, what grey means.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from visualizer.state.snapshots import KIND_TITLES, PAD_LABEL, KindMaps
from visualizer.widgets.common.stable_label import ElidedLabelSlot, WrapLabelSlot
from visualizer.widgets.common.styles import WARNING_STYLE
from visualizer.widgets.heatmap.atlas import HOVER_HINT, LISTED_HINT
from visualizer.widgets.heatmap.mask_backdrop import MASK_LEGEND

MODE_TEXT = {
    "weights": "weights",
    "scores": "pre-softmax scores",
    "norms": "norm-weighted ‖a·f(x)‖",
    "rollout": "rollout to this layer (H: via that head)",
    "difference": "difference A − B",
}
COLORBAR_TEXT = {  # what the colours measure, on the colour bar
    "weights": "attention weight",
    "scores": "score q·k / √d_k",
    "norms": "‖a·f(x)‖",
    "rollout": "rollout share",
    "difference": "A − B (the view's values)",
}


def colorbar_text(mode: str, scale_mode: str) -> str:
    """The colour bar's title: the view's quantity, and whether every map has a range of its own."""
    text = COLORBAR_TEXT[mode]
    return f"{text}: each map spans its own min..max" if scale_mode == "per_map" else text


# which tokens a map's rows and columns are: cross-attention's queries are the decoder's, its keys the encoder's
KIND_AXES = {
    "encoder_self": " (rows: queries, columns: keys)",
    "decoder_self": " (rows: queries, columns: keys)",
    "cross": " (rows: decoder queries, columns: encoder keys)",
}
# rollout blanks no cell (playground_capture.py): a masked key's share is 0, drawn in the scale's low colour
MODE_LEGEND = {
    "scores": "■ grey = masked (score −∞: the query cannot attend to that key)",
    "rollout": (
        "no cell is masked in rollout: shares flow only where the masks let attention go, layer after layer, and"
        " the 0.5 I term keeps part of each position's own share (a <pad> query lights its own column)"
    ),
}
ROLLOUT_STEP = "Ã = rownorm(0.5 Ā + 0.5 I), Ā = mean of {heads}"


HIGHLIGHT_LEGEND = "red outline = the newest decoder position (it reads the token decoded last, or <bos>)"


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """ValueError naming the setting and its choices when `value` is none of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


# said only where the cells show it (pad_rows_attend), whatever masked the <pad> columns
PAD_ROWS_LEGEND = "<pad> rows still attend, while no token attends to a <pad> key (its column is grey)"


def pad_rows_attend(maps: KindMaps) -> bool:
    """Whether the maps show what PAD_ROWS_LEGEND says: some <pad> query attends while no query attends to a <pad>
    key. Read from the cells, not assumed: a padding mask switched off, a window or painted cells can make either
    half false, and rollout masks no cell."""
    pad_queries = [i for i, label in enumerate(maps.query_labels) if label == PAD_LABEL]
    pad_keys = [j for j, label in enumerate(maps.key_labels) if label == PAD_LABEL]
    if not pad_queries or not pad_keys:
        return False
    return bool(maps.valid[pad_queries].any()) and not bool(maps.valid[:, pad_keys].any())


def mode_legend(mode: str, pad_rows: bool = False) -> str:
    """What grey means in this view (the views that blank masked cells), or that nothing is blanked; with
    `pad_rows`, that <pad> rows attend while no token attends to a <pad> key (rollout's own legend says how a
    <pad> query reads there)."""
    legend = MODE_LEGEND.get(mode, MASK_LEGEND)
    return f"{legend} · {PAD_ROWS_LEGEND}" if pad_rows and mode != "rollout" else legend


LAYER_HEADS = "the layer's heads"  # each avg map is its own layer's: never the mean over every layer's heads


def _heads_on(on: np.ndarray | None) -> str:
    """LAYER_HEADS, or "the heads on (L1 4/4, L2 0/4)" for an (L, H) bool array with some head off."""
    if on is None or on.size == 0 or bool(np.all(on)):
        return LAYER_HEADS
    counts = ", ".join(f"L{layer + 1} {int(row.sum())}/{row.size}" for layer, row in enumerate(on))
    return f"the heads on ({counts})"


def average_caption(mode: str, kind: str, on: np.ndarray | None) -> str:
    """What the avg column holds in this view: a plain head mean, or (rollout) the rollout up to that layer."""
    heads = _heads_on(on)
    ablated = "" if heads == LAYER_HEADS else "; ablated heads dimmed and crossed"
    if mode != "rollout":
        return f"avg = mean of {heads}{ablated}"
    step = ROLLOUT_STEP.format(heads=heads)
    if kind == "encoder_self":
        return f"avg = rollout R^l = Ã^l R^(l−1), {step}{ablated}"
    share = "target" if kind == "decoder_self" else "source"
    return f"avg = decoder rollout to layer l, share from {share} tokens ({step}; Formula: the rest){ablated}"


def plain_label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def caption_lines(title: str, maps: KindMaps | None, legend: str = "") -> list[str]:
    """Title, input (query) tokens, key tokens, model shape and legend: the lines every exported image carries."""
    if maps is None:
        return [title]
    lines = [
        title,
        f"input (queries): {' '.join(maps.query_labels)}",
        f"keys: {' '.join(maps.key_labels)}",
        f"model: {maps.n_layers} layers x {maps.n_heads} heads",
    ]
    return lines + [legend] if legend else lines


LEGEND_SHORT, LEGEND_LONG = "Legend ▸", "Legend ▾"
LEGEND_TIP = (
    "Show the whole legend: what grey cells, outlines, abbreviated tokens and role badges mean. "
    "Collapsed, its first line stays; hover it to read all of it."
)


class GridHeader(QWidget):
    """Title, legend (masked cells, abbreviated tokens) and the hover line naming the cell under the mouse.

    The legend shows as one elided line (`legend_line`, its whole text in the tooltip) until `legend_toggle` opens
    it: then `legend_label` shows it wrapped, and the lines added below it (`add_line`) show too.
    """

    legend_expanded = Signal(bool)  # the reader opened (True) or closed the whole legend

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title_label = plain_label()
        self.title_label.setWordWrap(True)  # the rollout's caption is a formula: wrapped, it never widens the window
        self._title_key: tuple = ()  # (kind, mode, ablated shape and bytes) the title was written for
        self._mode = "weights"
        self._abbreviations = ""
        self._highlighted = False  # a query row is outlined (stepping: the newest decoder position)
        self._pad_rows = False  # the maps show <pad> rows attending and no <pad> key attended: the legend says so
        self._note = ""  # what the view adds about these maps now (stepping: why the encoder's stay put)
        # its note on small labels comes and goes with the input's length: wrapped, it never widens the window, and
        # it keeps the lines it needed so far, so the maps below do not jump up and down as the user types
        self.legend_label = WrapLabelSlot(MASK_LEGEND)
        self.legend_label.setStyleSheet("color: gray")
        self.legend_label.setVisible(False)
        self.legend_line = ElidedLabelSlot()  # one line of it: the maps keep their room
        self.legend_line.label.setStyleSheet("color: gray")
        self.legend_line.set_text(MASK_LEGEND)
        self.legend_toggle = QToolButton()
        self.legend_toggle.setText(LEGEND_SHORT)
        self.legend_toggle.setCheckable(True)
        self.legend_toggle.setAutoRaise(True)
        self.legend_toggle.setToolTip(LEGEND_TIP)
        self.legend_toggle.setAccessibleName("Legend")
        self.legend_toggle.setFixedHeight(self.legend_line.height())  # the row stays one line tall
        self.legend_toggle.toggled.connect(self.set_legend_expanded)
        self.extra_lines = QWidget()  # lines that views add under the legend (the role badges' legend)
        extra_layout = QVBoxLayout(self.extra_lines)
        extra_layout.setContentsMargins(0, 0, 0, 0)
        extra_layout.setSpacing(0)
        self.extra_lines.setVisible(False)
        self.hover_label = plain_label(" ")
        self.hover_label.setToolTip("The cell under the mouse: its query and key tokens and its value")
        self.warning_label = plain_label()  # the maps are not what the rest of the window asks for (refused input)
        self.warning_label.setWordWrap(True)
        self.warning_label.setStyleSheet(WARNING_STYLE)
        self.warning_label.setVisible(False)
        legend_row = QHBoxLayout()
        legend_row.setContentsMargins(0, 0, 0, 0)
        legend_row.addWidget(self.legend_line, 1)
        legend_row.addWidget(self.legend_label, 1)
        legend_row.addWidget(self.legend_toggle, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.warning_label)
        layout.addWidget(self.title_label)
        layout.addLayout(legend_row)
        layout.addWidget(self.extra_lines)
        layout.addWidget(self.hover_label)

    def set_legend_expanded(self, expanded: bool) -> None:
        """Show the whole legend and the lines added under it (True), or its first line alone."""
        if self.legend_toggle.isChecked() != expanded:
            self.legend_toggle.setChecked(expanded)  # comes back here through `toggled`
            return
        if self.legend_label.isHidden() != expanded:  # already so: nothing to lay out, nobody to tell
            return
        self.legend_toggle.setText(LEGEND_LONG if expanded else LEGEND_SHORT)
        self.legend_line.setVisible(not expanded)
        self.legend_label.setVisible(expanded)
        self.extra_lines.setVisible(expanded)
        self.legend_expanded.emit(expanded)

    def is_legend_expanded(self) -> bool:
        return self.legend_toggle.isChecked()

    def legend_text(self) -> str:
        """Everything the legend says now, whether open or not: its text and the added lines that are on."""
        extras = [w.text() for w in self.extra_lines.findChildren(QLabel) if not w.isHidden() and w.text()]
        return "\n".join([self.legend_label.text(), *extras])

    def set_title(self, kind: str, mode: str, ablated: np.ndarray) -> None:
        """ "Encoder self-attention (rows: queries, columns: keys) — weights · avg = mean of the layer's heads" for
        kind and mode keys (MODE_TEXT); (L, H) ablated heads narrow the average. The legend follows the mode."""
        key = (kind, mode, ablated.shape, ablated.tobytes())
        if key == self._title_key:  # the same title: every keystroke asks, for each of the three grids
            return
        self._title_key = key
        on = ~ablated if ablated.size else None
        title = KIND_TITLES.get(kind, kind or "Attention") + KIND_AXES.get(kind, "")
        self.title_label.setText(f"{title} — {MODE_TEXT[mode]} · {average_caption(mode, kind, on)}")
        self._mode = mode
        self._show_legend()

    def set_legend(self, abbreviations: str) -> None:
        """The mode's mask legend, plus the abbreviations the token labels use when they are shortened."""
        self._abbreviations = abbreviations
        self._show_legend()

    def set_highlighted(self, outlined: bool) -> None:
        """Whether a query row is outlined: the legend then says which one (red reads as "wrong" beside the chips)."""
        if outlined != self._highlighted:
            self._highlighted = outlined
            self._show_legend()

    def set_warning(self, text: str) -> None:
        """An amber line above the title ("" none): the maps shown are not for what the user typed."""
        if text != self.warning_label.text():
            self.warning_label.setText(text)
            self.warning_label.setVisible(bool(text))

    def set_pad_rows(self, present: bool) -> None:
        """Whether the maps show PAD_ROWS_LEGEND (pad_rows_attend): the legend then says it."""
        if present != self._pad_rows:
            self._pad_rows = present
            self._show_legend()

    def set_note(self, text: str) -> None:
        """A sentence the view adds to the legend ("" none): what about these maps the rest of the window changes."""
        if text != self._note:
            self._note = text
            self._show_legend()

    def _show_legend(self) -> None:
        highlight = HIGHLIGHT_LEGEND if self._highlighted else ""
        parts = [mode_legend(self._mode, self._pad_rows), highlight, self._note, self._abbreviations]
        text = " · ".join(part for part in parts if part)
        if self.legend_label.text() != text:
            self.legend_label.setText(text)
            self._show_line()

    def _show_line(self) -> None:
        """The collapsed legend's one line (elided) and its tooltip: the legend and each added line that is on. The
        red outline's sentence leads while a row is outlined: it is what changed, and red reads as "wrong"."""
        text = self.legend_text()
        line = text.replace("\n", " · ")
        if self._highlighted:
            line = f"{HIGHLIGHT_LEGEND} · {line.replace(HIGHLIGHT_LEGEND + ' · ', '').replace(HIGHLIGHT_LEGEND, '')}"
        self.legend_line.set_text(line.rstrip(" ·"))
        self.legend_line.setToolTip(text)

    def caption(self, maps: KindMaps | None) -> list[str]:
        """The lines an exported image carries: title, input tokens, model shape, legend (an image cannot be
        hovered: where the screen says hover, the caption points to its lists of tokens)."""
        return caption_lines(self.title_label.text(), maps, self.legend_label.text().replace(HOVER_HINT, LISTED_HINT))

    def set_hover(self, text: str) -> None:
        """The hovered cell's readout ("" off the maps)."""
        if text != self.hover_label.text().strip():
            self.hover_label.setText(text or " ")

    def add_line(self, label: QLabel) -> None:
        """One more legend line (the Heads tab's role-badge legend): shown with the whole legend, and in the
        collapsed line's tooltip while the label is on."""
        layout = self.extra_lines.layout()
        assert layout is not None  # given its column in __init__
        layout.addWidget(label)
        self.lines_changed()

    def lines_changed(self) -> None:
        """An added line was shown, hidden or given a new text: the collapsed line says what the legend holds now."""
        self._show_line()

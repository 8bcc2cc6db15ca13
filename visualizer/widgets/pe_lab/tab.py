"""The Positional encoding tab: sinusoid waveforms, the PE matrix, RoPE angles and similarity vs offset, all live."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSignalBlocker
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from core_model.pe_analysis import PELabData
from visualizer.state.pe_lab import PELabState, format_dims
from visualizer.widgets.pe_lab.controls import PEControls, with_error
from visualizer.widgets.pe_lab.curves import curve_colour, line_curve, show_curves, similarity_curves
from visualizer.widgets.pe_lab.titles import dim_label, pair_label, plot_note, plot_title, with_note

log = logging.getLogger(__name__)
T = TypeVar("T")

SIN_COLOR, ROPE_COLOR = "#1f77b4", "#d95f02"
LEGEND_BRUSH = (0, 0, 0, 170)  # legends sit under their plots, on a dark ground


class PETab(QWidget):
    """Renders a PELabState and turns control edits into its setters; rejected values show beside their control."""

    def __init__(self, state: PELabState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._data, self._stale = state.data, False  # stale: new numbers arrived while the tab was hidden
        self._errors: dict[str, QLabel] = {}
        self._notes: dict[str, QLabel] = {}  # under each plot: what is drawn, what one pixel stands for
        self._wave_curves: list[pg.PlotDataItem] = []
        self._rope_curves: list[pg.PlotDataItem] = []
        controls, plots, layout = self._build_controls(), self._build_plots(), QHBoxLayout(self)
        layout.addWidget(controls)
        layout.addLayout(plots, stretch=1)
        state.changed.connect(self._on_changed)
        self._on_changed(state.data)

    def set_model_pe(self, kind: str, d_model: int, base: float, head_dim: int) -> None:
        """Sync the lab to the loaded model's config; an unusable value shows in the model label."""
        try:
            self.state.set_model_pe(kind, d_model, base, head_dim)
        except ValueError as exc:
            log.warning("cannot sync the PE lab to the model: %s", exc)
            self._catch_up()  # a later catch-up would draw over the message
            self._model_label.setText(f"Loaded model uses: {kind} (d_model {d_model}); lab not synced: {exc}")

    def plot_items(self) -> dict[str, pg.PlotItem]:
        """The four plots by name, for File > Export: waveforms, matrix, rope_angles, similarity."""
        self._catch_up()  # exported from another tab: draw the current numbers first
        return dict(self._plots)

    def _build_controls(self) -> QWidget:
        panel = QWidget()
        panel.setFixedWidth(270)
        self._model_label = QLabel()
        self._model_label.setObjectName("pe_model_label")
        self._model_label.setWordWrap(True)
        self._model_label.setToolTip("The positional encoding of the model loaded in the app; its plots are marked.")
        form = QFormLayout()
        self.controls = c = PEControls()
        for field, text, control in c.rows():
            label = QLabel(text)
            label.setToolTip(control.toolTip())
            cell, self._errors[field] = with_error(field, control)
            form.addRow(label, cell)
        form.addRow(c.wrap)
        self._connect_controls()
        box = QVBoxLayout(panel)
        box.addWidget(self._model_label)
        box.addLayout(form)
        box.addStretch(1)
        return panel

    def _connect_controls(self) -> None:
        s, c = self.state, self.controls
        c.d_model.valueChanged.connect(lambda v: self._apply("d_model", s.set_d_model, v))
        c.n_positions.valueChanged.connect(lambda v: self._apply("n_positions", s.set_n_positions, v))
        c.head_dim.valueChanged.connect(lambda v: self._apply("head_dim", s.set_head_dim, v))
        c.reference.valueChanged.connect(lambda v: self._apply("reference", s.set_reference, v))
        c.second_reference.valueChanged.connect(lambda v: self._apply("second_reference", s.set_second_reference, v))
        c.base.editingFinished.connect(lambda: self._apply("base", s.set_base_text, c.base.text()))
        c.dims.editingFinished.connect(lambda: self._apply("dims", s.set_dims_text, c.dims.text()))
        c.pairs.editingFinished.connect(lambda: self._apply("pairs", s.set_pairs_text, c.pairs.text()))
        c.rope_vectors.currentTextChanged.connect(lambda t: self._apply("rope_vectors", s.set_rope_vectors, t))
        c.wrap.toggled.connect(lambda _checked: self._draw_rope(self._data))

    def _apply(self, field: str, setter: Callable[[T], None], value: T) -> None:
        """Hand a user edit to the state; a rejection shows next to the control and changes nothing else."""
        try:
            setter(value)
        except ValueError as exc:
            self._errors[field].setText(str(exc))
            self._errors[field].setVisible(True)
            return
        self._errors[field].clear()
        self._errors[field].setVisible(False)

    def _build_plots(self) -> QGridLayout:
        grid = QGridLayout()
        self._plots: dict[str, pg.PlotItem] = {}
        self._views: dict[str, pg.GraphicsLayoutWidget] = {}
        axes = {
            "waveforms": ("position", "PE value"),
            "matrix": ("dimension", "position"),
            "rope_angles": ("position m", "angle (rad)"),
            "similarity": ("offset Δ = n − m", "cosine similarity"),
        }
        for index, (name, (x_label, y_label)) in enumerate(axes.items()):
            view = pg.GraphicsLayoutWidget()
            view.setObjectName(f"pe_plot_{name}")
            plot = view.addPlot(row=0, col=0)
            self._views[name] = view
            plot.setLabel("bottom", x_label)
            plot.setLabel("left", y_label)
            plot.showGrid(x=True, y=True, alpha=0.2)
            self._plots[name] = plot
            cell, self._notes[name] = with_note(view, f"pe_note_{name}")
            grid.addWidget(cell, index // 2, index % 2)
            plot.getViewBox().sigResized.connect(lambda *_: self._draw_notes(self._data))
        self._wave_legend, self._rope_legend = self._legend_below("waveforms"), self._legend_below("rope_angles")
        self._build_matrix(self._plots["matrix"])
        self._build_similarity(self._plots["similarity"])
        return grid

    def _legend_below(self, name: str, columns: int = 2) -> pg.LegendItem:
        """A legend in its own row under the plot: over the plot it hid the curves."""
        self._views[name].addItem(
            legend := pg.LegendItem(colCount=columns, brush=LEGEND_BRUSH, labelTextColor="w"), row=1, col=0
        )
        return legend

    def _build_matrix(self, plot: pg.PlotItem) -> None:
        self._image = pg.ImageItem(
            axisOrder="row-major", autoDownsample=True
        )  # 2000 rows in 300 px: average, not alias
        plot.addItem(self._image)
        plot.invertY(True)
        self._colorbar = pg.ColorBarItem(
            values=(-1.0, 1.0), colorMap=pg.colormap.get("CET-D1"), label="PE value", interactive=False
        )
        self._colorbar.setImageItem(self._image, insert_in=plot)

    def _build_similarity(self, plot: pg.PlotItem) -> None:
        self._sim_legend = self._legend_below("similarity", columns=1)  # long names: two columns overflowed at 1280
        self._sim_curves = {key: line_curve(plot) for key in ("sin", "sin_second", "rope", "rope_second")}
        for key in ("sin_second", "rope_second"):  # over the first reference's curves, which they lie on
            self._sim_curves[key].setZValue(1)

    def _on_changed(self, data: PELabData) -> None:
        """Drawn now if on screen, else when shown: redrawing four hidden plots on every model change is wasted."""
        self._data, self._stale = data, True
        if self.isVisible():
            self._catch_up()

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        self._catch_up()
        super().showEvent(event)

    def _catch_up(self) -> None:
        if self._stale:
            self._stale = False
            self._draw(self._data)

    def _draw(self, data: PELabData) -> None:
        self._sync_controls(data)
        for error in self._errors.values():
            error.clear()
            error.setVisible(False)
        self._draw_model_label(data)
        self._draw_waveforms(data)
        self._draw_matrix(data)
        self._draw_rope(data)
        self._draw_similarity(data)

    def _sync_controls(self, data: PELabData) -> None:
        """Controls always show the state (it may change from set_model_pe or drop dimensions and pairs)."""
        p, c = data.params, self.controls
        values = (
            (c.d_model, p.d_model),
            (c.n_positions, p.n_positions),
            (c.head_dim, p.head_dim),
            (c.reference, p.references[0]),
            (c.second_reference, p.references[1]),
        )
        for spin, value in values:
            with QSignalBlocker(spin):
                spin.setValue(value)
        texts = ((c.base, f"{p.base:g}"), (c.dims, format_dims(p.dims)), (c.pairs, format_dims(p.pairs)))
        for edit, text in texts:
            with QSignalBlocker(edit):
                edit.setText(text)
        with QSignalBlocker(c.rope_vectors):
            c.rope_vectors.setCurrentText(p.rope_vectors)

    def _draw_model_label(self, data: PELabData) -> None:
        pe = data.model_pe
        self._model_label.setText(f"Loaded model uses: {pe.description}" if pe else "Loaded model uses: (no model yet)")
        for name, plot in self._plots.items():
            plot.setTitle(plot_title(name, data), size="10pt")
        self._draw_notes(data)

    def _draw_notes(self, data: PELabData) -> None:
        """Each note for the data shown and the plot's size now (positions run along x, or down the matrix)."""
        for name, plot in self._plots.items():
            box = plot.getViewBox()
            self._notes[name].setText(plot_note(name, data, box.height() if name == "matrix" else box.width()))

    def _draw_waveforms(self, data: PELabData) -> None:
        plot, dims = self._plots["waveforms"], data.params.dims
        show_curves(plot, self._wave_curves, len(dims))
        self._wave_legend.clear()
        for i, (curve, dim) in enumerate(zip(self._wave_curves, dims)):
            curve.setData(data.positions, data.waveforms[:, i], pen=pg.mkPen(curve_colour(i, len(dims)), width=2))
            self._wave_legend.addItem(curve, dim_label(dim, data))

    def _draw_matrix(self, data: PELabData) -> None:
        old_shape = None if self._image.image is None else self._image.image.shape
        self._image.setImage(data.matrix, autoLevels=False, levels=(-1.0, 1.0))
        n, d = data.matrix.shape
        self._image.setRect(QRectF(-0.5, -0.5, d, n))  # pixel centres on integer dimension / position
        if old_shape != data.matrix.shape:
            self._plots["matrix"].autoRange()

    def _draw_rope(self, data: PELabData) -> None:
        wrapped = self.controls.wrap.isChecked()
        angles = data.rope_angles_wrapped if wrapped else data.rope_angles
        plot, pairs = self._plots["rope_angles"], data.rope_pairs
        show_curves(plot, self._rope_curves, len(pairs))
        self._rope_legend.clear()
        for i, (curve, pair) in enumerate(zip(self._rope_curves, pairs)):
            y = angles[:, pair]
            connect = np.ones(len(y), dtype=bool)
            if wrapped:  # no vertical line where the angle wraps from π to −π
                connect[:-1] = np.abs(np.diff(y)) < np.pi
            curve.setData(data.positions, y, connect=connect, pen=pg.mkPen(curve_colour(i, len(pairs)), width=2))
            self._rope_legend.addItem(curve, pair_label(pair, data))

    def _draw_similarity(self, data: PELabData) -> None:
        curves = similarity_curves(data, SIN_COLOR, ROPE_COLOR)
        self._sim_legend.clear()
        for key, (y, color, style, used, name) in curves.items():
            curve = self._sim_curves[key]
            curve.setData(data.offsets, y, pen=pg.mkPen(color, width=3.5 if used else 1.5, style=style))
            self._sim_legend.addItem(curve, name + (" (loaded model)" if used else ""))

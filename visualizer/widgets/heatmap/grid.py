"""Every layer x head map of one attention kind (plus a head average), drawn as ONE atlas image for speed.

The widget holds the maps and the user's choices (mode, scale, ablation, highlight) and answers what is shown.
Atlas geometry: atlas.py; its numbers and pixels: atlas_frame.py; which frame, laid out with which strips:
grid_frames.py; plot items: atlas_plot.py; mouse and menu: grid_interaction.py; file formats: exporters.py; the large
view: large_view.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QMenu, QStackedWidget, QVBoxLayout, QWidget

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap import exporters
from visualizer.widgets.heatmap.atlas import AtlasLayout
from visualizer.widgets.heatmap.atlas_frame import AtlasFrame
from visualizer.widgets.heatmap.atlas_plot import AtlasPlot
from visualizer.widgets.heatmap.colours import DEFAULT_COLORMAP
from visualizer.widgets.heatmap.grid_frames import GridFrames
from visualizer.widgets.heatmap.grid_header import MODE_TEXT, GridHeader, check_choice, colorbar_text, pad_rows_attend
from visualizer.widgets.heatmap.grid_interaction import build_map_menu, handle_click, refresh_hover, watch_hover
from visualizer.widgets.heatmap.grid_large_view import GridLargeView, MapDialog
from visualizer.widgets.heatmap.shown_matrices import ShownMatrices

SCALE_MODES = ("shared", "per_map")


class AttentionGrid(QWidget):
    """Layer x head attention maps of one kind, with a head-average column, tooltips, clicks and a context menu."""

    map_clicked = Signal(str, int, int)  # kind, layer, head (head -1 = average); 0-based
    head_toggled = Signal(str, int, int, bool)  # kind, layer, head, enabled (False = ablate)
    restore_all_requested = Signal()
    laid_out_again = Signal()  # the same maps laid out anew (strips reserved or freed, a resize): atlas points moved

    def __init__(self, kind: str = "", parent: QWidget | None = None, *, colormap: str = DEFAULT_COLORMAP) -> None:
        """kind: the attention kind shown (titles before data arrives); maps set later may carry another."""
        super().__init__(parent)
        self._kind = kind
        self._maps: KindMaps | None = None
        self._stale = False  # maps set while hidden, not drawn yet
        self._mode = "weights"
        self._scale_mode = "shared"
        self._ablated = np.zeros((0, 0), bool)
        self._highlight_row: int | None = None
        self._menu: QMenu | None = None
        self.large_view = self._large_view = GridLargeView(self)  # public: the playground attaches cell tools
        self._build_widgets(colormap)
        self._update_title()
        self._show_scale_label()

    def _build_widgets(self, colormap: str) -> None:
        """Title, the atlas plot (plot + colour bar), and a placeholder for empty input."""
        self.header = GridHeader()
        self.title_label = self.header.title_label
        self.placeholder = QLabel("No tokens to show yet: type an input.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.atlas_plot = AtlasPlot(colormap, legend_changed=self.header.set_legend)
        self._frames = GridFrames(self.atlas_plot)
        self.graphics, self.plot_item = self.atlas_plot.graphics, self.atlas_plot.plot_item
        self.image_item, self.colorbar = self.atlas_plot.image_item, self.atlas_plot.colorbar
        self.highlight_curve, self.atlas_space = self.atlas_plot.highlight_curve, self.atlas_plot.atlas_space
        self.stack = QStackedWidget()
        self.stack.addWidget(self.graphics)
        self.stack.addWidget(self.placeholder)
        self.stack.setCurrentWidget(self.placeholder)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.stack, 1)
        scene = self.graphics.scene()
        watch_hover(self)  # the mouse over the maps: a readout above them and the cell's row and column outlined
        scene.sigMouseClicked.connect(lambda event: handle_click(self, event))
        self.plot_item.getViewBox().sigResized.connect(lambda *_: self._refit_strips())

    # ----- public setters -----------------------------------------------------------------------------------
    def set_maps(self, maps: KindMaps | None, mode: str | None = None) -> None:
        """Show new maps in place; mode is "weights" (post-softmax) or "scores" (pre-softmax), None keeps it.

        A grid on a hidden tab only keeps the maps and draws them when shown (or asked about them): colouring
        three grids per keystroke spent most of that work on two grids nobody sees.
        """
        if mode is not None and mode != self._mode:  # every frame names its mode; it rarely changes
            check_choice("mode", mode, tuple(MODE_TEXT))
            self._mode = mode
            self._show_scale_label()
        self._maps, self._stale = maps, True
        self._kind = maps.kind if maps is not None else self._kind
        if self.isVisible() or self._large_view.is_visible():
            self._draw_maps()
        else:
            self._update_title()

    def _draw_maps(self) -> None:
        """Bring atlas, ticks, highlight and the large view up to date with the maps last set."""
        self._stale = False
        maps = self._maps
        self._update_title()
        if maps is None or maps.values.size == 0:
            self.stack.setCurrentWidget(self.placeholder)
            self._frames.hide()
            self.show_hover(None)  # no maps: nothing is hovered
            return
        self._highlight_row = maps.highlight_row
        self.header.set_pad_rows(pad_rows_attend(maps))
        relayout = self._frames.pending
        frame = self._frames.frame_for(maps)
        frame.fill(maps, frame.ablated_heads(self._ablated))
        self.atlas_plot.set_ticks(frame.layout, maps)
        self._render()
        self._update_highlight()
        self._refresh_dialog()
        self.stack.setCurrentWidget(self.graphics)
        if relayout:
            self.laid_out_again.emit()

    def _catch_up(self) -> None:
        """Draw maps that arrived while hidden (before a query or a paint)."""
        if self._stale:
            self._draw_maps()

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        self._catch_up()
        super().showEvent(event)
        refresh_hover(self)  # back on screen (a tab): the mouse may be anywhere now

    def set_mode(self, mode: str) -> None:
        """Switch between "weights" (fixed [0, 1] shared scale) and "scores"."""
        self._catch_up()
        check_choice("mode", mode, tuple(MODE_TEXT))
        self._mode = mode
        self._update_title()
        self._show_scale_label()
        if self._frame is not None:
            self._render()

    def set_scale_mode(self, scale_mode: str) -> None:
        """ "shared": one scale for every map; "per_map": each map spans its own min..max."""
        self._catch_up()
        check_choice("scale_mode", scale_mode, SCALE_MODES)
        self._scale_mode = scale_mode
        self._show_scale_label()
        if self._frame is not None:
            self._render()

    def set_ablated(self, mask: np.ndarray) -> None:
        """Mark ablated heads (mask (L, H) bool, True = ablated): dimmed colours and an "ablated" label."""
        self._catch_up()
        self._ablated = np.asarray(mask, bool).copy()
        self._update_title()
        if self._frame is not None and self._maps is not None:
            self._frame.fill(self._maps, self._frame.ablated_heads(self._ablated))  # the average covers heads on
            self._render()
            self._refresh_dialog()

    def set_square_cells(self, square: bool) -> None:
        """Square cells (View > Square cells) or, by default, cells stretched to fill the view."""
        self.atlas_plot.set_square_cells(square, self.atlas_layout())
        self._refit_strips()  # square cells may be held smaller by the width: the strips may need more rows

    def reserve_strips(self, pixels: int) -> None:
        """Keep `pixels` screen pixels blank above each row of maps (0: none) for the role badges (grid_frames.py):
        the maps are laid out anew, here and on a resize, without colouring them again; `laid_out_again` says so."""
        if pixels != self._frames.strip_px:
            self._frames.strip_px = pixels
            self._refit_strips()

    def _refit_strips(self) -> None:
        """The strips asked for or the view's size changed: the maps shown get the strips they need now."""
        if self._maps is not None and self._frames.refit(self._maps, self._ablated, hidden=self._stale):
            self._update_highlight()
            refresh_hover(self)
            self.laid_out_again.emit()

    def show_hover(self, cell: tuple[int, int, int, int] | None) -> None:
        """Name the hovered cell's tokens above the grid and outline its row and column (None: off the maps)."""
        lay = self.atlas_layout()
        self.header.set_hover(self.tooltip_text_at(*cell) if cell is not None and lay is not None else "")
        self.atlas_plot.set_hover(lay, cell)

    @property
    def _frame(self) -> AtlasFrame | None:  # the frame shown; None: nothing shown
        return self._frames.shown

    # ----- public queries -----------------------------------------------------------------------------------
    def current_maps(self) -> KindMaps | None:
        return self._maps

    def kind(self) -> str:
        return self._kind

    def atlas_layout(self) -> AtlasLayout | None:
        """Geometry of the current atlas (None before the first non-empty maps)."""
        self._catch_up()
        return None if self._frame is None else self._frame.layout

    def map_rect(self, layer: int, head: int) -> QRectF:
        """A map's rectangle in atlas coordinates (image pixels; atlas_space maps them to the scene); head -1 = avg."""
        return self._require_frame().layout.map_rect(layer, head)

    def displayed_matrix(self, layer: int, head: int) -> np.ndarray:
        """The numbers shown for one map, NaN where blank. Shape (Tq, Tk); head -1 = average."""
        return self._require_frame().matrix(layer, head)

    def map_levels(self, layer: int, head: int) -> tuple[float, float]:
        """The (low, high) values that map to the ends of the colormap for that map."""
        return self._require_frame().levels(layer, head)

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int, int, int] | None:
        """(layer, head, i, j) under a scene position, head -1 = average; None off the maps."""
        self._catch_up()
        if self._frame is None:
            return None
        point = self.atlas_plot.from_scene(scene_pos)
        return self._frame.layout.cell_at(point.x(), point.y())

    def tooltip_text_at(self, layer: int, head: int, i: int, j: int) -> str:
        """Hover text, e.g. "L1 H2 query 3 'a' -> key 0 '<bos>': 0.873"; L/H are 1-based, i/j 0-based positions."""
        self._catch_up()
        maps, frame = self._maps, self._frame
        assert maps is not None and frame is not None
        return frame.cell_text(maps, layer, head, i, j)

    def is_ablated(self, layer: int, head: int) -> bool:
        layers, heads = self._ablated.shape
        return 0 <= head < heads and layer < layers and bool(self._ablated[layer, head])

    # ----- rendering ----------------------------------------------------------------------------------------
    def _render(self) -> None:
        """Colour every map into the reused atlas buffers and push it to the one ImageItem (atlas_plot.draw)."""
        frame = self._frame
        assert frame is not None
        self.atlas_plot.draw(frame, self._mode, self._scale_mode, frame.ablated_heads(self._ablated))
        refresh_hover(self)  # new maps, view or heads under a mouse that did not move: the readout follows

    def _update_highlight(self) -> None:
        lay = None if self._frame is None else self._frame.layout
        self.header.set_highlighted(self.atlas_plot.set_highlight(lay, self._highlight_row, lay is not None))

    def _update_title(self) -> None:
        self.header.set_title(self._kind, self._mode, self._ablated)

    def _show_scale_label(self) -> None:
        """The colour bar's title; called when the view or the scale changes, not with every frame."""
        self.atlas_plot.set_colorbar_label(colorbar_text(self._mode, self._scale_mode))

    # ----- menu, large view and exports --------------------------------------------------------------------
    def show_context_menu(self, layer: int, head: int, screen_pos: QPoint) -> QMenu:
        """Pop up (non-blocking) the map's menu; the previous menu is deleted so menus never pile up."""
        if self._menu is not None:
            self._menu.deleteLater()
        self._menu = self.build_context_menu(layer, head)
        self._menu.popup(screen_pos)
        return self._menu

    def build_context_menu(self, layer: int, head: int) -> QMenu:
        """Ablate/restore, large view and export actions for one map (head -1 = average: no ablation)."""
        return build_map_menu(self, layer, head)

    def open_large_view(self, layer: int, head: int) -> MapDialog:
        """Show one map large (a single reused dialog, kept live as new maps arrive)."""
        self._catch_up()
        dialog = self._large_view.open(layer, head)
        self._refresh_dialog(force=True)
        dialog.show()
        dialog.raise_()
        return dialog

    def _refresh_dialog(self, force: bool = False) -> None:
        if force or self._large_view.is_visible():  # the values shown are made on demand: only for a dialog up
            shown = None if self._frame is None else self._frame.shown
            self._large_view.refresh(self._maps, shown, MODE_TEXT[self._mode], force)

    def export_png(self, path: str | Path, width: int | None = None) -> Path:
        """The whole grid as PNG, captioned with its title, kind and mode, the input and the model's shape."""
        self._catch_up()
        with self.atlas_plot.hover_hidden():  # where the mouse happens to be is no part of the picture
            return exporters.export_grid_png(self.graphics, path, width, self.header.caption(self._maps))

    def export_svg(self, path: str | Path) -> Path:
        self._catch_up()
        with self.atlas_plot.hover_hidden():
            return exporters.export_grid_svg(self.graphics, path, self.header.caption(self._maps))

    def shown_matrices(self) -> ShownMatrices:
        """A copy of every map as shown, with its tokens: what the matrix exports write, off the GUI thread."""
        frame, maps = self._require_frame(), self._maps
        assert maps is not None  # a frame is shown only for maps
        return ShownMatrices(maps.kind, frame.shown.copy(), maps.query_labels, maps.key_labels)

    # ----- helpers ------------------------------------------------------------------------------------------
    def _require_frame(self) -> AtlasFrame:
        """The frame shown, after drawing maps that arrived while hidden; RuntimeError when nothing is shown."""
        self._catch_up()
        if self._frame is None:
            raise RuntimeError("no maps are shown")
        return self._frame

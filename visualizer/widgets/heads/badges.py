"""Role badges: a small "role score" label above the top-right corner of every map of a playground grid, in a strip
the grid keeps blank there while they show (so no badge covers a cell), plus a legend.

The badges belong to the model, not to the input: the roles are scored on N task sequences (state/heads.py), so a
badge stays put while the user types. Kept apart from the grid so the grid stays a pure drawing of one input.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt
from PySide6.QtWidgets import QLabel

from core_model.head_roles import HeadRole
from visualizer.state.snapshots import PlaygroundFrame
from visualizer.widgets.common.role_labels import READS_MEANING, ROLE_LABELS
from visualizer.widgets.heads.badge_layer import BadgeLayer
from visualizer.widgets.heatmap.grid import AttentionGrid

BADGE_LEGEND = (
    "Badges: each head's role and score on the Heads tab's sequences, in the strip above its map ("
    + READS_MEANING
    + "; self, prev, first/<bos>, <eos>/pad = weight on that key; broad = "
    "normalised entropy; other = focused on keys no pattern names); a narrow map shortens its badge (.74 for 0.74, "
    "first for first/<bos>), down to the role alone."
)


OTHER_VIEWS_LEGEND = (
    "Role badges show on the Post-softmax weights view only: the roles are scored on weights, and these maps "
    "show something else."
)


def badge_text(role: HeadRole) -> str:
    """ "reads 0.93"; an `other` head fits no pattern, so it has no fit to show."""
    return ROLE_LABELS[role.role] if role.role == "other" else f"{ROLE_LABELS[role.role]} {role.score:.2f}"


class RoleBadges(QObject):
    """Owns the badge layer on one grid's plot; `set_roles` and `refresh` (after new maps) place the badges, and ask
    the grid for the blank strips they stand in (`reserve_strips`) while they show.

    A child of the grid: when the grid goes, Qt drops the connections to these methods with it.
    """

    def __init__(self, grid: AttentionGrid) -> None:
        super().__init__(grid)
        self.grid = grid
        self._roles: dict[tuple[int, int], HeadRole] = {}
        self.layer = BadgeLayer()
        self.layer.setZValue(25)
        grid.atlas_space.addItem(self.layer)  # corners in atlas coordinates, like the maps
        self._placed: list[tuple[int, int]] = []
        self._drawn: tuple = ()  # (layout, roles, view) the badges were placed for: an equal frame moves nothing
        self._dirty = False  # a frame arrived while the grid was hidden: place the badges when it shows
        self._placing = False  # within `refresh`, which may itself lay the grid out anew
        self._on_weights = True  # the maps show post-softmax weights, what the roles describe
        grid.installEventFilter(self)
        grid.laid_out_again.connect(self._laid_out)
        self.legend = QLabel(BADGE_LEGEND)
        self.legend.setTextFormat(Qt.TextFormat.PlainText)
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("color: gray")
        self.legend.setVisible(False)
        grid.header.add_line(self.legend)

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        kind = self.grid.kind()
        self._roles = {(r.layer, r.head): r for r in roles or () if r.kind == kind}
        self.refresh()
        if not self.grid.isVisible():  # refresh placed nothing on a hidden grid's stale layout: show the legend anyway
            self._show_legend(bool(self._roles) and self.grid.current_maps() is not None)

    def _show_legend(self, on: bool) -> None:
        self.legend.setVisible(on)
        self.grid.header.lines_changed()

    def texts(self) -> dict[tuple[int, int], str]:
        """(layer, head) -> the badge's whole text (a map too narrow for it draws the role alone: `layer.fitted`)."""
        if self._dirty:
            self.refresh()
        return {key: text for key, (_, text) in zip(self._placed, self.layer.badges())}

    def on_frame(self, frame: PlaygroundFrame) -> None:
        """A new forward pass: the maps' shape or view may have changed, so place the badges again (when seen; a
        hidden grid places them when it shows). Only the weights view gets badges: the roles describe weights, and
        over scores, norms or rollout a badge would describe a map that is not on screen."""
        self._on_weights = frame.maps.mode == "weights"
        self._dirty = True
        if self.grid.isVisible():
            self.refresh()
        else:  # the legend line is laid out with the grid when it shows, not a moment later, moving the maps
            self._show_legend(bool(self._roles) and self.grid.current_maps() is not None)

    def _laid_out(self) -> None:
        """The grid laid the same maps out anew (its strips, a resize): the maps' corners moved."""
        self._dirty = True
        if self.grid.isVisible() and not self._placing:  # `refresh` reads the new layout after asking for strips
            self.refresh()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Show and self._dirty:
            self.refresh()
        return False

    def refresh(self) -> None:
        """Place one badge per head of the maps on screen that has a role (none without maps or roles), in strips
        the grid keeps blank above each row of maps while there are badges and frees when there are none."""
        maps = self.grid.current_maps()
        shown = maps is not None and maps.values.size > 0 and bool(self._roles) and self._on_weights
        self._placing = True
        try:  # strips first: asking for them or freeing them lays the maps out anew
            self.grid.reserve_strips(self.layer.strip_height() if shown else 0)
            lay = self.grid.atlas_layout() if shown else None
        finally:
            self._placing = False
        self._dirty = False
        key = (lay, tuple(self._roles.items()), self._on_weights)  # a layout is equal to itself only
        if key == self._drawn:
            return
        self._drawn = key
        placed: list[tuple[int, int]] = []
        badges: list[tuple[QPointF, str]] = []
        bounds = QRectF()
        if lay is not None:
            placed = [
                (layer, head)
                for layer in range(lay.n_layers)
                for head in range(lay.n_heads)
                if (layer, head) in self._roles
            ]
            # each stands on its map's top-right corner, in the strip above the map
            badges = [
                (lay.map_rect(layer, head).topRight(), badge_text(self._roles[(layer, head)])) for layer, head in placed
            ]
            bounds = QRectF(0.0, 0.0, lay.width, lay.view_height)
        self.layer.set_badges(
            badges, bounds, lay.tk if lay is not None else math.inf, lay.strip if lay is not None else 0.0
        )
        self._placed = placed
        other_view = bool(self._roles) and maps is not None and not self._on_weights
        self.legend.setText(OTHER_VIEWS_LEGEND if other_view else BADGE_LEGEND)
        self._show_legend(bool(placed) or other_view)

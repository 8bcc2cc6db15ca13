"""Role badges: a small "role score" label in the top-right corner of every map of a playground grid, plus a legend.

The badges belong to the model, not to the input: the roles are scored on N task sequences (state/heads.py), so a
badge stays put while the user types. Kept apart from the grid so the grid stays a pure drawing of one input.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel

from core_model.head_roles import ROLE_LABELS, HeadRole
from visualizer.widgets.heatmap.atlas import AtlasLayout
from visualizer.widgets.heatmap.grid import AttentionGrid

BADGE_LEGEND = ("Badges: each head's role and score on the Heads tab's sequences (align = weight on the source "
                "holding the right symbol; self, prev, first/<bos>, <eos>/pad = weight on that key; broad = "
                "normalised entropy). Details: Heads tab.")


def badge_text(role: HeadRole) -> str:
    return f"{ROLE_LABELS[role.role]} {role.score:.2f}"


class RoleBadges(QObject):
    """Owns a pool of TextItems on one grid's plot; `set_roles` and `refresh` (after new maps) place them.

    A child of the grid: when the grid goes, Qt drops the connections to these methods with it.
    """

    def __init__(self, grid: AttentionGrid) -> None:
        super().__init__(grid)
        self.grid = grid
        self._roles: dict[tuple[int, int], HeadRole] = {}
        self._items: list[pg.TextItem] = []
        self._placed: list[tuple[int, int]] = []
        self._drawn: tuple = ()  # (maps shape, roles) the badges were placed for: an equal frame moves nothing
        self._dirty = False  # a frame arrived while the grid was hidden: place the badges when it shows
        grid.installEventFilter(self)
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

    def texts(self) -> dict[tuple[int, int], str]:
        """(layer, head) -> the badge drawn now (what a test or a student reads)."""
        if self._dirty:
            self.refresh()
        return {key: item.toPlainText() for key, item in zip(self._placed, self._items) if item.isVisible()}

    def on_frame(self, _frame: object) -> None:
        """A new forward pass: the maps' shape may have changed, so place the badges again (when seen: moving
        24 text items on three grids per keystroke cost ~0.5 ms, mostly for the two hidden grids)."""
        self._dirty = True
        if self.grid.isVisible():
            self.refresh()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Show and self._dirty:
            self.refresh()
        return False

    def refresh(self) -> None:
        """Place one badge per head of the maps on screen; hide the rest (no maps, or no roles for this shape)."""
        self._dirty = False
        maps = self.grid.current_maps()
        shape = None if maps is None else maps.values.shape
        key = (shape, tuple(self._roles.items()))
        if key == self._drawn:
            return
        self._drawn = key
        placed: list[tuple[int, int]] = []
        if maps is not None and maps.values.size and self._roles:
            lay = AtlasLayout.build(*maps.values.shape)
            placed = [(layer, head) for layer in range(lay.n_layers) for head in range(lay.n_heads)
                      if (layer, head) in self._roles]
        plot = self.grid.atlas_plot.plot_item
        while len(self._items) < len(placed):
            item = pg.TextItem("", color=(255, 255, 255), anchor=(1, 0), fill=pg.mkBrush(20, 60, 120, 170))
            item.setZValue(25)
            plot.addItem(item, ignoreBounds=True)
            self._items.append(item)
        for k, item in enumerate(self._items):
            if k < len(placed):
                layer, head = placed[k]
                text = badge_text(self._roles[(layer, head)])
                if item.toPlainText() != text:
                    item.setText(text)
                item.setPos(lay.map_rect(layer, head).topRight())  # causal: masked there
            item.setVisible(k < len(placed))
        self._placed = placed
        self.legend.setVisible(bool(placed))

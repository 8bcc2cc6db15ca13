"""Role badges fit their own map: on a map narrower than "reads 0.93" the badge shortens, and no badge pixel lands
outside the strip above its own map (on a cell, or over a neighbouring map), whatever the window's width."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from qt_helpers import show_grid

from core_model.head_roles import HeadRole
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.common.role_labels import ROLE_LABELS
from visualizer.widgets.heads.badge_layer import shorter
from visualizer.widgets.heads.badges import RoleBadges, badge_text

ROLES = ("alignment", "first", "broad")


def _grid_with_badges(qtbot, width: int, n: int = 14):
    """A shown cross-attention grid of 2 layers x 4 heads at `width` px with a role badge on every map."""
    grid = show_grid(qtbot, "cross", (width, 620))
    rng = np.random.default_rng(0)
    values = rng.random((2, 4, n, n)).astype(np.float32)
    values /= values.sum(-1, keepdims=True)
    labels = tuple(str(i % 10) for i in range(n))
    grid.set_maps(KindMaps("cross", values, np.ones((n, n), bool), labels, labels))
    badges = RoleBadges(grid)
    roles = tuple(
        HeadRole("cross", layer, head, ROLES[(layer + head) % 3], 0.93 - 0.1 * head, ())
        for layer in range(2)
        for head in range(4)
    )
    badges.set_roles(roles)
    QApplication.processEvents()
    return grid, badges, roles


def _grab(grid) -> np.ndarray:
    """The viewport as the user sees it, (height, width) of packed RGB32 pixels."""
    image = grid.graphics.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    return (
        np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
        .reshape(image.height(), image.width())
        .copy()
    )


def _badge_pixels(grid, badges) -> np.ndarray:
    """(y, x) of every viewport pixel the badges change: the viewport grabbed with them and without them."""
    shown = _grab(grid)
    badges.layer.setVisible(False)
    bare = _grab(grid)
    badges.layer.setVisible(True)
    return np.argwhere(shown != bare)


def _strip_boxes(grid, badges) -> dict[tuple[int, int], QRectF]:
    """(layer, head) -> the blank strip above that map, in viewport pixels."""
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    lay = grid.atlas_layout()
    return {(layer, head): to_device.mapRect(lay.strip_rect(layer, head)) for layer in range(2) for head in range(4)}


def test_no_badge_pixel_lands_outside_the_strip_above_its_map_on_a_narrow_grid(qtbot):
    grid, badges, roles = _grid_with_badges(qtbot, 470)
    boxes = _strip_boxes(grid, badges)
    assert all(box.width() < 60 for box in boxes.values())  # narrower than "reads 0.93" with its padding
    changed = _badge_pixels(grid, badges)
    assert len(changed) > 0  # the badges are drawn
    inside = np.zeros(len(changed), bool)
    for box in boxes.values():
        inside |= (
            (changed[:, 1] >= box.left() - 1)
            & (changed[:, 1] <= box.right() + 1)
            & (changed[:, 0] >= box.top() - 1)
            & (changed[:, 0] <= box.bottom() + 1)
        )
    assert inside.all(), changed[~inside][:10]  # no badge spills onto a cell, a neighbour's strip or the axis
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    drawn = [text for _, text in badges.layer.fitted(to_device)]
    for text, role in zip(drawn, roles):  # each a shorter form of its badge, the score kept while it fits
        forms = shorter(badge_text(role))
        label = ROLE_LABELS[role.role]
        assert text in forms or (text.endswith("…") and label.startswith(text[:-1]) and len(text) > 1), text
    assert "reads" in drawn and "first" in drawn, drawn  # the short word, not "firs…", where no score fits
    # each map shows its own badge: some changed pixel lies within the strip above every map
    for key, box in boxes.items():
        assert any(box.adjusted(-1, -1, 1, 1).contains(x, y) for y, x in changed), key


def test_a_wide_grid_shows_the_whole_badge(qtbot):
    grid, badges, roles = _grid_with_badges(qtbot, 1200)
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    assert [text for _, text in badges.layer.fitted(to_device)] == [badge_text(r) for r in roles]
    assert badges.texts() == {(r.layer, r.head): badge_text(r) for r in roles}

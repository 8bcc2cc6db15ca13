"""A grid keeps what it built for earlier inputs (the previous shape's buffers and layout, its badges' fitted boxes)
so that typing and deleting a symbol redraws less. None of it may show: after any history of inputs, the grid's
pixels equal those of a fresh grid given only the last input."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from qt_helpers import show_grid

from core_model.head_roles import HeadRole
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heads.badges import RoleBadges

SIZE = (900, 520)


def maps(n: int, seed: int, kind: str = "cross", causal: bool = False, highlight: int | None = None) -> KindMaps:
    """2 layers x 4 heads of random rows over n tokens (causal: keys after the query masked, weight 0), labelled
    with digits that depend on the seed."""
    rng = np.random.default_rng(seed)
    valid = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    values = np.where(valid, rng.random((2, 4, n, n)), 0.0).astype(np.float32)
    values /= values.sum(-1, keepdims=True)
    labels = tuple(str((i + seed) % 10) for i in range(n))
    return KindMaps(kind, values, valid, labels, labels, highlight)


def roles(role: str = "alignment") -> tuple[HeadRole, ...]:
    return tuple(HeadRole("cross", layer, head, role, 0.9 - 0.1 * head, ()) for layer in range(2) for head in range(4))


def with_badges(grid, role: str = "alignment") -> RoleBadges:
    badges = RoleBadges(grid)
    badges.set_roles(roles(role))
    return badges


def badged_grid(qtbot, shown: KindMaps, role: str = "alignment", size: tuple[int, int] = SIZE):
    """A grid on screen at `size` showing `shown`, a `role` badge on every map; returns (grid, badges)."""
    grid = show_grid(qtbot, "cross", size)
    badges = with_badges(grid, role)
    grid.set_maps(shown)
    badges.refresh()
    return grid, badges


def pixels(grid) -> np.ndarray:
    QApplication.processEvents()
    image = grid.graphics.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    return (
        np.frombuffer(image.constBits(), np.uint32, image.width() * image.height()).reshape(image.height(), -1).copy()
    )


@pytest.mark.parametrize("history", [(6, 7, 6), (6, 7, 8, 7), (12, 5, 12)])
def test_a_grid_after_other_inputs_draws_what_a_fresh_grid_draws(qtbot, history):
    """Lengths alternate as in typing then deleting; each input has other values and labels than the one before."""
    used = show_grid(qtbot, "cross", SIZE)
    used_badges = with_badges(used)
    for step, n in enumerate(history):
        used.set_maps(maps(n, seed=step))
        used_badges.refresh()
        pixels(used)  # each input painted, as on screen: caches fill
    last = maps(history[-1], seed=len(history) - 1)

    fresh, _ = badged_grid(qtbot, last)

    np.testing.assert_array_equal(used.displayed_matrix(1, 2), fresh.displayed_matrix(1, 2))
    shown, expected = pixels(used), pixels(fresh)
    assert shown.shape == expected.shape
    differ = np.argwhere(shown != expected)
    assert not len(differ), f"{len(differ)} pixels differ from a fresh grid's, e.g. at (y, x) {differ[:3].tolist()}"


def test_new_roles_on_the_same_input_draw_what_a_fresh_grid_draws(qtbot):
    """The badges' fitted boxes are kept per placement and scale: new texts at the same scale are fitted anew."""
    used, used_badges = badged_grid(qtbot, maps(6, seed=0))
    pixels(used)
    used_badges.set_roles(roles("broad"))

    fresh, _ = badged_grid(qtbot, maps(6, seed=0), "broad")
    assert not np.count_nonzero(pixels(used) != pixels(fresh))


def test_masks_highlights_ablation_and_scales_leave_nothing_behind(qtbot):
    """A history through masked cells, a highlighted row, an ablated head and per-map scales, back to plain
    inputs of the shapes seen before: the last one draws as on a fresh grid."""
    used = show_grid(qtbot, "cross", SIZE)
    ablated = np.zeros((2, 4), bool)
    ablated[1, 2] = True
    for step, (n, causal, highlight) in enumerate([(6, True, 3), (7, True, None), (6, False, 2), (7, False, None)]):
        used.set_scale_mode("per_map" if step < 2 else "shared")
        used.set_ablated(ablated if step % 2 == 0 else np.zeros((2, 4), bool))
        used.set_maps(maps(n, seed=step, causal=causal, highlight=highlight))
        pixels(used)
    used.set_maps(maps(6, seed=9))

    fresh = show_grid(qtbot, "cross", SIZE)
    fresh.set_maps(maps(6, seed=9))
    np.testing.assert_array_equal(used.displayed_matrix(1, -1), fresh.displayed_matrix(1, -1))
    assert not np.count_nonzero(pixels(used) != pixels(fresh))


def test_a_resized_grid_fits_its_badges_to_the_new_size(qtbot):
    """Badge boxes are kept per placement and scale: the same input at another width is fitted anew."""
    used, _ = badged_grid(qtbot, maps(6, seed=0))
    pixels(used)
    used.resize(470, SIZE[1])

    fresh, _ = badged_grid(qtbot, maps(6, seed=0), size=(470, SIZE[1]))
    assert not np.count_nonzero(pixels(used) != pixels(fresh))

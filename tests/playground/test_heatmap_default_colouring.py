"""The default view (weights, shared [0, 1] scale, no head ablated) colours the maps straight from the model's values.

Every atlas pixel is checked against a colouring written here in float64, cell by cell, and the numbers the grid
reports (hover, exports, large view) against the maps themselves.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from qt_helpers import show_grid

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG
from visualizer.widgets.heatmap.colours import make_lut
from visualizer.widgets.heatmap.grid import AttentionGrid

LUT = make_lut()
CLEAR = np.zeros(4, np.uint8)  # masked cells and gutters: fully transparent


@pytest.fixture
def grid(qtbot):
    return show_grid(qtbot, "decoder_self", (900, 600))


def awkward_maps(seed: int = 0, n_layers: int = 2, n_heads: int = 4, tq: int = 6, tk: int = 7) -> KindMaps:
    """Causal weights with the values a colour scale gets wrong first: 0, 1, every 1/256 step, just over 1."""
    rng = np.random.default_rng(seed)
    valid = np.tril(np.ones((tq, tk), bool))
    values = rng.random((n_layers, n_heads, tq, tk)).astype(np.float32)
    steps = (np.arange(values.size) % 257 / 256).astype(np.float32).reshape(values.shape)
    values = np.where(rng.random(values.shape) < 0.4, steps, values)  # exact steps, 0 and 1 among them
    values[0, 0, 0, 0], values[1, 2, 3, 1] = 1.0, np.nextafter(np.float32(1), np.float32(2))
    values[1, 1, 5, 0] = 0.0
    values = np.where(valid, values, 0.0).astype(np.float32)  # masked keys get weight 0, as after a softmax
    return KindMaps("decoder_self", values, valid, tuple(f"q{i}" for i in range(tq)), tuple(f"k{j}" for j in range(tk)))


def colour_of(value: float) -> np.ndarray:
    """LUT colour of a weight on the [0, 1] scale, computed in float64: 256 bins, 1.0 (and above) in the top one."""
    return LUT[int(min(max(np.floor(value * 256.0), 0), 255))]


def expected_atlas(grid: AttentionGrid, maps: KindMaps) -> np.ndarray:
    """The whole RGBA atlas as it should be: each map's cells by colour_of, masked cells and gutters clear."""
    lay = grid.atlas_layout()
    atlas = np.zeros((lay.height, lay.width, 4), np.uint8)
    values = maps.values.astype(np.float64)
    for layer in range(maps.n_layers):
        for head in [*range(maps.n_heads), AVG]:
            rect = grid.map_rect(layer, head)
            top, left = int(rect.y()), int(rect.x())
            for i in range(lay.tq):
                for j in range(lay.tk):
                    if maps.valid[i, j]:
                        v = values[layer, :, i, j].mean() if head == AVG else values[layer, head, i, j]
                        atlas[top + i, left + j] = colour_of(v)
    return atlas


def test_every_pixel_of_the_default_view_matches_an_independent_colouring(grid):
    for seed in range(3):
        maps = awkward_maps(seed)
        grid.set_maps(maps, mode="weights")
        drawn = grid.image_item.image
        expected = expected_atlas(grid, maps)
        differs = np.argwhere(np.any(drawn != expected, axis=-1))
        assert differs.size == 0, f"seed {seed}: {len(differs)} pixels differ, first at {differs[:3].tolist()}"
        assert grid.map_levels(0, 0) == (0.0, 1.0) and grid.map_levels(1, AVG) == (0.0, 1.0)


def test_the_numbers_behind_the_default_view_are_the_maps(grid):
    maps = awkward_maps(1)
    grid.set_maps(maps, mode="weights")
    blank = ~maps.valid
    for layer in range(2):
        for head in range(4):
            np.testing.assert_array_equal(
                grid.displayed_matrix(layer, head), np.where(blank, np.nan, maps.values[layer, head])
            )
        average = grid.displayed_matrix(layer, AVG)
        np.testing.assert_allclose(
            average[maps.valid], maps.values[layer][:, maps.valid].astype(np.float64).mean(0), rtol=1e-6
        )
        assert np.isnan(average[blank]).all()
    assert grid.tooltip_text_at(1, AVG, 2, 3) == "L2 avg query 2 'q2' -> key 3 'k3': masked"
    mean = maps.values[1, :, 3, 2].astype(np.float64).mean()
    assert grid.tooltip_text_at(1, AVG, 3, 2) == f"L2 avg query 3 'q3' -> key 2 'k2': {mean:.3f}"


def test_a_non_finite_weight_is_blank_and_its_neighbours_keep_their_colours(grid):
    """A diverged model can hand out NaN: that cell is blank (never a colour), the average skips it."""
    maps = awkward_maps(2)
    values = maps.values.copy()
    values[0, 1, 4, 2] = np.nan
    broken = KindMaps(maps.kind, values, maps.valid, maps.query_labels, maps.key_labels)
    grid.set_maps(broken, mode="weights")
    rect = grid.map_rect(0, 1)
    image = grid.image_item.image
    np.testing.assert_array_equal(image[int(rect.y()) + 4, int(rect.x()) + 2], CLEAR)
    np.testing.assert_array_equal(image[int(rect.y()) + 4, int(rect.x()) + 1], colour_of(values[0, 1, 4, 1]))
    others = [values[0, h, 4, 2] for h in (0, 2, 3)]
    avg = grid.map_rect(0, AVG)
    np.testing.assert_array_equal(image[int(avg.y()) + 4, int(avg.x()) + 2], colour_of(float(np.mean(others))))


def test_a_nan_in_a_masked_cell_stays_blank_without_a_warning(grid):
    maps = awkward_maps(3)
    values = maps.values.copy()
    values[0, 2, 0, 6] = np.nan  # query 0 may not see key 6: masked
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast" would be an error here
        grid.set_maps(KindMaps(maps.kind, values, maps.valid, maps.query_labels, maps.key_labels), mode="weights")
    rect = grid.map_rect(0, 2)
    np.testing.assert_array_equal(grid.image_item.image[int(rect.y()), int(rect.x()) + 6], CLEAR)
    np.testing.assert_array_equal(grid.image_item.image[int(rect.y()), int(rect.x())], colour_of(values[0, 2, 0, 0]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, "both infinities"])
def test_a_non_finite_weight_where_nothing_is_masked_is_blank_without_a_warning(grid, bad):
    """Encoder and cross attention often mask nothing: the default view then checks the maps in one sum. Every
    non-finite value still ends blank, and every other cell keeps its colour."""
    maps = awkward_maps(4)
    values, valid = maps.values.copy(), np.ones_like(maps.valid)
    if bad == "both infinities":  # +inf and -inf sum to NaN
        values[0, 1, 4, 2], values[1, 3, 0, 5] = np.inf, -np.inf
    else:
        values[0, 1, 4, 2] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid.set_maps(KindMaps(maps.kind, values, valid, maps.query_labels, maps.key_labels), mode="weights")
    rect = grid.map_rect(0, 1)
    image = grid.image_item.image
    np.testing.assert_array_equal(image[int(rect.y()) + 4, int(rect.x()) + 2], CLEAR)
    np.testing.assert_array_equal(image[int(rect.y()) + 4, int(rect.x()) + 1], colour_of(values[0, 1, 4, 1]))
    assert np.isnan(grid.displayed_matrix(0, 1)[4, 2])


def test_huge_finite_values_where_nothing_is_masked_colour_as_on_any_other_path(grid):
    """Values whose sum overflows (no softmax gives them) draw as the general path draws them: the top colour."""
    maps = awkward_maps(5)
    values = maps.values.copy()
    values[:, :, 0, :] = np.float32(5e37)  # the mean over heads stays finite, the sum over the maps does not
    all_valid = KindMaps(maps.kind, values, np.ones_like(maps.valid), maps.query_labels, maps.key_labels)
    with np.errstate(over="ignore"):  # scaling 5e37 to the colour range overflows to the top colour, as it should
        grid.set_maps(all_valid, mode="weights")
    np.testing.assert_array_equal(grid.image_item.image, expected_atlas(grid, all_valid))


def test_new_maps_after_a_query_show_the_new_numbers(grid):
    """The numbers are made when asked for; a query between frames must never leave the next frame's stale."""
    first, second = awkward_maps(0), awkward_maps(1)
    grid.set_maps(first, mode="weights")
    assert grid.displayed_matrix(1, 2)[5, 5] == first.values[1, 2, 5, 5]
    grid.set_maps(second, mode="weights")
    assert grid.displayed_matrix(1, 2)[5, 5] == second.values[1, 2, 5, 5]
    np.testing.assert_array_equal(grid.image_item.image, expected_atlas(grid, second))

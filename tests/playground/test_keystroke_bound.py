"""keystroke_bound.py's stand-in grid: it must show what the real grid shows for the bound to mean anything, and the
window must be whole again after a variant (the variants run in one window, one after another).

Not a timed test: the ratios themselves are measured by running the script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PySide6.QtGui import QColor

from tests.qt_helpers import show_widget, start_app, wait_frame
from visualizer.state.snapshots import KindMaps

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))  # the benchmarks are scripts, not a package

import keystroke_bound  # noqa: E402


def _colour_at(widget, x: float, y: float) -> QColor:
    return widget.grab().toImage().pixelColor(round(x), round(y))


def test_bare_grid_colours_weights_through_the_app_table_and_leaves_masked_cells_blank(qtbot):
    from visualizer.widgets.heatmap.colours import make_lut

    values = np.zeros((1, 2, 2, 2), np.float32)
    values[0, 0, 0, 0] = 1.0  # the colormap's top colour
    valid = np.array([[True, False], [True, True]])  # query 0 may not see key 1
    bare = keystroke_bound.BareGrid(lambda: {(0, 1): "prev"})
    bare.set_maps(KindMaps("decoder_self", values, valid, ("a", "b"), ("a", "b")))
    show_widget(qtbot, bare, (300, 200))
    scale = min((300 - 2 * keystroke_bound.MARGIN) / 6, (200 - 2 * keystroke_bound.MARGIN) / 3)
    cell = keystroke_bound.MARGIN + scale / 2, keystroke_bound.MARGIN + scale / 2  # map 1, query 0, key 0
    top = make_lut()[255]
    assert _colour_at(bare, *cell).getRgb()[:3] == tuple(int(c) for c in top[:3])
    masked = cell[0] + scale, cell[1]  # map 1, query 0, key 1
    assert _colour_at(bare, *masked) == QColor("white")


def _encoder_keys(session) -> int:
    return session.last_frame.maps.maps["encoder_self"].values.shape[3]


def test_a_variant_leaves_the_real_grids_and_side_panels_showing_the_last_input(qtbot):
    app = start_app(qtbot)
    view, session = app.playground, app.session
    grid, expected = view.grids["encoder_self"], view.input_panel.expected_slot
    before, drawn = expected.full_text(), grid.atlas_layout().tk
    with keystroke_bound.bare_grids(app) as bares:
        with keystroke_bound.grids_only(app):
            assert grid.stack.currentWidget() is bares[grid]
            session.set_source("97531")
            wait_frame(qtbot, session)
            keys = _encoder_keys(session)  # the symbols, <eos> and the pads
            qtbot.waitUntil(lambda: bares[grid]._shape[3] == keys)  # noqa: SLF001 - the stand-in drew the new input
            assert expected.full_text() == before  # the side panels were left as they were
            assert grid.atlas_layout().tk == drawn != keys  # and the real grid drew nothing
            hidden = bares[view.grids["cross"]]
            assert hidden._shape[3:] != (keys,)  # noqa: SLF001 - a grid on a hidden tab colours nothing either
            view.grid_tabs.setCurrentWidget(view.grids["cross"])
            qtbot.waitUntil(lambda: hidden._shape[3] == keys)  # noqa: SLF001 - until it is shown
    assert grid.stack.currentWidget() is grid.graphics
    assert grid.atlas_layout().tk == keys and sorted(expected.full_text().split()) == list("13579")
    session.set_source("2468")  # the app's own frame path is connected again
    wait_frame(qtbot, session)
    qtbot.waitUntil(lambda: sorted(expected.full_text().split()) == list("2468"))
    assert grid.atlas_layout().tk == keys - 1

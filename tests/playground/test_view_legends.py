"""Each view's title and legend in the real window say what its maps hold: the avg column's formula (a plain head
mean, or the rollout up to that layer) and what grey means (nothing is grey in rollout)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from qt_helpers import start_app, wait_frame

KINDS = ("encoder_self", "decoder_self", "cross")
ROLLOUT_STEP = "Ã = rownorm(0.5 Ā + 0.5 I), Ā = mean of "


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot)
    yield app
    app.hub.dirty = False
    app.window.close()


def choose(qtbot, app, mode: str) -> None:
    """Pick a view in the Show box with the keyboard, as a user does, and wait for its maps."""
    combo = app.playground.view_modes.combo
    combo.setFocus()
    while app.playground.view_modes.mode() != mode:
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: all(g.current_maps() is not None for g in app.playground.grids.values()), timeout=10_000)
    wait_frame(qtbot, app.session)


def read(app, kind: str) -> tuple[str, str]:
    """The title and legend lines above the grid of `kind`, brought on screen first."""
    grid = app.playground.grids[kind]
    app.playground.grid_tabs.setCurrentWidget(grid)
    assert grid.isVisible()
    return grid.header.title_label.text(), grid.header.legend_label.text()


@pytest.mark.parametrize("mode", ["weights", "scores", "norms"])
def test_a_head_mean_view_says_its_average_is_the_head_mean_and_grey_is_masked(qtbot, app, mode):
    choose(qtbot, app, mode)
    for kind in KINDS:
        title, legend = read(app, kind)
        assert "avg = mean of the layer's heads" in title and "rollout" not in title, (mode, kind, title)
        assert "grey = masked" in legend, (mode, kind, legend)
        if mode == "scores":
            assert "−∞" in legend  # the masked scores are −inf, drawn grey


def test_rollout_title_gives_the_rollout_formula_and_the_legend_claims_no_masked_cell(qtbot, app):
    """Rollout maps blank no cell and their average is no plain mean of heads: the title gives the rollout formula,
    the legend claims no masked cell."""
    choose(qtbot, app, "rollout")
    for kind in KINDS:
        title, legend = read(app, kind)
        assert "mean of the layer's heads" not in title.split(ROLLOUT_STEP)[0], title  # not a plain head mean
        assert ROLLOUT_STEP + "the layer's heads" in title, title
        if kind == "encoder_self":
            assert "avg = rollout R^l = Ã^l R^(l−1)" in title
        else:
            assert (
                f"avg = decoder rollout to layer l, share from {'target' if kind == 'decoder_self' else 'source'}"
                in title
            )
        assert "grey" not in legend and "no cell is masked in rollout" in legend, legend
        assert "the 0.5 I term keeps part of each position's own share" in legend, legend
        grid = app.playground.grids[kind]
        maps = grid.current_maps()
        pads = [j for j, token in enumerate(maps.key_labels) if token == "<pad>"]
        for layer in range(maps.n_layers):
            shown = grid.displayed_matrix(layer, -1)
            assert not np.isnan(shown).any()  # nothing is blank, as the legend says
            if kind == "encoder_self":  # the padding mask hides <pad> keys: share 0 but in each <pad> row's own cell
                assert pads and all(shown[i, j] == 0 for i in range(len(shown)) for j in pads if i != j)
                assert all(shown[j, j] > 0.1 for j in pads)
    equation = app.playground.view_modes.formula_label.text()
    assert "0.5 Ā + 0.5 I" in equation and "mean of the heads on" in equation  # the Formula box agrees


def test_rollout_title_names_the_heads_its_average_leaves_out(qtbot, app):
    choose(qtbot, app, "rollout")
    app.session.set_head_enabled("encoder_self", 0, 1, False)
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(
        lambda: "heads on" in app.playground.grids["encoder_self"].header.title_label.text(), timeout=10_000
    )
    title, _legend = read(app, "encoder_self")
    heads = app.hub.config.n_heads
    layers = app.hub.config.n_encoder_layers
    counts = ", ".join(f"L{i + 1} {heads - (i == 0)}/{heads}" for i in range(layers))
    assert f"{ROLLOUT_STEP}the heads on ({counts})" in title, title


def test_each_grid_title_says_which_axis_holds_queries_and_which_keys(qtbot, app):
    """A fresh reader of the Cross tab could not tell that its rows are the decoder's tokens and its columns the
    encoder's: nothing above the maps named the axes."""
    titles = {kind: read(app, kind)[0] for kind in KINDS}
    assert titles["cross"].startswith("Cross-attention (rows: decoder queries, columns: encoder keys) — ")
    for kind in ("encoder_self", "decoder_self"):
        assert "(rows: queries, columns: keys) — " in titles[kind], titles[kind]

"""The Show bar: each view's numbers on screen equal core_model.attention_views for the same input; its colour
scale suits it; its formula is one click away."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import show_playground

from core_model import BOS, ModelConfig, build_model
from core_model.attention_views import norm_weighted, rollout, run_with_inputs
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.widgets.playground.view import PlaygroundView

KINDS = ("encoder_self", "decoder_self", "cross")


@pytest.fixture
def view(qtbot) -> PlaygroundView:
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2), seed=3)
    with torch.no_grad():  # nonzero biases, so the value bias shows in the norms
        model.encoder_layers[0].self_attn.v_proj.bias.uniform_(-0.5, 0.5)
    hub = ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model")
    session = PlaygroundSession(hub)
    return show_playground(qtbot, session)


def choose(qtbot, view: PlaygroundView, mode: str) -> None:
    """Pick a view with the keyboard in the Show combo box."""
    combo = view.view_modes.combo
    combo.setFocus()
    while view.view_modes.mode() != mode:
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert view.session.mode == mode


def inputs(view: PlaygroundView) -> tuple[torch.Tensor, torch.Tensor]:
    s = view.session
    pads = [0] * s.extra_pads
    src = s.vocabulary.encode("0123") + pads
    return torch.tensor([src]), torch.tensor([[BOS, *s.vocabulary.encode("0123"), *pads]])


def test_norm_view_shows_the_core_functions_numbers(qtbot, view):
    view.session.set_head_enabled("encoder_self", 0, 1, False)
    choose(qtbot, view, "norms")
    src, tgt = inputs(view)
    gates = view.session.head_gates()
    with torch.no_grad():
        captured = run_with_inputs(view.session.hub.model, src, tgt, view.session.masks, gates)
        ref = norm_weighted(view.session.hub.model, captured.output.attention, captured.inputs, gates)
    for i, kind in enumerate(KINDS):
        view.grid_tabs.setCurrentIndex(i)
        grid = view.grids[kind]
        maps = grid.current_maps()
        for layer in range(2):
            for head in range(4):
                expected = ref.kind(kind)[layer][0, head].numpy()
                np.testing.assert_allclose(
                    np.nan_to_num(grid.displayed_matrix(layer, head)),
                    np.where(maps.valid, expected, 0),
                    rtol=0,
                    atol=1e-6,
                )
        lo, hi = grid.map_levels(0, 0)
        assert lo == 0.0 and hi == pytest.approx(float(maps.values[:, :, maps.valid].max()))  # 0 to the max
        assert "norm-weighted" in grid.title_label.text()
    assert np.nanmax(view.grids["encoder_self"].displayed_matrix(0, 1)) == 0.0  # the ablated head adds nothing


def test_rollout_view_shows_the_rollout_with_rows_summing_to_one(qtbot, view):
    choose(qtbot, view, "rollout")
    src, tgt = inputs(view)
    with torch.no_grad():
        out = view.session.hub.model(src, tgt, view.session.masks, return_attention=True)
        ref = rollout(out.attention)
    totals = 0
    for i, kind in enumerate(KINDS):
        view.grid_tabs.setCurrentIndex(i)
        grid = view.grids[kind]
        for layer in range(2):
            np.testing.assert_allclose(
                grid.displayed_matrix(layer, -1), getattr(ref, kind)[layer, 0].numpy(), rtol=0, atol=1e-6
            )  # the avg column is the rollout
            for head in range(4):
                np.testing.assert_allclose(
                    grid.displayed_matrix(layer, head), ref.heads.kind(kind)[layer][0, head].numpy(), rtol=0, atol=1e-6
                )
        lo, hi = grid.map_levels(0, 0)
        assert lo == 0.0 and hi == pytest.approx(float(np.nanmax(grid.current_maps().values)))  # 0 to the max
        assert "rollout" in grid.title_label.text()
        if kind != "encoder_self":
            totals = totals + grid.displayed_matrix(1, -1).sum(axis=1)
    np.testing.assert_allclose(view.grids["encoder_self"].displayed_matrix(1, -1).sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(totals, 1.0, atol=1e-5)  # decoder: target share + source share


def test_scores_get_a_diverging_scale_and_weights_a_unit_one(qtbot, view):
    grid = view.grids["encoder_self"]
    assert grid.map_levels(0, 0) == (0.0, 1.0)
    choose(qtbot, view, "scores")
    lo, hi = grid.map_levels(0, 0)
    assert lo == pytest.approx(-hi) and hi > 0


def test_formula_is_one_click_away_for_every_view(qtbot, view):
    bar = view.view_modes
    assert bar.formula_label.isHidden()
    qtbot.mouseClick(bar.formula_button, Qt.MouseButton.LeftButton)
    assert bar.formula_label.isVisible()
    expected = {
        "weights": ("softmax", "Vaswani"),
        "scores": ("√d", "Vaswani"),
        "norms": ("W<sub>O</sub>", "Kobayashi et al. 2020"),
        "rollout": ("0.5 Ā + 0.5 I", "Abnar & Zuidema 2020"),
    }
    for mode, (equation, citation) in expected.items():
        choose(qtbot, view, mode)
        text = bar.formula_label.text()
        assert equation in text and citation in text, mode
    qtbot.mouseClick(bar.formula_button, Qt.MouseButton.LeftButton)
    assert bar.formula_label.isHidden()


def test_shortcut_cycles_the_views(qtbot, view):
    with qtbot.waitActive(view):
        view.activateWindow()
    qtbot.keyClick(
        view.input_panel.source, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    assert view.session.mode == "scores" and view.view_modes.mode() == "scores"


def test_rollout_average_column_leaves_ablated_heads_out_like_the_rollout(qtbot, view):
    view.session.set_head_enabled("cross", 0, 1, False)
    view.session.set_head_enabled("encoder_self", 1, 3, False)
    choose(qtbot, view, "rollout")
    src, tgt = inputs(view)
    gates = view.session.head_gates()
    with torch.no_grad():
        out = view.session.hub.model(src, tgt, view.session.masks, gates, return_attention=True)
        ref = rollout(out.attention, gates)
    for i, kind in enumerate(KINDS):
        view.grid_tabs.setCurrentIndex(i)
        for layer in range(2):
            np.testing.assert_allclose(
                view.grids[kind].displayed_matrix(layer, -1), getattr(ref, kind)[layer, 0].numpy(), rtol=0, atol=1e-6
            )


def test_scores_formula_names_the_masked_colour_the_legend_uses(qtbot, view):
    """The grid's legend says "grey = masked"; the formula must not call the same cells "blank"."""
    bar = view.view_modes
    qtbot.mouseClick(bar.formula_button, Qt.MouseButton.LeftButton)
    choose(qtbot, view, "scores")
    text = bar.formula_label.text()
    assert "grey" in text and "blank" not in text


def test_the_colour_bar_names_what_its_colours_measure(qtbot, view):
    """A fresh reader found the colour bar untitled: 0 to 1 of what? Each view names its quantity there, and the
    per-map scale says each map spans its own range."""
    grid = view.grids["encoder_self"]
    label = grid.colorbar.getAxis("left")
    expected = {"weights": "attention weight", "scores": "score q·k / √d_k", "norms": "‖a·f(x)‖"}
    for mode, text in expected.items():
        choose(qtbot, view, mode)
        assert label.labelText == text and label.label.isVisible(), mode
    view.scale.setCurrentIndex(view.scale.findData("per_map"))
    assert label.labelText == "‖a·f(x)‖: each map spans its own min..max"

"""The Heads tab in the whole app: its numbers are the CLI's, a click ablates the head, badges name the roles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from qt_helpers import type_number
from widget_readers import badge_corners, table_cell_text, table_row_texts

from visualizer.composition import Application
from visualizer.widgets.common.role_labels import ROLE_LABELS

ROOT = Path(__file__).resolve().parents[2]
ROPE = ROOT / "resources" / "copy_rope.pt"
N, SEED = 40, 3


def as_read(value: float, decimals: int) -> str:
    """A change as a person should read it: its sign and `decimals` places; 0 exactly with no sign; a change too small
    for those places in full (never "+0.000" for a change, never "-0.000")."""
    if value == 0:
        return "0." + "0" * decimals
    if round(abs(value), decimals) == 0:
        return f"{value:+.1e}"
    return f"{value:+.{decimals}f}"


def _cli(n: int, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "visualizer", "heads", str(ROPE), "--n", str(n), "--seed", str(seed), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def app(qtbot):
    app = Application(checkpoint=ROPE, device="cpu")
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.heads is not None and app.heads.roles is not None, timeout=60000)
    yield app
    app.heads.cancel()
    qtbot.waitUntil(lambda: not app.heads.running, timeout=30000)
    app.hub.dirty = False
    app.window.close()


def test_gui_numbers_equal_the_cli_and_a_click_ablates_the_head(qtbot, app):
    win, view = app.window, app.heads_view
    assert view.n_box.maximum() == 1_000  # the CLI's --n: every head is ablated on all N sequences at once
    qtbot.keyClick(win, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    assert win.tabs.currentWidget() is view
    type_number(qtbot, view.n_box, N)
    type_number(qtbot, view.seed_box, SEED)
    with qtbot.waitSignal(app.heads.frame_changed, timeout=120000):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    cli = _cli(N, SEED)
    assert (cli.pop("trained_lengths"), cli.pop("beyond_trained_lengths")) == ([1, 16], False)  # the CLI's own note
    assert app.heads.analysis.to_dict() == cli  # every float identical: same functions, sequences and device
    assert f"{cli['baseline']['exact_match']:.3f}" in view.maps.baseline_label.text()
    for row in cli["heads"]:  # what the user reads in each cell: the CLI's delta, rounded for display
        assert table_cell_text(view.maps.tables[row["kind"]], row["layer"], row["head"]) == as_read(
            row["delta_exact_match"], 3
        )
    view.maps.metric_combo.setCurrentIndex(1)
    for row in cli["heads"]:
        assert table_cell_text(view.maps.tables[row["kind"]], row["layer"], row["head"]) == as_read(
            row["delta_loss"], 3
        )
    for i, row in enumerate(cli["heads"]):  # the roles table, row by row in the CLI's order
        texts = table_row_texts(view.roles, i)
        assert texts[1:5] == [
            f"L{row['layer'] + 1}",
            f"H{row['head'] + 1}",
            ROLE_LABELS[row["role"]],
            f"{row['role_score']:.3f}",
        ]
        assert texts[5] == ("—" if row["alignment"] is None else f"{row['alignment']:.3f}")
        assert texts[7] == as_read(row["delta_exact_match"], 3)

    worst = min(cli["heads"], key=lambda r: r["delta_exact_match"])
    table = view.maps.tables[worst["kind"]]
    rect = table.visualItemRect(table.item(worst["layer"], worst["head"]))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    grid = app.playground.grids[worst["kind"]]
    assert win.tabs.currentWidget() is app.playground
    assert app.playground.grid_tabs.currentWidget() is grid
    assert grid.is_ablated(worst["layer"], worst["head"])
    assert not app.session.gates()[worst["kind"]][worst["layer"], worst["head"]]
    assert "ablated" in grid.title_label.text() or "heads on" in grid.title_label.text()


def test_role_badges_on_every_map_match_the_roles(qtbot, app):
    roles = app.heads.roles
    for kind, badges in app.badges.items():
        grid = app.playground.grids[kind]
        app.playground.grid_tabs.setCurrentWidget(grid)
        qtbot.waitUntil(lambda g=grid: g.atlas_layout() is not None, timeout=5000)
        expected = {
            (r.layer, r.head): "other" if r.role == "other" else f"{ROLE_LABELS[r.role]} {r.score:.2f}"
            for r in roles
            if r.kind == kind
        }
        assert badges.texts() == expected
        assert len(expected) == 8 and not badges.legend.isHidden()  # on, inside the collapsed legend
        assert "reads = weight" in badges.legend.text() and badges.legend.text() in grid.header.legend_line.toolTip()
    assert any(t.startswith("reads 0.9") for t in app.badges["cross"].texts().values())
    cli = _cli(app.heads.n, app.heads.seed)  # the badges read what the CLI prints at the tab's N and seed
    for row in cli["heads"]:
        text = app.badges[row["kind"]].texts()[(row["layer"], row["head"])]
        assert text == f"{ROLE_LABELS[row['role']]} {row['role_score']:.2f}"
    app.session.set_source("31415")  # a new input moves nothing: roles belong to the model
    assert app.badges["cross"].texts() == {
        (r.layer, r.head): f"{ROLE_LABELS[r.role]} {r.score:.2f}" for r in roles if r.kind == "cross"
    }


def test_badges_show_on_the_weights_view_only_and_the_legend_says_so_elsewhere(qtbot, app):
    """The roles are scored on post-softmax weights: over scores, norms or rollout a badge would describe a map
    that is not on screen (a crisp rollout diagonal under "broad 0.60")."""
    from qt_helpers import wait_frame

    view, badges = app.playground, app.badges["cross"]
    view.grid_tabs.setCurrentWidget(view.grids["cross"])
    qtbot.waitUntil(lambda: bool(badges.texts()), timeout=5000)
    qtbot.mouseClick(view.grids["cross"].header.legend_toggle, Qt.MouseButton.LeftButton)  # the whole legend
    combo = view.view_modes.combo
    for index in range(combo.count()):
        mode = combo.itemData(index)
        combo.setCurrentIndex(index)
        wait_frame(qtbot, app.session)
        drawn = badges.layer.badges()
        if mode == "weights":
            assert len(drawn) == 8 and badges.legend.text().startswith("Badges: each head's role")
        else:
            assert not drawn and badges.legend.text().startswith("Role badges show on the Post-softmax weights")
        assert badges.legend.isVisible(), mode


def test_cancel_stops_the_analysis(qtbot, app):
    view = app.heads_view
    app.window.tabs.setCurrentWidget(view)
    type_number(qtbot, view.n_box, 400)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert not view.run_button.isEnabled() and view.cancel_button.isEnabled()
    assert view.maps.baseline_label.text().startswith("Analysing")  # not "press Analyse heads": it was pressed
    with qtbot.waitSignal(app.heads.running_changed, timeout=60000):
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    assert "cancelled" in view.status.text()
    assert "press Analyse heads" in view.maps.baseline_label.text()
    assert view.run_button.isEnabled() and app.heads.analysis is None


def test_a_new_model_during_the_analysis_says_so_and_shows_nothing_of_it(qtbot, app):
    from core_model import ModelConfig
    from visualizer.state.heads import MODEL_CHANGED

    view = app.heads_view
    app.window.tabs.setCurrentWidget(view)
    type_number(qtbot, view.n_box, 400)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    arrived = []
    app.heads.frame_changed.connect(arrived.append)
    app.hub.new_untrained(
        ModelConfig(vocab_size=13, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, max_len=64)
    )
    assert view.status.text() == MODEL_CHANGED and view.run_button.isEnabled()
    qtbot.wait(300)
    assert app.heads.analysis is None and not [a for a in arrived if a is not None]
    assert table_cell_text(view.maps.tables["cross"], 0, 0) == ""


def test_a_new_model_drops_the_old_importance_and_rescores_the_roles(qtbot, app):
    from core_model import ModelConfig

    view = app.heads_view
    app.window.tabs.setCurrentWidget(view)
    type_number(qtbot, view.n_box, 20)
    with qtbot.waitSignal(app.heads.frame_changed, timeout=120000):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert table_cell_text(view.maps.tables["cross"], 0, 0) != ""
    old_cross = app.badges["cross"].texts()
    assert old_cross
    app.hub.new_untrained(
        ModelConfig(vocab_size=13, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, max_len=64)
    )
    assert app.badges["cross"].texts() == {}  # the old model's roles never sit on the new maps
    with qtbot.waitSignal(app.heads.roles_changed, timeout=60000, check_params_cb=lambda roles: roles is not None):
        pass
    assert app.heads.analysis is None and table_cell_text(view.maps.tables["cross"], 0, 0) == ""
    assert "No importance for this model yet" in view.maps.baseline_label.text()
    app.window.tabs.setCurrentWidget(app.playground)
    app.playground.grid_tabs.setCurrentWidget(app.playground.grids["cross"])
    new_cross = app.badges["cross"].texts()
    assert sorted(new_cross) == [(0, 0), (0, 1)] and new_cross != old_cross
    assert view.roles.rowCount() == 2 * 3


def test_badges_of_a_grid_typed_into_while_hidden_sit_on_its_maps_when_shown(qtbot, app):
    """Badges on hidden grids are placed when the grid shows: after typing a longer input on the encoder tab, every
    cross-attention badge stands on the top-right corner of its (now wider) map, in the strip above it."""
    from PySide6.QtCore import QRectF
    from qt_helpers import retype, wait_frame

    from visualizer.widgets.heads.badge_layer import BADGE_FILL

    view = app.playground
    view.grid_tabs.setCurrentWidget(view.grids["encoder_self"])
    before = view.grids["cross"].current_maps().values.shape[-1]
    retype(qtbot, view.input_panel.source, "0123456789012")
    wait_frame(qtbot, app.session)
    view.grid_tabs.setCurrentWidget(view.grids["cross"])
    grid, badges = view.grids["cross"], app.badges["cross"]
    shown = grid.graphics.viewport().grab().toImage()  # what the user sees first (and the plot laid out)
    lay = grid.atlas_layout()
    assert lay.tk > before and lay.strip > 0  # the new input is wider than the one the badges were placed for
    drawn = badges.layer.badges()  # read straight off the layer: the grid's Show must have placed them
    roles = sorted((r.layer, r.head) for r in app.heads.roles if r.kind == "cross")
    assert len(drawn) == len(roles) == 8
    assert sorted((c.x(), c.y()) for c, _ in drawn) == sorted(
        (lay.map_rect(layer, head).topRight().x(), lay.map_rect(layer, head).topRight().y()) for layer, head in roles
    )
    assert badge_corners(badges) == {key: lay.map_rect(*key).topRight() for key in roles}
    # each badge's box lies in the strip above its own map on screen, filled with the badge colour laid over the
    # view's background (grabbed once with the badges and once without)
    badges.layer.setVisible(False)
    bare = grid.graphics.viewport().grab().toImage()
    badges.layer.setVisible(True)
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    alpha = BADGE_FILL.alphaF()
    for (corner, _), (box, text) in zip(drawn, badges.layer.fitted(to_device)):
        strip_box = to_device.mapRect(QRectF(corner.x() - lay.tk, corner.y() - lay.strip, lay.tk, lay.strip))
        assert text and strip_box.adjusted(-1, -1, 1, 1).contains(box), (corner, box, strip_box)
        x, y = int(box.left()) + 1, int(box.bottom()) - 1  # padding: no glyph there
        under, over = bare.pixelColor(x, y), shown.pixelColor(x, y)
        for channel in ("red", "green", "blue"):
            blended = alpha * getattr(BADGE_FILL, channel)() + (1 - alpha) * getattr(under, channel)()
            assert abs(getattr(over, channel)() - blended) <= 2, (corner, channel, over.name(), under.name())

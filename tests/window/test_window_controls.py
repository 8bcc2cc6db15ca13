"""Shortcuts, the warning banner, the Model panel's Apply and undo history, driven through the real window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication
from qt_helpers import start_app, wait_frame


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot)
    yield app
    app.hub.dirty = False
    app.training.shutdown(5000)
    app.window.close()


def wheel(widget, steps: int = 1) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


@pytest.mark.parametrize(
    "key, title",
    [
        (Qt.Key.Key_E, "Encoder self"),
        (Qt.Key.Key_D, "Decoder self"),
        (Qt.Key.Key_R, "Cross"),
        (Qt.Key.Key_E, "Encoder self"),
    ],
)
def test_alt_keys_pick_the_grid_tab_even_while_typing(qtbot, app, key, title):
    tabs = app.playground.grid_tabs
    tabs.setCurrentIndex(1 if title != "Decoder self" else 2)
    source = app.playground.input_panel.source
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    source.setFocus()
    text = source.text()
    qtbot.keyClick(source, key, Qt.KeyboardModifier.AltModifier)
    assert tabs.tabText(tabs.currentIndex()) == title
    assert app.window.tabs.currentIndex() == 0 and source.text() == text


def test_warning_banner_is_clear_of_the_status_bar_and_follows_training(qtbot, app):
    app.architecture.request(app.hub.config.__class__(d_model=24, n_heads=3))
    qtbot.waitUntil(lambda: app.hub.origin.startswith("untrained"), timeout=10000)
    label, bar = app.window.warning_label, app.window.statusBar()
    assert label.isVisible() and "Untrained" in label.text()
    app.window.show_message("A long status message " * 8)
    QApplication.processEvents()
    top = label.mapTo(app.window, QPoint(0, label.height()))
    assert top.y() <= bar.mapTo(app.window, QPoint(0, 0)).y()  # never drawn in the status bar's message area
    app.hub.set_training_active(True)
    assert "Untrained" not in label.text() and "Training this model" in label.text()
    app.hub.set_training_active(False)
    assert "Untrained" in label.text()


def test_restore_all_heads_is_enabled_only_when_a_head_is_off(qtbot, app):
    button = app.playground.restore_heads
    assert not button.isEnabled()
    app.session.set_head_enabled("encoder_self", 0, 0, False)
    assert button.isEnabled()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not button.isEnabled()


def test_wheel_over_an_unfocused_spin_box_changes_nothing(qtbot, app):
    panel = app.playground.model_panel
    spin, model = panel.spins["n_heads"], app.hub.model
    value = spin.value()
    wheel(spin, 1)
    wheel(panel.combos["positional"], -1)
    QApplication.processEvents()
    assert spin.value() == value and panel.combos["positional"].currentData() == app.hub.config.positional
    assert app.hub.model is model and not panel.apply_button.isEnabled()


def test_apply_builds_and_undo_brings_back_several_models_with_their_weights(qtbot, app):
    panel = app.playground.model_panel
    first = app.hub.model
    models = [first]
    for heads in (2, 1):
        panel.spins["n_heads"].setValue(heads)
        assert panel.apply_button.isEnabled() and app.hub.model is models[-1]
        qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda h=heads: app.hub.config.n_heads == h, timeout=10000)
        assert not panel.apply_button.isEnabled()
        models.append(app.hub.model)
    assert app.menus.undo.isEnabled()
    for expected in (models[1], models[0]):
        app.menus.undo.trigger()
        assert app.hub.model is expected
    assert app.hub.origin == "trained" or not app.hub.origin.startswith("untrained")
    assert not app.menus.undo.isEnabled()


def test_teacher_forcing_and_stepping_are_a_visible_switch_with_a_chip_legend(qtbot, app):
    view, panel = app.playground, app.playground.decoder_panel
    field = view.input_panel.source
    field.setText("01234")
    field.textEdited.emit("01234")
    wait_frame(qtbot, app.session)
    full = view.grids["decoder_self"].current_maps().values.shape[-1]
    assert panel.mode_buttons["teacher"].isChecked() and "expected output" in panel.mode_label.text()
    qtbot.mouseClick(panel.buttons["reset"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert panel.mode_buttons["stepping"].isChecked() and "decoded so far" in panel.mode_label.text()
    assert view.grids["decoder_self"].current_maps().values.shape[-1] == 1
    qtbot.mouseClick(panel.mode_buttons["teacher"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert panel.mode_buttons["teacher"].isChecked() and not panel.mode_buttons["stepping"].isChecked()
    assert view.grids["decoder_self"].current_maps().values.shape[-1] == full
    qtbot.mouseClick(panel.mode_buttons["stepping"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert app.session.decode_snapshot().stepping
    assert panel.legend.isVisible() and panel.legend.texts() == [
        "right",
        "wrong",
        "no expectation",
        "expected",
        "forced by you",
    ]
    image = panel.legend.grab().toImage()
    colours = {image.pixelColor(r.center().x(), r.top() + 3).name() for r, *_ in panel.legend._items}
    assert {"#2e7d32", "#c62828", "#737373", "#eceff1"} <= colours


def test_wheel_over_the_trainer_timeline_leaves_the_snapshot_shown(qtbot, app):
    app.window.tabs.setCurrentWidget(app.trainer_page)
    probe = app.trainer_tab.probe
    qtbot.waitUntil(probe.isVisible)
    slider = probe.slider
    slider.setEnabled(True)
    slider.setRange(0, 10)
    slider.setValue(5)
    wheel(slider, 1)
    wheel(slider, -3)
    QApplication.processEvents()
    assert slider.value() == 5

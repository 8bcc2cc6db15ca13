"""MaskPanel: real clicks and keys edit the MaskSpec; previews show the given masks; the weights/scores toggle."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QColor, QHelpEvent
from PySide6.QtWidgets import QApplication, QCheckBox, QStyle, QStyleOptionButton, QToolTip

from core_model.masks import MaskSpec
from visualizer.widgets.playground.mask_panel import MaskPanel
from visualizer.widgets.playground.mask_preview import MASK_LUT


@pytest.fixture
def panel(qtbot) -> MaskPanel:
    """A shown, active panel with the default spec."""
    widget = MaskPanel()
    qtbot.addWidget(widget)
    widget.resize(720, 420)
    with qtbot.waitActive(widget):
        widget.show()
    return widget


def _click_box(qtbot, box: QCheckBox) -> None:
    """Click the indicator of a check box, where a user would."""
    option = QStyleOptionButton()
    option.initFrom(box)
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=rect.center())


def _collect(signal) -> list:
    """Every emission of `signal`, to check there was exactly one."""
    got: list = []
    signal.connect(got.append)
    return got


@pytest.mark.parametrize("field", ["encoder_padding", "decoder_causal", "decoder_padding", "cross_padding"])
def test_clicking_a_mask_box_flips_that_field(qtbot, panel, field):
    before = panel.spec()
    got = _collect(panel.spec_changed)
    _click_box(qtbot, panel.flag_boxes[field])
    assert got == [replace(before, **{field: not getattr(before, field)})]
    assert panel.spec() == got[0]
    _click_box(qtbot, panel.flag_boxes[field])
    assert got[-1] == before and len(got) == 2


@pytest.mark.parametrize("field", ["encoder_window", "decoder_window"])
def test_window_box_uses_the_width(qtbot, panel, field):
    assert not panel.window_spin.isEnabled()
    got = _collect(panel.spec_changed)
    _click_box(qtbot, panel.window_boxes[field])
    assert got == [replace(MaskSpec(), **{field: 3})]
    assert panel.window_spin.isEnabled()
    _click_box(qtbot, panel.window_boxes[field])
    assert got[-1] == MaskSpec() and not panel.window_spin.isEnabled()


def test_window_width_by_keyboard(qtbot, panel):
    _click_box(qtbot, panel.window_boxes["decoder_window"])
    spin = panel.window_spin
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    with qtbot.waitSignal(panel.spec_changed, timeout=1000) as blocker:
        qtbot.keyClick(spin, Qt.Key.Key_Up)
    assert blocker.args[0].decoder_window == 4 and blocker.args[0].encoder_window is None
    qtbot.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(spin, "12")
    assert panel.spec() == MaskSpec(decoder_window=12)
    assert spin.value() == 12


def test_width_applies_to_both_windows(qtbot, panel):
    _click_box(qtbot, panel.window_boxes["encoder_window"])
    _click_box(qtbot, panel.window_boxes["decoder_window"])
    got = _collect(panel.spec_changed)
    panel.window_spin.setFocus()
    qtbot.keyClick(panel.window_spin, Qt.Key.Key_Down)
    assert got == [MaskSpec(encoder_window=2, decoder_window=2)]


def test_width_range(panel):
    assert (panel.window_spin.minimum(), panel.window_spin.maximum(), panel.window_spin.value()) == (1, 512, 3)


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        (Qt.Key.Key_C, "decoder_causal", False),
        (Qt.Key.Key_N, "encoder_padding", False),
        (Qt.Key.Key_G, "decoder_padding", False),
        (Qt.Key.Key_I, "cross_padding", False),
        (Qt.Key.Key_O, "encoder_window", 3),
        (Qt.Key.Key_L, "decoder_window", 3),
    ],
    ids=["alt-c", "alt-n", "alt-g", "alt-i", "alt-o", "alt-l"],
)
def test_mnemonics_toggle_boxes(qtbot, panel, key, field, value):
    with qtbot.waitSignal(panel.spec_changed, timeout=1000) as blocker:
        qtbot.keyClick(panel, key, Qt.KeyboardModifier.AltModifier)
    assert blocker.args[0] == replace(MaskSpec(), **{field: value})


def test_set_spec_is_silent_and_shown(qtbot, panel):
    spec = MaskSpec(encoder_padding=False, decoder_causal=False, encoder_window=7, cross_padding=False)
    with qtbot.assertNotEmitted(panel.spec_changed):
        panel.set_spec(spec)
    assert panel.spec() == spec
    assert not panel.flag_boxes["encoder_padding"].isChecked()
    assert not panel.flag_boxes["decoder_causal"].isChecked()
    assert panel.flag_boxes["decoder_padding"].isChecked()
    assert panel.window_boxes["encoder_window"].isChecked()
    assert not panel.window_boxes["decoder_window"].isChecked()
    assert panel.window_spin.value() == 7 and panel.window_spin.isEnabled()


def test_unrelated_edit_keeps_two_different_widths(qtbot, panel):
    spec = MaskSpec(encoder_window=5, decoder_window=9)
    panel.set_spec(spec)
    got = _collect(panel.spec_changed)
    _click_box(qtbot, panel.flag_boxes["cross_padding"])
    assert got == [replace(spec, cross_padding=False)]


def _seen_mask(panel, kind: str) -> np.ndarray:
    """The mask as a user sees it: the preview's pixel at each cell centre, light (True) or dark (False)."""
    preview = panel.preview_widget
    image = preview.grab().toImage()
    ratio = image.devicePixelRatio()
    rect = preview.image_rect(kind)
    tq, tk = panel.preview_widget.matrix(kind).shape
    seen = np.zeros((tq, tk), bool)
    for i in range(tq):
        for j in range(tk):
            x = rect.left() + (j + 0.5) * rect.width() / tk
            y = rect.top() + (i + 0.5) * rect.height() / tq
            rgb = QColor(image.pixel(int(x * ratio), int(y * ratio))).getRgb()[:3]
            assert rgb in (tuple(MASK_LUT[0]), tuple(MASK_LUT[1])), f"cell ({i}, {j}) has colour {rgb}"
            seen[i, j] = rgb == tuple(MASK_LUT[1])
    return seen


def test_previews_show_the_given_masks(qtbot, panel):
    causal = np.tril(np.ones((5, 5), dtype=bool))
    cross = np.array([[True, True, False], [True, False, False]])
    panel.set_previews({"encoder_self": np.ones((4, 4), dtype=bool), "decoder_self": causal, "cross": cross})
    np.testing.assert_array_equal(_seen_mask(panel, "decoder_self"), causal)
    np.testing.assert_array_equal(_seen_mask(panel, "cross"), cross)
    np.testing.assert_array_equal(_seen_mask(panel, "encoder_self"), np.ones((4, 4), bool))
    np.testing.assert_array_equal(panel.preview_widget.matrix("cross"), cross)
    assert "Decoder self: 15 of 25 query-key pairs may attend" in panel.preview_widget.accessibleDescription()
    assert panel.preview_widget.matrix("decoder_self").dtype == bool
    assert MASK_LUT[1].sum() > MASK_LUT[0].sum()  # allowed is the light colour
    rect = panel.preview_widget.image_rect("cross")
    assert abs(rect.width() / 3 - rect.height() / 2) <= 1  # square cells
    panel.set_previews({"cross": cross.T})
    np.testing.assert_array_equal(_seen_mask(panel, "cross"), cross.T)
    np.testing.assert_array_equal(panel.preview_widget.matrix("cross"), cross.T)
    np.testing.assert_array_equal(_seen_mask(panel, "decoder_self"), causal)  # not given: kept


def test_preview_tooltip_names_the_cell(qtbot, panel):
    panel.set_previews({"cross": np.array([[True, False]])})
    preview = panel.preview_widget
    rect = preview.image_rect("cross")
    pos = QPoint(rect.left() + 3 * rect.width() // 4, rect.center().y())
    QApplication.sendEvent(preview, QHelpEvent(QEvent.Type.ToolTip, pos, preview.mapToGlobal(pos)))
    qtbot.waitUntil(QToolTip.isVisible)
    assert QToolTip.text() == "Cross: query 0 -> key 1 masked"
    QToolTip.hideText()


def test_previews_start_empty_and_reject_bad_input(panel):
    assert panel.preview_widget.matrix("cross").shape == (0, 0)
    with pytest.raises(ValueError, match="kind"):
        panel.set_previews({"nope": np.ones((2, 2), dtype=bool)})
    with pytest.raises(ValueError, match="matrix"):
        panel.set_previews({"cross": np.ones(3, dtype=bool)})


def test_every_control_explains_itself(panel):
    boxes = [*panel.flag_boxes.values(), *panel.window_boxes.values()]
    assert all(len(b.toolTip()) > 20 for b in [*boxes, panel.window_spin])
    assert "j <= i" in panel.flag_boxes["decoder_causal"].toolTip()

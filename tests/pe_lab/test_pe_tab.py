"""The Positional encoding tab: driven by keyboard and mouse, checked against the paper's formulas."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from pyqtgraph.exporters import ImageExporter
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QSpinBox

from core_model.pe_analysis import PELabParams
from visualizer.state.pe_lab import PELabState, parse_dims
from visualizer.widgets.pe_lab.tab import PETab


def sinusoid(positions: np.ndarray, dims: list[int], d_model: int, base: float) -> np.ndarray:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(same), written out independently."""
    cols = []
    for dim in dims:
        two_i = dim - dim % 2
        angle = positions / base ** (two_i / d_model)
        cols.append(np.sin(angle) if dim % 2 == 0 else np.cos(angle))
    return np.stack(cols, axis=1)


@pytest.fixture
def tab(qtbot):
    state = PELabState()  # d_model 64, 100 positions, base 10000, dims 4-7, head dim 16, references 0 and 50
    widget = PETab(state)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    return widget


def child(tab: PETab, cls, name: str):
    found = tab.findChild(cls, name)
    assert found is not None, name
    return found


def type_and_enter(qtbot, widget, text: str) -> None:
    """Select what is there, type over it, press Enter: what a user does."""
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(widget, Qt.Key.Key_Backspace)
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


def curves(tab: PETab, name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The curves on screen (the tab hides surplus curves of its pool)."""
    items = tab.plot_items()[name].listDataItems()
    return [tuple(np.asarray(a) for a in item.getData()) for item in items if item.isVisible()]


def image(tab: PETab) -> np.ndarray:
    items = [i for i in tab.plot_items()["matrix"].items if isinstance(i, pg.ImageItem)]
    assert len(items) == 1
    return np.asarray(items[0].image)


def test_worked_example_row_one(qtbot, tab):
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_d_model"), "4")
    type_and_enter(qtbot, child(tab, QLineEdit, "pe_base"), "100")
    assert image(tab).shape == (100, 4)
    np.testing.assert_allclose(image(tab)[1], [0.84147098, 0.54030231, 0.09983342, 0.99500417], atol=5e-9)


def test_typed_dims_draw_the_formula(qtbot, tab):
    edit = child(tab, QLineEdit, "pe_dims")
    type_and_enter(qtbot, edit, "0,3,10-11")
    drawn = curves(tab, "waveforms")
    assert len(drawn) == 4
    expected = sinusoid(np.arange(100.0), [0, 3, 10, 11], 64, 10000.0)
    for (x, y), column in zip(drawn, expected.T):
        np.testing.assert_array_equal(x, np.arange(100))
        np.testing.assert_allclose(y, column, atol=1e-12)
    assert edit.text() == "0,3,10,11"
    assert tab.state.params.dims == (0, 3, 10, 11)


def test_d_model_typed_and_stepped_changes_image_shape(qtbot, tab):
    spin = child(tab, QSpinBox, "pe_d_model")
    image_item_before = [i for i in tab.plot_items()["matrix"].items if isinstance(i, pg.ImageItem)][0]
    type_and_enter(qtbot, spin, "32")
    assert image(tab).shape == (100, 32)
    qtbot.keyClick(spin, Qt.Key.Key_Up)
    assert image(tab).shape == (100, 34)
    np.testing.assert_allclose(image(tab), sinusoid(np.arange(100.0), list(range(34)), 34, 10000.0), atol=1e-12)
    assert [i for i in tab.plot_items()["matrix"].items if isinstance(i, pg.ImageItem)][0] is image_item_before


def test_n_positions_changes_rows(qtbot, tab):
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_n_positions"), "37")
    assert image(tab).shape == (37, 64)
    assert all(len(x) == 37 for x, _ in curves(tab, "waveforms") + curves(tab, "similarity"))


def test_base_change_changes_data(qtbot, tab):
    before_image, before_curves = image(tab).copy(), curves(tab, "waveforms")
    type_and_enter(qtbot, child(tab, QLineEdit, "pe_base"), "100")
    assert tab.state.params.base == 100.0
    assert not np.allclose(image(tab), before_image)
    np.testing.assert_allclose(image(tab), sinusoid(np.arange(100.0), list(range(64)), 64, 100.0), atol=1e-12)
    for (_, y), (_, old) in zip(curves(tab, "waveforms"), before_curves):
        assert not np.allclose(y, old)


@pytest.mark.parametrize(
    "text, message",
    [("4,x", "'x' is not a dimension number"), ("999", "between 0 and 63"), ("", "at least one"), ("2,2", "once")],
)
def test_invalid_dims_show_error_and_leave_plots(qtbot, tab, text, message):
    before_curves, before_image = curves(tab, "waveforms"), image(tab).copy()
    with qtbot.assertNotEmitted(tab.state.changed):
        type_and_enter(qtbot, child(tab, QLineEdit, "pe_dims"), text)
    error = child(tab, QLabel, "pe_error_dims")
    assert message in error.text() and error.isVisible()
    after = curves(tab, "waveforms")
    assert len(after) == len(before_curves) == 4
    for (x, y), (x0, y0) in zip(after, before_curves):
        np.testing.assert_array_equal(x, x0)
        np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(image(tab), before_image)
    type_and_enter(qtbot, child(tab, QLineEdit, "pe_dims"), "1,2")  # a valid entry clears the message
    assert error.text() == "" and not error.isVisible()
    assert len(curves(tab, "waveforms")) == 2


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("d_model", "7", "d_model must be even"),
        ("head_dim", "9", "head_dim must be even"),
        ("base", "abc", "base must be a number"),
        ("base", "1", "base must be a finite number > 1"),
    ],
)
def test_invalid_numbers_show_error_next_to_control(qtbot, tab, name, text, message):
    params = tab.state.params
    control = tab.findChild(QSpinBox, f"pe_{name}") or child(tab, QLineEdit, f"pe_{name}")
    type_and_enter(qtbot, control, text)
    assert message in child(tab, QLabel, f"pe_error_{name}").text()
    assert tab.state.params == params
    assert image(tab).shape == (100, 64)


def test_narrower_d_model_keeps_dims_that_exist(qtbot, tab):
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_d_model"), "6")
    assert child(tab, QLineEdit, "pe_dims").text() == "4,5"
    assert len(curves(tab, "waveforms")) == 2


def test_sinusoidal_similarity_depends_only_on_offset(qtbot, tab):
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_reference"), "3")
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_second_reference"), "211")
    data = tab.state.data
    assert data.params.references == (3, 211)
    assert data.similarity_sin.dtype == np.float64
    assert np.max(np.abs(data.similarity_sin - data.similarity_sin_second)) < 1e-12
    pe = sinusoid(np.arange(400.0), list(range(64)), 64, 10000.0)
    np.testing.assert_allclose(data.similarity_sin, pe[3:103] @ pe[3], atol=1e-10)
    omega = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    np.testing.assert_allclose(data.similarity_sin, np.cos(np.arange(100)[:, None] * omega).sum(axis=1), atol=1e-10)
    drawn = dict(zip(("sin", "sin_second", "rope", "rope_second"), curves(tab, "similarity")))
    np.testing.assert_allclose(drawn["sin"][1], data.similarity_sin / 32.0, atol=1e-12)  # |PE(m)|^2 = d/2


def test_rope_similarity_depends_only_on_offset(qtbot, tab):
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_reference"), "5")
    type_and_enter(qtbot, child(tab, QSpinBox, "pe_second_reference"), "300")
    data = tab.state.data
    assert data.similarity_rope.dtype == np.float64
    assert np.max(np.abs(data.similarity_rope - data.similarity_rope_second)) < 1e-12
    assert np.ptp(data.similarity_rope) > 0.1  # it does vary with the offset


def test_rope_similarity_of_ones_matches_closed_form(qtbot, tab):
    combo = child(tab, QComboBox, "pe_rope_vectors")
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_End)
    assert combo.currentText() == "ones"
    data = tab.state.data
    theta = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    expected = 2 * np.cos(np.arange(100)[:, None] * theta).sum(axis=1)  # R(m)1 . R(m+k)1 = sum 2 cos(k theta_i)
    np.testing.assert_allclose(data.similarity_rope, expected, atol=1e-12)
    np.testing.assert_allclose(data.similarity_rope_second, expected, atol=1e-12)
    assert data.rope_norm == pytest.approx(16.0)


def test_rope_angle_curves_and_wrap_checkbox(qtbot, tab):
    wrap = child(tab, QCheckBox, "pe_wrap")
    pairs = tab.state.data.rope_pairs
    assert pairs[0] == 0 and pairs[-1] == 7
    theta = 10000.0 ** (-2 * np.array(pairs) / 16)
    unwrapped = np.arange(100)[:, None] * theta
    assert wrap.isChecked()
    for (_, y), column in zip(curves(tab, "rope_angles"), unwrapped.T):
        assert np.all(y > -np.pi) and np.all(y <= np.pi)
        np.testing.assert_allclose(np.cos(y), np.cos(column), atol=1e-9)
    qtbot.mouseClick(wrap, Qt.MouseButton.LeftButton)
    assert not wrap.isChecked()
    for (_, y), column in zip(curves(tab, "rope_angles"), unwrapped.T):
        np.testing.assert_allclose(y, column, atol=1e-12)


def test_set_model_pe_updates_label_state_and_highlight(qtbot, tab):
    label = child(tab, QLabel, "pe_model_label")
    assert "no model" in label.text()
    with qtbot.waitSignal(tab.state.changed):
        tab.set_model_pe("rope", 128, 500.0, 32)
    assert label.text() == "Loaded model uses: RoPE (head dim 32)"
    p = tab.state.params
    assert (p.d_model, p.base, p.head_dim, tab.state.pe_kind) == (128, 500.0, 32, "rope")
    assert child(tab, QSpinBox, "pe_d_model").value() == 128
    assert child(tab, QLineEdit, "pe_base").text() == "500"
    assert image(tab).shape == (100, 128)
    plots = tab.plot_items()
    assert "loaded model" in plots["rope_angles"].titleLabel.text
    assert "loaded model" not in plots["matrix"].titleLabel.text
    tab.set_model_pe("sinusoidal", 64, 10000.0, 15)  # odd head size: the lab keeps its RoPE head dim
    assert label.text() == "Loaded model uses: sinusoidal PE (d_model 64)"
    assert tab.state.params.head_dim == 32
    assert "loaded model" in plots["matrix"].titleLabel.text
    assert "loaded model" not in plots["rope_angles"].titleLabel.text


def test_set_model_pe_rejects_unknown_kind(qtbot, tab):
    params = tab.state.params
    tab.set_model_pe("alibi", 64, 10000.0, 16)
    assert "not synced" in child(tab, QLabel, "pe_model_label").text()
    assert tab.state.params == params and tab.state.pe_kind is None


def test_plots_have_labels_and_export(qtbot, tab, tmp_path):
    plots = tab.plot_items()
    assert set(plots) == {"waveforms", "matrix", "rope_angles", "similarity"}
    for name, plot in plots.items():
        assert isinstance(plot, pg.PlotItem)
        assert plot.titleLabel.text
        assert plot.getAxis("bottom").labelText and plot.getAxis("left").labelText
        path = tmp_path / f"{name}.png"
        ImageExporter(plot).export(str(path))
        assert path.stat().st_size > 1000


def test_curves_are_updated_in_place(qtbot, tab):
    before = {name: list(plot.listDataItems()) for name, plot in tab.plot_items().items()}
    type_and_enter(qtbot, child(tab, QLineEdit, "pe_base"), "500")
    after = {name: list(plot.listDataItems()) for name, plot in tab.plot_items().items()}
    assert all(a is b for name in before for a, b in zip(before[name], after[name], strict=True))


# ----- the view model alone (no widgets)


def test_state_rejects_invalid_values_without_emitting(qtbot):
    state = PELabState()
    with qtbot.assertNotEmitted(state.changed):
        for call, value in [
            (state.set_d_model, 3),
            (state.set_d_model, 2048),
            (state.set_n_positions, 0),
            (state.set_base, 1.0),
            (state.set_base, float("nan")),
            (state.set_head_dim, 5),
            (state.set_dims, [64]),
            (state.set_reference, -1),
            (state.set_rope_vectors, "zeros"),
        ]:
            with pytest.raises(ValueError):
                call(value)
    assert state.params == PELabParams()


def test_state_emits_once_per_real_change(qtbot):
    state = PELabState()
    with qtbot.waitSignal(state.changed) as blocker:
        state.set_base(500.0)
    assert blocker.args[0].params.base == 500.0
    with qtbot.assertNotEmitted(state.changed):
        state.set_base(500.0)


@pytest.mark.parametrize("text, dims", [("4,5,6,7", (4, 5, 6, 7)), ("4-7", (4, 5, 6, 7)), (" 1 3, 5 ", (1, 3, 5))])
def test_parse_dims(text, dims):
    assert parse_dims(text) == dims


def _luminance(colour) -> float:
    """WCAG relative luminance of a QColor."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


@pytest.mark.parametrize("name", ["waveforms", "rope_angles"])
def test_every_curve_stands_out_from_the_plot_background(qtbot, tab, name):
    """Each curve's colour has at least the 3:1 contrast WCAG asks of graphics against the plot's background (a
    full-value blue on black had about 2.4:1: the student could not find "pair 6")."""
    if name == "waveforms":  # six curves: one of them gets the blue hue
        type_and_enter(qtbot, child(tab, QLineEdit, "pe_dims"), "0-5")
    plot = tab.plot_items()[name]
    background = _luminance(plot.scene().views()[0].backgroundBrush().color())
    items = plot.listDataItems()
    assert len(items) >= 6
    for item in items:
        line = _luminance(item.opts["pen"].color())
        ratio = (max(line, background) + 0.05) / (min(line, background) + 0.05)
        assert ratio >= 3.0, (name, item.opts["pen"].color().name(), round(ratio, 2))


def test_the_second_reference_curves_are_seen_over_the_first_and_say_they_lie_on_them(qtbot, tab):
    """The curves for "Second m" lie exactly on the first reference's (only the offset Δ matters): drawn dashed in a
    lighter shade on top, so a new Second m visibly redraws them, and their legend says why they coincide."""
    from PySide6.QtGui import QColor, QImage
    from PySide6.QtWidgets import QApplication

    from visualizer.widgets.pe_lab.tab import ROPE_COLOR, SIN_COLOR

    type_and_enter(qtbot, child(tab, QSpinBox, "pe_second_reference"), "55")
    QApplication.processEvents()
    plot = tab.plot_items()["similarity"]
    names = [label.text for _, label in tab._sim_legend.items]  # noqa: SLF001 - the legend under the plot
    assert "sinusoidal, m = 55: on the m = 0 curve, only Δ matters" in names
    assert any(n.startswith("RoPE, m = 55: on the m = 0 curve, only Δ matters") for n in names)
    view = tab._views["similarity"]  # noqa: SLF001 - the plot's own widget, to grab what it shows
    image = view.grab().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    rgba = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    rgba = rgba[:, : image.width() * 4].reshape(image.height(), image.width(), 4).astype(int)
    box = view.mapFromScene(plot.vb.sceneBoundingRect()).boundingRect()
    inside = rgba[box.top() : box.bottom(), box.left() : box.right(), :3]  # the curves, not the legend's samples
    for colour in (SIN_COLOR, ROPE_COLOR):
        light = QColor(colour).lighter(170)
        near = np.abs(inside - np.array([light.red(), light.green(), light.blue()])).max(axis=2) < 40
        assert near.sum() > 50, f"the second reference's {colour} curve is hidden under the first"

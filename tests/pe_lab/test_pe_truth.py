"""The PE tab tells the truth: RoPE similarity peaks at offset 0 by default, a dense matrix is averaged (not
aliased) on screen, and legends never cover a curve. Real widget, offscreen; asserts on items and pixels."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QComboBox, QLabel, QSpinBox

from visualizer.state.pe_lab import PELabState
from visualizer.widgets.pe_lab.tab import PETab


@pytest.fixture
def tab(qtbot):
    widget = PETab(PELabState())
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    with qtbot.waitExposed(widget):  # QT-NOTES: called bare it waits for nothing
        widget.show()
    return widget


def _similarity_curve(tab: PETab, key: str) -> np.ndarray:
    return np.asarray(tab._sim_curves[key].getData()[1])


def test_rope_similarity_defaults_to_q_equal_k_with_a_random_pair_control(qtbot, tab):
    combo = tab.findChild(QComboBox, "pe_rope_vectors")
    assert combo.currentText() == "q = k"
    y = _similarity_curve(tab, "rope")
    assert y[0] == pytest.approx(1.0) and y[0] == y.max()  # random q and k would give about -0.5 here
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert combo.currentText() == "random pair"
    assert _similarity_curve(tab, "rope")[0] < 0.5


def test_legends_sit_beside_the_plots_not_over_the_curves(qtbot, tab):
    for name, legend in (
        ("waveforms", tab._wave_legend),
        ("rope_angles", tab._rope_legend),
        ("similarity", tab._sim_legend),
    ):
        view_box = tab.plot_items()[name].getViewBox()
        assert legend.isVisible() and legend.items  # outside the view box, beside it
        assert not legend.sceneBoundingRect().intersects(view_box.sceneBoundingRect()), name


def test_every_plot_and_legend_is_whole_at_the_size_of_a_1280x800_window(qtbot, tab):
    """The tab gets about 1270 x 690 px there; a legend wider than its half of the tab pushed the similarity plot's
    right end (offsets past 80) and the legend's last names out of sight."""
    tab.set_model_pe("rope", 64, 10000.0, 16)  # the shipped model: its curves are named "(loaded model)"
    tab.resize(1270, 690)
    qtbot.waitUntil(lambda: tab.width() == 1270)
    legends = {"waveforms": tab._wave_legend, "rope_angles": tab._rope_legend, "similarity": tab._sim_legend}
    for name, legend in legends.items():
        view = tab._views[name]
        seen = view.mapToScene(view.viewport().rect()).boundingRect().adjusted(-1, -1, 1, 1)
        for item in (tab.plot_items()[name], legend):
            assert seen.contains(item.sceneBoundingRect()), (name, type(item).__name__, item.sceneBoundingRect(), seen)


def test_2000_positions_draw_an_averaged_image_not_aliased_blocks(qtbot, tab):
    spin = tab.findChild(QSpinBox, "pe_n_positions")
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "2000")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    assert tab.state.params.n_positions == 2000
    view = tab._views["matrix"]
    pixmap = view.grab().toImage()
    plot = tab.plot_items()["matrix"]
    vb = plot.getViewBox()
    # dimension 0 is sin(position): period ~6.3 rows, so ~20 periods per screen pixel; the honest picture is
    # their average (~0, the middle colour), not the samples that happen to hit a pixel (red and blue bands)
    top, bottom = vb.mapViewToScene(QPointF(0, 100)), vb.mapViewToScene(QPointF(0, 1900))
    ratio = pixmap.width() / view.width()
    x = int(view.mapFromScene(top).x() * ratio)
    ys = range(int(view.mapFromScene(top).y() * ratio), int(view.mapFromScene(bottom).y() * ratio))
    reds = np.array([pixmap.pixelColor(x, y).red() for y in ys], float)
    blues = np.array([pixmap.pixelColor(x, y).blue() for y in ys], float)
    assert len(reds) > 100
    assert np.std(reds - blues) < 25, (np.std(reds - blues), reds[:10], blues[:10])


LINE_PLOTS = ("waveforms", "rope_angles", "similarity")


def _set_positions(qtbot, tab: PETab, n: int) -> None:
    spin = tab.findChild(QSpinBox, "pe_n_positions")
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, str(n))
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    assert tab.state.params.n_positions == n


def test_2000_positions_draw_curves_thinned_to_the_pixels_and_zoom_shows_the_true_curve(qtbot, tab):
    """2000 samples drawn into ~500 px make solid blocks: each curve holds about one min/max pair per pixel."""
    _set_positions(qtbot, tab, 2000)
    qtbot.wait(50)
    for name in LINE_PLOTS:
        plot = tab.plot_items()[name]
        width = plot.getViewBox().width()
        assert 100 < width < 1000
        items = [item for item in plot.listDataItems() if item.getOriginalDataset()[0] is not None]
        assert items, name
        for item in items:
            assert len(item.getOriginalDataset()[0]) >= 2000
            shown = len(item.getData()[0])
            assert shown <= 2.2 * width, (name, shown, width)
    # zoomed in to positions 0-50, every sample is drawn and equals sin / cos(pos / base^(2i/d))
    p = tab.state.params
    plot = tab.plot_items()["waveforms"]
    plot.getViewBox().setXRange(0, 50, padding=0)
    qtbot.wait(50)
    curves = [item for item in plot.listDataItems() if item.scene() is not None]
    assert len(curves) == len(p.dims)
    pos = np.arange(51, dtype=float)
    for curve, dim in zip(curves, p.dims):
        x, y = (np.asarray(a) for a in curve.getData())
        assert len(x) < 200  # clipped to the view
        inside = (x >= 0) & (x <= 50)
        np.testing.assert_array_equal(x[inside], pos)
        angle = pos / p.base ** ((dim - dim % 2) / p.d_model)
        expected = np.sin(angle) if dim % 2 == 0 else np.cos(angle)
        np.testing.assert_allclose(y[inside], expected, atol=1e-6)


def _note(tab: PETab, name: str) -> str:
    label = tab.findChild(QLabel, f"pe_note_{name}")
    assert label is not None and label.isVisible(), name
    return label.text()


def _legend(legend) -> dict[str, object]:
    """Legend text -> the curve its sample stands for."""
    return {label.text: sample.item for sample, label in legend.items}


def _peak_of(y: np.ndarray, block: int) -> np.ndarray:
    """What pyqtgraph's 'peak' downsampling draws: each block's max then min."""
    n = len(y) // block
    blocks = y[: n * block].reshape(n, block)
    return np.stack([blocks.max(axis=1), blocks.min(axis=1)], axis=1).ravel()


def test_2000_positions_name_exactly_the_pairs_drawn_and_draw_each_columns_min_max(qtbot, tab):
    """The note names the pairs drawn and those hidden (2 and 5) and says that a pixel column holds ~4 positions;
    each column draws their min and max (samples alone would make the fast pairs a striped band, the waveforms a
    solid block)."""
    _set_positions(qtbot, tab, 2000)
    qtbot.wait(50)
    data = tab.state.data
    assert data.rope_pairs == (0, 1, 3, 4, 6, 7)
    rope = tab.plot_items()["rope_angles"]
    width = rope.getViewBox().width()
    note = _note(tab, "rope_angles")
    assert "Drawn: pairs 0, 1, 3, 4, 6, 7 of 0–7; pairs 2, 5 hidden (the RoPE pairs box picks them)." in note
    assert f"2000 positions in {width:.0f} px: each pixel column shows the min–max of ~{2000 / width:.0f}" in note
    assert "6 of 8 pairs" in rope.titleLabel.text
    legend = _legend(tab._rope_legend)
    assert [text.split(" (")[0] for text in legend] == [f"pair {i}" for i in data.rope_pairs]
    x0, x1 = rope.getViewBox().viewRange()[0]
    block = int((x1 - x0) / width)  # positions per pixel of the view: pyqtgraph's block (SAMPLES_PER_PIXEL = 1)
    assert block >= 2
    for text, curve in legend.items():
        pair = int(text.split(" (")[0].split()[1])
        original = np.asarray(curve.getOriginalDataset()[1])
        np.testing.assert_array_equal(original, data.rope_angles_wrapped[:, pair])  # the pair its legend names
        x, y = (np.asarray(a) for a in curve.getData())  # what pyqtgraph draws
        assert len(x) <= 2.2 * width
        np.testing.assert_array_equal(y, _peak_of(original, block))  # each column's max and min: an envelope
    waves = _legend(tab._wave_legend)
    assert [text.split(" (")[0] for text in waves] == [f"dim {d}" for d in (4, 5, 6, 7)]
    assert "Drawn: dimensions 4–7 of 0–63" in _note(tab, "waveforms")
    assert "solid band" in _note(tab, "waveforms") and "period 11.2" in next(iter(waves))
    for curve in waves.values():
        original = np.asarray(curve.getOriginalDataset()[1])
        np.testing.assert_array_equal(np.asarray(curve.getData()[1]), _peak_of(original, block))


def test_100_positions_say_what_is_drawn_and_nothing_about_thinning(qtbot, tab):
    note = _note(tab, "rope_angles")
    assert note == "Drawn: pairs 0, 1, 3, 4, 6, 7 of 0–7; pairs 2, 5 hidden (the RoPE pairs box picks them)."
    assert "px" not in _note(tab, "similarity")


def test_the_pairs_box_draws_the_pairs_typed_and_bad_pairs_are_explained_beside_it(qtbot, tab):
    """Typed pairs replace the default spread (the hidden ones included), the note and legend name them, a smaller
    head drops those it no longer has, and emptying the box brings the spread back."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLineEdit, QSpinBox

    box = tab.findChild(QLineEdit, "pe_pairs")
    error = tab.findChild(QLabel, "pe_error_pairs")

    def enter(text: str) -> None:
        box.selectAll()
        qtbot.keyClick(box, Qt.Key.Key_Backspace)
        qtbot.keyClicks(box, text)
        qtbot.keyClick(box, Qt.Key.Key_Return)

    enter("2, 5-7")
    data = tab.state.data
    assert data.rope_pairs == (2, 5, 6, 7)
    legend = _legend(tab._rope_legend)
    assert [text.split(" (")[0] for text in legend] == ["pair 2", "pair 5", "pair 6", "pair 7"]
    for text, curve in legend.items():
        pair = int(text.split(" (")[0].split()[1])
        np.testing.assert_array_equal(np.asarray(curve.getOriginalDataset()[1]), data.rope_angles_wrapped[:, pair])
    assert _note(tab, "rope_angles").startswith("Drawn: pairs 2, 5–7 of 0–7; pairs 0, 1, 3, 4 hidden")
    assert "4 of 8 pairs" in tab.plot_items()["rope_angles"].titleLabel.text
    enter("9")
    assert error.isVisible() and "pair must be between 0 and 7, got 9" in error.text()
    assert tab.state.data.rope_pairs == (2, 5, 6, 7)
    head = tab.findChild(QSpinBox, "pe_head_dim")
    head.setValue(12)  # 6 pairs: 6 and 7 go
    assert tab.state.data.rope_pairs == (2, 5) and box.text() == "2,5" and not error.isVisible()
    enter("")
    assert tab.state.data.rope_pairs == (0, 1, 2, 3, 4, 5) and box.text() == ""

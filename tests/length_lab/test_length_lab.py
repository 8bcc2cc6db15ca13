"""The Length lab tab driven by clicks: its numbers equal `eval --lengths`, it stays responsive, cancel works, a
clicked length shows both models' cross-attention, "train both now" trains and evaluates."""

from __future__ import annotations

import dataclasses
import json
import re
import time

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer

from core_model import ModelConfig, build_model
from core_model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer
from visualizer.cli import main
from visualizer.state import length_lab
from visualizer.state.length_lab import LengthLabState
from visualizer.state.length_lab_snapshots import ModelSource, shipped_sources
from visualizer.widgets.length_lab.view import LengthLabTab
from visualizer.workers.tasks import TaskSlot

TASK = TaskSpec("copy", n_symbols=5, min_len=1, max_len=4)
WAIT_MS = 120_000


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """Small RoPE and sinusoidal copy models trained briefly on lengths 1-4 (the lab plots 1-8)."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("lab")
    out = []
    for positional in ("rope", "sinusoidal"):
        model = build_model(
            ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, max_len=24, positional=positional), seed=0
        )
        for _ in Trainer(model, TASK, TrainConfig(steps=100, batch_size=32, lr=5e-3, device="cpu")).train_steps():
            pass
        out.append(save_checkpoint(folder / f"{positional}.pt", model, extra={"task": dataclasses.asdict(TASK)}))
    return out


@pytest.fixture
def lab(qtbot, paths):
    state = LengthLabState(TaskSlot, (ModelSource("RoPE", paths[0]), ModelSource("Sinusoidal", paths[1])))
    tab = LengthLabTab(state)
    qtbot.addWidget(tab)
    tab.resize(1200, 800)
    with qtbot.waitExposed(tab):
        tab.show()
    yield tab
    assert state.shutdown(30_000)


def _type(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Tab)


def _evaluate(qtbot, tab, n: int, seed: int) -> None:
    _type(qtbot, tab.n_spin, str(n))
    _type(qtbot, tab.seed_spin, str(seed))
    qtbot.mouseClick(tab.evaluate_button, Qt.MouseButton.LeftButton)
    assert tab.cancel_button.isEnabled() and not tab.evaluate_button.isEnabled()
    qtbot.waitUntil(lambda: tab.evaluate_button.isEnabled(), timeout=WAIT_MS)


def _cli(capsys, path, *extra: str) -> dict:
    assert (
        main(["eval", str(path), "--lengths", "1-8", "--n", "30", "--seed", "5", "--json", "--device", "cpu", *extra])
        == 0
    )
    return json.loads(capsys.readouterr().out)


def _drawn(tab, slot: int) -> tuple[dict[str, float], dict[str, float]]:
    xs, exact = tab.plot.exact[slot].getData()
    _, token = tab.plot.token[slot].getData()
    return ({str(int(x)): float(y) for x, y in zip(xs, exact)}, {str(int(x)): float(y) for x, y in zip(xs, token)})


@pytest.mark.parametrize("scaling", ["none", "pi"])
def test_the_plotted_numbers_equal_the_cli(qtbot, lab, paths, capsys, scaling):
    lab.scaling_combo.setCurrentIndex(lab.scaling_combo.findData(scaling))
    _evaluate(qtbot, lab, 30, 5)
    assert lab.progress.text() == "Done: 8 lengths x 2 models, 30 sources each, seed 5"
    for slot, path in enumerate(paths):
        extra = ("--rope-scaling", scaling) if slot == 0 else ()
        cli = _cli(capsys, path, *extra)
        exact, token = _drawn(lab, slot)
        assert exact == cli["per_length"] and token == cli["token_accuracy_per_length"]
    legend = [label.text for _, label in lab.plot.legend.items]
    assert ("RoPE + PI: exact match" in legend) == (scaling == "pi") and "Sinusoidal: exact match" in legend
    assert lab.plot.regions[0].getRegion() == (0.5, 4.5)  # the trained lengths 1-4, shaded


def ticks_per_second(qtbot, timer: QTimer, ticks: list[float], ms: int) -> float:
    """How often `timer` (appending to `ticks`) fired on this thread in the next `ms` milliseconds."""
    ticks.clear()
    start = time.perf_counter()
    timer.start()
    qtbot.wait(ms)
    timer.stop()
    return len(ticks) / (time.perf_counter() - start)


def test_the_ui_keeps_ticking_while_evaluating_the_shipped_models(qtbot):
    """The lab stays responsive while it evaluates: a GUI-thread timer keeps most of the rate it has when the lab is
    idle, measured just before on this machine under its load (not a fixed rate, which a loaded machine misses
    whatever the lab does). Evaluating on the GUI thread would let almost no tick through."""
    state = LengthLabState(TaskSlot, shipped_sources())
    tab = LengthLabTab(state)
    qtbot.addWidget(tab)
    with qtbot.waitExposed(tab):
        tab.show()
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(10)  # 100 Hz asked
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    idle = ticks_per_second(qtbot, timer, ticks, 1000)
    tab.n_spin.setValue(2000)  # long enough to still be evaluating after the 4 s measured
    qtbot.mouseClick(tab.evaluate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.curves is not None, timeout=WAIT_MS)  # both files read: now it evaluates
    busy = ticks_per_second(qtbot, timer, ticks, 4000)
    assert state.busy and state.curves.progress[0] >= 1  # it was evaluating all along
    assert state.shutdown(30_000)
    assert busy >= 0.4 * idle, f"the UI timer ran at {busy:.0f} Hz while evaluating, {idle:.0f} Hz idle"


def test_points_arriving_fast_redraw_the_plot_at_most_ten_times_a_second(qtbot, lab):
    redraws: list[float] = []
    lab.state.curves_changed.connect(lambda _c: redraws.append(time.perf_counter()))
    start = time.perf_counter()
    _evaluate(qtbot, lab, 1, 3)  # 16 points (8 lengths x 2 models) of one source each: they come fast
    seconds = time.perf_counter() - start
    assert lab.progress.text() == "Done: 8 lengths x 2 models, 1 sources each, seed 3"
    assert [len(lab.plot.exact[slot].getData()[0]) for slot in range(2)] == [8, 8]  # every point drawn at the end
    # the empty plot, then one redraw per 100 ms at most, then the last points at the end
    assert len(redraws) <= 2 + seconds / 0.1, (len(redraws), seconds)
    assert all(b - a >= 0.09 for a, b in zip(redraws[1:-2], redraws[2:-1])), np.diff(redraws).round(3)


def test_cancel_stops_the_evaluation_and_says_so(qtbot, lab):
    _type(qtbot, lab.n_spin, "5000")
    qtbot.mouseClick(lab.evaluate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.progress.text().startswith("Evaluating: "), timeout=WAIT_MS)
    assert re.fullmatch(r"Evaluating: \d+ of 16 points \(8 lengths x 2 models\), now RoPE", lab.progress.text())
    qtbot.mouseClick(lab.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=20_000)
    done, total = lab.state.curves.progress
    assert done < total and lab.progress.text() == f"Cancelled after {done} of {total} points (8 lengths x 2 models)"
    assert not lab.cancel_button.isEnabled()


def _click_length(qtbot, tab, length: int) -> None:
    scene = tab.plot.scene_point(length, 0.5)
    view = tab.plot.mapFromScene(scene)
    qtbot.mouseClick(tab.plot.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(int(view.x()), int(view.y())))


def test_clicking_a_length_shows_both_models_cross_attention(qtbot, lab):
    _evaluate(qtbot, lab, 10, 0)
    # before a click there is no layer to choose: the box is greyed out with a dash, not an empty enabled box
    assert not lab.layer_combo.isEnabled() and lab.layer_combo.currentIndex() == -1
    assert lab.layer_combo.placeholderText() == "—"
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000) as got:
        _click_length(qtbot, lab, 6)
    pair = got.args[0]
    assert pair.length == 6 and lab.plot.marker.isVisible() and lab.plot.marker.value() == 6
    for slot, name in enumerate(("RoPE", "Sinusoidal")):
        assert lab.maps.titles[slot].startswith(f"{name}, layer 2 of 2:")
        image = lab.maps.images[slot].image
        probe = pair.probes[slot]
        assert image.shape == (len(probe.output), 6)
        np.testing.assert_allclose(image, probe.cross[-1].mean(axis=0), atol=1e-6)
    assert lab.selected_label.text().startswith("Length 6, random symbols")
    assert lab.layer_combo.isEnabled() and lab.layer_combo.currentText() == "2"
    lab.layer_combo.setCurrentIndex(0)
    assert lab.maps.titles[0].startswith("RoPE, layer 1 of 2:")
    lab.scaling_combo.setCurrentIndex(lab.scaling_combo.findData("ntk"))
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000):
        _click_length(qtbot, lab, 7)
    assert lab.maps.titles[0].startswith("RoPE + NTK, layer") and lab.maps.titles[1].startswith("Sinusoidal, layer")


def test_repeated_symbol_preset_runs_0000000_through_both(qtbot, lab):
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000) as got:
        qtbot.mouseClick(lab.repeat_button, Qt.MouseButton.LeftButton)
    pair = got.args[0]
    assert pair.kind == "repeated" and pair.length == 7
    assert all(p.source == (3,) * 7 for p in pair.probes)  # "0" is the first symbol, id 3
    assert lab.kind_combo.currentData() == "repeated"
    assert all(("✓ right" in t) or ("✗ wrong" in t) for t in lab.maps.titles)


def test_train_both_now_trains_two_models_then_plots_them(qtbot, lab):
    _type(qtbot, lab.train_max, "3")
    _type(qtbot, lab.train_steps, "10")
    _type(qtbot, lab.n_spin, "5")
    qtbot.mouseClick(lab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.progress.text().startswith("Training"), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: lab.progress.text().startswith("Done: 6 lengths x 2 models, 5 sources"), timeout=WAIT_MS)
    assert [lab.model_combos[i].currentText() for i in range(2)] == [
        "rope trained here (1-3)",
        "sinusoidal trained here (1-3)",
    ]
    assert lab.state.curves.lengths == tuple(range(1, 7)) and lab.plot.regions[1].getRegion() == (0.5, 3.5)
    trained = lab.state.sources[0]
    box = lab.model_combos[0]  # away to the file model with the keyboard, then back to the one trained here
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Up)
    assert lab.state.sources[0].path is not None and lab.state.sources[0].checkpoint is None
    qtbot.keyClick(box, Qt.Key.Key_Down)
    assert box.currentText() == "rope trained here (1-3)"
    assert lab.state.sources[0] is trained and lab.state.sources[0].path is None


def test_maps_before_any_length_say_so_and_draw_no_numbers(qtbot):
    """Before a length is clicked the two map plots draw no tick numbers (axes from -400 to 400 "(x0.001)" would
    read as real positions) and their titles say what to do."""
    from types import SimpleNamespace

    from qt_helpers import axis_texts

    from visualizer.widgets.length_lab.maps import ProbeMaps

    maps = ProbeMaps()
    qtbot.addWidget(maps)
    maps.resize(1200, 300)
    with qtbot.waitExposed(maps):
        maps.show()
    for plot in maps.plots:
        for name in ("bottom", "left"):
            assert axis_texts(SimpleNamespace(plot_item=plot), name) == []
            assert "x0.001" not in plot.getAxis(name).labelString()
    assert all("click a length on the plot above" in title for title in maps.titles)


def _stale_drawn(tab) -> list[bool]:
    """Per curve: drawn faded and dotted (the pens pyqtgraph paints the curves and the legend samples with)."""
    return [
        curve.opts["pen"].style() == Qt.PenStyle.DotLine and curve.opts["pen"].color().alpha() < 255
        for curve in (*tab.plot.exact, *tab.plot.token)
    ]


def _plot_title(tab) -> str:
    title = tab.plot.getPlotItem().titleLabel
    return title.text if title.isVisible() else ""


def _change(qtbot, tab, setting: str, back: bool = False) -> None:
    """Change one setting with the keyboard (or change it back)."""
    if setting == "n":
        _type(qtbot, tab.n_spin, "2" if back else "3")
    elif setting == "seed":
        _type(qtbot, tab.seed_spin, "5" if back else "6")
    else:
        box = tab.model_combos[0]
        box.setFocus()
        qtbot.keyClick(box, Qt.Key.Key_Down if back else Qt.Key.Key_Up)  # the test's RoPE file <-> shipped sinusoidal


@pytest.mark.parametrize("setting", ["n", "seed", "model"])
def test_a_changed_setting_marks_every_curve_out_of_date_and_changing_it_back_restores_done(qtbot, lab, setting):
    """After "Done", curves computed for other settings fade and the bar says so: they do not answer the new ones."""
    _evaluate(qtbot, lab, 2, 5)
    done = "Done: 8 lengths x 2 models, 2 sources each, seed 5"
    assert lab.progress.text() == done and not any(_stale_drawn(lab)) and _plot_title(lab) == ""
    _change(qtbot, lab, setting)
    assert lab.progress.text() == "Settings changed: press Evaluate"
    # exact A, exact B, token A, token B: a new model A leaves B's curves standing
    assert _stale_drawn(lab) == ([True, False, True, False] if setting == "model" else [True] * 4)
    assert "Out of date" in _plot_title(lab) and "press Evaluate" in _plot_title(lab)
    _change(qtbot, lab, setting, back=True)
    assert lab.progress.text() == done and not any(_stale_drawn(lab)) and _plot_title(lab) == ""


def test_ntk_scaling_after_done_marks_the_curves_stale_redraws_the_maps_and_evaluate_brings_them_back(qtbot, lab):
    _evaluate(qtbot, lab, 2, 5)
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000):
        _click_length(qtbot, lab, 6)
    assert lab.maps.titles[0].startswith("RoPE, layer")
    lab.scaling_combo.setFocus()
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000):  # the maps follow the scaling at once
        while lab.scaling_combo.currentData() != "ntk":
            qtbot.keyClick(lab.scaling_combo, Qt.Key.Key_Down)
    assert lab.maps.titles[0].startswith("RoPE + NTK, layer")
    assert lab.progress.text() == "Settings changed: press Evaluate"
    assert _stale_drawn(lab) == [True, False, True, False]  # the sinusoidal model's curves do not depend on it
    assert "RoPE scaling none" in _plot_title(lab)
    legend = [label.text for _, label in lab.plot.legend.items]
    assert "RoPE: exact match" in legend  # the legend still names what the faded curves are: unscaled RoPE
    qtbot.mouseClick(lab.evaluate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=WAIT_MS)
    assert lab.progress.text() == "Done: 8 lengths x 2 models, 2 sources each, seed 5"
    assert not any(_stale_drawn(lab)) and _plot_title(lab) == ""
    assert "RoPE + NTK: exact match" in [label.text for _, label in lab.plot.legend.items]


def test_hovering_a_map_cell_names_its_two_tokens_and_weight(qtbot, lab):
    """The maps may hide their token labels when there is no room for all: the hover then names them."""
    _evaluate(qtbot, lab, 2, 5)
    with qtbot.waitSignal(lab.state.probe_changed, timeout=30_000) as got:
        _click_length(qtbot, lab, 6)
    probe, vocab = got.args[0].probes[1], got.args[0].tasks[1].vocabulary
    plot = lab.maps.plots[1]
    scene = plot.vb.mapViewToScene(QPointF(2.5, 1.5))  # source 2, output 1
    qtbot.mouseMove(lab.maps.viewport(), lab.maps.mapFromScene(scene))
    weight = float(probe.cross[-1].mean(axis=0)[1, 2])
    expected = (
        f"output 1 '{vocab.token(probe.output[1])}' ← source 2 '{vocab.tokens(probe.encoder_input)[2]}': "
        f"weight {weight:.3f}"
    )
    qtbot.waitUntil(lambda: lab.maps.images[1].toolTip() == expected, timeout=5000)
    assert lab.maps.images[0].toolTip() == ""  # the other map is not under the mouse


def test_a_new_model_under_the_old_name_marks_the_curves_out_of_date_even_at_the_old_ones_address(
    qtbot, lab, paths, tmp_path
):
    """Curves of a model held in memory (trained here) belong to that very model: another one under the same name
    reads as out of date, even one made the moment the first is let go (CPython hands a freed object's address to
    the objects made next)."""
    first = load_checkpoint(paths[0])
    config, weights, extra, label = first.config, first.state_dict, first.extra, "rope trained here (1-4)"
    lab.state.set_source(0, ModelSource(label, checkpoint=first))
    _evaluate(qtbot, lab, 2, 5)
    assert lab.progress.text() == "Done: 8 lengths x 2 models, 2 sources each, seed 5" and not lab.state.stale
    lab.state.set_source(0, ModelSource("gone", tmp_path / "missing.pt"))
    qtbot.mouseClick(lab.evaluate_button, Qt.MouseButton.LeftButton)  # fails: the old curves stay on screen
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=WAIT_MS)
    assert "missing.pt" in lab.selected_label.text() and lab.state.curves.labels[0] == label
    newcomers: list[Checkpoint | None] = [None] * 1000  # made first: a new list could take the first one's place
    del first  # from here only the lab can keep it alive
    for i in range(len(newcomers)):
        newcomers[i] = Checkpoint(config, weights, extra=extra)  # one may land where the first one was
    for second in newcomers:
        lab.state.set_source(0, ModelSource(label, checkpoint=second))
        assert lab.state.stale and lab.progress.text() == "Settings changed: press Evaluate"
        assert _stale_drawn(lab) == [True, False, True, False]
    _evaluate(qtbot, lab, 2, 5)  # the new model's own curves are current again
    assert lab.progress.text() == "Done: 8 lengths x 2 models, 2 sources each, seed 5" and not any(_stale_drawn(lab))


def test_a_job_that_raises_after_cancel_ends_as_a_cancelled_one(qtbot, lab, monkeypatch):
    """However the evaluation stops after Cancel (here it raises on its way out), the bar says what was computed and
    the buttons come back; no failure is reported."""
    evaluate_pair = length_lab.evaluate_pair

    def evaluate_then_raise(*args):
        evaluate_pair(*args)
        raise RuntimeError("torn down while stopping")

    monkeypatch.setattr(length_lab, "evaluate_pair", evaluate_then_raise)
    _type(qtbot, lab.n_spin, "5000")
    qtbot.mouseClick(lab.evaluate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.progress.text().startswith("Evaluating: "), timeout=WAIT_MS)
    qtbot.mouseClick(lab.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: lab.evaluate_button.isEnabled(), timeout=20_000)
    done, total = lab.state.curves.progress
    assert done < total and lab.progress.text() == f"Cancelled after {done} of {total} points (8 lengths x 2 models)"
    assert lab.progress.value() == done and not lab.cancel_button.isEnabled()
    assert "failed" not in lab.selected_label.text()

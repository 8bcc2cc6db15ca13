"""Trainer tab: real widgets driven by clicks and keys, training in the worker thread of a tiny model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

import core_model.training as training_module
from core_model import build_model
from core_model.training import Trainer
from core_model.training_loop import Cadence
from visualizer.state.inline_slot import InlineSlot
from visualizer.state.training import TrainingState
from visualizer.widgets.training import tab as trainer_tab
from visualizer.widgets.training.tab import TrainerTab, head_mean
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 60_000


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture
def tab(qtbot, hub, state) -> TrainerTab:
    widget = TrainerTab(hub, state, make_slot=TaskSlot)  # the app's runner
    qtbot.addWidget(widget)
    widget.show()
    widget.form.batch_spin.setValue(16)
    return widget


def _type_into(qtbot, spin, text: str) -> None:
    """Replace a spin box's text by typing, as a user would."""
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Tab)


def _finished(state: TrainingState) -> bool:
    return state.state in ("finished", "failed") and state.training_thread is None


def test_train_50_steps_from_the_form(qtbot, tab, hub, state):
    before = _weights(hub.model)
    assert tab.probe.placeholder.isVisible() and not tab.probe.graphics.isVisible()  # a sentence, not empty axes
    assert tab.progress_bar.text() == "not training"
    _type_into(qtbot, tab.form.steps_spin, "50")
    assert tab.form.steps_spin.value() == 50
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    assert tab.state_label.text() == "Running"
    assert not tab.train_button.isEnabled() and tab.stop_button.isEnabled()
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)

    assert tab.state_label.text() == "Finished"
    assert tab.progress_bar.text() == "step 50 / 50"
    assert tab.status_label.text().startswith("Finished 50 steps")
    xs, ys = tab.curves.curves["loss"].getData()
    assert list(xs) == list(range(1, 51)) and np.all(np.isfinite(ys))  # every step drawn despite throttling
    for key in ("eval_loss", "eval_token_accuracy", "eval_exact_match", "lr", "token_accuracy"):
        assert len(tab.curves.curves[key].getData()[0]) > 0, key
    assert hub.dirty and not hub.training_active
    assert [row["step"] for row in hub.history] == list(range(1, 51))
    assert any(not torch.equal(before[k], v) for k, v in hub.model.state_dict().items())
    assert [s.step for s in state.snapshots] == list(Cadence.for_steps(50).probe_steps(50))
    assert tab.probe.step_label.text() == "step 50"
    assert tab.probe.graphics.isVisible() and not tab.probe.placeholder.isVisible()
    assert tab.train_button.isEnabled() and not tab.stop_button.isEnabled()


def test_pause_resume_stop(qtbot, tab, hub, state):
    tab.form.steps_spin.setValue(100_000)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.progress is not None and state.progress.step >= 3, timeout=WAIT_MS)
    qtbot.mouseClick(tab.pause_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    assert tab.state_label.text() == "Paused" and tab.pause_button.text() == "Resume"
    assert hub.dirty and hub.training_active  # the weights so far are in the hub; the run is still open
    paused_at = hub.history[-1]["step"]
    assert state.progress.step == paused_at
    qtbot.mouseClick(tab.pause_button, Qt.MouseButton.LeftButton)
    assert tab.state_label.text() == "Running" and tab.pause_button.text() == "Pause"
    qtbot.waitUntil(lambda: state.progress.step > paused_at, timeout=WAIT_MS)
    qtbot.mouseClick(tab.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)

    assert tab.state_label.text() == "Stopped"  # stopped before its last step
    last = hub.history[-1]["step"]
    assert paused_at < last < 100_000
    assert tab.status_label.text().startswith(f"Stopped at step {last} of 100000")
    assert not hub.training_active and tab.train_button.isEnabled() and not tab.pause_button.isEnabled()


def test_keyboard_shortcuts_start_and_stop(qtbot, tab, state):
    tab.form.steps_spin.setValue(100_000)
    with qtbot.waitActive(tab):
        tab.activateWindow()
    tab.form.seed_spin.setFocus()
    qtbot.keyClick(tab.form.seed_spin, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert state.state == "running"
    qtbot.waitUntil(lambda: state.progress is not None, timeout=WAIT_MS)
    tab.pause_button.setFocus()
    qtbot.keyClick(tab.pause_button, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    qtbot.keyClick(tab.pause_button, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)
    assert tab.state_label.text() == "Stopped"  # Escape stopped it


def test_shutdown_mid_run_is_clean(qtbot, tab, hub, state):
    tab.form.steps_spin.setValue(100_000)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.progress is not None, timeout=WAIT_MS)
    thread = state.training_thread
    assert state.shutdown(20_000)
    assert thread.isFinished() and state.training_thread is None
    assert state.state == "finished" and not hub.training_active
    assert hub.dirty and hub.history and hub.history[-1]["step"] < 100_000


def test_divergence_keeps_last_good_weights(qtbot, tab, hub, state, monkeypatch):
    start_weights = _weights(hub.model)
    real_loss, calls = training_module.sequence_loss, []

    def nan_on_step_31(log_probs, labels, smoothing=0.0):
        loss = real_loss(log_probs, labels, smoothing)
        if log_probs.requires_grad:  # a training step, not an evaluation
            calls.append(1)
            if len(calls) == 31:
                return loss * float("nan")
        return loss

    monkeypatch.setattr(training_module, "sequence_loss", nan_on_step_31)
    tab.form.steps_spin.setValue(100)
    config, task = tab.form.train_config(), tab.form.task_spec()
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)

    assert tab.state_label.text() == "Failed"
    assert tab.status_label.text() == "Training stopped: loss became nan at step 31; the weights from step 30 are kept."
    assert hub.history[-1]["step"] == 30 and hub.dirty
    monkeypatch.setattr(training_module, "sequence_loss", real_loss)
    reference = build_model(hub.config)
    reference.load_state_dict(start_weights)
    list(Trainer(reference, task, config).train_steps(30))  # the same 30 good steps, replayed here
    for key, value in reference.state_dict().items():
        torch.testing.assert_close(hub.model.state_dict()[key], value, rtol=1e-5, atol=1e-6)


def test_out_of_memory_offers_to_continue_on_cpu(qtbot, tab, hub, state, monkeypatch):
    real_step, asked = Trainer._one_step, []

    def oom_once_at_step_8(self, batch):
        if self.step == 7 and not asked:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_step(self, batch)

    monkeypatch.setattr(Trainer, "_one_step", oom_once_at_step_8)
    monkeypatch.setattr(trainer_tab, "_ask_yes_no", lambda parent, title, text: asked.append((title, text)) or True)
    tab.form.steps_spin.setValue(20)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(asked) and _finished(state), timeout=WAIT_MS)

    assert asked[0][0] == "Out of GPU memory" and "Out of memory on cpu at step 8" in asked[0][1]
    assert state.config.device == "cpu"
    assert [row["step"] for row in hub.history] == list(range(1, 21))  # 7 steps, then the other 13 on the CPU
    assert tab.progress_bar.text() == "step 20 / 20" and tab.state_label.text() == "Finished"


def test_invalid_values_are_refused_inline(qtbot, tab, hub):
    assert tab.train_button.isEnabled()
    _type_into(qtbot, tab.form.min_len_spin, "9")  # max length is 5
    error = tab.form.errors["max_len"]
    assert error.isVisible() and "at least the min length (9)" in error.text()
    assert not tab.train_button.isEnabled()
    _type_into(qtbot, tab.form.min_len_spin, "3")
    assert not error.isVisible() and tab.train_button.isEnabled()

    _type_into(qtbot, tab.form.max_len_spin, "15")  # model max_len 16 leaves room for 14
    assert "at most 14" in error.text() and not tab.train_button.isEnabled()
    _type_into(qtbot, tab.form.max_len_spin, "5")

    tab.form.probe_edit.clear()
    qtbot.keyClicks(tab.form.probe_edit, "01x")
    assert "Unknown symbol 'x' at position 3; copy reads only 0 1 2 3 4" in tab.form.errors["probe"].text()
    assert not tab.train_button.isEnabled()
    tab.form.probe_edit.clear()
    qtbot.keyClicks(tab.form.probe_edit, "0123")
    assert tab.train_button.isEnabled()


def test_too_many_symbols_offers_a_matching_model(qtbot, tab, hub):
    _type_into(qtbot, tab.form.symbols_spin, "12")
    error = tab.form.errors["symbols"]
    assert "vocab_size 15" in error.text() and tab.form.build_button.isVisible()
    assert not tab.train_button.isEnabled()
    qtbot.mouseClick(tab.form.build_button, Qt.MouseButton.LeftButton)
    assert hub.config.vocab_size == 15 and hub.config.d_model == 16
    assert hub.task.n_symbols == 12 and not error.isVisible() and tab.train_button.isEnabled()


def test_timeline_slider_replays_snapshots(qtbot, tab, state):
    tab.form.steps_spin.setValue(30)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)
    assert [s.step for s in state.snapshots] == list(Cadence.for_steps(30).probe_steps(30))
    image = tab.probe.image  # cross-attention, last layer, mean of heads: the default pick
    np.testing.assert_allclose(image.image, head_mean(state.snapshots[-1], "cross"))
    latest = image.image.copy()
    tab.probe.slider.setFocus()
    qtbot.keyClick(tab.probe.slider, Qt.Key.Key_Home)
    assert tab.probe.step_label.text() == "step 0"
    np.testing.assert_allclose(image.image, head_mean(state.snapshots[0], "cross"))
    assert not np.allclose(image.image, latest)
    assert image.image.shape == (6, 5)  # <bos> + 5 targets x 5 source symbols


def test_export_movie_writes_frames(qtbot, tab, state, tmp_path, monkeypatch):
    tab.form.steps_spin.setValue(30)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)
    folder = tmp_path / "movie"
    monkeypatch.setattr(trainer_tab, "_choose_folder", lambda parent: str(folder))
    with qtbot.waitSignal(tab.movie_exported, timeout=WAIT_MS) as blocker:
        qtbot.mouseClick(tab.probe.export_button, Qt.MouseButton.LeftButton)
    frames = sorted(folder.glob("frame_*.png"))
    planned = Cadence.for_steps(30).probe_steps(30)
    assert [f.name for f in frames] == [f"frame_{i:04d}_step_{s}.png" for i, s in enumerate(planned)]
    first, last = QImage(str(frames[0])), QImage(str(frames[-1]))
    assert not first.isNull() and first.width() > 5 * trainer_tab.CELL_PX
    assert first != last  # the maps changed while training
    assert blocker.args[0]["frames"] == len(planned)
    assert tab.status_label.text().startswith(f"Exported {len(planned)} frames to {folder}")


def test_export_movie_gif_with_pillow(qtbot, tab, state, tmp_path):
    pytest.importorskip("PIL")
    tab.form.steps_spin.setValue(30)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)
    with qtbot.waitSignal(tab.movie_exported, timeout=WAIT_MS) as blocker:
        tab.export_movie(tmp_path)
    from PIL import Image

    gif = Image.open(blocker.args[0]["gif"])
    assert gif.n_frames == len(Cadence.for_steps(30).probe_steps(30))


@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
def test_a_new_model_starts_from_its_positional_kinds_recipe(qtbot, positional):
    """A model without a stored recipe gets the default one for its PE: sinusoidal learns the copy task fastest at a
    lower learning rate and a smaller batch than RoPE (the measured sweep in core_model.training.DEFAULT_RECIPES)."""
    from core_model import ModelConfig
    from core_model.tasks import TaskSpec
    from core_model.training import TrainConfig, default_recipe
    from visualizer.state.model_hub import ModelHub
    from visualizer.workers.training_worker import TrainingRun

    config = ModelConfig(
        vocab_size=8,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=1,
        max_len=16,
        positional=positional,
    )
    hub = ModelHub(
        build_model(config, seed=0),
        TaskSpec("copy", n_symbols=5, min_len=3, max_len=5),
        device=torch.device("cpu"),
        origin="test",
    )
    st = TrainingState(hub, TrainingRun)
    widget = TrainerTab(hub, st, make_slot=InlineSlot)
    qtbot.addWidget(widget)
    widget.show()
    lr, batch = {"rope": ("0.006000", "32"), "sinusoidal": ("0.003000", "24")}[positional]
    assert (widget.form.lr_spin.text(), widget.form.batch_spin.text()) == (lr, batch)  # as the user reads them
    assert widget.form.train_config() == default_recipe(positional, device=widget.form.train_config().device)
    assert default_recipe(positional, seed=3, lr=1e-3).lr == 1e-3  # a field given wins
    assert default_recipe("rope") == TrainConfig()
    assert st.shutdown(20_000)


def test_switching_the_model_to_sinusoidal_loads_the_sinusoidal_recipe_into_the_form(qtbot, tab, hub):
    """Model panel -> a new untrained sinusoidal model: the form now reads the sinusoidal recipe, as the user sees."""
    from dataclasses import replace as dc_replace

    assert hub.config.positional == "rope" and tab.form.lr_spin.text() == "0.006000"
    hub.new_untrained(dc_replace(hub.config, positional="sinusoidal"))
    qtbot.waitUntil(lambda: tab.form.lr_spin.text() == "0.003000", timeout=5000)
    assert tab.form.batch_spin.text() == "24"

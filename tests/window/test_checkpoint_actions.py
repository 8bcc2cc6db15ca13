"""Checkpoint actions: save and open through the background pool, errors shown and nothing changed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import QSettings, QThreadPool
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QWidget

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig
from core_model.training_loop import Cadence
from visualizer.controllers import checkpoints as checkpoint_actions
from visualizer.controllers.checkpoints import CheckpointActions
from visualizer.controllers.recent_files import RECENT_KEY
from visualizer.state.model_hub import ModelHub
from visualizer.state.training import TrainingState
from visualizer.workers.training_worker import TrainingRun

WAIT_MS = 60_000
SMALL = ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=16)


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


@pytest.fixture
def errors(monkeypatch) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(checkpoint_actions, "_show_error", lambda parent, title, text: shown.append((title, text)))
    return shown


class Setup:
    """A hub, its training state and the actions, with the threads shut down at teardown."""

    def __init__(self, qtbot, config: ModelConfig, task: TaskSpec) -> None:
        self.hub = ModelHub(build_model(config, seed=1), task, device=torch.device("cpu"), origin="test")
        self.state = TrainingState(self.hub, TrainingRun)
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.actions = CheckpointActions(self.hub, self.window, self.state)


@pytest.fixture
def make(qtbot):
    made: list[Setup] = []

    def factory(config: ModelConfig = SMALL, task: TaskSpec | None = None) -> Setup:
        made.append(Setup(qtbot, config, task or TaskSpec("sort", 5, 2, 5)))
        return made[-1]

    yield factory
    for setup in made:
        assert setup.state.shutdown(20_000)


def _train(qtbot, setup: Setup, steps: int = 30) -> None:
    assert setup.state.start(TrainConfig(batch_size=8, steps=steps, device="cpu"), setup.hub.task, probe_text="4302")
    qtbot.waitUntil(lambda: setup.state.state == "finished" and setup.state.training_thread is None, timeout=WAIT_MS)


def test_save_then_open_restores_model_history_and_snapshots(qtbot, make, tmp_path, errors):
    src = make()
    _train(qtbot, src)
    assert src.hub.dirty
    path = tmp_path / "sorted.pt"
    with qtbot.waitSignal(src.actions.saved, timeout=WAIT_MS):
        src.actions.save_to(path)
    assert path.is_file() and not src.hub.dirty and src.hub.path == path
    torch.load(path, weights_only=True)  # plain data only

    dst = make(ModelConfig(vocab_size=9, d_model=8, n_heads=2, d_ff=16), TaskSpec())
    with qtbot.waitSignal(dst.actions.opened, timeout=WAIT_MS) as blocker:
        dst.actions.open_path(path)
    assert blocker.args == [str(path)] and errors == []
    hub = dst.hub
    assert hub.config == src.hub.config and hub.task == src.hub.task and hub.path == path and not hub.dirty
    assert hub.history == src.hub.history and len(hub.history) == 30
    for key, value in _weights(src.hub.model).items():
        assert torch.equal(hub.model.state_dict()[key], value)
    got, want = dst.state.snapshots, src.state.snapshots
    assert [s.step for s in got] == [s.step for s in want] == list(Cadence.for_steps(30).probe_steps(30))
    for a, b in zip(got, want):
        assert a.source == b.source == "4302" and a.maps.keys() == b.maps.keys()
        for kind in b.maps:
            np.testing.assert_array_equal(a.maps[kind].values, b.maps[kind].values)
            assert a.maps[kind].query_labels == b.maps[kind].query_labels
    assert dst.state.series.steps == list(range(1, 31))
    assert dst.state.series.eval_exact_match == src.state.series.eval_exact_match
    assert hub.extra["train_config"]["steps"] == 30


def test_corrupt_file_shows_the_error_and_changes_nothing(qtbot, make, tmp_path, errors):
    setup = make()
    model, before = setup.hub.model, _weights(setup.hub.model)
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"\x80\x02 definitely not a checkpoint" * 10)
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS) as blocker:
        setup.actions.open_path(bad)
    assert errors == [("Could not open broken.pt", blocker.args[0])]
    assert "broken.pt is not a readable checkpoint" in errors[0][1]
    assert setup.hub.model is model and setup.hub.path is None and setup.hub.origin == "test"
    for key, value in before.items():
        assert torch.equal(model.state_dict()[key], value)
    assert RECENT_KEY not in QSettings().allKeys()


def test_file_with_code_is_refused(qtbot, make, tmp_path, errors):
    setup = make()
    evil = tmp_path / "evil.pt"
    torch.save({"format": "attention-playground-checkpoint", "version": 1, "payload": Path("x")}, evil)
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.open_path(evil)
    assert "refusing to load it" in errors[0][1]


def test_open_is_refused_while_training(qtbot, make, tmp_path, errors):
    setup = make()
    setup.hub.set_training_active(True)
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.open_path(tmp_path / "whatever.pt")
    assert errors == [("Cannot open a checkpoint", "Stop training before opening a checkpoint.")]


def test_save_failure_is_reported(qtbot, make, tmp_path, errors):
    setup = make()
    blocker_file = tmp_path / "file"
    blocker_file.write_text("not a folder")
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.save_to(blocker_file / "model.pt")
    assert errors and errors[0][0] == "Could not save model.pt"
    assert setup.hub.path is None


def test_recent_files_menu(qtbot, make, tmp_path, errors):
    setup = make()
    for i in range(10):
        with qtbot.waitSignal(setup.actions.saved, timeout=WAIT_MS):
            setup.actions.save_to(tmp_path / f"m{i}.pt")
    assert setup.actions.recent_files() == [str((tmp_path / f"m{i}.pt").resolve()) for i in range(9, 1, -1)]
    entries = [a for a in setup.actions.recent_menu.actions() if a.data()]
    assert [a.text() for a in entries][:2] == ["&1 m9.pt", "&2 m8.pt"] and len(entries) == 8
    other = make(SMALL, TaskSpec())
    with qtbot.waitSignal(other.actions.opened, timeout=WAIT_MS):
        [a for a in other.actions.recent_menu.actions() if a.data()][3].trigger()  # m6.pt
    assert other.hub.path == (tmp_path / "m6.pt").resolve()
    assert other.actions.recent_files()[0] == str((tmp_path / "m6.pt").resolve())


def test_shortcuts(qtbot, make):
    actions = make().actions
    assert actions.open_action.shortcut() == QKeySequence("Ctrl+O")
    assert actions.save_action.shortcut() == QKeySequence("Ctrl+S")
    assert actions.save_as_action.shortcut() == QKeySequence("Ctrl+Shift+S")


@pytest.mark.parametrize("answer, expected", [("cancel", False), ("discard", True)])
def test_confirm_close_when_dirty(qtbot, make, monkeypatch, answer, expected):
    setup = make()
    asked: list[str] = []
    monkeypatch.setattr(
        checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: asked.append(text) or answer
    )
    assert setup.actions.confirm_close() is True and asked == []  # nothing to save
    setup.hub.adopt_weights(_weights(setup.hub.model), [])
    assert setup.actions.confirm_close() is expected
    assert asked == ["Save changes to the trained model before closing?"]
    assert setup.hub.dirty


def test_confirm_close_save_writes_the_file(qtbot, make, monkeypatch, tmp_path):
    setup = make()
    target = tmp_path / "closing.pt"
    monkeypatch.setattr(checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: "save")
    monkeypatch.setattr(checkpoint_actions, "_ask_save_path", lambda parent, suggested: str(target))
    setup.hub.adopt_weights(_weights(setup.hub.model), [])
    assert setup.actions.confirm_close() is True
    assert target.is_file() and not setup.hub.dirty and setup.hub.path == target


def test_confirm_close_stops_a_running_training_first(qtbot, make, monkeypatch):
    setup = make()
    asked: list[str] = []
    monkeypatch.setattr(
        checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: asked.append(text) or "discard"
    )
    assert setup.state.start(TrainConfig(batch_size=8, steps=100_000, device="cpu"), setup.hub.task, probe_text="1")
    qtbot.waitUntil(lambda: setup.state.progress is not None, timeout=WAIT_MS)
    assert setup.actions.confirm_close() is True
    assert setup.state.training_thread is None and not setup.hub.training_active
    assert asked and setup.hub.dirty  # the weights trained so far counted as unsaved


def test_close_then_save_on_a_full_disk_keeps_the_window_and_the_work(qtbot, make, tmp_path, errors, monkeypatch):
    setup = make()
    setup.hub.path, setup.hub.dirty = tmp_path / "model.pt", True
    before = _weights(setup.hub.model)

    def full_disk(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:664] . PytorchStreamWriter failed writing file")

    monkeypatch.setattr(checkpoint_actions, "save_checkpoint", full_disk)
    monkeypatch.setattr(checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: "save")
    assert setup.actions.confirm_close() is False  # the window stays open
    assert errors and "model.pt was not written" in errors[0][1] and "Save As" in errors[0][1]
    assert setup.hub.dirty and not (tmp_path / "model.pt").exists()
    for name, value in _weights(setup.hub.model).items():
        assert torch.equal(value, before[name])


def test_cancel_while_training_keeps_the_window_and_the_run(qtbot, make, monkeypatch):
    setup = make()
    asked: list[str] = []
    monkeypatch.setattr(
        checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: asked.append(text) or "cancel"
    )
    assert setup.state.start(TrainConfig(batch_size=8, steps=100_000, device="cpu"), setup.hub.task, probe_text="1")
    qtbot.waitUntil(lambda: setup.state.progress is not None, timeout=WAIT_MS)
    assert setup.actions.confirm_close() is False
    assert asked and "Training is still running" in asked[0]
    assert setup.state.state == "running" and setup.state.training_thread is not None
    step = setup.state.progress.step
    qtbot.waitUntil(lambda: setup.state.progress.step > step, timeout=WAIT_MS)  # it really goes on training


def test_save_on_a_shipped_model_asks_for_a_new_file_and_leaves_the_shipped_one(
    qtbot, make, tmp_path, errors, monkeypatch
):
    from core_model.shipped import DEFAULT_CHECKPOINT, resource_path

    shipped = resource_path(DEFAULT_CHECKPOINT)
    original = shipped.read_bytes()
    setup = make()
    setup.hub.path, setup.hub.dirty = shipped, True
    asked: list[str] = []
    target = tmp_path / "mine.pt"
    monkeypatch.setattr(
        checkpoint_actions, "_ask_save_path", lambda parent, suggested: asked.append(suggested) or str(target)
    )
    with qtbot.waitSignal(setup.actions.saved, timeout=WAIT_MS):
        setup.actions.save_action.trigger()  # Ctrl+S
    assert asked and Path(asked[0]).parent != shipped.parent  # Save As, suggesting a file outside the package
    assert target.is_file() and setup.hub.path == target and not setup.hub.dirty
    assert shipped.read_bytes() == original
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.save_to(shipped)  # chosen explicitly: refused, untouched
    assert "read-only" in errors[-1][1] and shipped.read_bytes() == original


def test_opening_a_file_with_nan_weights_says_so_and_changes_nothing(qtbot, make, tmp_path, errors):
    setup = make()
    before = _weights(setup.hub.model)
    state = {k: v.clone() for k, v in build_model(SMALL, seed=4).state_dict().items()}
    state["generator.bias"][:2] = float("nan")
    path = tmp_path / "nan.pt"
    torch.save(
        {
            "format": "attention-playground-checkpoint",
            "version": 1,
            "config": SMALL.to_dict(),
            "state_dict": state,
            "history": [],
            "extra": {"task": {"task": "sort", "n_symbols": 5, "min_len": 2, "max_len": 5}},
        },
        path,
    )
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.open_path(path)
    assert errors and "nan.pt" in errors[0][1] and "non-finite" in errors[0][1] and "generator.bias" in errors[0][1]
    assert setup.hub.path is None
    for name, value in _weights(setup.hub.model).items():
        assert torch.equal(value, before[name])


def test_opening_a_checkpoint_whose_task_outgrows_its_vocabulary_says_so(qtbot, make, tmp_path, errors):
    setup = make()
    state = build_model(SMALL, seed=4).state_dict()  # vocab_size 8: room for 5 symbols
    path = tmp_path / "big-task.pt"
    torch.save(
        {
            "format": "attention-playground-checkpoint",
            "version": 1,
            "config": SMALL.to_dict(),
            "state_dict": state,
            "history": [],
            "extra": {"task": {"task": "copy", "n_symbols": 9, "min_len": 1, "max_len": 5}},
        },
        path,
    )
    with qtbot.waitSignal(setup.actions.failed, timeout=WAIT_MS):
        setup.actions.open_path(path)
    assert errors and "big-task.pt" in errors[0][1] and "vocab_size >= 12" in errors[0][1]
    assert setup.hub.path is None


def test_the_file_opened_last_wins_even_when_an_earlier_one_is_read_later(qtbot, make, tmp_path, errors):
    """Open a large file, then at once a small one (File › Open recent twice): the large one is still being read
    when the small one arrives, and it must not replace the user's last choice when it is done."""
    setup = make()
    large = save_checkpoint_of(tmp_path / "large.pt", ModelConfig(vocab_size=8, d_model=256, n_encoder_layers=4))
    small = save_checkpoint_of(tmp_path / "small.pt", SMALL)
    opened: list[str] = []
    setup.actions.opened.connect(opened.append)
    setup.actions.open_path(large)
    setup.actions.open_path(small)
    qtbot.waitUntil(lambda: setup.hub.path == small, timeout=WAIT_MS)
    pool = QThreadPool.globalInstance()
    qtbot.waitUntil(lambda: pool.activeThreadCount() == 0, timeout=WAIT_MS)  # the large file's read has ended too
    qtbot.wait(200)
    assert setup.hub.path == small and opened == [str(small)] and errors == []
    assert setup.hub.config == SMALL


def save_checkpoint_of(path: Path, config: ModelConfig) -> Path:
    from core_model.checkpoint import save_checkpoint

    return save_checkpoint(
        path, build_model(config, seed=2), extra={"task": {"task": "sort", "n_symbols": 5, "min_len": 2, "max_len": 5}}
    )


def test_a_model_chosen_while_a_file_is_read_stays_and_the_file_says_it_was_not_opened(qtbot, make, tmp_path, errors):
    """Open a file, then pick another model before it is read (a task, Undo): the later choice is the user's, so the
    file must not replace it when its read ends, and the user is told to open it again."""
    setup = make()
    large = save_checkpoint_of(tmp_path / "large.pt", ModelConfig(vocab_size=8, d_model=256, n_encoder_layers=4))
    setup.actions.open_path(large)
    chosen = build_model(SMALL, seed=5)
    setup.hub.set_model(chosen, setup.hub.task, origin="picked meanwhile")
    pool = QThreadPool.globalInstance()
    qtbot.waitUntil(lambda: pool.activeThreadCount() == 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: bool(errors), timeout=WAIT_MS)
    assert setup.hub.model is chosen and setup.hub.path is None
    assert errors == [("Did not open large.pt", checkpoint_actions.OPEN_OVERTAKEN)]


def test_training_started_from_scratch_while_a_file_is_read_says_stop_training(qtbot, make, tmp_path, errors):
    """Train from scratch puts a new model in the hub and starts training while the file is read: the reason the
    file is not opened is the training, and opening it again would be refused for the same reason."""
    setup = make()
    large = save_checkpoint_of(tmp_path / "large.pt", ModelConfig(vocab_size=8, d_model=256, n_encoder_layers=4))
    setup.actions.open_path(large)
    fresh = build_model(SMALL, seed=5)
    setup.hub.set_model(fresh, setup.hub.task, origin="untrained")  # as Train from scratch does, then trains
    setup.hub.set_training_active(True)
    try:
        qtbot.waitUntil(lambda: bool(errors), timeout=WAIT_MS)
        assert setup.hub.model is fresh
        assert errors == [("Cannot open a checkpoint", "Stop training before opening a checkpoint.")]
    finally:
        setup.hub.set_training_active(False)

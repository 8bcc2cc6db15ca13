"""TrainingState without the tab: immutable signal payloads, the hub generation, and how a failed run is logged."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from core_model.training import TrainConfig
from core_model.training_loop import Cadence
from visualizer.state.model_hub import ModelHub
from visualizer.state.training import TrainingState
from visualizer.state.training_record import MetricsView
from visualizer.workers import training_worker

WAIT_MS = 60_000


def _train(qtbot, state: TrainingState, hub: ModelHub, steps: int = 30) -> None:
    assert state.start(TrainConfig(batch_size=8, steps=steps, device="cpu"), hub.task, probe_text="0123")
    qtbot.waitUntil(lambda: not state.busy and state.training_thread is None, timeout=WAIT_MS)


def test_signals_carry_frozen_data(qtbot, hub, state):
    views, movies = [], []
    state.metrics_changed.connect(views.append)
    state.snapshots_changed.connect(movies.append)
    _train(qtbot, state, hub)
    assert state.state == "finished"
    last = views[-1]
    assert isinstance(last, MetricsView) and last.steps == tuple(range(1, 31))
    curves = [f.name for f in dataclasses.fields(last) if f.name not in ("progress", "last_eval", "snapshots")]
    assert len(curves) == 8 and all(isinstance(getattr(last, name), tuple) for name in curves)
    assert last.snapshots == ()  # only a previous run carries its probe snapshots
    assert last.progress.step == 30 and last.last_eval.step == 30
    with pytest.raises(dataclasses.FrozenInstanceError):
        last.steps = ()  # type: ignore[misc]
    assert views[0].steps == tuple(range(1, len(views[0].steps) + 1))  # a new model: its curves start at step 1
    assert isinstance(movies[-1], tuple) and [s.step for s in movies[-1]] == list(Cadence.for_steps(30).probe_steps(30))
    assert movies[-1] is state.snapshots


def test_curves_follow_the_hub_generation(qtbot, hub, state):
    replaced = []
    state.model_replaced.connect(lambda: replaced.append(hub.generation))
    _train(qtbot, state, hub)
    extra = state.to_extra()
    assert extra["eval_series"]["steps"] == [10, 20, 30] and extra["train_config"]["steps"] == 30
    assert replaced == []  # adopting our own weights bumped the generation but is not another model
    hub.new_untrained(hub.config)
    assert replaced == [hub.generation]
    assert state.series.steps == [] and state.snapshots == ()  # the old run's curves are forgotten
    after = state.to_extra()
    assert after["eval_series"]["steps"] == [] and after["probe_snapshots"] == {}


def test_a_failed_run_logs_its_traceback_at_warning(qtbot, hub, state, monkeypatch, caplog):
    def broken_evaluate(*args, **kwargs):
        raise RuntimeError("evaluation broke")

    monkeypatch.setattr(training_worker, "evaluate", broken_evaluate)
    messages = []
    state.message.connect(messages.append)
    with caplog.at_level(logging.WARNING, logger=training_worker.__name__):
        _train(qtbot, state, hub, steps=20)
    assert state.state == "failed" and messages == ["Training failed: evaluation broke"]
    records = [r for r in caplog.records if r.name == training_worker.__name__]
    assert records and records[0].levelno == logging.WARNING and records[0].exc_info is not None

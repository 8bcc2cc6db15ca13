"""View model of the Trainer tab: starts, pauses and stops runs (each on a thread its TrainingRun owns)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from PySide6.QtCore import QObject, QThread, Signal, Slot

from core_model import Seq2SeqTransformer, build_model
from core_model.checkpoint_records import CheckpointExtra, as_record
from core_model.device import pick_device
from core_model.tasks import TaskSpec, max_source_len
from core_model.training import TrainConfig
from core_model.training_loop import Cadence
from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import FROM_SCRATCH, continued_origin, stored_training
from visualizer.state.snapshots import (
    EvalSnapshot,
    OutcomeReason,
    ProbeSnapshot,
    ProgressSnapshot,
    TrainingOutcome,
    WorkerOptions,
)
from visualizer.state.source_check import check_source
from visualizer.state.training_forming import FormingRecorder
from visualizer.state.training_record import (
    MetricSeries,
    MetricsView,
    finish_text,
    keep_snapshot,
    last_step,
    record_to_extra,
    series_from_checkpoint,
    shift_history,
    shift_progress,
    snapshots_from_plain,
    stored_train_config,
)
from visualizer.state.worker_api import RunFactory, TrainingRunApi, TrainingWorkerApi

log = logging.getLogger(__name__)
DEFAULT_PROBE = TaskSpec().default_source()
RunState = Literal["idle", "running", "paused", "stopping", "finished", "failed"]
BUSY_STATES: tuple[RunState, ...] = ("running", "paused", "stopping")
FAILED_REASONS: tuple[OutcomeReason, ...] = ("diverged", "out_of_memory", "error")


class TrainingState(QObject):
    """Starts, pauses and stops training on a copy of the hub's model and hands the weights back to the hub.

    The curves and snapshots describe one model state, identified by the hub's `generation`: the one recorded
    after this state's own hand-back (or restore). Another change of the hub's model forgets them.
    """

    state_changed = Signal(str)  # RunState
    metrics_changed = Signal(object)  # MetricsView: curves, progress or last evaluation changed (also on restore)
    snapshots_changed = Signal(object)  # tuple[ProbeSnapshot, ...]: all snapshots (one more, or a new set)
    model_replaced = Signal()  # another model (not this state's trained weights) took the hub while idle
    previous_changed = Signal(object)  # MetricsView | None: the run before the last from-scratch start, greyed
    message = Signal(str)
    out_of_memory = Signal(str)
    weights_copied = Signal(object)  # TrainingOutcome: the running weights, on the model's step axis (recovery saves)

    def __init__(self, hub: ModelHub, new_run: RunFactory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub, self._new_run = hub, new_run
        self.state: RunState = "idle"
        self.series = MetricSeries()
        self.progress: ProgressSnapshot | None = None
        self.last_eval: EvalSnapshot | None = None
        self._snapshots: tuple[ProbeSnapshot, ...] = ()
        self.config: TrainConfig | None = None  # the last run's recipe and task
        self.task: TaskSpec | None = None
        self.probe_text = ""
        self._run: TrainingRunApi | None = None
        self._handled: TrainingOutcome | None = None
        self._retired: list[TrainingRunApi] = []  # ended runs whose queued `ended` has not arrived yet
        self._start_step = 0
        self._offset = 0  # a continued run's steps go on from the model's last step
        self._prefix: tuple[dict, ...] = ()  # and its history from the model's
        self.previous: MetricsView | None = None
        # the forming curves' role scores, each snapshot scored once: this run's, and the previous run's
        self.forming, self.previous_forming = FormingRecorder(), FormingRecorder()
        self._replacing = False
        self._rates: dict[str, float] | None = None
        self._generation = hub.generation
        hub.model_changed.connect(self._on_hub_model_changed)

    @property
    def busy(self) -> bool:
        return self.state in BUSY_STATES

    @property
    def end_reason(self) -> OutcomeReason | None:
        """Why the last run ended ("completed", "stopped", ...), None before any run ended."""
        return self._handled.reason if self._handled is not None else None

    @property
    def training_thread(self) -> QThread | None:
        """The running run's QThread (None when idle), for shutdown checks."""
        return self._run.qthread if self._run is not None else None

    @property
    def _worker(self) -> TrainingWorkerApi | None:
        return self._run.worker if self._run is not None else None

    def start(
        self,
        config: TrainConfig,
        task: TaskSpec,
        *,
        probe_text: str = DEFAULT_PROBE,
        rates: dict[str, float] | None = None,
        start_step: int = 0,
    ) -> bool:
        """Train a copy of the hub's model; returns False (with a message) when it cannot start."""
        if self.busy:
            return False
        self._release_run()  # an earlier run's thread may still be ending
        try:
            device = pick_device(config.device)
            model = self._training_model(rates)
            if len(task.vocabulary) > model.config.vocab_size:
                raise ValueError(
                    f"the task needs vocab_size >= {len(task.vocabulary)}, the model has {model.config.vocab_size}"
                )
        except ValueError as exc:
            self.message.emit(f"Cannot start training: {exc}")
            return False
        if start_step == 0:  # continuing: the step axis and the curves go on (continue_on_cpu keeps the old offset)
            self._offset, self._prefix = last_step(self.hub.history, self.series), tuple(self.hub.history)
        self.config, self.task, self.probe_text = config, task, probe_text
        self._start_step, self._rates = start_step, rates
        prefix = tuple(self._handled.history) if start_step and self._handled is not None else ()
        options = WorkerOptions(
            probe_text=probe_text, cadence=Cadence.for_steps(config.steps), start_step=start_step, history_prefix=prefix
        )
        self._launch(self._new_run(model, task, config, device, options))
        return True

    def start_from_scratch(
        self,
        config: TrainConfig,
        task: TaskSpec,
        *,
        probe_text: str = DEFAULT_PROBE,
        rates: dict[str, float] | None = None,
    ) -> bool:
        """Fresh weights with the current architecture (Model > Undo Train from scratch undoes it), then train;
        the curves so far stay as `previous`, greyed for comparison until clear_previous()."""
        if self.busy:
            return False
        previous = replace(self.series.view(), snapshots=self._snapshots) if self.series.steps else self.previous
        config_now = replace(self.hub.config, vocab_size=max(self.hub.config.vocab_size, task.vocab_size))
        self._replacing = True
        try:
            self.hub.set_model(
                build_model(config_now, seed=config.seed),
                task,
                origin=FROM_SCRATCH,
                undo_as="Train from scratch",
            )
        finally:
            self._replacing = False
        self.previous = previous
        self.previous_changed.emit(previous)
        return self.start(config, task, probe_text=probe_text, rates=rates)

    def _training_model(self, rates: dict[str, float] | None) -> Seq2SeqTransformer:
        """The hub's weights in a model of its own; dropout and drop_path own no weights, so they carry over."""
        model = self.hub.training_copy()
        changed: dict[str, Any] = dict(rates or {})  # ModelConfig's float fields by name
        if changed and replace(model.config, **changed) != model.config:
            state = model.state_dict()
            model = build_model(replace(model.config, **changed))
            model.load_state_dict(state)
        return model

    def _launch(self, run: TrainingRunApi) -> None:
        worker = run.worker
        worker.progressed.connect(self._on_progress)
        worker.evaluated.connect(self._on_evaluated)
        worker.probe_updated.connect(self._on_probe)
        worker.paused.connect(self._on_paused)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self.message)  # already a sentence for the status line
        worker.out_of_memory.connect(self._on_out_of_memory)
        worker.weights_copied.connect(self._on_weights_copied)
        run.ended.connect(self._on_run_ended)
        self._run, self._handled = run, None
        self.hub.set_training_active(True)
        self._set_state("running")
        run.start()

    def pause(self) -> None:
        """Ask the worker to pause; the state becomes "paused" once the weights are back in the hub."""
        if self.state == "running" and self._worker is not None:
            self._worker.request_pause()

    def resume(self) -> None:
        if self.state == "paused" and self._worker is not None:
            self._worker.request_resume()
            self.message.emit("")  # "Paused at step N" is no longer true
            self._set_state("running")

    def stop(self) -> None:
        """End the run after the current step; the weights so far go to the hub."""
        if self.state in ("running", "paused") and self._worker is not None:
            self._set_state("stopping")
            self._worker.request_stop()

    def continue_on_cpu(self) -> bool:
        """After running out of GPU memory: the remaining steps on the CPU from the last weights the hub got."""
        if self.busy or self.config is None or self.task is None or self._handled is None:
            return False
        return self.start(
            replace(self.config, device="cpu"),
            self.task,
            probe_text=self.probe_text,
            rates=self._rates,
            start_step=self._handled.step,
        )

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop, quit and wait for the thread (closeEvent); the final weights still reach the hub."""
        run = self._run
        if run is None:
            return True
        worker = run.worker
        worker.request_stop()
        if not run.join(timeout_ms):
            log.warning("training thread did not stop within %d ms", timeout_ms)
            return False
        if worker.outcome is not None:
            self._on_finished(worker.outcome)
        self._release_run()
        return True

    @Slot()
    def _on_run_ended(self) -> None:
        sender = self.sender()
        if sender is self._run:  # a late signal of an earlier run must not end the current one
            self._release_run()
        self._retired = [run for run in self._retired if run is not sender]

    def _release_run(self) -> None:
        """Forget the finished run; it stays referenced until its queued `ended` signal has arrived."""
        if self._run is not None:
            self._run.join()
            self._retired.append(self._run)
        self._run = None
        if self.busy:  # the thread ended without a final outcome
            self.hub.set_training_active(False)
            self._set_state("failed")

    @Slot(object)
    def _on_paused(self, outcome: TrainingOutcome) -> None:
        self._adopt(outcome)
        if self.state == "running":
            self._set_state("paused")
            self.message.emit(f"Paused at step {outcome.step + self._offset}; the other tabs now show these weights.")

    @Slot(object)
    def _on_finished(self, outcome: TrainingOutcome) -> None:
        if outcome is self._handled:
            return
        self._handled = outcome
        if outcome.step > self._start_step:
            self._adopt(outcome)
        self.hub.set_training_active(False)
        failed = outcome.reason in FAILED_REASONS
        if not failed:
            self.message.emit(self._finish_text(outcome))
        self._set_state("failed" if failed else "finished")

    def _finish_text(self, outcome: TrainingOutcome) -> str:
        return finish_text(outcome.reason, outcome.step, outcome.total, self._offset, self.last_eval)

    @Slot(str)
    def _on_out_of_memory(self, text: str) -> None:
        self.message.emit(text)
        self.out_of_memory.emit(text)

    def _adopt(self, outcome: TrainingOutcome) -> None:
        try:  # while this runs the state is busy, so _on_hub_model_changed leaves the curves alone
            history = [*self._prefix, *shift_history(outcome.history, self._offset)]
            stored = stored_training(self.hub.origin, list(self._prefix))  # what this run went on from
            origin = continued_origin(stored)
            self.hub.adopt_weights(outcome.state_dict, history, origin=origin, task=self.task)
        except RuntimeError as exc:  # the hub's model was replaced by one of another shape
            self.message.emit(f"Could not hand the trained weights to the model: {exc}")
        self._generation = self.hub.generation  # adopting bumps it: these curves describe the new number

    def _set_state(self, state: RunState) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    # what the worker reports, kept on the model's step axis and forgotten when another model takes the hub

    @property
    def snapshots(self) -> tuple[ProbeSnapshot, ...]:  # an immutable tuple: share it freely
        return self._snapshots

    @property
    def metrics(self) -> MetricsView:
        """The curves and latest figures as an immutable copy."""
        return self.series.view(self.progress, self.last_eval)

    def clear_previous(self) -> None:
        self.previous = None
        self.previous_changed.emit(None)

    @Slot(object)
    def _on_progress(self, snap: ProgressSnapshot) -> None:
        self.progress = snap = shift_progress(snap, self._offset)
        self.series.add_steps(snap.new_steps)
        self._emit_metrics()

    @Slot(object)
    def _on_evaluated(self, snap: EvalSnapshot) -> None:
        self.last_eval = snap = replace(snap, step=snap.step + self._offset) if self._offset else snap
        self.series.add_eval(snap)
        self._emit_metrics()

    @Slot(object)
    def _on_probe(self, snap: ProbeSnapshot) -> None:
        snap = replace(snap, step=snap.step + self._offset) if self._offset else snap
        self._snapshots = keep_snapshot(self._snapshots, snap)
        self.snapshots_changed.emit(self._snapshots)

    def _emit_metrics(self) -> None:
        self.metrics_changed.emit(self.metrics)

    def _clear(self) -> None:
        self.series, self.progress, self.last_eval, self._snapshots = MetricSeries(), None, None, ()
        self._emit_metrics()
        self.snapshots_changed.emit(self._snapshots)

    @Slot()
    def _on_hub_model_changed(self) -> None:
        """Curves and snapshots describe one model: forget them when another model replaces it."""
        if self.busy or self.hub.generation == self._generation:
            return
        self._generation = self.hub.generation
        self._clear()
        if not self._replacing:  # a from-scratch start replaces the model itself and keeps the form as it is
            self.previous = None
            self.previous_changed.emit(None)
            self.model_replaced.emit()

    # the side that faces checkpoints: the recipe, restoring curves and movie, saving them

    def stored_config(self) -> TrainConfig:
        """The recipe a checkpoint stored with the hub's model, else its task's default recipe."""
        return stored_train_config(self.hub.extra, self.hub.config.positional, self.hub.task.task)

    @staticmethod
    def probe_problem(text: str, task: TaskSpec, model_max_len: int) -> str:
        """What a probe source breaks of the task's rules (alphabet, lengths, grammar) on a model of these
        positions, as the Playground's source field says it; "" when the probe is fine."""
        error, _ids = check_source(text, task, max_source_len(model_max_len))
        return "" if error is None else error.message

    def build_matching_model(self, task) -> int | None:
        """Replace the hub's model by an untrained one whose vocabulary fits `task`; its vocab_size (None if busy)."""
        if self.busy:
            return None
        self.hub.new_untrained(
            replace(self.hub.config, vocab_size=task.vocab_size), task, undo_as="Build matching model"
        )
        return task.vocab_size

    def restore(self, history: list[dict], extra: Mapping[str, Any] | None) -> None:
        """Show the curves and the attention movie stored with a checkpoint (the hub already holds its model)."""
        self._generation = self.hub.generation
        record = as_record(extra)
        self.series, self.progress, self.last_eval = series_from_checkpoint(history, record), None, None
        self._snapshots = snapshots_from_plain(record.probe_snapshots)
        self.probe_text = self._snapshots[-1].source if self._snapshots else self.probe_text
        self._emit_metrics()
        self.snapshots_changed.emit(self._snapshots)

    def request_weights(self) -> bool:
        """Ask the running worker for a copy of its weights (`weights_copied` brings it); False when not running."""
        if self.state != "running" or self._worker is None:
            return False
        self._worker.request_weights()
        return True

    def _on_weights_copied(self, outcome: TrainingOutcome) -> None:
        """The worker's copy with its steps and history on the model's step axis, as a hand-back would put them."""
        history = (*self._prefix, *shift_history(outcome.history, self._offset))
        self.weights_copied.emit(replace(outcome, step=outcome.step + self._offset, history=history))

    def to_extra(self) -> CheckpointExtra:
        """The training's records for a checkpoint's extra (none when the curves belong to another model)."""
        same = self._generation == self.hub.generation
        return (
            record_to_extra(self.series, self._snapshots, self.config.to_dict() if self.config else None)
            if same
            else CheckpointExtra()
        )

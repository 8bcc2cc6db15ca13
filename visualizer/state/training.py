"""View model of the Trainer tab: runs the worker thread, keeps the metric series and the probe snapshots."""
from __future__ import annotations

import logging
import math
import weakref
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from PySide6.QtCore import QObject, QThread, Signal, Slot

from core_model import build_model
from core_model.device import pick_device
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig
from visualizer.state.model_hub import ModelHub
from visualizer.state.snapshots import EvalSnapshot, KindMaps, ProbeSnapshot, ProgressSnapshot, TrainingOutcome
from visualizer.workers.training_worker import TrainingWorker, WorkerOptions

log = logging.getLogger(__name__)
BUSY_STATES = ("running", "paused", "stopping")
FAILED_REASONS = ("diverged", "out_of_memory", "error")
MAX_SNAPSHOTS = 400  # probe spacing grows for long runs so a movie (and a checkpoint) stays small


@dataclass
class MetricSeries:
    """Curves of one run as plain lists (np.asarray at draw time)."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    eval_token_accuracy: list[float] = field(default_factory=list)
    eval_exact_match: list[float] = field(default_factory=list)

    def eval_dict(self) -> dict[str, list]:
        return {"steps": list(self.eval_steps), "loss": list(self.eval_loss),
                "token_accuracy": list(self.eval_token_accuracy), "exact_match": list(self.eval_exact_match)}


class TrainingState(QObject):
    """Starts, pauses and stops training on a copy of the hub's model and hands the weights back to the hub."""

    state_changed = Signal(str)  # "idle", "running", "paused", "stopping", "finished", "failed"
    metrics_appended = Signal()  # series or progress changed (also after restore)
    snapshot_added = Signal(int)  # index into snapshots
    snapshots_reset = Signal()  # snapshots replaced wholesale (restore, new run, other model)
    message = Signal(str)
    out_of_memory = Signal(str)

    def __init__(self, hub: ModelHub, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.state = "idle"
        self.series = MetricSeries()
        self.progress: ProgressSnapshot | None = None
        self.last_eval: EvalSnapshot | None = None
        self.snapshots: list[ProbeSnapshot] = []
        self.config: TrainConfig | None = None
        self.task: TaskSpec | None = None
        self.probe_text = ""
        self._thread: QThread | None = None
        self._worker: TrainingWorker | None = None
        self._handled: TrainingOutcome | None = None
        self._retired: list[tuple[QThread, TrainingWorker | None]] = []
        self._start_step = 0
        self._dropout: float | None = None
        self._model_ref = weakref.ref(hub.model)
        hub.model_changed.connect(self._on_hub_model_changed)

    @property
    def busy(self) -> bool:
        return self.state in BUSY_STATES

    @property
    def training_thread(self) -> QThread | None:
        """The running QThread (None when idle), for shutdown checks."""
        return self._thread

    def start(self, config: TrainConfig, task: TaskSpec, *, probe_text: str = "0123456789",
              dropout: float | None = None, start_step: int = 0) -> bool:
        """Train a copy of the hub's model; returns False (with a message) when it cannot start."""
        if self.busy:
            return False
        self._release_thread()  # an earlier run's thread may still be ending
        try:
            device = pick_device(config.device)
            model = self._training_model(dropout)
            if len(task.vocabulary) > model.config.vocab_size:
                raise ValueError(f"the task needs vocab_size >= {len(task.vocabulary)}, the model has "
                                 f"{model.config.vocab_size}")
        except ValueError as exc:
            self.message.emit(f"Cannot start training: {exc}")
            return False
        if start_step == 0:
            self._clear()
        self.config, self.task, self.probe_text, self._start_step = config, task, probe_text, start_step
        self._dropout = dropout
        last = self._handled
        prefix = tuple(last.history) if start_step and last is not None else ()
        self._launch(TrainingWorker(model, task, config, device, self._options(config, probe_text, start_step, prefix)))
        return True

    def _training_model(self, dropout: float | None) -> torch.nn.Module:
        """The hub's weights in a model of its own; dropout has no parameters, so a new rate keeps the weights."""
        model = self.hub.training_copy()
        if dropout is not None and dropout != model.config.dropout:
            state = model.state_dict()
            model = build_model(replace(model.config, dropout=dropout))
            model.load_state_dict(state)
        return model

    @staticmethod
    def _options(config: TrainConfig, probe_text: str, start_step: int, prefix: tuple) -> WorkerOptions:
        eval_every = min(100, max(10, config.steps // 10))
        probe_every = max(25, math.ceil(config.steps / MAX_SNAPSHOTS))
        return WorkerOptions(probe_text=probe_text, eval_every=eval_every, probe_every=probe_every,
                             start_step=start_step, history_prefix=prefix)

    def _launch(self, worker: TrainingWorker) -> None:
        thread = QThread()
        worker.moveToThread(thread)
        worker.progressed.connect(self._on_progress)
        worker.evaluated.connect(self._on_evaluated)
        worker.probe_updated.connect(self._on_probe)
        worker.paused.connect(self._on_paused)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.out_of_memory.connect(self._on_out_of_memory)
        thread.started.connect(worker.run)
        thread.finished.connect(self._on_thread_finished)
        self._thread, self._worker, self._handled = thread, worker, None
        self.hub.set_training_active(True)
        self._set_state("running")
        thread.start()

    def pause(self) -> None:
        """Ask the worker to pause; the state becomes "paused" once the weights are back in the hub."""
        if self.state == "running" and self._worker is not None:
            self._worker.request_pause()

    def resume(self) -> None:
        if self.state == "paused" and self._worker is not None:
            self._worker.request_resume()
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
        return self.start(replace(self.config, device="cpu"), self.task, probe_text=self.probe_text,
                          dropout=self._dropout, start_step=self._handled.step)

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop, quit and wait for the thread (closeEvent); the final weights still reach the hub."""
        thread, worker = self._thread, self._worker
        if thread is None or worker is None:
            return True
        worker.request_stop()
        thread.quit()
        if not thread.wait(timeout_ms):
            log.warning("training thread did not stop within %d ms", timeout_ms)
            return False
        if worker.outcome is not None:
            self._on_finished(worker.outcome)
        self._release_thread()
        return True

    @Slot()
    def _on_thread_finished(self) -> None:
        sender = self.sender()
        if sender is self._thread:  # a late signal of an earlier run's thread must not end the current one
            self._release_thread()
        self._retired = [pair for pair in self._retired if pair[0] is not sender]

    def _release_thread(self) -> None:
        """Forget the finished thread; it stays referenced until its queued `finished` signal has arrived."""
        if self._thread is not None:
            self._thread.wait()
            self._retired.append((self._thread, self._worker))
        self._thread, self._worker = None, None
        if self.busy:  # the thread ended without a final outcome
            self.hub.set_training_active(False)
            self._set_state("failed")

    @Slot(object)
    def _on_progress(self, snap: ProgressSnapshot) -> None:
        self.progress = snap
        s = self.series
        for m in snap.new_steps:
            s.steps.append(m.step), s.loss.append(m.loss), s.token_accuracy.append(m.token_accuracy), s.lr.append(m.lr)
        self.metrics_appended.emit()

    @Slot(object)
    def _on_evaluated(self, snap: EvalSnapshot) -> None:
        self.last_eval = snap
        s = self.series
        s.eval_steps.append(snap.step), s.eval_loss.append(snap.loss)
        s.eval_token_accuracy.append(snap.token_accuracy), s.eval_exact_match.append(snap.exact_match)
        self.metrics_appended.emit()

    @Slot(object)
    def _on_probe(self, snap: ProbeSnapshot) -> None:
        if self.snapshots and self.snapshots[-1].step == snap.step:
            self.snapshots[-1] = snap  # e.g. the first probe of a continued run repeats the last one
        else:
            self.snapshots.append(snap)
        self.snapshot_added.emit(len(self.snapshots) - 1)

    @Slot(object)
    def _on_paused(self, outcome: TrainingOutcome) -> None:
        self._adopt(outcome)
        if self.state == "running":
            self._set_state("paused")
            self.message.emit(f"Paused at step {outcome.step}; the other tabs now show these weights.")

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
        ev = self.last_eval
        scores = f"; exact match {ev.exact_match:.1%}, token accuracy {ev.token_accuracy:.1%}" if ev else ""
        if outcome.reason == "completed":
            return f"Finished {outcome.step} steps{scores}."
        return f"Stopped at step {outcome.step} of {outcome.total}{scores}."

    @Slot(str)
    def _on_failed(self, text: str) -> None:
        self.message.emit(text)

    @Slot(str)
    def _on_out_of_memory(self, text: str) -> None:
        self.message.emit(text)
        self.out_of_memory.emit(text)

    def _adopt(self, outcome: TrainingOutcome) -> None:
        try:
            self.hub.adopt_weights(outcome.state_dict, list(outcome.history), task=self.task)
        except RuntimeError as exc:  # the hub's model was replaced by one of another shape
            self.message.emit(f"Could not hand the trained weights to the model: {exc}")
        self._model_ref = weakref.ref(self.hub.model)

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.state_changed.emit(state)

    def _clear(self) -> None:
        self.series, self.progress, self.last_eval, self.snapshots = MetricSeries(), None, None, []
        self.metrics_appended.emit()
        self.snapshots_reset.emit()

    @Slot()
    def _on_hub_model_changed(self) -> None:
        """Curves and snapshots describe one model: forget them when another model replaces it."""
        if self._model_ref() is not self.hub.model and not self.busy:
            self._model_ref = weakref.ref(self.hub.model)
            self._clear()

    def restore(self, history: list[dict], extra: dict) -> None:
        """Show the curves and the attention movie stored with a checkpoint (the hub already holds its model)."""
        self._model_ref = weakref.ref(self.hub.model)
        series = MetricSeries()
        for row in history:
            try:
                values = (int(row["step"]), float(row["loss"]), float(row["token_accuracy"]), float(row["lr"]))
            except (KeyError, TypeError, ValueError):
                continue
            series.steps.append(values[0]), series.loss.append(values[1])
            series.token_accuracy.append(values[2]), series.lr.append(values[3])
        _restore_eval(series, extra.get("eval_series"))
        self.series, self.progress, self.last_eval = series, None, None
        self.snapshots = snapshots_from_plain(extra.get("probe_snapshots"))
        self.probe_text = self.snapshots[-1].source if self.snapshots else self.probe_text
        self.metrics_appended.emit()
        self.snapshots_reset.emit()

    def to_extra(self) -> dict:
        """Plain data for a checkpoint's extra (empty when the curves belong to another model)."""
        if self._model_ref() is not self.hub.model:
            return {}
        out: dict = {"eval_series": self.series.eval_dict(), "probe_snapshots": snapshots_to_plain(self.snapshots)}
        if self.config is not None:
            out["train_config"] = self.config.to_dict()
        return out


def _restore_eval(series: MetricSeries, data: object) -> None:
    if not isinstance(data, dict):
        return
    try:
        columns = [list(map(float, data[k])) for k in ("steps", "loss", "token_accuracy", "exact_match")]
    except (KeyError, TypeError, ValueError):
        return
    if len({len(c) for c in columns}) == 1:
        series.eval_steps = [int(v) for v in columns[0]]
        series.eval_loss, series.eval_token_accuracy, series.eval_exact_match = columns[1:]


def snapshots_to_plain(snapshots: list[ProbeSnapshot]) -> dict:
    """Stack same-shaped snapshots into tensors: data `torch.load(weights_only=True)` accepts."""
    if not snapshots:
        return {}
    first = snapshots[0]
    same = [s for s in snapshots if s.source == first.source and s.maps.keys() == first.maps.keys()
            and all(s.maps[k].values.shape == first.maps[k].values.shape for k in first.maps)]
    kinds = {
        kind: {"values": torch.from_numpy(np.stack([s.maps[kind].values for s in same])),  # (N, L, H, Tq, Tk)
               "valid": torch.from_numpy(np.ascontiguousarray(m.valid)),
               "query_labels": list(m.query_labels), "key_labels": list(m.key_labels)}
        for kind, m in first.maps.items()
    }
    return {"source": first.source, "steps": [int(s.step) for s in same], "kinds": kinds}


def snapshots_from_plain(data: object) -> list[ProbeSnapshot]:
    """Inverse of snapshots_to_plain; anything malformed gives an empty movie, never an exception."""
    if not isinstance(data, dict) or not data:
        return []
    try:
        steps, kinds = [int(s) for s in data["steps"]], data["kinds"]
        parsed = {k: (np.asarray(v["values"], np.float32), np.asarray(v["valid"], bool),
                      tuple(map(str, v["query_labels"])), tuple(map(str, v["key_labels"]))) for k, v in kinds.items()}
        if any(values.ndim != 5 or values.shape[0] != len(steps) for values, *_ in parsed.values()):
            raise ValueError("snapshot arrays do not match the steps")
        return [ProbeSnapshot(step, str(data["source"]),
                              {k: KindMaps(k, values[i].copy(), valid, q, kl) for k, (values, valid, q, kl) in parsed.items()})
                for i, step in enumerate(steps)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring stored attention snapshots: %s", exc)
        return []

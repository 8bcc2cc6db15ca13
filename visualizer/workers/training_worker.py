"""Signal plumbing around core_model's training loop: a QObject on a QThread of its own that turns hooks into signals.

TrainingRun is the one place that makes that thread; the training state receives runs from a factory (the
composition root passes TrainingRun) and so never creates a thread itself.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict

import numpy as np
import torch
from PySide6.QtCore import QObject, QThread, Signal, Slot

from core_model.inputs import decoder_input
from core_model.model import Seq2SeqTransformer
from core_model.tasks import TaskSpec, expected_output
from core_model.training import TrainConfig, Trainer, TrainingDiverged, evaluate
from core_model.training_loop import Progress, RunEnd, TrainingHooks, run_training
from visualizer.state.failures import failure_message, first_line
from visualizer.state.snapshots import (
    EvalSnapshot,
    KindMaps,
    OutcomeReason,
    ProbeSnapshot,
    TrainingOutcome,
    WorkerOptions,
)
from visualizer.workers import torch_threads
from visualizer.workers.gc_policy import GcHold

log = logging.getLogger(__name__)


def probe_maps(model: Seq2SeqTransformer, task: TaskSpec, text: str, device: torch.device) -> dict[str, KindMaps]:
    """Teacher-forced attention of one source (decoder fed <bos> + the right answer), as numpy snapshots."""
    vocab = task.vocabulary
    ids = vocab.encode(text)
    target = expected_output(task, ids)
    src_ids = task.source_ids(ids)  # what the model reads: <bos> ids <eos> for an anchored task
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt = torch.tensor([decoder_input(target)], device=device)  # (1, T)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        maps = model(src, tgt, return_attention=True).attention.to_numpy()
    model.train(was_training)
    src_labels = tuple(vocab.tokens(src_ids))
    tgt_labels = tuple(vocab.tokens(decoder_input(target)))
    s, t = len(src_ids), len(target) + 1
    stack = lambda layers: np.stack([w[0] for w in layers]).astype(np.float32)  # noqa: E731 - L x (H, Tq, Tk)
    return {
        "encoder_self": KindMaps(
            "encoder_self", stack(maps.encoder_self), np.ones((s, s), bool), src_labels, src_labels
        ),
        "decoder_self": KindMaps(
            "decoder_self", stack(maps.decoder_self), np.tril(np.ones((t, t), bool)), tgt_labels, tgt_labels
        ),
        "cross": KindMaps("cross", stack(maps.cross), np.ones((t, s), bool), tgt_labels, src_labels),
    }


class TrainingWorker(QObject):
    """Owns a model copy and a Trainer; `run` calls `run_training` with hooks that emit these signals."""

    progressed = Signal(object)  # ProgressSnapshot
    evaluated = Signal(object)  # EvalSnapshot
    probe_updated = Signal(object)  # ProbeSnapshot
    paused = Signal(object)  # TrainingOutcome (reason "paused")
    finished = Signal(object)  # TrainingOutcome: always the last signal of a run
    failed = Signal(str)  # divergence or another error, as a sentence for the status line
    out_of_memory = Signal(str)
    weights_copied = Signal(object)  # TrainingOutcome (reason "running"), after request_weights

    def __init__(
        self,
        model: Seq2SeqTransformer,
        task: TaskSpec,
        config: TrainConfig,
        device: torch.device,
        options: WorkerOptions | None = None,
    ) -> None:
        super().__init__()
        self.model, self.task, self.config, self.device = model, task, config, device
        self.options = options or WorkerOptions()
        self._stop, self._pause, self._copy = threading.Event(), threading.Event(), threading.Event()
        self._gc_hold: GcHold | None = None  # the collector's pause while this thread trains (not while paused)
        self.trainer: Trainer | None = None
        self.outcome: TrainingOutcome | None = None  # the final one, readable after the thread has finished

    def request_stop(self) -> None:
        """Thread-safe: end after the current step."""
        self._stop.set()

    def request_pause(self) -> None:
        """Thread-safe: pause after the current step and hand the weights back."""
        self._pause.set()

    def request_resume(self) -> None:
        self._pause.clear()

    def request_weights(self) -> None:
        """Thread-safe: emit a copy of the weights at the next progress report, between two steps."""
        self._copy.set()

    @Slot()
    def run(self) -> None:
        """Train until config.steps, a stop request or a failure; always ends with `finished`."""
        torch_threads.use_torch_threads(torch_threads.TRAINING_THREADS)
        self._gc_hold = GcHold()  # a full collection would stall the GUI thread (QT-NOTES); paused between runs
        try:
            self.outcome = self._train()
        except Exception as exc:  # noqa: BLE001 - any failure must reach the UI, never kill the thread silently
            log.warning("training failed", exc_info=True)
            self.failed.emit(failure_message("Training", first_line(exc)))
            self.outcome = self._outcome("error", str(exc))
        finally:
            if self._gc_hold is not None:
                self._gc_hold.end()
        self.finished.emit(self.outcome)
        # No moveToThread back to the GUI thread here: Qt takes its signal-slot mutexes there while this thread
        # holds the GIL, and a GUI-thread disconnect holding one of them while waiting for the GIL deadlocks.
        # Its TrainingRun keeps this object until the thread has finished, so deleting it from the GUI thread is safe.
        QThread.currentThread().quit()

    def _train(self) -> TrainingOutcome:
        self.trainer = Trainer(self.model, self.task, self.config, device=self.device)
        self.trainer.step = self.options.start_step
        hooks = TrainingHooks(
            on_progress=self._on_progress,
            on_eval=self._on_eval,
            on_probe=self._on_probe,
            on_pause=self._on_pause,
            on_resume=self._on_resume,
        )
        end = run_training(self.trainer, stop=self._stop, pause=self._pause, hooks=hooks, cadence=self.options.cadence)
        return self._outcome(end.reason, self._end_message(end))

    def _end_message(self, end: RunEnd) -> str:
        """The sentence for the status line; emitted as `failed` or `out_of_memory` when the run did not complete."""
        if isinstance(end.error, TrainingDiverged):
            exc = end.error
            message = f"Training stopped: {exc.what} at step {exc.step}; the weights from step {exc.step - 1} are kept."
            self.failed.emit(message)
            return message
        if end.reason == "out_of_memory":
            message = f"Out of memory on {self.device} at step {end.step + 1}: {end.error_line}"
            self.out_of_memory.emit(message)
            return message
        return ""

    def _on_progress(self, progress: Progress) -> None:
        self.progressed.emit(progress)
        if self._copy.is_set():  # this thread is the only writer of the weights: between steps they are whole
            self._copy.clear()
            self.weights_copied.emit(self._outcome("running"))

    def _on_eval(self, step: int) -> None:
        opts = self.options
        assert self.trainer is not None  # hooks run inside run_training, which _train starts once it made the trainer
        result = evaluate(
            self.model,
            self.task,
            n=opts.eval_n,
            length=self.task.max_len,
            seed=opts.eval_seed,
            device=self.device,
            masks=self.trainer.masks,
            batch_size=opts.eval_n,
        )
        self.evaluated.emit(EvalSnapshot(step, result.loss, result.token_accuracy, result.exact_match, result.n))

    def _on_probe(self, step: int) -> None:
        if self.options.probe_text:
            maps = probe_maps(self.model, self.task, self.options.probe_text, self.device)
            self.probe_updated.emit(ProbeSnapshot(step, self.options.probe_text, maps))

    def _on_pause(self, _step: int) -> None:
        """Hand the weights back; the collector may run again while the loop waits."""
        if self._gc_hold is not None:
            self._gc_hold.end()  # on again unless another job still holds it
        self.paused.emit(self._outcome("paused"))

    def _on_resume(self, _step: int) -> None:
        self._gc_hold = GcHold()

    def _outcome(self, reason: OutcomeReason, message: str = "") -> TrainingOutcome:
        state = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
        history = self.options.history_prefix + tuple(asdict(m) for m in (self.trainer.history if self.trainer else ()))
        step = self.trainer.step if self.trainer else self.options.start_step
        return TrainingOutcome(step, self.config.steps, reason, state, history, message)


class TrainingRun(QObject):
    """One run: a TrainingWorker already moved to a QThread of its own, started by `start` once its signals are
    connected. Lives on the GUI thread, so `ended` arrives there after the thread has finished."""

    ended = Signal()  # the thread has finished; its worker and thread may be dropped once this has arrived

    def __init__(
        self,
        model: Seq2SeqTransformer,
        task: TaskSpec,
        config: TrainConfig,
        device: torch.device,
        options: WorkerOptions | None = None,
    ) -> None:
        super().__init__()
        self.worker = TrainingWorker(model, task, config, device, options)
        self._thread = QThread()
        self.worker.moveToThread(self._thread)
        self._thread.started.connect(self.worker.run)
        self._thread.finished.connect(self.ended)  # queued: this object lives on the GUI thread

    def start(self) -> None:
        self._thread.start()

    @property
    def qthread(self) -> QThread:
        """The thread the worker trains on (QObject.thread() would name the run object's own thread)."""
        return self._thread

    def join(self, timeout_ms: int | None = None) -> bool:
        """Quit the thread's loop and wait for it (forever when timeout_ms is None); False when it still runs."""
        self._thread.quit()
        return self._thread.wait() if timeout_ms is None else self._thread.wait(timeout_ms)

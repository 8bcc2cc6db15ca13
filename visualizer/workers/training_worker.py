"""The training loop off the GUI thread: a QObject moved to a QThread, polling stop/pause, emitting snapshots."""
from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from core_model.model import Seq2SeqTransformer
from core_model.tasks import TaskSpec, expected_output
from core_model.training import StepMetrics, Trainer, TrainConfig, TrainingDiverged, evaluate
from core_model.vocab import BOS
from visualizer.state.snapshots import EvalSnapshot, KindMaps, ProbeSnapshot, ProgressSnapshot, TrainingOutcome

log = logging.getLogger(__name__)
EMIT_INTERVAL_S = 0.1  # progress at most ~10 times a second (QT-NOTES: more buys nothing)
PAUSE_POLL_S = 0.05


@dataclass(frozen=True)
class WorkerOptions:
    """How often the worker evaluates and probes, and what it probes."""

    probe_text: str = "0123456789"
    eval_every: int = 100
    eval_n: int = 200
    eval_seed: int = 4321
    probe_every: int = 25
    start_step: int = 0  # continue a run (e.g. on the CPU after running out of GPU memory)
    history_prefix: tuple[dict, ...] = field(default_factory=tuple)


def probe_maps(model: Seq2SeqTransformer, task: TaskSpec, text: str, device: torch.device) -> dict[str, KindMaps]:
    """Teacher-forced attention of one source (decoder fed <bos> + the right answer), as numpy snapshots."""
    vocab = task.vocabulary
    ids = vocab.encode(text)
    target = expected_output(task.task, ids)
    src = torch.tensor([ids], device=device)  # (1, S)
    tgt = torch.tensor([[BOS, *target]], device=device)  # (1, T)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        maps = model(src, tgt, return_attention=True).attention.to_numpy()
    model.train(was_training)
    src_labels = tuple(vocab.tokens(ids))
    tgt_labels = tuple(vocab.tokens([BOS, *target]))
    s, t = len(ids), len(target) + 1
    stack = lambda layers: np.stack([w[0] for w in layers]).astype(np.float32)  # noqa: E731 - L x (H, Tq, Tk)
    return {
        "encoder_self": KindMaps("encoder_self", stack(maps.encoder_self), np.ones((s, s), bool), src_labels, src_labels),
        "decoder_self": KindMaps("decoder_self", stack(maps.decoder_self), np.tril(np.ones((t, t), bool)),
                                 tgt_labels, tgt_labels),
        "cross": KindMaps("cross", stack(maps.cross), np.ones((t, s), bool), tgt_labels, src_labels),
    }


class TrainingWorker(QObject):
    """Owns a model copy and a Trainer; `run` trains until done, stopped or failed (pausing hands weights back)."""

    progressed = Signal(object)  # ProgressSnapshot
    evaluated = Signal(object)  # EvalSnapshot
    probe_updated = Signal(object)  # ProbeSnapshot
    paused = Signal(object)  # TrainingOutcome (reason "paused")
    finished = Signal(object)  # TrainingOutcome: always the last signal of a run
    failed = Signal(str)  # divergence or another error, as a sentence for the status line
    out_of_memory = Signal(str)

    def __init__(self, model: Seq2SeqTransformer, task: TaskSpec, config: TrainConfig, device: torch.device,
                 options: WorkerOptions | None = None) -> None:
        super().__init__()
        self.model, self.task, self.config, self.device = model, task, config, device
        self.options = options or WorkerOptions()
        self._stop, self._pause = threading.Event(), threading.Event()
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

    @Slot()
    def run(self) -> None:
        """Train until config.steps, a stop request or a failure; always ends with `finished`."""
        gc_was_enabled = gc.isenabled()
        gc.disable()  # QT-NOTES: full collections stall the GUI thread 100-200 ms
        try:
            self.outcome = self._train()
        except Exception as exc:  # noqa: BLE001 - any failure must reach the UI, never kill the thread silently
            log.exception("training failed")
            self.failed.emit(f"Training stopped: {exc}")
            self.outcome = self._outcome("error", str(exc))
        finally:
            gc.collect()
            if gc_was_enabled:
                gc.enable()
        self.finished.emit(self.outcome)
        self.moveToThread(QCoreApplication.instance().thread())  # so the GUI thread may delete us
        QThread.currentThread().quit()

    def _train(self) -> TrainingOutcome:
        self.trainer = Trainer(self.model, self.task, self.config, device=self.device)
        self.trainer.step = self.options.start_step
        self._clock = _RunClock(self.options.start_step)
        self._emit_probe()
        try:
            while self.trainer.step < self.config.steps:
                if self._stop.is_set():
                    return self._finish("stopped")
                if self._pause.is_set():
                    self._pause_here()
                    continue
                metrics = next(self.trainer.train_steps(1))
                self._after_step(metrics)
        except TrainingDiverged as exc:
            return self._diverged(exc)
        except torch.cuda.OutOfMemoryError as exc:
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            message = f"Out of memory on {self.device} at step {self.trainer.step + 1}: {str(exc).splitlines()[0]}"
            self.out_of_memory.emit(message)
            return self._finish("out_of_memory", message)
        return self._finish("completed")

    def _after_step(self, metrics: StepMetrics) -> None:
        step = metrics.step
        last = step >= self.config.steps
        self._clock.add(metrics)
        if last or self._clock.due():
            self.progressed.emit(self._clock.snapshot(self.config.steps))
        if last or step % self.options.eval_every == 0:
            self._emit_eval()
        if last or step % self.options.probe_every == 0:
            self._emit_probe()

    def _emit_eval(self) -> None:
        opts = self.options
        result = evaluate(self.model, self.task, n=opts.eval_n, length=self.task.max_len, seed=opts.eval_seed,
                          device=self.device, masks=self.trainer.masks, batch_size=opts.eval_n)
        self.evaluated.emit(EvalSnapshot(self.trainer.step, result.loss, result.token_accuracy, result.exact_match, result.n))

    def _emit_probe(self) -> None:
        if self.options.probe_text:
            maps = probe_maps(self.model, self.task, self.options.probe_text, self.device)
            self.probe_updated.emit(ProbeSnapshot(self.trainer.step, self.options.probe_text, maps))

    def _pause_here(self) -> None:
        """Hand the weights back, let the GUI thread collect garbage, and wait for resume or stop."""
        self._flush_progress()
        self._clock.pause()
        self.paused.emit(self._outcome("paused"))
        gc.collect()
        gc.enable()
        while self._pause.is_set() and not self._stop.is_set():
            time.sleep(PAUSE_POLL_S)
        gc.disable()
        self._clock.resume()

    def _diverged(self, exc: TrainingDiverged) -> TrainingOutcome:
        step = self.trainer.step
        what = str(exc).split(" at step")[0]
        message = f"Training stopped: {what} at step {step + 1}; the weights from step {step} are kept."
        self.failed.emit(message)
        return self._finish("diverged", message)

    def _finish(self, reason: str, message: str = "") -> TrainingOutcome:
        self._flush_progress()
        return self._outcome(reason, message)

    def _flush_progress(self) -> None:
        if self._clock.pending:
            self.progressed.emit(self._clock.snapshot(self.config.steps))

    def _outcome(self, reason: str, message: str = "") -> TrainingOutcome:
        state = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
        history = self.options.history_prefix + tuple(asdict(m) for m in (self.trainer.history if self.trainer else ()))
        step = self.trainer.step if self.trainer else self.options.start_step
        return TrainingOutcome(step, self.config.steps, reason, state, history, message)


class _RunClock:
    """Wall time of the run without pauses, and the steps not yet reported."""

    def __init__(self, start_step: int) -> None:
        self.start_step = start_step
        self.begin = time.perf_counter()
        self.paused_s = 0.0
        self.paused_at: float | None = None
        self.last_emit = self.begin
        self.pending: list[StepMetrics] = []

    def add(self, metrics: StepMetrics) -> None:
        self.pending.append(metrics)

    def due(self) -> bool:
        return time.perf_counter() - self.last_emit >= EMIT_INTERVAL_S

    def pause(self) -> None:
        self.paused_at = time.perf_counter()

    def resume(self) -> None:
        if self.paused_at is not None:
            self.paused_s += time.perf_counter() - self.paused_at
            self.paused_at = None

    def snapshot(self, total: int) -> ProgressSnapshot:
        """Summarise and clear the pending steps."""
        now = time.perf_counter()
        self.last_emit = now
        new, self.pending = tuple(self.pending), []
        last = new[-1]
        elapsed = now - self.begin - self.paused_s
        done = last.step - self.start_step
        eta = elapsed / max(done, 1) * (total - last.step)
        tokens = sum(m.tokens for m in new)
        seconds = sum(m.tokens / max(m.tokens_per_s, 1e-9) for m in new)
        tokens_per_s = tokens / seconds if tokens and seconds > 0 else float(np.mean([m.tokens_per_s for m in new]))
        return ProgressSnapshot(last.step, total, last.loss, last.token_accuracy, last.lr, tokens_per_s, elapsed, eta, new)

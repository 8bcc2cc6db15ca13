"""The interruptible training loop as a plain function (no UI): progress, evaluation and probe hooks, stop and pause.

In the style of Orange3's `concurrent.py`: `run_training` reports through plain callables and polls two
`threading.Event`s between steps, so any front end (a Qt worker, a script, a test) can drive it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from .training import StepMetrics, Trainer, TrainingDiverged

log = logging.getLogger(__name__)
EndReason = Literal["completed", "stopped", "diverged", "out_of_memory"]

# Cadence rules: app choices, not the paper's. An evaluation costs about as much as a few dozen steps and a probe
# snapshot is kept for the attention movie (and stored in checkpoints), so both thin out as runs get longer.
EVALS_PER_RUN = 10  # aim for ~10 evaluation points on the curves ...
EVAL_EVERY_MIN, EVAL_EVERY_MAX = 10, 100  # ... but never more often than every 10 steps, nor rarer than every 100
PROBE_EVERY_MIN = 25  # after the early phase: a snapshot every 25 steps ...
MAX_SNAPSHOTS = 400  # ... growing in long runs so a movie (and a checkpoint) holds at most 400 snapshots
# The attention pattern forms early (the toy tasks: around steps 30-60), so probes are log-spaced there: steps
# ceil(PROBE_GROWTH**i) up to EARLY_PROBE_END, i.e. every step at first and about every 8% of the step number later.
PROBE_GROWTH, EARLY_PROBE_END = 1.08, 300
EARLY_PROBE_STEPS = frozenset(
    math.ceil(PROBE_GROWTH**i) for i in range(int(math.log(EARLY_PROBE_END, PROBE_GROWTH)) + 1)
)
EMIT_INTERVAL_S = 0.1  # progress at most ~10 times a second (QT-NOTES: more buys nothing)
PAUSE_POLL_S = 0.05  # how often a paused loop looks at its events


@dataclass(frozen=True)
class Cadence:
    """How often the loop evaluates, probes and reports progress."""

    eval_every: int = 100  # steps between evaluations (and always after the last step)
    probe_every: int = 25  # steps between regular probe snapshots (and always at the start and after the last step)
    early_probes: frozenset[int] = frozenset()  # further probe steps (the app: EARLY_PROBE_STEPS, log-spaced)
    emit_interval_s: float = EMIT_INTERVAL_S
    pause_poll_s: float = PAUSE_POLL_S

    def __post_init__(self) -> None:
        if self.eval_every < 1 or self.probe_every < 1:
            raise ValueError(f"eval_every and probe_every must be >= 1, got {self.eval_every}, {self.probe_every}")

    @classmethod
    def for_steps(cls, steps: int) -> Cadence:
        """The app's rule: ~EVALS_PER_RUN evaluations; log-spaced early probes, then regular ones, at most
        MAX_SNAPSHOTS in all (the start, the early set, the multiples of probe_every and the last step)."""
        eval_every = min(EVAL_EVERY_MAX, max(EVAL_EVERY_MIN, steps // EVALS_PER_RUN))
        probe_every = max(PROBE_EVERY_MIN, math.ceil(steps / (MAX_SNAPSHOTS - len(EARLY_PROBE_STEPS) - 2)))
        return cls(eval_every=eval_every, probe_every=probe_every, early_probes=EARLY_PROBE_STEPS)

    def is_probe_step(self, step: int) -> bool:
        """Whether a completed step is followed by a probe (the start and the last step are probed anyway)."""
        return step % self.probe_every == 0 or step in self.early_probes

    def probe_steps(self, total: int, start: int = 0) -> tuple[int, ...]:
        """Every step a run from `start` to `total` probes, in order (what the timeline will hold)."""
        return tuple(sorted({start, total, *(s for s in range(start + 1, total + 1) if self.is_probe_step(s))}))


@dataclass(frozen=True)
class Progress:
    """Where the run stands, plus every step's metrics since the previous report (so curves miss nothing)."""

    step: int
    total: int
    loss: float
    token_accuracy: float
    lr: float
    tokens_per_s: float  # tokens / optimisation time over the steps since the previous report
    elapsed_s: float  # wall time of this run, pauses excluded
    eta_s: float
    new_steps: tuple[StepMetrics, ...] = ()


def _ignore(_value: object) -> None:
    """Default hook: nothing to do."""


@dataclass(frozen=True)
class TrainingHooks:
    """What the loop calls; each runs on the loop's thread and may raise (the run then ends with that error)."""

    on_progress: Callable[[Progress], None] = _ignore  # throttled to Cadence.emit_interval_s, flushed at the end
    on_eval: Callable[[int], None] = _ignore  # step: evaluate the current weights now
    on_probe: Callable[[int], None] = _ignore  # step: record the probe's attention now
    on_pause: Callable[[int], None] = _ignore  # step: a pause began (progress already flushed)
    on_resume: Callable[[int], None] = _ignore  # step: the pause ended (resumed or stopped)


@dataclass(frozen=True)
class RunEnd:
    """How a run ended: `step` is the last completed step; `error` is set for "diverged" and "out_of_memory"."""

    reason: EndReason
    step: int
    error: BaseException | None = field(default=None, compare=False)

    @property
    def error_line(self) -> str:
        """The first line of the error's text (CUDA's out-of-memory text runs over several lines)."""
        return str(self.error).splitlines()[0] if self.error is not None and str(self.error) else ""


class RunClock:
    """Wall time of the run without pauses, and the steps not yet reported."""

    def __init__(self, start_step: int, total: int, interval_s: float = EMIT_INTERVAL_S) -> None:
        self.start_step, self.total, self.interval_s = start_step, total, interval_s
        self.begin = self.last_emit = time.perf_counter()
        self.paused_s = 0.0
        self.paused_at: float | None = None
        self.pending: list[StepMetrics] = []

    def add(self, metrics: StepMetrics) -> None:
        self.pending.append(metrics)

    def due(self) -> bool:
        return time.perf_counter() - self.last_emit >= self.interval_s

    def pause(self) -> None:
        self.paused_at = time.perf_counter()

    def resume(self) -> None:
        if self.paused_at is not None:
            self.paused_s += time.perf_counter() - self.paused_at
            self.paused_at = None

    def report(self) -> Progress:
        """Summarise and clear the pending steps (there must be at least one)."""
        now = time.perf_counter()
        self.last_emit = now
        new, self.pending = tuple(self.pending), []
        last = new[-1]
        elapsed = now - self.begin - self.paused_s
        eta = elapsed / max(last.step - self.start_step, 1) * (self.total - last.step)
        tokens = sum(m.tokens for m in new)
        seconds = sum(m.tokens / max(m.tokens_per_s, 1e-9) for m in new)
        tokens_per_s = tokens / seconds if tokens and seconds > 0 else float(np.mean([m.tokens_per_s for m in new]))
        return Progress(last.step, self.total, last.loss, last.token_accuracy, last.lr, tokens_per_s, elapsed, eta, new)


def run_training(
    trainer: Trainer,
    *,
    stop: threading.Event,
    pause: threading.Event,
    hooks: TrainingHooks | None = None,
    cadence: Cadence | None = None,
) -> RunEnd:
    """Train from `trainer.step` to `trainer.config.steps`, polling `stop` and `pause` between steps.

    A probe is taken before the first step; evaluation and probes follow `cadence` and always run after the last
    step. While `pause` is set the loop waits (hooks.on_pause, then hooks.on_resume). Divergence and CUDA out of
    memory end the run with the trainer's weights from before the failed step; other exceptions propagate.
    """
    hooks, cadence = hooks or TrainingHooks(), cadence or Cadence()
    total = trainer.config.steps
    clock = RunClock(trainer.step, total, cadence.emit_interval_s)
    hooks.on_probe(trainer.step)
    try:
        while trainer.step < total:
            if stop.is_set():
                return _end(clock, hooks, RunEnd("stopped", trainer.step))
            if pause.is_set():
                _wait_while_paused(trainer.step, clock, hooks, stop, pause, cadence.pause_poll_s)
                continue
            metrics = next(trainer.train_steps(1))
            _after_step(metrics, clock, hooks, cadence)
    except TrainingDiverged as exc:
        log.info("run diverged: %s", exc)
        return _end(clock, hooks, RunEnd("diverged", trainer.step, exc))
    except torch.cuda.OutOfMemoryError as exc:
        if trainer.device.type == "cuda":
            torch.cuda.empty_cache()
        return _end(clock, hooks, RunEnd("out_of_memory", trainer.step, exc))
    return _end(clock, hooks, RunEnd("completed", trainer.step))


def _after_step(metrics: StepMetrics, clock: RunClock, hooks: TrainingHooks, cadence: Cadence) -> None:
    step, last = metrics.step, metrics.step >= clock.total
    clock.add(metrics)
    if last or clock.due():
        hooks.on_progress(clock.report())
    if last or step % cadence.eval_every == 0:
        hooks.on_eval(step)
    if last or cadence.is_probe_step(step):
        hooks.on_probe(step)


def _wait_while_paused(
    step: int, clock: RunClock, hooks: TrainingHooks, stop: threading.Event, pause: threading.Event, poll_s: float
) -> None:
    """Report what is pending, tell the front end, and wait for resume or stop (pauses do not count as time)."""
    _flush(clock, hooks)
    clock.pause()
    hooks.on_pause(step)
    while pause.is_set() and not stop.is_set():
        time.sleep(poll_s)  # a worker thread: blocking here is the point
    clock.resume()
    hooks.on_resume(step)


def _flush(clock: RunClock, hooks: TrainingHooks) -> None:
    if clock.pending:
        hooks.on_progress(clock.report())


def _end(clock: RunClock, hooks: TrainingHooks, end: RunEnd) -> RunEnd:
    _flush(clock, hooks)
    return end

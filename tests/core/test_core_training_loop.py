"""run_training without Qt: stop, pause and resume, the evaluation/probe cadence, divergence and out of memory."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from dataclasses import replace

import pytest
import torch

import core_model.training as training_module
from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer, TrainingDiverged
from core_model.training_loop import MAX_SNAPSHOTS, Cadence, RunEnd, TrainingHooks, run_training

SMALL_TASK = TaskSpec("copy", n_symbols=5, min_len=3, max_len=5)


def small_trainer(steps: int = 10) -> Trainer:
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    return Trainer(build_model(config, seed=0), SMALL_TASK, TrainConfig(batch_size=8, steps=steps, seed=0))


class Recorder:
    """Hooks that write down every call in order; `then` runs extra actions per (hook, step)."""

    def __init__(self, **then) -> None:
        self.calls: list[tuple[str, int]] = []
        self.progress = []
        self.then = then

    def _note(self, name: str, step: int) -> None:
        self.calls.append((name, step))
        action = self.then.get(f"{name}_{step}")
        if action is not None:
            action()

    def hooks(self) -> TrainingHooks:
        def on_progress(p):
            self.progress.append(p)
            self._note("progress", p.step)

        return TrainingHooks(
            on_progress=on_progress,
            on_eval=lambda s: self._note("eval", s),
            on_probe=lambda s: self._note("probe", s),
            on_pause=lambda s: self._note("pause", s),
            on_resume=lambda s: self._note("resume", s),
        )

    def steps(self) -> list[int]:
        return [m.step for p in self.progress for m in p.new_steps]

    def of(self, name: str) -> list[int]:
        return [s for n, s in self.calls if n == name]


def _run(trainer: Trainer, recorder: Recorder, cadence: Cadence, stop=None, pause=None) -> RunEnd:
    return run_training(
        trainer,
        stop=stop or threading.Event(),
        pause=pause or threading.Event(),
        hooks=recorder.hooks(),
        cadence=cadence,
    )


def test_completes_with_the_cadence_and_every_step_reported():
    trainer, rec = small_trainer(10), Recorder()
    end = _run(trainer, rec, Cadence(eval_every=4, probe_every=3, emit_interval_s=1e9))
    assert end == RunEnd("completed", 10) and trainer.step == 10
    assert rec.of("eval") == [4, 8, 10]  # and always after the last step
    assert rec.of("probe") == [0, 3, 6, 9, 10]  # a probe before the first step too
    assert rec.steps() == list(range(1, 11))
    assert len(rec.progress) == 1  # throttled: one report (the last step always reports)
    last = rec.progress[-1]
    assert last.step == last.total == 10 and last.eta_s == 0 and last.tokens_per_s > 0 and last.elapsed_s > 0


def test_progress_every_step_when_not_throttled():
    rec = Recorder()
    _run(small_trainer(4), rec, Cadence(emit_interval_s=0.0))
    assert [p.step for p in rec.progress] == [1, 2, 3, 4] and rec.steps() == [1, 2, 3, 4]


def test_stop_ends_after_the_current_step():
    stop = threading.Event()
    trainer, rec = small_trainer(100), Recorder(eval_3=stop.set)
    end = _run(trainer, rec, Cadence(eval_every=1, emit_interval_s=1e9), stop=stop)
    assert end.reason == "stopped" and end.step == 3 and trainer.step == 3
    assert rec.steps() == [1, 2, 3]  # flushed before returning
    assert rec.calls[-1] == ("progress", 3)


def test_pause_flushes_waits_and_resumes():
    pause, stop = threading.Event(), threading.Event()
    rec = Recorder(eval_2=pause.set, pause_2=pause.clear)  # the front end resumes at once
    safety = threading.Timer(30, stop.set)  # a loop that never calls on_pause must not hang the suite
    safety.start()
    try:
        end = _run(small_trainer(5), rec, Cadence(eval_every=1, emit_interval_s=1e9), stop=stop, pause=pause)
    finally:
        safety.cancel()
    assert end == RunEnd("completed", 5)
    i = rec.calls.index(("pause", 2))
    assert rec.calls[i - 1] == ("progress", 2) and rec.calls[i + 1] == ("resume", 2)  # flushed, then paused
    assert rec.steps() == [1, 2, 3, 4, 5] and rec.of("pause") == [2]


def test_stop_while_paused_from_another_thread():
    pause, stop = threading.Event(), threading.Event()
    waiting = threading.Event()
    rec = Recorder(eval_2=pause.set, pause_2=waiting.set)
    result: list[RunEnd] = []
    thread = threading.Thread(
        target=lambda: result.append(
            _run(small_trainer(50), rec, Cadence(eval_every=1, pause_poll_s=0.001), stop=stop, pause=pause)
        )
    )
    thread.start()
    assert waiting.wait(30)
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and result == [RunEnd("stopped", 2)]
    assert rec.of("resume") == [2]


def test_divergence_ends_the_run_with_structured_fields(monkeypatch):
    real_loss, calls = training_module.sequence_loss, []

    def nan_on_step_3(log_probs, labels, smoothing=0.0):
        calls.append(1)
        loss = real_loss(log_probs, labels, smoothing)
        return loss * float("nan") if len(calls) == 3 else loss

    monkeypatch.setattr(training_module, "sequence_loss", nan_on_step_3)
    trainer, rec = small_trainer(10), Recorder()
    end = _run(trainer, rec, Cadence(eval_every=100, emit_interval_s=1e9))
    assert end.reason == "diverged" and end.step == 2 and trainer.step == 2
    exc = end.error
    assert isinstance(exc, TrainingDiverged)
    assert (exc.step, exc.quantity, math.isnan(exc.value)) == (3, "loss", True)
    assert exc.what == "loss became nan" and str(exc) == "loss became nan at step 3; weights kept from step 2"
    assert rec.steps() == [1, 2]


def test_gradient_divergence_fields():
    trainer = small_trainer(5)
    weight = trainer.model.encoder_layers[0].ff.net[0].weight
    weight.register_hook(lambda grad: torch.full_like(grad, float("inf")))
    end = _run(trainer, Recorder(), Cadence())
    assert end.reason == "diverged" and end.step == 0
    assert (end.error.step, end.error.quantity) == (1, "grad_norm") and end.error.what.startswith(
        "gradient norm became"
    )


def test_out_of_memory_ends_the_run_before_the_failed_step(monkeypatch):
    real_step = Trainer._one_step

    def oom_at_step_4(self, batch):
        if self.step == 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")
        return real_step(self, batch)

    monkeypatch.setattr(Trainer, "_one_step", oom_at_step_4)
    rec = Recorder()
    end = _run(small_trainer(10), rec, Cadence(emit_interval_s=1e9))
    assert end.reason == "out_of_memory" and end.step == 3
    assert end.error_line == "CUDA out of memory. Tried to allocate 2.00 GiB"
    assert rec.steps() == [1, 2, 3]


def test_a_failing_hook_propagates():
    def broken(step: int) -> None:
        raise RuntimeError(f"probe broke at {step}")

    with pytest.raises(RuntimeError, match="probe broke at 0"):
        run_training(
            small_trainer(3), stop=threading.Event(), pause=threading.Event(), hooks=TrainingHooks(on_probe=broken)
        )


def test_continued_run_starts_where_the_trainer_stands():
    trainer, rec = small_trainer(8), Recorder()
    trainer.step = 5
    end = _run(trainer, rec, Cadence(eval_every=100, probe_every=100))
    assert end == RunEnd("completed", 8)
    assert rec.of("probe") == [5, 8] and rec.steps() == [6, 7, 8]


@pytest.mark.parametrize(
    ("steps", "eval_every", "probe_every"),
    [(1, 10, 25), (50, 10, 25), (300, 30, 25), (5000, 100, 25), (100_000, 100, 291)],
)
def test_app_cadence_rule(steps, eval_every, probe_every):
    cadence = Cadence.for_steps(steps)
    assert (cadence.eval_every, cadence.probe_every) == (eval_every, probe_every)
    assert len(cadence.probe_steps(steps)) <= MAX_SNAPSHOTS


def _expected_probe_steps(total: int, every: int) -> list[int]:
    """Independently: every step up to 16, then each step about 8% after the previous one up to 300, plus the
    multiples of `every`, the start and the end."""
    early, x = set(), 1.0
    while x <= 300:
        early.add(math.ceil(x))
        x *= 1.08
    return sorted({0, total} | {s for s in range(1, total + 1) if s in early or s % every == 0})


@pytest.mark.parametrize("steps", [1, 60, 300, 5000, 100_000, 2_000_000])
def test_probes_are_dense_where_the_pattern_forms_and_stay_bounded(steps):
    cadence = Cadence.for_steps(steps)
    planned = cadence.probe_steps(steps)
    assert list(planned) == _expected_probe_steps(steps, cadence.probe_every)
    assert len(planned) <= MAX_SNAPSHOTS
    between = [s for s in planned if 30 <= s <= 60]
    if steps >= 60:  # the transition of the toy tasks: a snapshot at least every 5 steps (the old rule: 50 only)
        assert len(between) >= 8 and max(b - a for a, b in zip(between, between[1:])) <= 5
    assert set(range(1, min(steps, 16) + 1)) <= set(planned)  # the very first steps change the model most


def test_the_loop_probes_on_the_planned_steps():
    trainer, rec = small_trainer(40), Recorder()
    cadence = Cadence.for_steps(40)
    _run(trainer, rec, replace(cadence, emit_interval_s=1e9))
    assert rec.of("probe") == list(cadence.probe_steps(40))


def test_cadence_rejects_zero():
    with pytest.raises(ValueError, match="eval_every"):
        Cadence(eval_every=0)


def test_the_loop_loads_no_qt():
    code = "import sys, core_model.training_loop; print(any(m.startswith('PySide6') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

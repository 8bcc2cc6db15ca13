"""Where the playground's forward passes run: the request (an immutable snapshot of inputs) and the inline runner.

A request carries everything a pass reads (ids, masks, gates, mode, the model object and its generation), so a
pass never reads the session's mutable state and may run on any thread. A stepper command (Step, Force, Back...)
travels in its request too and runs just before the pass, on the same thread as every other pass: the runner keeps
commands in order (`submit_ordered`) while plain recomputes coalesce (`submit`, latest wins). The app injects a
threaded runner (`visualizer/workers/inference.py`); tests that build a session directly get `InlineRunner`, which
runs each job at once, exactly as the session did before runners existed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from core_model import MaskSpec, Vocabulary
from core_model.model import HeadGates, Seq2SeqTransformer

from .capture import Capture, capture_maps
from .snapshots import DecodeSnapshot
from .stepper import StepCommand, Stepper, StepperInputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassRequest:
    """One forward pass with capture, described by value: the session's serial number says which is newest."""

    serial: int  # increases with every request of a session: a result with an older serial is stale
    generation: int  # the hub's model generation when the request was made
    model: Seq2SeqTransformer  # never mutated by the pass; a swapped-out model just makes the result stale
    vocab: Vocabulary
    src: torch.Tensor  # (1, S) ids, a fresh tensor nobody else holds
    tgt: torch.Tensor  # (1, T) teacher-forced decoder input (<bos> + expected + pads), used when not stepping
    masks: MaskSpec  # frozen dataclass
    gates: HeadGates | None  # fresh tensors (copied from the session's numpy gates)
    mode: str  # "weights" or "scores"
    epoch: int  # the session bumps it whenever stepping ends: a stepper from an older epoch is stopped first
    command: StepCommand | None = None  # a stepper command run first, in order with the other commands
    expected: tuple[int, ...] = ()  # the expected output ids (the decoder panel marks each step right or wrong)
    top_k: int = 5
    max_new_tokens: int = 0  # the stepper's limit
    prefix: tuple[int, ...] = ()  # target prefix ids, forced first when the stepper (re)starts


@dataclass(frozen=True)
class PassResult:
    """A finished pass and the request it answers."""

    request: PassRequest
    capture: Capture
    decoder: DecodeSnapshot  # the stepper as this pass left it


def run_pass(request: PassRequest, stepper: Stepper) -> PassResult:
    """Apply the request's stepper command, then the pass; reads nothing but the request and the stepper.

    The stepper belongs to the thread that runs the jobs: the GUI gets only the snapshot in the result.
    """
    r = request
    if r.epoch != stepper.epoch:  # stepping ended since the stepper last ran (even if that request was dropped)
        stepper.stop()
        stepper.epoch = r.epoch
    if r.command is not None:
        stepper.apply(
            r.command, StepperInputs(r.model, r.src, r.masks, r.gates, r.max_new_tokens, r.prefix, len(r.vocab))
        )
    tgt, highlight = r.tgt, None
    if stepper.stepping:
        tgt = torch.tensor([stepper.tokens], dtype=torch.long, device=r.src.device)
        highlight = tgt.shape[1] - 1
    capture = capture_maps(r.model, r.vocab, r.src, tgt, r.masks, r.gates, r.mode, highlight)
    return PassResult(r, capture, stepper.snapshot(r.vocab, list(r.expected), r.top_k, capture.first_log_probs))


Job = Callable[[], Any]


class InferenceRunner(Protocol):
    """Runs jobs; `deliver`/`fail` are called on the GUI thread. A newer job may replace one not yet started.

    Ordered jobs run first, in order, each delivered; a plain job waits behind them and is dropped by a later one.
    """

    def submit(self, job: Job, deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None: ...

    def submit_ordered(self, job: Job, deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None: ...

    def wait_idle(self, timeout_s: float = 10.0) -> bool: ...

    def shutdown(self) -> None: ...


class InlineRunner:
    """Runs each job at once on the caller's thread: deterministic, for tests and scripts without an event loop."""

    def submit(self, job: Job, deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None:
        try:
            result = job()
        except Exception as exc:  # noqa: BLE001 - reported as a sentence, like the threaded runner does
            log.warning("forward pass failed", exc_info=True)
            fail(f"{type(exc).__name__}: {exc}")
            return
        deliver(result)

    def submit_ordered(self, job: Job, deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None:
        self.submit(job, deliver, fail)

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        return True

    def shutdown(self) -> None:
        return None

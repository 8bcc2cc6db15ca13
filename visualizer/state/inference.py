"""Where the playground's forward passes run: the request (an immutable snapshot of inputs) and the inline runner.

A request carries everything a pass reads (ids, masks, gates, mode, the model object and its generation), so a
pass never reads the session's mutable state and may run on any thread. The app injects a threaded runner
(`visualizer/workers/inference.py`, latest wins); tests that build a session directly get `InlineRunner`, which runs
the pass at once, exactly as the session did before runners existed.
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

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassRequest:
    """One forward pass with capture, described by value: the session's serial number says which is newest."""

    serial: int  # increases with every request of a session: a result with an older serial is stale
    generation: int  # the hub's model generation when the request was made
    model: Seq2SeqTransformer  # never mutated by the pass; a swapped-out model just makes the result stale
    vocab: Vocabulary
    src: torch.Tensor  # (1, S) ids, a fresh tensor nobody else holds
    tgt: torch.Tensor  # (1, T) ids, a fresh tensor nobody else holds
    masks: MaskSpec  # frozen dataclass
    gates: HeadGates | None  # fresh tensors (copied from the session's numpy gates)
    mode: str  # "weights" or "scores"
    highlight: int | None  # the decoder row being stepped, or None when teacher forcing


@dataclass(frozen=True)
class PassResult:
    """A finished pass and the request it answers."""

    request: PassRequest
    capture: Capture


def run_pass(request: PassRequest) -> PassResult:
    """The pass itself: pure with respect to the request (reads nothing else), safe on a worker thread."""
    r = request
    return PassResult(r, capture_maps(r.model, r.vocab, r.src, r.tgt, r.masks, r.gates, r.mode, r.highlight))


Job = Callable[[], Any]


class InferenceRunner(Protocol):
    """Runs jobs; `deliver`/`fail` are called on the GUI thread. A newer job may replace one not yet started."""

    def submit(self, job: Job, deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None: ...

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

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        return True

    def shutdown(self) -> None:
        return None

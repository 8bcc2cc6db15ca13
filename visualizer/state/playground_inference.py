"""The playground's forward passes: the request (an immutable snapshot of inputs), the pass itself, and the frames.

A request carries everything a pass reads (ids, masks, gates, mode, the model object and its generation), so a
pass never reads the session's mutable state and may run on any thread. A stepper command (Step, Force, Back...)
travels in its request too and runs just before the pass: FramePasses submits commands as the slot's ordered tasks
(each answered) while plain recomputes coalesce (latest wins; the slot drops stale results). The app injects the
keystroke slot (`visualizer/workers/inference.py`); tests that build a session directly get an InlineSlot, which
runs each pass at once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import torch
from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer, Signal

from core_model import MaskSpec, Vocabulary
from core_model.model import HeadGates, Seq2SeqTransformer

from .playground_capture import Capture, capture_maps
from .playground_stepper import StepCommand, Stepper, StepperInputs
from .snapshots import DecodeSnapshot, PlaygroundFrame
from .worker_api import TaskSlotApi

log = logging.getLogger(__name__)
BUSY_AFTER_MS = 150  # a pass slower than this shows the busy indicator; quicker ones never flicker it


@dataclass(frozen=True)
class PassRequest:
    """One forward pass with capture, described by value."""

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


class FramePasses(QObject):
    """The session's passes on a coalescing slot: one frame per answered request, and whether the newest is late."""

    frame_changed = Signal(object)  # PlaygroundFrame, once per answered request
    busy_changed = Signal(bool)  # True while the newest pass has run longer than BUSY_AFTER_MS
    pass_failed = Signal(str)  # the newest pass raised: the slot's failure sentence

    def __init__(self, slot: TaskSlotApi, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.slot, self.busy = slot, False
        self.last_frame: PlaygroundFrame | None = None
        self._stepper = Stepper()  # used only by the slot's tasks (one at a time), never read here
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(BUSY_AFTER_MS)
        self._busy_timer.timeout.connect(lambda: self._set_busy(self.slot.running))
        slot.finished.connect(self._on_done)
        slot.failed.connect(self._on_failed)

    @property
    def idle(self) -> bool:
        """Every request has been answered (tests and benchmarks wait for this)."""
        return not self.slot.running

    def submit(self, request: PassRequest) -> PlaygroundFrame | None:
        """Run the request's pass (a command's in order, a plain one latest-wins); its frame when answered at once."""
        if not self._busy_timer.isActive() and not self.busy:
            self._busy_timer.start()
        before, stepper = self.last_frame, self._stepper
        if request.command is None:
            self.slot.submit(lambda _state: run_pass(request, stepper))
        else:
            self.slot.submit_ordered(lambda _state: run_pass(request, stepper))
        return self.last_frame if self.last_frame is not before and self.idle else None

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Process events until every request is answered (tests, benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while not self.idle:
            if time.monotonic() > deadline:
                return False
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
        return True

    def _on_done(self, result: PassResult) -> None:
        """GUI thread: the slot delivers the newest plain request's result and every command's, in order."""
        if self.idle:
            self._set_busy(False)
        cap, request = result.capture, result.request
        frame = PlaygroundFrame(
            cap.maps, result.decoder, cap.previews, tuple(request.vocab.tokens(list(request.expected)))
        )
        self.last_frame = frame
        self.frame_changed.emit(frame)

    def _on_failed(self, message: str) -> None:
        if not self.idle:
            return  # a newer request is on its way; the last good maps stay meanwhile
        self._set_busy(False)
        self.pass_failed.emit(message)

    def _set_busy(self, busy: bool) -> None:
        if not busy:
            self._busy_timer.stop()
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

"""Head roles and importance off the GUI thread: a QRunnable on the pool, progress and result as signals."""
from __future__ import annotations

import copy
import logging
import threading

import torch
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from core_model.head_importance import ImportanceCancelled, analyse_heads
from core_model.head_roles import head_roles
from core_model.model import Seq2SeqTransformer
from core_model.tasks import TaskSpec
from visualizer.workers.background import emit_safely
from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)


class HeadsJob(QObject):
    """One analysis of a copy of `model`, taken on the pool thread (deep-copying a large model takes hundreds of
    milliseconds, which the GUI thread must not pay). Exactly one of finished / failed / cancelled is emitted.

    roles_only: only head_roles (a fraction of a second, for the map badges); otherwise roles and importance.
    """

    progressed = Signal(int, int)  # done, total
    finished = Signal(object)  # HeadAnalysis, or tuple[HeadRole, ...] when roles_only
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, model: Seq2SeqTransformer, task: TaskSpec, n: int, seed: int, device: torch.device,
                 roles_only: bool = False) -> None:
        super().__init__()
        self.model, self.task, self.n, self.seed, self.device = model, task, n, seed, device
        self.roles_only = roles_only
        self._stop = threading.Event()
        self.done = threading.Event()

    def start(self, pool: QThreadPool | None = None) -> None:
        (pool or QThreadPool.globalInstance()).start(_Runner(self))

    def cancel(self) -> None:
        """Ask the job to stop after the head it is ablating now."""
        self._stop.set()

    def wait(self, timeout_ms: int) -> bool:
        """Block until the job has ended (closing the window waits for it); False on timeout."""
        return self.done.wait(timeout_ms / 1000)

    def _report(self, done: int, total: int) -> None:
        if not emit_safely(self.progressed, done, total):  # nobody left to report to: stop after this head
            self._stop.set()

    def run(self) -> None:
        """The body, on a pool thread; never raises."""
        use_background_threads()
        try:
            model = copy.deepcopy(self.model).eval()  # the job's own: a later in-place weight load cannot reach it
            if self.roles_only:
                result = head_roles(model, self.task, n=self.n, seed=self.seed, device=self.device)
            else:
                result = analyse_heads(model, self.task, n=self.n, seed=self.seed, device=self.device,
                                       progress=self._report, should_stop=self._stop.is_set)
        except ImportanceCancelled:
            emit_safely(self.cancelled)
        except Exception as exc:  # noqa: BLE001 - reported as a sentence, never raised into the event loop
            log.warning("head analysis failed", exc_info=True)
            emit_safely(self.failed, f"The head analysis failed: {exc or type(exc).__name__}")
        else:
            emit_safely(self.finished, result)
        finally:
            self.done.set()


class _Runner(QRunnable):
    def __init__(self, job: HeadsJob) -> None:
        super().__init__()
        self.job = job
        self.setAutoDelete(True)

    def run(self) -> None:  # Qt's name
        try:
            self.job.run()
        except RuntimeError:  # the job's QObject went with the window (closed mid-analysis): nobody waits for it
            log.debug("a heads job ended after its window closed; its result is dropped", exc_info=True)

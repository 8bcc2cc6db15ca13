"""The length lab's view model: two models, their exact match vs source length, and one source's cross-attention.

Every number comes from core_model through the jobs in length_lab_jobs.py; they run on worker threads through task slots
(the task layer) with progress and cancel, and reach the view as immutable snapshots (length_lab_snapshots.py).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from PySide6.QtCore import QObject, QTimer, Signal

from core_model.checkpoint import Checkpoint
from core_model.lab_training import TrainProgress, train_pair
from core_model.rope_scaling import ROPE_SCALING_KINDS
from core_model.tasks import TaskSpec

from .length_lab_jobs import evaluate_pair, probe_pair
from .length_lab_snapshots import CurvePoint, LabCurves, LabModel, ModelSource, ProbePair, curve_keys, source_key
from .worker_api import SlotFactory

log = logging.getLogger(__name__)
REDRAW_MS = 100  # the plot and the progress bar are redrawn at most 10 times a second while points arrive
DEFAULT_N, DEFAULT_SEED = 100, 1234  # n: enough for a smooth curve, 40 lengths x 2 models in well under a minute
STALE_TEXT = "Settings changed: press Evaluate"


class LengthLabState(QObject):
    """User choices in, snapshots out; no widgets."""

    curves_changed = Signal(object)  # LabCurves (partial while evaluating)
    progress_changed = Signal(int, int, str)  # done, total, what is happening
    busy_changed = Signal(bool)
    probe_changed = Signal(object)  # ProbePair
    sources_changed = Signal(object)  # tuple[ModelSource, ModelSource]
    stale_changed = Signal(object)  # tuple[bool, ...] per model: its curves were computed for other settings
    message = Signal(str)

    def __init__(
        self, make_slot: SlotFactory, sources: tuple[ModelSource, ModelSource], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.sources = sources
        self.n, self.seed, self.scaling = DEFAULT_N, DEFAULT_SEED, "none"
        self.models: tuple[LabModel, ...] = ()  # loaded by the last evaluation
        self.curves: LabCurves | None = None
        self.probe: ProbePair | None = None
        self._runner = make_slot("Evaluating", self, pause_gc=True)  # evaluation and training, one at a time
        self._runner.progressed.connect(self._on_progress)
        self._runner.finished.connect(self._on_done)
        self._runner.failed.connect(self._on_failed)
        self._probe_runner = make_slot("Computing the maps", self, pause_gc=True)
        self._probe_runner.finished.connect(self._on_probe)
        self._probe_runner.failed.connect(self.message)
        self._runner.idle.connect(lambda: self.busy_changed.emit(False))
        self._redraw = QTimer(self)  # coalesces the points that arrive between two redraws
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(REDRAW_MS)
        self._redraw.timeout.connect(self._publish)
        self._pending_text: tuple[int, int, str] | None = None
        self._curves_settings: tuple = ()  # slot_keys() of the evaluation the curves come from
        self._evaluating: tuple = ()  # (sources, n, seed, scaling) of the evaluation running now
        self._positional: dict[tuple, str] = {}  # a file's source_key -> "rope" / "sinusoidal", once it was read
        self._stale: tuple[bool, ...] = ()
        self._final_text: tuple[int, int, str] | None = None  # what the progress bar said when the job ended
        self._last_probe: tuple[int, str] | None = None  # (length, kind) of the maps shown

    @property
    def busy(self) -> bool:
        return self._runner.running

    @property
    def stale(self) -> bool:  # some curve on screen belongs to other settings than the chosen ones
        return any(self._stale)

    def slot_keys(
        self,
        sources: tuple[ModelSource, ...] | None = None,
        n: int | None = None,
        seed: int | None = None,
        scaling: str | None = None,
    ) -> tuple:
        """What each model's curve depends on (the chosen settings where an argument is None)."""
        return curve_keys(
            self.sources if sources is None else sources,
            self.n if n is None else n,
            self.seed if seed is None else seed,
            self.scaling if scaling is None else scaling,
            self._positional,
        )

    def _check_stale(self) -> None:
        """Compare each curve's settings with the chosen ones; say so on the progress bar when some differ."""
        shown = self._curves_settings if self.curves is not None else ()
        stale = tuple(old != new for old, new in zip(shown, self.slot_keys()))
        if stale == self._stale:
            return
        was, self._stale = any(self._stale), stale
        self.stale_changed.emit(stale)
        if not self.busy and self._final_text is not None and any(stale) != was:
            done, total, text = self._final_text
            self.progress_changed.emit(done, total, STALE_TEXT if any(stale) else text)

    # ----- choices -----
    def set_source(self, slot: int, source: ModelSource) -> None:
        items = list(self.sources)
        items[slot] = source
        self.sources = (items[0], items[1])
        self.models = ()
        self.sources_changed.emit(self.sources)
        self._check_stale()
        self._reprobe()

    def set_scaling(self, kind: str) -> None:
        if kind not in ROPE_SCALING_KINDS:
            raise ValueError(f"rope scaling must be one of {list(ROPE_SCALING_KINDS)}, got {kind!r}")
        self.scaling = kind
        self._check_stale()
        self._reprobe()

    def set_sampling(self, n: int | None = None, seed: int | None = None) -> None:
        """Random sources per length and their seed, for the next evaluation (None: unchanged)."""
        self.n, self.seed = self.n if n is None else n, self.seed if seed is None else seed
        self._check_stale()

    def _reprobe(self) -> None:
        """The maps shown follow the models and the scaling (one source: cheap to redo)."""
        if self._last_probe is not None:
            self.show_length(*self._last_probe)

    # ----- evaluation -----
    def evaluate(self) -> bool:
        """Score both models at every length from 1 to twice the longer training maximum."""
        sources, n, seed, scaling = self.sources, self.n, self.seed, self.scaling
        self._evaluating = (sources, n, seed, scaling)
        return self._start(
            lambda report, stop_requested: evaluate_pair(sources, n, seed, scaling, report, stop_requested),
            "Evaluating",
        )

    def _start(self, job, what: str) -> bool:
        if self._runner.running:
            self.message.emit("The lab is still busy: cancel it first")
            return False
        self._runner.what = what  # named in the failure sentence
        self._runner.submit(lambda state: job(state.report, lambda: state.cancelled))
        self._what = what
        self._final_text = None
        self.busy_changed.emit(True)
        self.progress_changed.emit(0, 0, f"{what}…")
        return True

    def cancel(self) -> None:
        self._runner.cancel()

    def _on_progress(self, item: object) -> None:
        """Take every item at once (cheap); redraw at most every REDRAW_MS (the plot costs the GUI thread)."""
        if isinstance(item, TrainProgress):
            self._pending_text = (item.done, item.total, item.text)
        elif isinstance(item, tuple) and item[0] == "plan":
            self.models, plan = item[1], item[2]
            self.curves = LabCurves.empty(self.models, plan.lengths, plan.scaling, plan.n, plan.seed)
            sources, n, seed, scaling = self._evaluating
            self._positional.update(
                (source_key(s), m.positional) for s, m in zip(sources, self.models) if s.checkpoint is None
            )  # files only: a model in memory says its own
            self._curves_settings = self.slot_keys(sources, n, seed, scaling)
            self._check_stale()
            self._publish()  # the empty plot at once: its axes and legend
            return
        elif isinstance(item, CurvePoint) and self.curves is not None:
            self.curves = self.curves.with_point(item)
            self._pending_text = None
        else:
            return
        if not self._redraw.isActive():
            self._redraw.start()

    def _publish(self) -> None:
        """Emit what arrived since the last redraw."""
        self._redraw.stop()
        if self._pending_text is not None:
            (done, total, text), self._pending_text = self._pending_text, None
            self.progress_changed.emit(done, total, text)
            return
        if self.curves is None:
            return
        self.curves_changed.emit(self.curves)
        done, total = self.curves.progress
        note = f" ({STALE_TEXT.lower()} when it is done)" if self.stale else ""
        self.progress_changed.emit(done, total, f"{self._what}: {done} of {points_text(self.curves)}{note}")

    def _on_done(self, result: object) -> None:
        if self._redraw.isActive():
            self._publish()  # the last points before the final line
        if self._what.startswith("Training"):
            if isinstance(result, tuple) and all(isinstance(c, Checkpoint) for c in result):
                self._adopt_trained(result)
            else:
                self._end_text(0, 1, "Training cancelled: the models are unchanged")
            return
        done, total = self.curves.progress if self.curves is not None else (0, 0)
        finished = done == total and total > 0
        c = self.curves
        text = (
            f"Done: {len(c.lengths)} lengths x {len(c.labels)} models, {c.n} sources each, seed {c.seed}"
            if finished and c is not None
            else f"Cancelled after {done} of {points_text(c, running=False) if c is not None else total}"
        )
        self._end_text(done, total, text)

    def _end_text(self, done: int, total: int, text: str) -> None:
        """The progress bar's last words; "Settings changed" instead while the curves are out of date."""
        self._final_text = (done, total, text)
        self.progress_changed.emit(done, total, STALE_TEXT if self.stale else text)

    def _on_failed(self, text: str) -> None:
        self._end_text(0, 1, "Failed")
        self.message.emit(text)

    # ----- training both -----
    def train_both(self, min_len: int, max_len: int, steps: int, seed: int = 0) -> bool:
        """Train a RoPE and a sinusoidal copy model on lengths min_len..max_len, then evaluate both."""
        task = replace(self.models[0].task if self.models else TaskSpec(), min_len=min_len, max_len=max_len)
        return self._start(
            lambda report, should_stop: train_pair(task, steps, seed, report, should_stop),
            f"Training both on lengths {min_len}-{max_len}",
        )

    def _adopt_trained(self, pair: tuple[Checkpoint, Checkpoint]) -> None:
        t = pair[0].task
        first, second = (
            ModelSource(f"{c.config.positional} trained here ({t.min_len}-{t.max_len})", checkpoint=c) for c in pair
        )
        self.sources = (first, second)
        self.models = ()
        self.sources_changed.emit(self.sources)
        self._check_stale()
        self._runner.idle.connect(self._evaluate_once_idle)

    def _evaluate_once_idle(self) -> None:
        self._runner.idle.disconnect(self._evaluate_once_idle)
        self.evaluate()

    # ----- one source, both models -----
    def show_length(self, length: int, kind: str = "random") -> None:
        """The cross-attention of both models for one source of `length` (the slot: the latest request wins, an
        older one stops before its next model and is never shown)."""
        self._last_probe = (length, kind)
        sources, models, scaling = self.sources, self.models, self.scaling
        self._probe_runner.submit(lambda state: probe_pair(length, kind, sources, models, scaling, state.check))

    def _on_probe(self, pair: ProbePair) -> None:
        self.probe = pair
        self.probe_changed.emit(pair)

    def shutdown(self, timeout_ms: int = 20000) -> bool:
        """Cancel and join every job (closeEvent, tests)."""
        return self._runner.shutdown(timeout_ms) & self._probe_runner.shutdown(timeout_ms)


def points_text(curves: LabCurves, running: bool = True) -> str:
    """The planned points, e.g. "64 points (32 lengths x 2 models), now RoPE": one point per model and length. The
    models run one after the other, so the one whose points are coming is named: the other has no curve yet."""
    lengths, models = len(curves.lengths), len(curves.labels)
    text = f"{lengths * models} points ({lengths} lengths x {models} models)"
    now = next((label for label, points in zip(curves.labels, curves.points) if len(points) < lengths), None)
    return f"{text}, now {now}" if running and now is not None else text

"""The length lab's view model: two models, their exact match vs source length, and one source's cross-attention.

An analysis on the seam (state/analysis.AnalysisState) of models of its own, not the hub's: its curves belong to the
settings they come from (the pair, n, seed, the RoPE scaling), so a change keeps them on screen, marked stale, where
a new model clears another tab's result. Every number comes from core_model through the jobs in length_lab_jobs.py;
they run in the task layer with progress and cancel, and reach the view as immutable snapshots
(length_lab_snapshots.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, SignalInstance

from core_model.checkpoint import Checkpoint
from core_model.lab_training import TrainProgress, train_pair
from core_model.rope_scaling import ROPE_SCALING_KINDS
from core_model.tasks import TaskSpec

from .analysis import AnalysisState
from .length_lab_jobs import evaluate_pair, probe_pair
from .length_lab_snapshots import (
    PAIR_TASKS,
    CurvePoint,
    LabCurves,
    LabModel,
    ModelSource,
    ProbePair,
    SweepPlan,
    curve_keys,
    pair_task,
    shipped_sources,
    source_key,
)
from .worker_api import SlotFactory, TaskStateApi

log = logging.getLogger(__name__)
REDRAW_MS = 100  # the plot and the progress bar are redrawn at most 10 times a second while points arrive
DEFAULT_N, DEFAULT_SEED = 100, 1234  # n: enough for a smooth curve, 40 lengths x 2 models in well under a minute
STALE_TEXT = "Settings changed: press Evaluate"
BUSY_TEXT = "The lab is still busy: cancel it first"
TRAINING_CANCELLED = "Training cancelled: the models are unchanged"


def _evaluate(state: TaskStateApi, sources: tuple[ModelSource, ...], n: int, seed: int, scaling: str) -> object:
    """A task: both models' curves, reported point by point; a cancel stops it after the batch of sources going
    (the points reported so far stay drawn)."""
    return evaluate_pair(sources, n, seed, scaling, state.report, state.check)


def _train(state: TaskStateApi, task: TaskSpec, steps: int, seed: int) -> object:
    """A task: the RoPE and sinusoidal pair trained on `task`; a cancel stops it at its next report."""
    return train_pair(task, steps, seed, state.step)


class LengthLabState(AnalysisState):
    """User choices in, snapshots out; no widgets. The frame is the curves (LabCurves, partial while evaluating);
    the status line is the progress bar's text.

    The maps of one source through both models run in a second slot of their own, as Heads scores its roles: they
    are a different run (latest request wins, no progress, no Cancel, never refused while the curves run), follow
    the chosen models and scaling at once instead of going stale, and their failure is said beside them."""

    KEEPS_STALE = True  # curves for other settings stay, faded, until Evaluate
    probe_changed = Signal(object)  # ProbePair
    sources_changed = Signal(object)  # tuple[ModelSource, ModelSource]
    stale_changed = Signal(object)  # tuple[bool, ...] per model: its curves were computed for other settings
    note = Signal(str)  # a sentence above the maps: why a run failed or was refused

    def __init__(
        self, make_slot: SlotFactory, sources: tuple[ModelSource, ModelSource], parent: QObject | None = None
    ) -> None:
        super().__init__(None, make_slot, "Evaluating", parent, pause_gc=True)  # evaluation and training, one at a time
        self.sources = sources
        self.n, self.seed, self.scaling = DEFAULT_N, DEFAULT_SEED, "none"
        self.models: tuple[LabModel, ...] = ()  # loaded by the last evaluation
        self.frame: LabCurves | None = None
        self.probe: ProbePair | None = None
        self._probe_runner = make_slot("Computing the maps", self, pause_gc=True)
        self._probe_runner.finished.connect(self._on_probe)
        self._probe_runner.failed.connect(self.note)
        self._redraw = QTimer(self)  # coalesces the points that arrive between two redraws
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(REDRAW_MS)
        self._redraw.timeout.connect(self._publish)
        self._what = "Evaluating"  # the run going, or the last one: "Evaluating" or "Training both on ..."
        self._pending_text: tuple[int, int, str] | None = None
        self._evaluating: tuple = ()  # (sources, n, seed, scaling) of the evaluation running now
        self._positional: dict[tuple, str] = {}  # a file's source_key -> "rope" / "sinusoidal", once it was read
        self._stale: tuple[bool, ...] = ()
        self._final_text: tuple[int, int, str] | None = None  # what the progress bar said when the job ended
        self._last_probe: tuple[int, str] | None = None  # (length, kind) of the maps shown

    @property
    def curves(self) -> LabCurves | None:
        """The frame: both models' points so far."""
        return self.frame

    @property
    def curves_changed(self) -> SignalInstance:
        """frame_changed, under the lab's name for its frame."""
        return self.frame_changed

    @property
    def busy(self) -> bool:
        return self.running

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

    def _belongs_to(self) -> object:
        """The curves belong to the chosen settings, each model's to its own (slot_keys)."""
        return self.slot_keys()

    def _stale_kept(self, now: object) -> None:
        """Compare each curve's settings with the chosen ones; say so on the progress bar when some differ."""
        shown = self._owner if self.frame is not None else ()
        assert isinstance(shown, tuple) and isinstance(now, tuple)
        stale = tuple(old != new for old, new in zip(shown, now))
        if stale == self._stale:
            return
        was, self._stale = any(self._stale), stale
        self.stale_changed.emit(stale)
        if not self.running and self._final_text is not None and any(stale) != was:
            done, total, text = self._final_text
            self._bar(done, total, STALE_TEXT if any(stale) else text)

    # ----- choices -----
    def set_source(self, slot: int, source: ModelSource) -> None:
        items = list(self.sources)
        items[slot] = source
        self.sources = (items[0], items[1])
        self.models = ()
        self.sources_changed.emit(self.sources)
        self._check_belongs()
        self._reprobe()

    def follow_task(self, task: str) -> str:
        """The Playground's task: its shipped pair while the lab shows a shipped pair (models of one's own stay).
        Returns the note the tab shows: "" when the lab shows that task's pair, else which pair it shows instead."""
        shown = pair_task(self.sources)
        if task in PAIR_TASKS and shown is not None and shown != task and not self.busy:
            for slot, source in enumerate(shipped_sources(task)):
                self.set_source(slot, source)
            shown = task
        if task in PAIR_TASKS or shown == task:
            return ""
        showing = f"the {shown} pair" if shown is not None else "the models chosen below"
        return (
            f"No shipped RoPE / sinusoidal pair for {task}: pairs ship for {', '.join(PAIR_TASKS)}. This lab shows "
            f"{showing}; for {task}, open two checkpoints of your own in the Model boxes."
        )

    def set_scaling(self, kind: str) -> None:
        if kind not in ROPE_SCALING_KINDS:
            raise ValueError(f"rope scaling must be one of {list(ROPE_SCALING_KINDS)}, got {kind!r}")
        self.scaling = kind
        self._check_belongs()
        self._reprobe()

    def set_sampling(self, n: int | None = None, seed: int | None = None) -> None:
        """Random sources per length and their seed, for the next evaluation (None: unchanged)."""
        self.n, self.seed = self.n if n is None else n, self.seed if seed is None else seed
        self._check_belongs()

    def _reprobe(self) -> None:
        """The maps shown follow the models and the scaling (one source: cheap to redo)."""
        if self._last_probe is not None:
            self.show_length(*self._last_probe)

    # ----- evaluation -----
    def evaluate(self) -> bool:
        """Score both models at every length from 1 to twice the longer training maximum."""
        self._evaluating = (self.sources, self.n, self.seed, self.scaling)
        return self._run("Evaluating", _evaluate, *self._evaluating)

    def _run(self, what: str, fn: Callable[..., Any], *inputs: Any) -> bool:
        """One run at a time, evaluation or training: refused, and said so, while one goes."""
        if self.running:
            self.note.emit(BUSY_TEXT)
            return False
        self._slot.what = self._what = what  # the slot names it in its failure sentence
        self._final_text = None
        self._start(f"{what}…", fn, *inputs, total=0)
        return True

    def _on_progress(self, item: object) -> None:
        """Take every item at once (cheap); redraw at most every REDRAW_MS (the plot costs the GUI thread)."""
        if isinstance(item, TrainProgress):
            self._pending_text = (item.done, item.total, item.text)
        elif isinstance(item, tuple) and item[0] == "plan":
            self._on_plan(item[1], item[2])
            return
        elif isinstance(item, CurvePoint) and self.frame is not None:
            self.frame = self.frame.with_point(item)
            self._pending_text = None
        else:
            return
        if not self._redraw.isActive():
            self._redraw.start()

    def _on_plan(self, models: tuple[LabModel, ...], plan: SweepPlan) -> None:
        """The evaluation read both models: its empty curves replace the old, and belong to its settings."""
        self.models = models
        self.frame = LabCurves.empty(models, plan.lengths, plan.scaling, plan.n, plan.seed)
        sources, n, seed, scaling = self._evaluating
        self._positional.update(
            (source_key(s), m.positional) for s, m in zip(sources, models) if s.checkpoint is None
        )  # files only: a model in memory says its own
        self._owner = self.slot_keys(sources, n, seed, scaling)
        self._check_belongs()
        self._publish()  # the empty plot at once: its axes and legend

    def _publish(self) -> None:
        """Emit what arrived since the last redraw."""
        self._redraw.stop()
        if self._pending_text is not None:
            (done, total, text), self._pending_text = self._pending_text, None
            self._bar(done, total, text)
            return
        if self.frame is None:
            return
        self.frame_changed.emit(self.frame)
        done, total = self.frame.progress
        note = f" ({STALE_TEXT.lower()} when it is done)" if self.stale else ""
        self._bar(done, total, f"{self._what}: {done} of {points_text(self.frame)}{note}")

    def _bar(self, done: int, total: int, text: str) -> None:
        """The progress bar: where it stands and its text (the status line)."""
        self.progress_changed.emit(done, total)
        self.message.emit(text)

    def _on_finished(self, result: object) -> None:
        """The curves came point by point, drawn as they came: the job's end only ends the run (after training,
        the trained pair is evaluated next)."""
        if self._redraw.isActive():
            self._publish()  # the last points before the final line
        if self._what.startswith("Training"):
            if isinstance(result, tuple) and all(isinstance(c, Checkpoint) for c in result):
                self._adopt_trained(result)
            else:
                self._end(TRAINING_CANCELLED, 0, 1)
            return
        c = self.frame
        done, total = c.progress if c is not None else (0, 0)
        finished = result is not None and done == total and total > 0
        text = (
            f"Done: {len(c.lengths)} lengths x {len(c.labels)} models, {c.n} sources each, seed {c.seed}"
            if finished and c is not None
            else f"Cancelled after {done} of {points_text(c, running=False) if c is not None else total}"
        )
        self._end(text, done, total)

    def _on_cancelled(self) -> None:
        """A job that raised after Cancel ends as one that stopped by itself."""
        self._on_finished(None)

    def _on_failed(self, text: str) -> None:
        self._end("Failed", 0, 1)
        self.note.emit(text)

    def _end(self, text: str, done: int = 0, total: int = 0) -> None:
        """The progress bar's last words; "Settings changed" instead while the curves are out of date."""
        self._final_text = (done, total, text)
        super()._end(STALE_TEXT if self.stale else text, done, total)

    # ----- training both -----
    def train_both(self, min_len: int, max_len: int, steps: int, seed: int = 0) -> bool:
        """Train a RoPE and a sinusoidal copy model on lengths min_len..max_len, then evaluate both."""
        task = replace(self.models[0].task if self.models else TaskSpec(), min_len=min_len, max_len=max_len)
        return self._run(f"Training both on lengths {min_len}-{max_len}", _train, task, steps, seed)

    def _adopt_trained(self, pair: tuple[Checkpoint, Checkpoint]) -> None:
        t = pair[0].task
        first, second = (
            ModelSource(f"{c.config.positional} trained here ({t.min_len}-{t.max_len})", checkpoint=c) for c in pair
        )
        self.sources = (first, second)
        self.models = ()
        self.sources_changed.emit(self.sources)
        self._check_belongs()
        self._slot.idle.connect(self._evaluate_once_idle)

    def _evaluate_once_idle(self) -> None:
        self._slot.idle.disconnect(self._evaluate_once_idle)
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
        return super().shutdown(timeout_ms) & self._probe_runner.shutdown(timeout_ms)


def points_text(curves: LabCurves, running: bool = True) -> str:
    """The planned points, e.g. "64 points (32 lengths x 2 models), now RoPE": one point per model and length. The
    models run one after the other, so the one whose points are coming is named: the other has no curve yet."""
    lengths, models = len(curves.lengths), len(curves.labels)
    text = f"{lengths * models} points ({lengths} lengths x {models} models)"
    now = next((label for label, points in zip(curves.labels, curves.points) if len(points) < lengths), None)
    return f"{text}, now {now}" if running and now is not None else text

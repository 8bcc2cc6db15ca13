"""Immutable messages of the length lab: which models, the curves so far, one source through both models.

The shipped pairs (SHIPPED: a RoPE and a sinusoidal model of one task) are the lab's choices of models, copy's the
default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core_model.checkpoint import Checkpoint, load_checkpoint
from core_model.length_eval import LengthResult
from core_model.length_probe import LengthProbe
from core_model.shipped import SHIPPED_MODELS, resource_path
from core_model.tasks import TaskSpec, max_source_len

PAIR_ENCODINGS = ("rope", "sinusoidal")  # a pair's two models, in the order of the boxes (A, B)
PAIR_LABELS = {"rope": "Shipped RoPE", "sinusoidal": "Shipped sinusoidal"}
PAIR_TASKS = tuple(  # the tasks with a shipped model of each encoding: the lab's pairs, copy's first
    task for task, encodings in SHIPPED_MODELS.items() if all(pe in encodings for pe in PAIR_ENCODINGS)
)
SHIPPED = tuple(  # every shipped pair's models: (label in the model boxes, resource name); copy's pair first
    (f"{PAIR_LABELS[pe]} ({task}_{pe}.pt)", f"{task}_{pe}.pt") for task in PAIR_TASKS for pe in PAIR_ENCODINGS
)


@dataclass(frozen=True)
class ModelSource:
    """Where a compared model comes from: a checkpoint file, or weights trained here (in memory)."""

    label: str
    path: Path | None = None
    checkpoint: Checkpoint | None = None


def shipped_sources(task: str = PAIR_TASKS[0]) -> tuple[ModelSource, ModelSource]:
    """The shipped RoPE and sinusoidal models of `task` (copy's by default), the lab's default pair."""
    a, b = (ModelSource(PAIR_LABELS[pe], resource_path(f"{task}_{pe}.pt")) for pe in PAIR_ENCODINGS)
    return a, b


def pair_task(sources: tuple[ModelSource, ...]) -> str | None:
    """The task whose shipped pair `sources` are, None when they are anything else (a file of one's own, weights
    trained here, two models of different tasks)."""
    for task in PAIR_TASKS:
        if tuple(source.path for source in sources) == tuple(source.path for source in shipped_sources(task)):
            return task
    return None


@dataclass(frozen=True, eq=False)
class SameObject:
    """Equal only to a holder of the very same object. Holding it keeps that object alive, so its id() cannot pass
    to a model created later while a key refers to it (a bare id() could: CPython reuses a freed object's address)."""

    held: object

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameObject) and other.held is self.held

    def __hash__(self) -> int:
        return id(self.held)


def source_key(source: ModelSource) -> tuple:
    """A model source by value (its file) or by identity (weights trained here): what a curve was computed from."""
    return source.label, str(source.path), SameObject(source.checkpoint)


def curve_keys(
    sources: tuple[ModelSource, ...], n: int, seed: int, scaling: str, positional: dict[tuple, str]
) -> tuple:
    """What each model's curve depends on: its model, n, seed, and the RoPE scaling unless the model is sinusoidal.

    `positional` maps a file's source_key to the model's encoding once it was read; an unread file counts as RoPE.
    A model in memory says its own encoding.
    """
    keys = []
    for source in sources:
        key = source_key(source)
        kind = source.checkpoint.config.positional if source.checkpoint is not None else positional.get(key, "rope")
        keys.append((key, n, seed, scaling if kind == "rope" else "none"))
    return tuple(keys)


@dataclass(frozen=True)
class LabModel:
    """A loaded model's checkpoint and its name on the plot."""

    label: str
    checkpoint: Checkpoint

    @property
    def positional(self) -> str:
        return self.checkpoint.config.positional

    @property
    def task(self) -> TaskSpec:
        return self.checkpoint.task


def load_source(source: ModelSource) -> LabModel:
    """Read the file (worker thread) or take the in-memory checkpoint; CheckpointError says what is wrong."""
    if source.checkpoint is not None:
        return LabModel(source.label, source.checkpoint)
    if source.path is None:
        raise ValueError(f"{source.label}: no checkpoint chosen")
    return LabModel(source.label, load_checkpoint(source.path))


@dataclass(frozen=True)
class CurvePoint:
    """One length of one model's curve (slot 0 or 1), as it is computed."""

    slot: int
    point: LengthResult


@dataclass(frozen=True)
class LabCurves:
    """Both models' points so far, and what the plot needs to label them."""

    labels: tuple[str, ...]
    positional: tuple[str, ...]
    train_ranges: tuple[tuple[int, int], ...]  # (min_len, max_len) each model was trained on
    lengths: tuple[int, ...]  # the planned x values
    points: tuple[tuple[LengthResult, ...], ...]  # per model, in length order
    scaling: str  # "none", "pi", "ntk": applied to the RoPE models only
    n: int
    seed: int

    @classmethod
    def empty(
        cls, models: tuple[LabModel, ...], lengths: tuple[int, ...], scaling: str, n: int, seed: int
    ) -> LabCurves:
        return cls(
            tuple(m.label for m in models),
            tuple(m.positional for m in models),
            tuple((m.task.min_len, m.task.max_len) for m in models),
            lengths,
            tuple(() for _ in models),
            scaling,
            n,
            seed,
        )

    def with_point(self, item: CurvePoint) -> LabCurves:
        points = list(self.points)
        points[item.slot] = (*points[item.slot], item.point)
        return LabCurves(
            self.labels,
            self.positional,
            self.train_ranges,
            self.lengths,
            tuple(points),
            self.scaling,
            self.n,
            self.seed,
        )

    @property
    def progress(self) -> tuple[int, int]:
        """(points computed, points planned)."""
        return sum(len(p) for p in self.points), len(self.lengths) * len(self.labels)


@dataclass(frozen=True)
class ProbePair:
    """One source of `length` through each model (None where the length does not fit that model)."""

    length: int
    kind: str  # "random" or "repeated"
    labels: tuple[str, ...]
    tasks: tuple[TaskSpec, ...]
    probes: tuple[LengthProbe | None, ...]


@dataclass(frozen=True)
class SweepPlan:
    """What one evaluation covers: both models, the lengths, and how RoPE models are stretched."""

    lengths: tuple[int, ...]
    n: int
    seed: int
    scaling: str


def sweep_plan(models: tuple[LabModel, ...], n: int, seed: int, scaling: str) -> SweepPlan:
    """Lengths 1 .. 2x the longer training maximum, as far as the larger model's positions allow."""
    longest_trained = max(m.task.max_len for m in models)
    limit = max(max_source_len(m.checkpoint.config.max_len) for m in models)
    return SweepPlan(tuple(range(1, min(2 * longest_trained, limit) + 1)), n, seed, scaling)

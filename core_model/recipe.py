"""The data recipe of the shipped models as pure functions: `train`, the Trainer tab and resources/train_shipped.py
all start from it, so a model trained with the defaults knows the lengths and the sources a shipped one knows.

Two data choices make a model right on every source of its lengths (docs/SHIPPED_MODELS.md, "The repeated-symbol
lesson"): a share of the training sources are runs of repeated symbols, and RoPE models read their source as
<bos> symbols <eos> (an absolute anchor: without one a RoPE encoder cannot tell "00" from "0000").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .checkpoint_records import CheckpointExtra
from .tasks import TaskSpec, max_source_len, task_named
from .train_config import PAPER_ADAM_BETA1, TrainConfig, default_recipe

RECIPE_SYMBOLS = 10  # copy's, reverse's and sort's; every task's own is its Task.default_symbols
RECIPE_MIN_LEN = 1  # ... and its Task.training_lengths
RECIPE_MAX_LEN = 16
RECIPE_RUNS = 0.25  # share of training sources drawn as runs of repeated symbols
# What the shipped models add to the default recipe: more, larger steps at a gentler rate, on one CPU thread, with
# the paper's Adam beta1 (what they were trained with, so the script makes them again as they are).
SHIPPED_TRAINING: Mapping[str, Any] = MappingProxyType(
    {"steps": 4000, "batch_size": 64, "lr": 3e-3, "adam_beta1": PAPER_ADAM_BETA1, "seed": 0, "device": "cpu"}
)
# Tasks whose main phase differs: recall sits on a plateau (it guesses among the values) until its heads find the
# key, about 4,000 steps in at a peak rate of 1e-3; at 3e-3 it stays there.
SHIPPED_MAIN: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"recall": MappingProxyType({"steps": 8000, "lr": 1e-3})}
)
# Sort needs a second, gentler phase: more steps at a lower learning rate, on a fresh data stream (seed + 1).
SHIPPED_POLISH: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"sort": MappingProxyType({"steps": 2000, "lr": 5e-4})}
)
TrainedLengths = tuple[int, int]  # shortest and longest source length trained on, both included


def anchored_by_default(positional: str) -> bool:
    """RoPE needs <bos> ... <eos> anchors to see a source's length; sinusoidal PE adds absolute positions itself."""
    return positional == "rope"


def recipe_task(
    task: str,
    positional: str,
    *,
    n_symbols: int | None = None,
    min_len: int | None = None,
    max_len: int | None = None,
    runs: float = RECIPE_RUNS,
    anchored: bool | None = None,
    model_max_len: int | None = None,
) -> TaskSpec:
    """The shipped models' TaskSpec for `task` on a model with this positional encoding; any field may be changed.

    n_symbols, min_len and max_len None take the task's own (its default size and training lengths: 10 symbols
    and 1-16 for copy, reverse and sort); `anchored` None follows the encoding (anchored_by_default);
    `model_max_len` caps the lengths to what fits it.
    """
    definition = task_named(task)
    n_symbols = definition.default_symbols if n_symbols is None else n_symbols
    min_len = definition.training_lengths[0] if min_len is None else min_len
    max_len = definition.training_lengths[1] if max_len is None else max_len
    if model_max_len is not None:
        limit = max(1, max_source_len(model_max_len))
        min_len, max_len = min(min_len, limit), min(max_len, limit)
    anchored = anchored_by_default(positional) if anchored is None else anchored
    return TaskSpec(task, n_symbols, min_len, max_len, runs=runs, anchored=anchored)


def task_train_config(task: str, positional: str, **overrides: Any) -> TrainConfig:
    """How the Trainer and `train` train `task` by default on a model with this positional encoding: the app's
    recipe for the encoding with what the task changes (Task.training), then `overrides`."""
    return default_recipe(positional, **{**task_named(task).training.overrides(), **overrides})


@dataclass(frozen=True)
class Recipe:
    """What to train on and how: one main phase, and for some tasks a second, gentler one (`polish`)."""

    task: TaskSpec
    train: TrainConfig
    polish: TrainConfig | None = None


def shipped_recipe(task: str, positional: str, steps: int | None = None) -> Recipe:
    """The recipe resources/train_shipped.py trains the shipped checkpoint TASK_POSITIONAL with (steps None: the
    task's own number, 4,000 unless SHIPPED_MAIN says)."""
    main = {**SHIPPED_TRAINING, **SHIPPED_MAIN.get(task, {})}
    train = default_recipe(positional, **{**main, "steps": main["steps"] if steps is None else steps})
    phase = SHIPPED_POLISH.get(task)
    polish = (
        None
        if phase is None
        else default_recipe(positional, **{**SHIPPED_TRAINING, **phase, "seed": SHIPPED_TRAINING["seed"] + 1})
    )
    return Recipe(recipe_task(task, positional), train, polish)


def stored_trained_lengths(extra: CheckpointExtra, history: Sequence[object]) -> TrainedLengths | None:
    """The source lengths a checkpoint's weights were trained on: its stored task's range, when it stores a task
    and a training history (the record has checked the task). None when it does not say."""
    if not history or extra.task is None:
        return None
    return extra.task.min_len, extra.task.max_len


def outside_trained(lengths: TrainedLengths | None, length: int) -> bool | None:
    """Whether a source of `length` symbols lies outside the trained lengths (None: they are not known)."""
    if lengths is None:
        return None
    return not lengths[0] <= length <= lengths[1]


def describe_trained(lengths: TrainedLengths | None, untrained: bool = False) -> str:
    """How a summary names the trained lengths: "1-16", "untrained" or "unknown" (never a range it cannot know)."""
    if lengths is not None:
        low, high = lengths
        return f"{low}" if low == high else f"{low}-{high}"
    return "untrained" if untrained else "unknown"

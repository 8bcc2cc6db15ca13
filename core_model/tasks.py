"""The task registry, the stored task choice (TaskSpec), and the batches drawn from it, deterministic given a
torch.Generator.

Every task is a value in TASKS (a core_model.task.Task, listed in core_model.task_library); nothing else names one.
A TaskSpec is what a checkpoint stores: a task's name, its size (`n_symbols`), the source lengths to train on and
the two data options. Its symbol-id methods are what the rest of the app calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .batches import Batch
from .config import check_choice, check_float, check_int
from .inputs import encoder_input
from .task import Task, Truth
from .task_library import LIBRARY
from .vocab import N_SPECIALS, Vocabulary

__all__ = [
    "DEFAULT_TASK",
    "SEQUENCE_OVERHEAD",
    "TASKS",
    "TASK_NAMES",
    "Batch",
    "Task",
    "TaskSpec",
    "default_spec",
    "expected_output",
    "make_batch",
    "max_source_len",
    "task_named",
]

TASKS: dict[str, Task] = {task.name: task for task in LIBRARY}
TASK_NAMES: tuple[str, ...] = tuple(TASKS)
DEFAULT_TASK = TASK_NAMES[0]  # copy: what a TaskSpec, and a checkpoint that stores no task, means
# Positions a source of n symbols costs beyond n: the decoder reads <bos> + target and must also emit <eos>.
SEQUENCE_OVERHEAD = 2


def task_named(name: str) -> Task:
    """The registry's task of that name; any other name is a ValueError listing the names."""
    check_choice("task", name, TASK_NAMES)
    return TASKS[name]


def max_source_len(model_max_len: int) -> int:
    """Longest source a model built for `model_max_len` positions can take (< 1: none fits)."""
    return model_max_len - SEQUENCE_OVERHEAD


@dataclass(frozen=True)
class TaskSpec:
    """Which task, of what size, and the source length range (inclusive).

    `n_symbols` is what the task sizes by (its alphabet, number base or number of keys: Task.symbols_meaning); the
    range must hold at least one length the task takes (addition: odd lengths), and only those are drawn.
    """

    task: str = DEFAULT_TASK
    n_symbols: int = 10
    min_len: int = 10
    max_len: int = 10
    # Fraction of training sources drawn as the task's hard cases: runs of repeated symbols for copy, reverse and
    # sort (0 keeps the plain uniform draws, and their random stream), Task.draw_hard for every task. Uniform
    # sources almost never repeat a symbol many times, so a model never sees "0000".
    runs: float = 0.0
    # Wrap every source as <bos> symbols <eos>: absolute anchors for a RoPE encoder, which otherwise cannot tell
    # identical tokens (or "00" from "0000") apart. The source then takes two more encoder positions.
    anchored: bool = False

    def __post_init__(self) -> None:
        definition = task_named(self.task)
        check_float("runs", self.runs, 0.0, 1.0)
        if not isinstance(self.anchored, bool):
            raise ValueError(f"anchored must be one of [True, False], got {self.anchored!r}")
        problem = definition.symbols_problem(self.n_symbols)
        if problem:
            raise ValueError(problem)
        check_int("min_len", self.min_len, 1)
        check_int("max_len", self.max_len, self.min_len)
        if not self.lengths():
            raise ValueError(
                f"max_len: the lengths {self.min_len} to {self.max_len} hold none {self.task} takes "
                f"({definition.length_rule(self.n_symbols)})"
            )

    @property
    def definition(self) -> Task:
        """The registry's Task this spec names."""
        return TASKS[self.task]

    @property
    def vocabulary(self) -> Vocabulary:
        return self.definition.vocabulary(self.n_symbols)

    @property
    def vocab_size(self) -> int:
        """The smallest ModelConfig.vocab_size that can learn this task."""
        return len(self.vocabulary)

    def lengths(self) -> range:
        """The source lengths in [min_len, max_len] the task takes: the ones batches draw from."""
        return self.definition.valid_lengths(self.min_len, self.max_len, self.n_symbols)

    def longest_target(self) -> int:
        """The longest expected output a source of these lengths can have (the longest source's: Task.longest_target
        never decreases with the length)."""
        return self.definition.longest_target(self.lengths()[-1], self.n_symbols)

    def check_fits(self, model_max_len: int) -> None:
        """Raise a ValueError naming the limit when the longest source, or the longest target (the decoder reads
        <bos> + target and emits <eos>), does not fit a model's positions."""
        limit = max_source_len(model_max_len)
        if self.max_len > limit:
            raise ValueError(
                f"max_len must be at most {limit} (the model's max_len {model_max_len} minus {SEQUENCE_OVERHEAD} "
                f"for <bos> and <eos>), got {self.max_len}"
            )
        if self.longest_target() > limit:
            raise ValueError(
                f"max_len {self.max_len} gives {self.task} outputs of up to {self.longest_target()} symbols; the "
                f"model's max_len {model_max_len} leaves room for {limit} besides <bos> and <eos>"
            )

    def check_vocab(self, model_vocab_size: int) -> None:
        """Raise a ValueError when a model's vocabulary is too small for this task's symbols plus the specials."""
        if self.vocab_size > model_vocab_size:
            raise ValueError(
                f"the task needs vocab_size >= {self.vocab_size} ({self.vocab_size - N_SPECIALS} symbols and "
                f"{N_SPECIALS} special tokens), the model has {model_vocab_size}"
            )

    def source_ids(self, ids: list[int]) -> list[int]:
        """The encoder input for source symbol ids: the ids themselves, or <bos> ids <eos> when anchored."""
        return encoder_input(ids, anchored=self.anchored)

    def default_source(self) -> str:
        """The task's example at its longest length ("0123456789" for copy by default)."""
        return self.definition.example(self.n_symbols, self.lengths()[-1])

    # ----- a source as symbol ids: the task's rule, answer and ground truth -----
    def source_problem(self, ids: Sequence[int]) -> str | None:
        """The rule source ids break (alphabet, length, grammar), or None."""
        try:
            self._source(ids)
        except ValueError as exc:
            return str(exc)
        return None

    def expected(self, ids: Sequence[int]) -> list[int]:
        """What the task asks the model to produce for source ids (no specials); a source the task does not take
        raises ValueError naming the rule it breaks."""
        return self.definition.expected_ids(list(ids), self.n_symbols)

    def reads(self, ids: Sequence[int]) -> Truth:
        """Per expected output symbol, the source positions its value is read from (core_model.task)."""
        return self.definition.reads(self._source(ids), self.n_symbols)

    def depends(self, ids: Sequence[int]) -> Truth:
        """Per expected output symbol, every source position that can change it (core_model.task)."""
        return self.definition.depends(self._source(ids), self.n_symbols)

    def _source(self, ids: Sequence[int]) -> str:
        return self.definition.checked(self.vocabulary.tokens(ids), self.n_symbols)


def default_spec(name: str, **fields: object) -> TaskSpec:
    """A task's TaskSpec at its default size and training lengths; any field may be given."""
    task = task_named(name)
    low, high = task.training_lengths
    chosen: dict[str, object] = {"n_symbols": task.default_symbols, "min_len": low, "max_len": high, **fields}
    return TaskSpec(name, **chosen)  # type: ignore[arg-type]


def expected_output(task: TaskSpec, ids: Sequence[int]) -> list[int]:
    """What the task asks the model to produce for source ids (no specials)."""
    return task.expected(ids)


def make_batch(spec: TaskSpec, batch_size: int, generator: torch.Generator, length: int | None = None) -> Batch:
    """Random sources of the task's lengths in [min_len, max_len] (or exactly `length`), each side padded on the
    right on its own; a length the task does not take is a ValueError."""
    return spec.definition.make_batch(spec, batch_size, generator, length)

"""A task as a value: its alphabets, lengths, generator, expected output, grammar, hard cases and ground truth.

Every task the playground knows is one `Task` in the registry (core_model.tasks.TASKS, built from the list in
core_model.task_library); the rest of the app asks
the task, never branches on its name. A source is a string of one-character symbols (the Vocabulary's), positions
are 0-based symbol positions in it (before the optional <bos>/<eos> anchors), and `n_symbols` is the one size a task
takes (its alphabet, its number base, its number of keys: each task says which in `symbols_meaning`).

Ground truth, for each position of the expected output (the <eos> that ends it has none):

- `reads`: the source positions the output's value is read from. For a task whose output copies a source symbol,
  every position holding that symbol counts (a copied "3" may be read from any "3": ties count, as the Heads tab's
  alignment counts them). For a task that computes its output (a sum, a count, a depth), each task states what its
  algorithm reads at that step; the value is not looked for elsewhere.
- `depends`: every source position that can change the output. A position outside the set cannot change it by any
  change of its symbol alone (tests check this by changing symbols); a position inside it is one the algorithm
  combines into that output, and on some source of the same layout its change alone does change it. Structural
  symbols a grammar fixes in place (the "+" of an addition, the "?" of a recall) are never in it.

Generators are deterministic given a torch.Generator: a batch draws one seed from it and builds its rows with a
Python `random.Random` of that seed (sources are short; a row costs microseconds).
"""

from __future__ import annotations

import functools
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch

from .batches import Batch, batch_from_rows
from .vocab import Vocabulary

Positions = tuple[int, ...]  # source positions, ascending
Truth = tuple[Positions, ...]  # one entry per output symbol
SEED_HIGH = 2**62  # a batch's rows are drawn with random.Random(seed), seed drawn below this from the generator


@dataclass(frozen=True)
class Training:
    """What a task changes in the Trainer's default recipe (core_model.recipe.task_train_config): the app's fast
    recipe (300 steps at 6e-3) teaches copy in seconds, but a task that must count, carry or find a key needs more
    steps at a gentler rate to reach 99 % exact match. None keeps the recipe's value."""

    steps: int | None = None
    lr: float | None = None
    batch_size: int | None = None

    def overrides(self) -> dict[str, int | float]:
        """The TrainConfig fields this changes, by name."""
        return {key: value for key, value in vars(self).items() if value is not None}


class Drawn(Protocol):
    """What a batch is drawn for: a TaskSpec (core_model.tasks), read through this protocol so that a task never
    imports the registry that lists it."""

    @property
    def n_symbols(self) -> int: ...

    @property
    def min_len(self) -> int: ...

    @property
    def max_len(self) -> int: ...

    @property
    def runs(self) -> float: ...

    @property
    def anchored(self) -> bool: ...


@dataclass(frozen=True)
class Task(ABC):
    """One toy task: what it asks, which sources it takes, what it answers, and where each answer comes from.

    The fields describe it (shown in the app and docs/TASKS.md); the methods compute it. Subclasses implement the
    abstract methods and may narrow the lengths (LENGTH_STEP, `max_length`, `length_rule` says them) or the
    grammar (`grammar_problem`).
    """

    name: str  # registry key, stored in checkpoints (TaskSpec.task)
    description: str  # one line: what the task asks
    explanation: str  # a few sentences a student reads: the algorithm that solves it
    symbols_meaning: str  # what n_symbols means for this task ("alphabet size", "number base", ...)
    symbols_range: tuple[int, int]  # the n_symbols it accepts, both ends included (fixed alphabet: (k, k))
    default_symbols: int  # n_symbols of its default TaskSpec
    length_range: tuple[int, int | None]  # the source lengths it accepts at all (None: no upper limit)
    training_lengths: tuple[int, int]  # min_len, max_len of its default TaskSpec
    training: Training = Training()  # what its Trainer recipe changes of the app's default (none: train as copy)

    # ----- alphabets -----
    @abstractmethod
    def source_alphabet(self, n_symbols: int) -> str:
        """Symbols a source may hold (structural ones such as "+" included)."""

    @abstractmethod
    def target_alphabet(self, n_symbols: int) -> str:
        """Symbols an expected output may hold."""

    def symbols(self, n_symbols: int) -> str:
        """The vocabulary's symbols: the source alphabet, then the target's symbols it lacks."""
        return "".join(dict.fromkeys(self.source_alphabet(n_symbols) + self.target_alphabet(n_symbols)))

    def vocabulary(self, n_symbols: int) -> Vocabulary:
        """The shared encoder/decoder vocabulary (one immutable instance per symbol set)."""
        return _vocabulary(self.symbols(n_symbols))

    def symbols_problem(self, n_symbols: object) -> str | None:
        """Why this task cannot take `n_symbols`, or None."""
        low, high = self.symbols_range
        if isinstance(n_symbols, int) and not isinstance(n_symbols, bool) and low <= n_symbols <= high:
            return None
        if low == high:
            return (
                f"n_symbols must be {low} for {self.name} ({self.symbols_meaning}: its alphabet is fixed), "
                f"got {n_symbols!r}"
            )
        meaning = f"for {self.name} ({self.symbols_meaning})"
        return f"n_symbols must be an integer in [{low}, {high}] {meaning}, got {n_symbols!r}"

    # ----- lengths -----
    # A task's lengths run from length_range[0] in steps of LENGTH_STEP up to max_length(n_symbols): every length,
    # or every other one (addition's 2m + 1), so the valid lengths of any span are a range, never a scan.
    LENGTH_STEP: ClassVar[int] = 1

    def max_length(self, n_symbols: int) -> int | None:
        """The longest source the task takes at this size (None: no limit)."""
        return self.length_range[1]

    def length_rule(self, n_symbols: int) -> str:
        """Which lengths the task takes, in words (a message says it, then the length it got)."""
        low, high = self.length_range[0], self.max_length(n_symbols)
        span = f"{low} or more" if high is None else f"{low} to {high}"
        return f"{self.name} takes sources of {span} symbols"

    def valid_lengths(self, low: int, high: int, n_symbols: int) -> range:
        """The source lengths in [low, high] this task takes, ascending."""
        first, top = self.length_range[0], self.max_length(n_symbols)
        start = max(low, first)
        start += -(start - first) % self.LENGTH_STEP  # the first length of the task's steps at or above `low`
        return range(start, (high if top is None else min(high, top)) + 1, self.LENGTH_STEP)

    def length_problem(self, length: int, n_symbols: int) -> str | None:
        """Why a source cannot have `length` symbols, or None."""
        return (
            None
            if length in self.valid_lengths(length, length, n_symbols)
            else f"{self.length_rule(n_symbols)}, got {length}"
        )

    def longest_target(self, length: int, n_symbols: int) -> int:
        """The longest expected output a source of `length` symbols can have: the source's length unless narrowed
        (never decreasing with the length, so the longest source has the longest target)."""
        return length

    # ----- sources -----
    @abstractmethod
    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        """One random valid source of exactly `length` symbols (a length `length_problem` accepts)."""

    @abstractmethod
    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Hard valid sources of exactly `length` symbols: the cases a model that learned a shortcut gets wrong."""

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        """One hard source, what a TaskSpec's `runs` share of rows is drawn as: one of `adversarial`."""
        return rng.choice(self.adversarial(n_symbols, length))

    def example(self, n_symbols: int, length: int) -> str:
        """A fixed source of `length` symbols that shows the task (the app's default source)."""
        return self.adversarial(n_symbols, length)[0]

    def problem(self, source: str, n_symbols: int) -> str | None:
        """The rule `source` breaks (its alphabet, its length, then the task's grammar), or None when it is valid."""
        alphabet = self.source_alphabet(n_symbols)
        for position, symbol in enumerate(source):
            if symbol not in alphabet:
                allowed = " ".join(alphabet)
                return f"symbol {symbol!r} at position {position} is not one {self.name} reads; allowed: {allowed}"
        return self.length_problem(len(source), n_symbols) or self.grammar_problem(source, n_symbols)

    def grammar_problem(self, source: str, n_symbols: int) -> str | None:
        """The task's own rule `source` (of known symbols and a valid length) breaks, or None."""
        return None

    # ----- answers -----
    @abstractmethod
    def target(self, source: str, n_symbols: int) -> str:
        """The expected output of a valid source."""

    @abstractmethod
    def reads(self, source: str, n_symbols: int) -> Truth:
        """Per output symbol, the source positions its value is read from (module docstring)."""

    @abstractmethod
    def depends(self, source: str, n_symbols: int) -> Truth:
        """Per output symbol, every source position that can change it (module docstring)."""

    def expected_ids(self, ids: Sequence[int], n_symbols: int) -> list[int]:
        """The expected output's ids for source ids; a source the task does not take raises ValueError (its rule)."""
        vocab = self.vocabulary(n_symbols)
        source = self.checked(vocab.tokens(ids), n_symbols)
        return vocab.encode(self.target(source, n_symbols))

    def checked(self, tokens: Sequence[str], n_symbols: int) -> str:
        """The source of these tokens, or a ValueError naming the rule it breaks."""
        source = "".join(tokens)
        problem = None if len(source) == len(tokens) else f"{self.name} reads one-character symbols only"
        problem = problem or self.problem(source, n_symbols)
        if problem:
            raise ValueError(problem)
        return source

    # ----- batches -----
    def make_batch(self, spec: Drawn, batch_size: int, generator: torch.Generator, length: int | None) -> Batch:
        """Rows drawn one by one: lengths uniform over the valid ones in [min_len, max_len] (or exactly `length`),
        a `spec.runs` share of them from the hard cases."""
        n = spec.n_symbols
        if length is not None:
            problem = self.length_problem(length, n)
            if problem:
                raise ValueError(problem)
        lengths = [length] if length is not None else self.valid_lengths(spec.min_len, spec.max_len, n)
        rng = random.Random(int(torch.randint(0, SEED_HIGH, (1,), generator=generator)))
        vocab = self.vocabulary(n)
        sources, targets = [], []
        for _ in range(batch_size):
            size = rng.choice(lengths)
            hard = spec.runs > 0 and rng.random() < spec.runs
            source = self.draw_hard(rng, n, size) if hard else self.draw(rng, n, size)
            sources.append(vocab.encode(source))
            targets.append(vocab.encode(self.target(source, n)))
        return batch_from_rows(sources, targets, anchored=spec.anchored)


@functools.cache
def _vocabulary(symbols: str) -> Vocabulary:
    """One shared Vocabulary per symbol set (frozen, so sharing is safe; the GUI asks on every keystroke)."""
    return Vocabulary(symbols)


def holding(source: str, symbol: str) -> Positions:
    """Every position of `source` that holds `symbol`: where a copied symbol may be read from (ties count)."""
    return tuple(j for j, s in enumerate(source) if s == symbol)


def copied_reads(source: str, target: str) -> Truth:
    """`reads` of a task whose every output symbol is a copy of a source symbol."""
    return tuple(holding(source, symbol) for symbol in target)

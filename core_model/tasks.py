"""Toy sequence tasks (copy first), deterministic given a torch.Generator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor

from .config import check_choice, check_float, check_int
from .inputs import encoder_input
from .vocab import BOS, EOS, N_SPECIALS, PAD, SYMBOL_POOL, Vocabulary

TaskName = Literal["copy", "reverse", "sort"]
TASK_NAMES: tuple[TaskName, ...] = get_args(TaskName)
# Positions a source of n symbols costs beyond n: the decoder reads <bos> + target and must also emit <eos>.
SEQUENCE_OVERHEAD = 2


def max_source_len(model_max_len: int) -> int:
    """Longest source a model built for `model_max_len` positions can take (< 1: none fits)."""
    return model_max_len - SEQUENCE_OVERHEAD


_TARGETS: dict[str, Callable[[list[int]], list[int]]] = {
    "copy": lambda ids: list(ids),
    "reverse": lambda ids: list(reversed(ids)),
    "sort": lambda ids: sorted(ids),
}


def expected_output(task: TaskName, ids: list[int]) -> list[int]:
    """What the task asks the model to produce for source ids (no specials)."""
    check_choice("task", task, TASK_NAMES)
    return _TARGETS[task](ids)


@dataclass(frozen=True)
class Batch:
    """Teacher-forcing batch: decoder input is <bos> + target, labels are target + <eos>; PAD fills the rest."""

    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)

    @property
    def n_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device))


@dataclass(frozen=True)
class TaskSpec:
    """Which task, over how many symbols, and the source length range (inclusive)."""

    task: TaskName = "copy"
    n_symbols: int = 10
    min_len: int = 10
    max_len: int = 10
    # Fraction of training sources drawn as runs of repeated symbols (0 keeps the plain uniform draws, and their
    # random stream). Uniform sources almost never repeat a symbol many times, so a model never sees "0000".
    runs: float = 0.0
    # Wrap every source as <bos> symbols <eos>: absolute anchors for a RoPE encoder, which otherwise cannot tell
    # identical tokens (or "00" from "0000") apart. The source then takes two more encoder positions.
    anchored: bool = False

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASK_NAMES)
        check_float("runs", self.runs, 0.0, 1.0)
        if not isinstance(self.anchored, bool):
            raise ValueError(f"anchored must be one of [True, False], got {self.anchored!r}")
        check_int("n_symbols", self.n_symbols, 1)
        if self.n_symbols > len(SYMBOL_POOL):
            raise ValueError(f"n_symbols must be an integer in [1, {len(SYMBOL_POOL)}], got {self.n_symbols!r}")
        check_int("min_len", self.min_len, 1)
        check_int("max_len", self.max_len, self.min_len)

    @property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary.of_size(self.n_symbols)

    @property
    def vocab_size(self) -> int:
        """The smallest ModelConfig.vocab_size that can learn this task."""
        return Vocabulary.size_for(self.n_symbols)

    def check_fits(self, model_max_len: int) -> None:
        """Raise a ValueError naming the limit when the longest source does not fit a model's positions."""
        limit = max_source_len(model_max_len)
        if self.max_len > limit:
            raise ValueError(
                f"max_len must be at most {limit} (the model's max_len {model_max_len} minus {SEQUENCE_OVERHEAD} "
                f"for <bos> and <eos>), got {self.max_len}"
            )

    def check_vocab(self, model_vocab_size: int) -> None:
        """Raise a ValueError when a model's vocabulary is too small for this task's symbols plus the specials."""
        if self.vocab_size > model_vocab_size:
            raise ValueError(
                f"the task needs vocab_size >= {self.vocab_size} ({self.n_symbols} symbols and "
                f"{N_SPECIALS} special tokens), the model has {model_vocab_size}"
            )

    def source_ids(self, ids: list[int]) -> list[int]:
        """The encoder input for source symbol ids: the ids themselves, or <bos> ids <eos> when anchored."""
        return encoder_input(ids, anchored=self.anchored)

    def default_source(self) -> str:
        """The task's symbols in order, repeated or cut to its longest length ("0123456789" by default)."""
        symbols = self.vocabulary.symbols
        return (symbols * (self.max_len // len(symbols) + 1))[: self.max_len]


def make_batch(spec: TaskSpec, batch_size: int, generator: torch.Generator, length: int | None = None) -> Batch:
    """Random sources of lengths in [min_len, max_len] (or exactly `length`), padded on the right."""
    first = N_SPECIALS  # the first symbol id
    if length is None:
        lengths = torch.randint(spec.min_len, spec.max_len + 1, (batch_size,), generator=generator)
    else:
        lengths = torch.full((batch_size,), length)
    s = int(lengths.max())
    symbols = torch.randint(first, first + spec.n_symbols, (batch_size, s), generator=generator)
    if spec.runs > 0:
        symbols = _with_runs(symbols, spec.runs, generator)
    keep = torch.arange(s)[None, :] < lengths[:, None]  # (B, S)
    src = symbols.masked_fill(~keep, PAD)
    if spec.task == "copy":
        body = src
    elif spec.task == "sort":
        body = torch.sort(symbols.masked_fill(~keep, torch.iinfo(symbols.dtype).max), dim=1).values.masked_fill(
            ~keep, PAD
        )
    else:  # reverse: position i takes source position len - 1 - i
        idx = (lengths[:, None] - 1 - torch.arange(s)[None, :]).clamp(min=0)
        body = torch.gather(symbols, 1, idx).masked_fill(~keep, PAD)
    tgt_in = torch.cat((torch.full((batch_size, 1), BOS), body), dim=1)  # (B, S + 1)
    tgt_out = torch.cat((body, torch.full((batch_size, 1), PAD)), dim=1)
    tgt_out[torch.arange(batch_size), lengths] = EOS
    if spec.anchored:
        src = _anchor(src, lengths)
    return Batch(src, tgt_in, tgt_out)


def _with_runs(symbols: Tensor, fraction: float, generator: torch.Generator) -> Tensor:
    """Turn a `fraction` of the rows into runs: each symbol repeats its left neighbour with a per-row probability.

    The probability is drawn uniformly per row and set to 1 for a quarter of the chosen rows, so one-symbol
    sources ("0000") are common, and runs of every length in between occur.
    """
    b, s = symbols.shape
    chosen = torch.rand(b, generator=generator) < fraction
    stay_p = torch.rand(b, generator=generator)
    stay_p = torch.where(torch.rand(b, generator=generator) < 0.25, torch.ones_like(stay_p), stay_p)
    stay = (torch.rand(b, s, generator=generator) < stay_p[:, None]) & chosen[:, None]
    stay[:, 0] = False
    positions = torch.arange(s).expand(b, s)
    source = torch.where(stay, torch.zeros_like(positions), positions).cummax(dim=1).values  # last fresh draw
    return torch.gather(symbols, 1, source)


def _anchor(src: Tensor, lengths: Tensor) -> Tensor:
    """<bos> + the symbols + <eos>, padded on the right: (B, S) -> (B, S + 2)."""
    b = src.shape[0]
    out = torch.cat((torch.full((b, 1), BOS), src, torch.full((b, 1), PAD)), dim=1)
    out[torch.arange(b), lengths + 1] = EOS
    return out

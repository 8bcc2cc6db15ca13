"""Toy sequence tasks (copy first), deterministic given a torch.Generator."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor

from .config import check_choice, check_int
from .vocab import BOS, EOS, PAD, SYMBOL_POOL, Vocabulary

TaskName = Literal["copy", "reverse", "sort"]
TASK_NAMES: tuple[TaskName, ...] = get_args(TaskName)

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

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASK_NAMES)
        check_int("n_symbols", self.n_symbols, 1)
        if self.n_symbols > len(SYMBOL_POOL):
            raise ValueError(f"n_symbols must be an integer in [1, {len(SYMBOL_POOL)}], got {self.n_symbols!r}")
        check_int("min_len", self.min_len, 1)
        check_int("max_len", self.max_len, self.min_len)

    @property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary.of_size(self.n_symbols)


def make_batch(spec: TaskSpec, batch_size: int, generator: torch.Generator, length: int | None = None) -> Batch:
    """Random sources of lengths in [min_len, max_len] (or exactly `length`), padded on the right."""
    first = len(spec.vocabulary) - spec.n_symbols
    if length is None:
        lengths = torch.randint(spec.min_len, spec.max_len + 1, (batch_size,), generator=generator)
    else:
        lengths = torch.full((batch_size,), length)
    s = int(lengths.max())
    symbols = torch.randint(first, first + spec.n_symbols, (batch_size, s), generator=generator)
    keep = torch.arange(s)[None, :] < lengths[:, None]  # (B, S)
    src = symbols.masked_fill(~keep, PAD)
    if spec.task == "copy":
        body = src
    elif spec.task == "sort":
        body = torch.sort(symbols.masked_fill(~keep, torch.iinfo(symbols.dtype).max), dim=1).values.masked_fill(~keep, PAD)
    else:  # reverse: position i takes source position len - 1 - i
        idx = (lengths[:, None] - 1 - torch.arange(s)[None, :]).clamp(min=0)
        body = torch.gather(symbols, 1, idx).masked_fill(~keep, PAD)
    tgt_in = torch.cat((torch.full((batch_size, 1), BOS), body), dim=1)  # (B, S + 1)
    tgt_out = torch.cat((body, torch.full((batch_size, 1), PAD)), dim=1)
    tgt_out[torch.arange(batch_size), lengths] = EOS
    return Batch(src, tgt_in, tgt_out)

"""Copy, reverse and sort: the playground's first three tasks, with the vectorised batches their shipped models,
seeds and benchmarks were made from (kept bit for bit: the same draws from the generator, in the same order).

Their sources are any strings of the first n symbols of 0-9a-z, of any length; their ids are Vocabulary.of_size's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .batches import Batch, anchor
from .task import Drawn, Task, Truth
from .task_rearrange import Rearrangement, pool, repeated_symbols, runs_draw
from .vocab import BOS, EOS, N_SPECIALS, PAD, SYMBOL_POOL, Vocabulary

if TYPE_CHECKING:
    import random

# (symbols (B, S), lengths (B,), keep (B, S), src (B, S)) -> the target body (B, S), PAD past each length
Body = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


def classic_batch(
    task: Task, spec: Drawn, batch_size: int, generator: torch.Generator, length: int | None, body: Body
) -> Batch:
    """Random sources of lengths in [min_len, max_len] (or exactly `length`), padded on the right."""
    first = N_SPECIALS  # the first symbol id
    if length is None:
        lengths = torch.randint(spec.min_len, spec.max_len + 1, (batch_size,), generator=generator)
    else:
        problem = task.length_problem(length, spec.n_symbols)
        if problem:
            raise ValueError(problem)
        lengths = torch.full((batch_size,), length)
    s = int(lengths.max())
    symbols = torch.randint(first, first + spec.n_symbols, (batch_size, s), generator=generator)
    if spec.runs > 0:
        symbols = with_runs(symbols, spec.runs, generator)
    keep = torch.arange(s)[None, :] < lengths[:, None]  # (B, S)
    src = symbols.masked_fill(~keep, PAD)
    target = body(symbols, lengths, keep, src)
    tgt_in = torch.cat((torch.full((batch_size, 1), BOS), target), dim=1)  # (B, S + 1)
    tgt_out = torch.cat((target, torch.full((batch_size, 1), PAD)), dim=1)
    tgt_out[torch.arange(batch_size), lengths] = EOS
    if spec.anchored:
        src = anchor(src, lengths)
    return Batch(src, tgt_in, tgt_out)


def with_runs(symbols: Tensor, fraction: float, generator: torch.Generator) -> Tensor:
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


def _copied(symbols: Tensor, lengths: Tensor, keep: Tensor, src: Tensor) -> Tensor:
    return src


def _reversed(symbols: Tensor, lengths: Tensor, keep: Tensor, src: Tensor) -> Tensor:
    s = symbols.shape[1]  # position i takes source position len - 1 - i
    idx = (lengths[:, None] - 1 - torch.arange(s)[None, :]).clamp(min=0)
    return torch.gather(symbols, 1, idx).masked_fill(~keep, PAD)


def _sorted(symbols: Tensor, lengths: Tensor, keep: Tensor, src: Tensor) -> Tensor:
    filled = symbols.masked_fill(~keep, torch.iinfo(symbols.dtype).max)
    return torch.sort(filled, dim=1).values.masked_fill(~keep, PAD)


@dataclass(frozen=True)
class _Classic:
    """What copy, reverse and sort share: the pool's symbols as Vocabulary.of_size numbers them, any length, and
    an expected output that rearranges the source ids themselves (an id the vocabulary lacks is moved, not refused)."""

    def vocabulary(self, n_symbols: int) -> Vocabulary:
        return Vocabulary.of_size(n_symbols)

    def symbols(self, n_symbols: int) -> str:
        return SYMBOL_POOL[:n_symbols]

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        return repeated_symbols(pool(n_symbols), length)

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return runs_draw(rng, pool(n_symbols), length)


@dataclass(frozen=True)
class Copy(_Classic, Rearrangement):
    """Output the source as it is."""

    def picks(self, source: str) -> tuple[int, ...]:
        return tuple(range(len(source)))

    def expected_ids(self, ids: Sequence[int], n_symbols: int) -> list[int]:
        return list(ids)

    def make_batch(self, spec: Drawn, batch_size: int, generator: torch.Generator, length: int | None) -> Batch:
        return classic_batch(self, spec, batch_size, generator, length, _copied)


@dataclass(frozen=True)
class Reverse(_Classic, Rearrangement):
    """Output the source backwards."""

    def picks(self, source: str) -> tuple[int, ...]:
        return tuple(range(len(source) - 1, -1, -1))

    def expected_ids(self, ids: Sequence[int], n_symbols: int) -> list[int]:
        return list(reversed(ids))

    def make_batch(self, spec: Drawn, batch_size: int, generator: torch.Generator, length: int | None) -> Batch:
        return classic_batch(self, spec, batch_size, generator, length, _reversed)


@dataclass(frozen=True)
class Sort(_Classic, Rearrangement):
    """Output the source's symbols in alphabet order: a rearrangement whose order the symbols decide, so every
    position can change every output (a stable sort: equal symbols keep their source order)."""

    def picks(self, source: str) -> tuple[int, ...]:
        alphabet = SYMBOL_POOL
        return tuple(sorted(range(len(source)), key=lambda j: (alphabet.index(source[j]), j)))

    def example(self, n_symbols: int, length: int) -> str:
        """The alphabet shuffled (every 7th symbol, from the 4th): a source already in order would look like copy."""
        alphabet = pool(n_symbols)
        return "".join(alphabet[(7 * i + 3) % len(alphabet)] for i in range(length))

    def depends(self, source: str, n_symbols: int) -> Truth:
        everything = tuple(range(len(source)))  # any symbol can move any other up or down the order
        return tuple(everything for _ in source)

    def expected_ids(self, ids: Sequence[int], n_symbols: int) -> list[int]:
        return sorted(ids)

    def make_batch(self, spec: Drawn, batch_size: int, generator: torch.Generator, length: int | None) -> Batch:
        return classic_batch(self, spec, batch_size, generator, length, _sorted)

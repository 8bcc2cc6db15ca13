"""Greedy accuracy per source length: how far a model's skill reaches beyond the lengths it was trained on.

One pure function, `evaluate_lengths`, behind the length lab and `attention-playground eval --lengths`: both call
it with the same seed, so they show the same numbers. Sources of each length come from `tasks.make_batch` with
a generator seeded by `seed` alone (not by the batch size or by the other lengths asked for), so the figure for
length L is the same whichever range it is part of. Only the lengths a task takes are swept (`task_lengths`:
addition's 3, 5, 7, ...), and each source is decoded for at most its task's longest target at that length plus
<eos>.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from .config import check_int
from .decoding import greedy_decode
from .masks import MaskSpec
from .model import Seq2SeqTransformer
from .tasks import TaskSpec, expected_output, make_batch, max_source_len
from .vocab import EOS, PAD

# (model, source length) -> a context manager active while that length is evaluated; for position scaling
# (e.g. RoPE position interpolation) that depends on the length being asked for.
PositionScaling = Callable[[Seq2SeqTransformer, int], AbstractContextManager]


@dataclass(frozen=True)
class LengthResult:
    """Greedy decoding on n random sources of one length."""

    length: int
    exact_match: float  # fraction of sources whose whole greedy output (symbols and <eos>) is right
    token_accuracy: float  # fraction of the expected output positions (<eos> included) with the right token
    n: int


@dataclass(frozen=True)
class LengthSweep:
    """Results for every length evaluated, in the order asked."""

    task: str
    seed: int
    n: int
    per_length: dict[int, LengthResult]

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(self.per_length)


def check_lengths(model: Seq2SeqTransformer, lengths: Iterable[int]) -> tuple[int, ...]:
    """The lengths as a tuple; a length < 1 or longer than the model's positions allow raises ValueError."""
    out = tuple(lengths)
    limit = max_source_len(model.config.max_len)
    for length in out:
        check_int("length", length, 1, limit)
    return out


def task_lengths(task: TaskSpec, lengths: Iterable[int]) -> tuple[int, ...]:
    """The lengths among `lengths` the task takes, in the order given (addition keeps 3, 5, 7, ...)."""
    return tuple(length for length in lengths if task.definition.length_problem(length, task.n_symbols) is None)


def decode_steps(task: TaskSpec, length: int) -> int:
    """Tokens to decode for a source of `length` symbols: the task's longest target at that length, and <eos>."""
    return task.definition.longest_target(length, task.n_symbols) + 1


@torch.no_grad()
def evaluate_lengths(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    lengths: Iterable[int],
    *,
    n: int = 1000,
    seed: int = 1234,
    device: torch.device | str | None = None,
    batch_size: int = 500,
    masks: MaskSpec | None = None,
    progress: Callable[[int, int], None] | None = None,
    position_scaling: PositionScaling | None = None,
) -> LengthSweep:
    """Greedy exact match and token accuracy on n fresh random sources of each length the task takes (others are
    skipped: they have no sources).

    Sources are the task's random draws (its `runs` is ignored; its `anchored` is kept: it is how the model reads).
    `progress(done, total)` counts sources, after each batch; raising Stop there ends the sweep with no result
    (core_model.stopping: a caller that wants the finished lengths asks for one length at a time, as length_curve).
    `position_scaling(model, length)`, when given, is entered around the evaluation of each length.
    """
    check_int("n", n, 1)
    check_int("batch_size", batch_size, 1)
    check_int("seed", seed, 0)
    lengths = task_lengths(task, check_lengths(model, lengths))
    device = torch.device(device) if device is not None else next(model.parameters()).device
    uniform = replace(task, runs=0.0)
    total, done = n * len(lengths), 0
    results: dict[int, LengthResult] = {}
    was_training = model.training
    model.eval()
    try:
        for length in lengths:
            scaling = position_scaling(model, length) if position_scaling else contextlib.nullcontext()
            with scaling:
                batch = make_batch(uniform, n, torch.Generator().manual_seed(seed), length)
                width = batch.tgt_out.shape[1]  # the longest expected output of the batch, and <eos>
                exact = correct = labels = 0
                for start in range(0, n, batch_size):
                    src = batch.src[start : start + batch_size].to(device)
                    want = batch.tgt_out[start : start + batch_size].to(device)  # (b, width), <pad> after <eos>
                    out = greedy_decode(model, src, decode_steps(task, length), masks, n_tokens=len(task.vocabulary))
                    out = F.pad(out, (0, max(0, width - out.shape[1])), value=PAD)[:, :width]
                    label = want != PAD
                    right = (out == want) & label
                    exact += int((right | ~label).all(dim=1).sum())
                    correct += int(right.sum())
                    labels += int(label.sum())
                    done += src.shape[0]
                    if progress is not None:
                        progress(done, total)
            results[length] = LengthResult(length, exact / n, correct / labels, n)
    finally:
        model.train(was_training)
    return LengthSweep(task.task, seed, n, results)


def repeated_symbol_sources(task: TaskSpec, lengths: Iterable[int]) -> list[list[int]]:
    """The hard sources of each length the task takes: every source of one symbol repeated ("0000", the case a RoPE
    encoder gets wrong) that the task takes, in alphabet order; where its grammar takes none (addition, recall,
    copy_memory, dyck_depth), its hard cases (Task.adversarial: "999+100", ...) instead."""
    definition, n, vocab = task.definition, task.n_symbols, task.vocabulary
    out: list[list[int]] = []
    for length in task_lengths(task, lengths):
        ones = [symbol * length for symbol in definition.source_alphabet(n)]
        valid = [s for s in ones if definition.problem(s, n) is None]
        hard = valid or [
            s for s in dict.fromkeys(definition.adversarial(n, length)) if definition.problem(s, n) is None
        ]
        out += [vocab.encode(s) for s in hard]
    return out


def exhaustive_sources(task: TaskSpec, max_len: int) -> list[list[int]]:
    """Every source of length 1..max_len the task takes, over its source alphabet, shortest first, each length in
    alphabet order (n_symbols + n_symbols^2 + ... of them for copy, reverse and sort)."""
    check_int("max_len", max_len, 1)
    definition, n, vocab = task.definition, task.n_symbols, task.vocabulary
    alphabet = definition.source_alphabet(n)
    return [
        vocab.encode(source)
        for length in task_lengths(task, range(1, max_len + 1))
        for source in map("".join, itertools.product(alphabet, repeat=length))
        if definition.problem(source, n) is None
    ]


@torch.no_grad()
def greedy_outputs(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    sources: Sequence[Sequence[int]],
    *,
    batch_size: int = 500,
    masks: MaskSpec | None = None,
) -> list[list[int]]:
    """The greedy output (symbol ids up to, not including, <eos>) of each source, read as the task reads it."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    outputs: list[list[int] | None] = [None] * len(sources)
    by_length: dict[int, list[int]] = {}
    for index, source in enumerate(sources):
        by_length.setdefault(len(source), []).append(index)
    try:
        for length, indices in by_length.items():
            check_lengths(model, [length])
            for start in range(0, len(indices), batch_size):
                chunk = indices[start : start + batch_size]
                src = torch.tensor([task.source_ids(list(sources[i])) for i in chunk], device=device)
                steps = decode_steps(task, length)
                out = greedy_decode(model, src, steps, masks, n_tokens=len(task.vocabulary)).tolist()
                for i, row in zip(chunk, out):
                    outputs[i] = row[: row.index(EOS)] if EOS in row else [*row, PAD]  # no <eos>: never right
    finally:
        model.train(was_training)
    return [o if o is not None else [] for o in outputs]


def wrong_sources(
    model: Seq2SeqTransformer, task: TaskSpec, sources: Sequence[Sequence[int]], batch_size: int = 500
) -> list[tuple[list[int], list[int]]]:
    """(source, greedy output) for every source the model gets wrong; empty when it is right on all."""
    outputs = greedy_outputs(model, task, sources, batch_size=batch_size)
    return [(list(s), o) for s, o in zip(sources, outputs) if o != expected_output(task, list(s))]

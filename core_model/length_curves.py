"""Exact match and token accuracy against source length, with an optional RoPE length extension: the length lab's
numbers (the ALiBi paper's Figure 1, Press et al. 2022, for this app's models), usable from a notebook.

Each length is scored by the one per-length evaluation the `eval --lengths` verb uses, so a curve drawn here and
the verb's JSON agree for the same seed. Progress is reported after each length and a stop request is honoured
between lengths: a long sweep can be watched and cancelled.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from .model import Seq2SeqTransformer
from .rope_scaling import RopeScaling, rope_scaled
from .tasks import TaskSpec, max_source_len
from .training import evaluate


@dataclass(frozen=True)
class LengthPoint:
    """One length's scores: greedy exact match and teacher-forced token accuracy over n fresh sources."""

    length: int
    exact_match: float
    token_accuracy: float
    n: int


def length_scaling(model: Seq2SeqTransformer, kind: str, train_len: int, lengths: Sequence[int]) -> RopeScaling | None:
    """The RopeScaling for a sweep (stretched for its longest length), None for "none"; ValueError when the model
    has no RoPE or a length does not fit its positions."""
    limit = max_source_len(model.config.max_len)
    bad = [n for n in lengths if not 1 <= n <= limit]
    if bad:
        raise ValueError(f"lengths must be in [1, {limit}] for this model (max_len {model.config.max_len}), "
                         f"got {bad[0]}")
    if kind == "none":
        return None
    if model.config.positional != "rope":
        raise ValueError(f"rope scaling '{kind}' needs a RoPE model; this one uses {model.config.positional} PE")
    return RopeScaling(kind, train_len, max(lengths))


def score_length(model: Seq2SeqTransformer, task: TaskSpec, length: int, *, n: int, seed: int,
                 device: torch.device | str = "cpu") -> LengthPoint:
    """One length: `evaluate` on n sources of exactly that length drawn with `seed`."""
    result = evaluate(model, task, n=n, length=length, seed=seed, device=device)
    return LengthPoint(length, result.exact_match, result.token_accuracy, result.n)


def length_curve(
    model: Seq2SeqTransformer, task: TaskSpec, lengths: Sequence[int], *, n: int, seed: int,
    scaling: str = "none", train_len: int | None = None, device: torch.device | str = "cpu",
    progress: Callable[[LengthPoint], None] | None = None, should_stop: Callable[[], bool] | None = None,
) -> tuple[LengthPoint, ...]:
    """Score every length in order (the points so far if `should_stop` turns true).

    scaling: "none", "pi" or "ntk" (RoPE models only), stretched from train_len (default: the task's max_len)
    to the longest length; the model's own tables are restored afterwards.
    """
    scale = length_scaling(model, scaling, train_len or task.max_len, lengths)
    points: list[LengthPoint] = []
    with rope_scaled(model, scale) if scale is not None else nullcontext():
        for length in lengths:
            if should_stop is not None and should_stop():
                break
            point = score_length(model, task, length, n=n, seed=seed, device=device)
            points.append(point)
            if progress is not None:
                progress(point)
    return tuple(points)

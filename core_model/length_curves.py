"""Exact match and token accuracy against source length, with an optional RoPE length extension: the length lab's
numbers (the ALiBi paper's Figure 1, Press et al. 2022, for this app's models), usable from a notebook.

Every figure comes from `length_eval.evaluate_lengths`, the function behind `eval --lengths`, whose figure for a
length does not depend on the other lengths asked for; so a curve computed here one length at a time (to draw
it as it grows) equals the verb's JSON for the same n and seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .length_eval import LengthResult, PositionScaling, evaluate_lengths, task_lengths
from .model import Seq2SeqTransformer
from .rope_scaling import ROPE_SCALING_KINDS, RopeScaling, is_rope_scaling_kind, rope_scaled
from .tasks import TaskSpec


def rope_length_scaling(model: Seq2SeqTransformer, kind: str, train_len: int) -> PositionScaling | None:
    """The `position_scaling` hook of evaluate_lengths for a RoPE recipe: each length L is stretched by
    s = L / train_len (no change up to train_len); None for "none". ValueError for a model without RoPE."""
    if not is_rope_scaling_kind(kind):
        raise ValueError(f"rope scaling must be one of {list(ROPE_SCALING_KINDS)}, got {kind!r}")
    if kind == "none":
        return None
    if model.config.positional != "rope":
        raise ValueError(
            f"rope scaling '{kind}' needs a RoPE model; this one uses {model.config.positional} positional encoding"
        )
    return lambda m, length: rope_scaled(m, RopeScaling(kind, train_len, length))


def length_curve(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    lengths: Sequence[int],
    *,
    n: int,
    seed: int,
    scaling: str = "none",
    train_len: int | None = None,
    device: torch.device | str | None = None,
    progress: Callable[[LengthResult], None] | None = None,
    batches: Callable[[int, int], None] | None = None,
) -> tuple[LengthResult, ...]:
    """Each length's result in order, each reported as soon as it is known (`progress`); `batches(done, total)`
    after each batch of sources of a length. Raising Stop from either ends the curve there: the lengths reported
    are what it found (core_model.stopping). Only the lengths the task takes are evaluated (`task_lengths`: a
    curve of addition has points at 3, 5, 7, ...).

    scaling: "none", "pi" or "ntk" (RoPE only), from train_len (default: the task's max_len) to each length.
    """
    hook = rope_length_scaling(model, scaling, train_len or task.max_len)
    points: list[LengthResult] = []
    for length in task_lengths(task, lengths):
        sweep = evaluate_lengths(
            model, task, [length], n=n, seed=seed, device=device, progress=batches, position_scaling=hook
        )
        points.append(sweep.per_length[length])
        if progress is not None:
            progress(points[-1])
    return tuple(points)

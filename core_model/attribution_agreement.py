"""Does attention agree with attribution? Spearman rank correlation, per output position, over the source symbols.

Each attention view gives an (output position, source position) matrix for the same teacher-forced pass the
attributions score: the cross-attention weights of every decoder layer (head mean), their norm-weighted version
(Kobayashi et al. 2020), and the decoder rollout's share of each source token. An attribution is compared by its
magnitude (a large negative attribution is influence too), over the source's symbol positions only: the gradient
methods and occlusion give special tokens exactly 0 by construction, which would reward attention on <bos> for
nothing. A row with fewer than two symbols, or a constant row, has no rank correlation: None.

Spearman weighs the whole order, so where most cells are near 0 it mostly ranks noise; `top1_agreement` asks the
question the maps answer at a glance: does the most-attributed symbol get the most attention?
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import torch

from .attention_views import norm_weighted, rollout, run_with_inputs
from .attribution import Attribution
from .float64 import in_float64
from .inputs import decoder_input
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer

METHODS = ("gradient_x_delta", "integrated_gradients", "occlusion")
T = TypeVar("T")


def ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    result = np.empty(len(values))
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        result[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson correlation of the ranks; None when either side is constant or shorter than 2."""
    if len(a) < 2:
        return None
    ra, rb = ranks(np.asarray(a, float)), ranks(np.asarray(b, float))
    da, db = ra - ra.mean(), rb - rb.mean()
    denominator = float(np.sqrt((da * da).sum() * (db * db).sum()))
    return None if denominator == 0 else float((da * db).sum() / denominator)


def attention_views(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    output: Sequence[int],
    *,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
) -> dict[str, np.ndarray]:
    """Name -> (T, S): "cross L1".., "norm-weighted L1".. (head means), "rollout" (the last layer's source share),
    computed in float64 as the attributions they are ranked against."""
    model = in_float64(model)
    device = next(model.parameters()).device
    src_t = torch.tensor([list(src)], device=device)
    tgt = torch.tensor([decoder_input(list(output)[:-1])], device=device)
    with torch.no_grad():
        captured = run_with_inputs(model, src_t, tgt, masks, head_gates)
        weights = captured.output.attention
        assert weights is not None  # run_with_inputs always asks for the maps
        norms = norm_weighted(model, weights, captured.inputs, head_gates)
        rolled = rollout(weights, head_gates)
    views: dict[str, np.ndarray] = {}
    for layer, cross in enumerate(weights.cross):
        views[f"cross L{layer + 1}"] = cross[0].mean(0).double().cpu().numpy()
    for layer, cross in enumerate(norms.cross):
        views[f"norm-weighted L{layer + 1}"] = cross[0].mean(0).double().cpu().numpy()
    views["rollout"] = rolled.cross[-1][0].double().cpu().numpy()
    return views


def _per_row(
    attribution: Attribution,
    views: Mapping[str, np.ndarray],
    symbol_positions: Sequence[int],
    compare: Callable[[np.ndarray, np.ndarray], T],
) -> dict[str, dict[str, list[T]]]:
    """method -> view -> compare(|attribution| row, view row) per output position, over the symbol positions."""
    columns = list(symbol_positions)
    result: dict[str, dict[str, list[T]]] = {}
    for method in METHODS:
        scores = np.abs(getattr(attribution, method))[:, columns]
        result[method] = {
            name: [compare(scores[i], view[i, columns]) for i in range(scores.shape[0])] for name, view in views.items()
        }
    return result


def agreement(
    attribution: Attribution, views: Mapping[str, np.ndarray], symbol_positions: Sequence[int]
) -> dict[str, dict[str, list[float | None]]]:
    """method -> view -> one Spearman correlation per output position, over `symbol_positions` of the source."""
    return _per_row(attribution, views, symbol_positions, spearman)


def same_top(a: np.ndarray, b: np.ndarray) -> bool | None:
    """Whether a and b peak at the same index; None when shorter than 2 or either maximum is shared (no single top)."""
    if len(a) < 2:
        return None
    tops_a, tops_b = np.flatnonzero(a == a.max()), np.flatnonzero(b == b.max())
    if len(tops_a) > 1 or len(tops_b) > 1:
        return None
    return bool(tops_a[0] == tops_b[0])


def top1_agreement(
    attribution: Attribution, views: Mapping[str, np.ndarray], symbol_positions: Sequence[int]
) -> dict[str, dict[str, list[bool | None]]]:
    """method -> view -> per output position: does the symbol of largest |attribution| get the most attention?

    Over `symbol_positions` of the source, as `agreement`. None where the row has fewer than two symbols, or where
    either side's maximum is shared by two or more symbols (an all-equal row included): a tie has no single top
    symbol, and picking one (the first, say) would make the answer depend on the order of the source.
    """
    return _per_row(attribution, views, symbol_positions, same_top)

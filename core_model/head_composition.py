"""How heads compose: Q-, K- and V-composition scores between heads, and their value for random matrices.

Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits", norms and biases left out. With PyTorch's
y = W x, head h1 writes W_OV1 x into the residual stream for a stream x it attends to (W_OV = W_O^h W_V^h, d x d),
and head h2 scores a query stream x_q against a key stream x_k as x_q^T W_QK2 x_k (W_QK = W_Q^h^T W_K^h, d x d).
When h1's output is part of h2's query stream, x_q = W_OV1 y, the score is y^T (W_OV1^T W_QK2) x_k: the matrix
that carries it is (W_QK2^T W_OV1)^T, so Q = ||W_QK2^T W_OV1||_F. When it is part of the key stream, x_q^T W_QK2
(W_OV1 y): K = ||W_QK2 W_OV1||_F. When it is part of what h2 moves, h2 writes W_OV2 (W_OV1 y): V = ||W_OV2 W_OV1||_F.
Q and K are divided by ||W_QK2||_F ||W_OV1||_F, V by ||W_OV2||_F ||W_OV1||_F (the paper's normalisation).

Which pairs exist follows the order the model computes in: an encoder head feeds every encoder head of a later
layer (Q, K, V) and every cross head (K, V: both read the memory); a decoder-self head of layer l comes before the
cross head of layer l, and a cross head of layer l before every decoder head of a later layer; a decoder-side head
feeds a later decoder-self head (Q, K, V) and a later cross head (Q only: its keys and values are the memory).
Heads of one sublayer run in parallel and never compose.

The baseline is the paper's yardstick: the same score for Gaussian matrices of the same shapes (W_Q, W_K, W_V of
head_dim x d_model, W_O of d_model x head_dim, so every product has the rank a real head's has), over `samples`
draws from a torch.Generator seeded with `seed`: their mean, 95th percentile and population std. Each score is
scale-free, so the unit variance does not matter. For these shapes E||A B||_F^2 / (E||A||_F^2 E||B||_F^2) = 1/d_model
exactly, so the mean sits near 1/sqrt(d_model) for all three types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from .circuits import HeadMatrices, HeadRef, head_matrices, head_refs
from .config import ModelConfig, check_int
from .model import Seq2SeqTransformer

CompositionType = Literal["Q", "K", "V"]
COMPOSITION_TYPES: tuple[CompositionType, ...] = ("Q", "K", "V")
MAX_BASELINE_SAMPLES = 10_000  # each sample is six products of d_model x d_model matrices


@dataclass(frozen=True)
class CompositionScore:
    """How strongly `source`'s output feeds `target`'s query, key or value (`type`)."""

    source: HeadRef
    target: HeadRef
    type: CompositionType
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.source.to_dict(), "to": self.target.to_dict(), "type": self.type, "score": self.score}


@dataclass(frozen=True)
class CompositionBaseline:
    """Each composition type's score for random matrices of the model's shapes: mean, 95th percentile, spread.

    A link above the mean is no sign of anything (about half of random pairs are); p95 is what only 1 in 20 random
    pairs reach, and spread (the population std) says how far from the mean random pairs wander.
    """

    scores: dict[CompositionType, float]  # the mean over the samples
    samples: int
    seed: int
    p95: dict[CompositionType, float]  # np.percentile(..., 95), linear interpolation
    spread: dict[CompositionType, float]  # population std


def composition_types(source: HeadRef, target: HeadRef) -> tuple[CompositionType, ...]:
    """The ways source's output can reach target (empty when it cannot: target runs first, or alongside)."""
    if source.kind == "encoder_self":
        if target.kind == "cross":
            return ("K", "V")
        later = target.kind == "encoder_self" and target.layer > source.layer
        return COMPOSITION_TYPES if later else ()
    if target.kind == "encoder_self" or _decoder_step(target) <= _decoder_step(source):
        return ()
    return COMPOSITION_TYPES if target.kind == "decoder_self" else ("Q",)


def composition_pairs(config: ModelConfig) -> list[tuple[HeadRef, HeadRef, CompositionType]]:
    """Every (source, target, type) of the model, sources and targets in head_refs order."""
    refs = head_refs(config)
    return [(s, t, kind) for s in refs for t in refs for kind in composition_types(s, t)]


def composition_score(source: HeadMatrices, target: HeadMatrices, kind: CompositionType) -> float:
    """One score from the two heads' matrices (see the module docstring for the derivation)."""
    w_ov1 = source.ov
    if kind == "V":
        w2 = target.ov
        product = w2 @ w_ov1
    else:
        w2 = target.qk
        product = (w2.T if kind == "Q" else w2) @ w_ov1
    return float(torch.linalg.matrix_norm(product) / (torch.linalg.matrix_norm(w2) * torch.linalg.matrix_norm(w_ov1)))


def composition_scores(model: Seq2SeqTransformer) -> list[CompositionScore]:
    """Every composition score of the model, in composition_pairs order, float64."""
    matrices = {ref: head_matrices(model, ref) for ref in head_refs(model.config)}
    return [
        CompositionScore(s, t, kind, composition_score(matrices[s], matrices[t], kind))
        for s, t, kind in composition_pairs(model.config)
    ]


def random_baseline(config: ModelConfig, samples: int = 100, seed: int = 0) -> CompositionBaseline:
    """Each type's mean, 95th percentile and std of the score for Gaussian head matrices of the model's shapes."""
    check_int("samples", samples, 1, MAX_BASELINE_SAMPLES)
    generator = torch.Generator().manual_seed(seed)
    drawn: dict[CompositionType, list[float]] = {kind: [] for kind in COMPOSITION_TYPES}
    for _ in range(samples):
        source, target = _random_head(config, generator), _random_head(config, generator)
        for kind in COMPOSITION_TYPES:
            drawn[kind].append(composition_score(source, target, kind))
    return CompositionBaseline(
        {kind: sum(values) / samples for kind, values in drawn.items()},
        samples,
        seed,
        {kind: float(np.percentile(values, 95)) for kind, values in drawn.items()},
        {kind: float(np.std(values)) for kind, values in drawn.items()},
    )


@dataclass(frozen=True)
class UnlinkedScores:
    """Each type's score between the model's own heads where no path exists: mean, 95th percentile, pair count.

    Random matrices are full rank in every direction; trained heads are not, and their scores sit above random ones
    whether or not they compose. The same score between trained heads that cannot feed each other (a head into an
    earlier one, or into one of its own sublayer) is a yardstick made of trained weights: a link above its 95th
    percentile stands out from what training alone gives.
    """

    mean: dict[CompositionType, float]
    p95: dict[CompositionType, float]  # np.percentile(..., 95), linear interpolation
    pairs: int  # ordered pairs of distinct heads without a path, each scored for every type


def unlinked_scores(model: Seq2SeqTransformer) -> UnlinkedScores:
    """The composition score of every type for every ordered pair of distinct heads with no path between them."""
    refs = head_refs(model.config)
    matrices = {ref: head_matrices(model, ref) for ref in refs}
    # never empty: a cross head never feeds an encoder head, and every model has both
    pairs = [(s, t) for s in refs for t in refs if s != t and not composition_types(s, t)]
    scores = {kind: [composition_score(matrices[s], matrices[t], kind) for s, t in pairs] for kind in COMPOSITION_TYPES}
    return UnlinkedScores(
        {kind: float(np.mean(values)) for kind, values in scores.items()},
        {kind: float(np.percentile(values, 95)) for kind, values in scores.items()},
        len(pairs),
    )


def _random_head(config: ModelConfig, generator: torch.Generator) -> HeadMatrices:
    d, hd = config.d_model, config.head_dim
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    return HeadMatrices(draw(hd, d), draw(hd, d), draw(hd, d), draw(d, hd))


def _decoder_step(ref: HeadRef) -> int:
    """Where a decoder head runs: the self-attention of layer l, then its cross-attention, then layer l + 1."""
    return 2 * ref.layer + (1 if ref.kind == "cross" else 0)

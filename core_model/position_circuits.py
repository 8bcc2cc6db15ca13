"""Each head's direct-path QK score over positions, tokens averaged out, and how much it chooses keys by position.

The token tables of core_model.circuits leave positions out, so a head that picks its key by where it sits (the
copy, reverse and sort models' cross heads) looks like noise there. Here the same direct path is read with the
positions put back exactly as the model computes them, over the task's symbols (ids N_SPECIALS..vocab_size-1,
the specials left out):

- Streams: symbol t at position i enters as x = sqrt(d_model) * E[t] (+ row i of the sinusoid table for sinusoidal
  models; both sides start at position 0, as in a teacher-forced pass), times the pre-norm gain folded as
  core_model.circuits does (the sublayer's own norm on the query side and on self-attention's keys,
  model.encoder_norm on cross-attention's keys). Tables: src_embed for encoder heads and cross keys (the memory),
  tgt_embed for decoder-self heads and cross queries.
- Scores: q = W_Q^h x_q, k = W_K^h x_k, biases left out; under RoPE q is rotated at its position i and k at its
  position j as core_model.attention does; S[a, i, b, j] = q . k / sqrt(head_dim) for query symbol a at i and key
  symbol b at j.

Per head: `scores[i, j]` = mean over a, b of S[a, i, b, j]. S is bilinear in the two streams (the rotation is
linear), so this is the score of the mean symbol embedding at i against the mean symbol embedding at j.
`position_spread` = mean over queries (a, i) of the population std over keys j of mean_b S[a, i, b, j]: how much
the score moves with where the key is. `token_spread` = mean over queries (a, i) of the population std over keys b
of mean_j S[a, i, b, j]: how much it moves with which symbol the key holds. position_share = position_spread /
(position_spread + token_spread). Decoder self-attention is causal: for its heads only keys j <= i count, in both
spreads and in the mean over j (row 0 has one key, so its position std is 0, and it still counts); its `scores`
table keeps every cell, j > i included (the view greys those). Encoder and cross heads use all n x n cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .circuits import HeadRef, StreamSide, head_matrices, head_refs, head_sides, scaled_embedding
from .config import ModelConfig, check_int
from .model import Seq2SeqTransformer
from .positional import apply_rope
from .tasks import SEQUENCE_OVERHEAD, TaskSpec
from .vocab import N_SPECIALS

# Each head's table is n x n and drawn on screen, cell by cell: 128 positions already make 16k cells per head,
# far more than the toy tasks use (their longest sources are 16-24 symbols).
MAX_POSITION_TABLE = 128
BLOCK_ELEMENTS = 2**22  # query symbols are taken in blocks so the (symbol, position, key) tables stay ~32 MB


@dataclass(frozen=True)
class PositionCircuit:
    """One head's direct-path score over (query position, key position), symbols averaged, and its two spreads."""

    ref: HeadRef
    scores: np.ndarray  # (n, n): query position x key position, pre-softmax score, symbols averaged
    position_spread: float
    token_spread: float

    @property
    def position_share(self) -> float:
        """How much of the head's choice of key goes by position (1) rather than by symbol (0); NaN if neither."""
        total = self.position_spread + self.token_spread
        return self.position_spread / total if total > 0 else math.nan

    @property
    def scores_centred(self) -> np.ndarray:
        """Each row less its mean over the keys it may attend to (j <= i for decoder self-attention): softmax ignores
        a row's constant. Hidden cells keep their place, shifted by the same row mean."""
        n = self.scores.shape[0]
        allowed = np.tril(np.ones((n, n), dtype=bool)) if self.ref.kind == "decoder_self" else np.ones((n, n), bool)
        means = np.array([row[keep].mean() for row, keep in zip(self.scores, allowed, strict=True)])
        return self.scores - means[:, None]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ref.to_dict(),
            "scores": self.scores.tolist(),
            "scores_centred": self.scores_centred.tolist(),
            "position_spread": self.position_spread,
            "token_spread": self.token_spread,
            "position_share": self.position_share,
        }


def default_positions(config: ModelConfig, task: TaskSpec) -> int:
    """The task's longest source plus <bos> and <eos>, within the model's positions and MAX_POSITION_TABLE."""
    return min(task.max_len + SEQUENCE_OVERHEAD, config.max_len, MAX_POSITION_TABLE)


def position_circuits(model: Seq2SeqTransformer, n_positions: int) -> list[PositionCircuit]:
    """Every head's position table and spreads (see the module docstring), float64 on the CPU, head_refs order."""
    check_int("n_positions", n_positions, 1, min(MAX_POSITION_TABLE, model.config.max_len))
    out = []
    for ref in head_refs(model.config):
        w = head_matrices(model, ref)
        query, key = head_sides(model, ref)
        q = _projected(model, query, w.w_q, n_positions) / math.sqrt(w.w_q.shape[0])  # (A, n, D)
        k = _projected(model, key, w.w_k, n_positions)  # (A, n, D)
        out.append(_circuit(ref, q, k, causal=ref.kind == "decoder_self"))
    return out


def _projected(model: Seq2SeqTransformer, side: StreamSide, w: Tensor, n: int) -> Tensor:
    """W x for every symbol at every position 0..n-1, rotated under RoPE as the attention rotates it: (A, n, D)."""
    symbols = scaled_embedding(model, side.table)[N_SPECIALS:] * side.gain  # (A, d)
    x = symbols[:, None, :] @ w.T  # (A, 1, D)
    if model.sinusoid is not None:
        x = x + (_f64(model.sinusoid.table[:n]) * side.gain) @ w.T  # + (n, D): the same gain multiplies the sum
    x = x.expand(-1, n, -1)
    if model.rope is None:
        return x
    return apply_rope(x, _f64(model.rope.cos[:n]), _f64(model.rope.sin[:n]))  # RotaryEmbedding.rotate at offset 0


def _circuit(ref: HeadRef, q: Tensor, k: Tensor, *, causal: bool) -> PositionCircuit:
    """The mean table and both spreads from the scaled queries q and keys k, (A, n, D) each."""
    n = q.shape[1]
    keep = torch.tril(torch.ones(n, n, dtype=q.dtype)) if causal else torch.ones(n, n, dtype=q.dtype)  # (i, j)
    counts = keep.sum(dim=1)  # (n,): keys each query position sees
    k_by_position = k.mean(dim=0)  # (n, D): mean over key symbols b
    k_by_symbol = (keep @ k) / counts[None, :, None]  # (A, n, D): [b, i] = mean over the keys j <= i (or all j)
    position_sum = token_sum = 0.0
    block = max(1, BLOCK_ELEMENTS // (n * max(n, k.shape[0])))
    for start in range(0, q.shape[0], block):
        q_block = q[start : start + block]  # (a, n, D)
        by_position = q_block @ k_by_position.T  # (a, n, n): mean_b S[a, i, b, j]
        position_sum += float(_masked_std(by_position, keep).sum())
        by_symbol = torch.einsum("aid,bid->aib", q_block, k_by_symbol)  # (a, n, A): mean_j S[a, i, b, j]
        token_sum += float(by_symbol.std(dim=-1, unbiased=False).sum())
    queries = q.shape[0] * n
    scores = q.mean(dim=0) @ k_by_position.T  # (n, n): bilinear, so the mean symbol on both sides
    return PositionCircuit(ref, scores.numpy(), position_sum / queries, token_sum / queries)


def _masked_std(values: Tensor, keep: Tensor) -> Tensor:
    """Population std over the last axis of values (..., n, n), counting only the cells where keep (n, n) is 1."""
    counts = keep.sum(dim=-1)
    mean = (values * keep).sum(dim=-1, keepdim=True) / counts[:, None]
    return torch.sqrt(((values - mean) ** 2 * keep).sum(dim=-1) / counts)


def _f64(t: Tensor) -> Tensor:
    return t.detach().to("cpu", torch.float64)

"""Scaled dot-product and multi-head attention (paper §3.2), written out so every weight can be shown.

The plain path (`attention`) returns the post-softmax weights and is what the visualizer always uses. The fast
path (`F.scaled_dot_product_attention`) serves training when nobody asked for weights; tests prove both agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .positional import RotaryEmbedding


def attention_scores(q: Tensor, k: Tensor, mask: Tensor | None = None) -> Tensor:
    """Pre-softmax scores QK^T / sqrt(d_k); masked entries are -inf.

    Shape: q (B, H, Tq, D), k (B, H, Tk, D), mask broadcastable to (B, H, Tq, Tk), True = may attend.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, Tq, D) @ (B, H, D, Tk) -> (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores


@dataclass(frozen=True)
class ScaledAttention:
    """What `attention` computed for every head: the output and both views of who attended to whom."""

    output: Tensor  # (B, H, Tq, Dv)
    weights: Tensor  # (B, H, Tq, Tk), post-softmax, before dropout; all zeros on a fully masked row
    scores: Tensor  # (B, H, Tq, Tk), pre-softmax, -inf where masked


def attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, dropout_p: float = 0.0
) -> ScaledAttention:
    """softmax(QK^T / sqrt(d_k)) V (paper eq. 1), keeping the scores and weights so they can be shown.

    Args: dropout_p drops attention weights (paper §5.4) before they multiply V; pass 0 outside training.
    Shape: q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv), mask broadcastable to (B, H, Tq, Tk).
    """
    scores = attention_scores(q, k, mask)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # also clears the NaN of fully masked rows
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return ScaledAttention(dropped @ v, weights, scores)  # (B, H, Tq, Tk) @ (B, H, Tk, Dv) -> (B, H, Tq, Dv)


def fast_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0) -> Tensor:
    """The same output through PyTorch's fused kernel; fully masked rows give zeros like the plain path."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    empty = ~mask.any(dim=-1, keepdim=True)  # rows with no visible key
    safe = mask | empty  # let such rows see everything, then zero them: no NaN in forward or backward
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=safe, dropout_p=dropout_p)
    return out.masked_fill(empty, 0.0)


@dataclass
class AttentionResult:
    """What one attention sublayer produced; weights and scores only when asked for."""

    output: Tensor  # (B, Tq, d_model)
    weights: Tensor | None = None  # (B, H, Tq, Tk), post-softmax
    scores: Tensor | None = None  # (B, H, Tq, Tk), pre-softmax, -inf where masked
    kv: tuple[Tensor, Tensor] | None = None  # keys and values (B, H, Tk, D), already rotated: the cache


class MultiHeadAttention(nn.Module):
    """Multi-head attention with optional RoPE, a per-head gate and a key/value cache.

    The output projection has no bias so that a gate of 0 on every head makes the sublayer output exactly 0
    (ablating all heads equals removing the sublayer).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, rope: RotaryEmbedding | None = None) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.dropout = n_heads, d_model // n_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)
        self.rope = rope

    def _split(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)  # (B, T, d) -> (B, H, T, D)

    def project_kv(self, x_kv: Tensor, kv_pos: int = 0) -> tuple[Tensor, Tensor]:
        """Keys (rotated under RoPE) and values for x_kv (B, Tk, d) at positions kv_pos...; each (B, H, Tk, D)."""
        k, v = self._split(self.k_proj(x_kv)), self._split(self.v_proj(x_kv))
        if self.rope is not None:
            k = self.rope.rotate(k, kv_pos)
        return k, v

    def forward(
        self,
        x_q: Tensor,
        x_kv: Tensor,
        mask: Tensor | None = None,
        *,
        q_pos: int = 0,
        past_kv: tuple[Tensor, Tensor] | None = None,
        static_kv: tuple[Tensor, Tensor] | None = None,
        head_gate: Tensor | None = None,
        need_weights: bool = False,
        need_scores: bool = False,
    ) -> AttentionResult:
        """Attend from x_q (B, Tq, d) at positions q_pos... to x_kv (B, Tk, d).

        past_kv is prepended (incremental self-attention); static_kv replaces x_kv (cached cross-attention).
        head_gate (H,) scales each head's output: 1 on, 0 ablated.
        """
        q = self._split(self.q_proj(x_q))  # (B, H, Tq, D)
        if self.rope is not None:
            q = self.rope.rotate(q, q_pos)
        if static_kv is not None:
            k, v = static_kv
        else:
            k, v = self.project_kv(x_kv, 0 if past_kv is None else past_kv[0].shape[2])
            if past_kv is not None:
                k, v = torch.cat((past_kv[0], k), dim=2), torch.cat((past_kv[1], v), dim=2)
        dropout_p = self.dropout if self.training else 0.0
        weights = scores = None
        if need_weights or need_scores:  # the capture path: the one plain attention function
            plain = attention(q, k, v, mask, dropout_p=dropout_p)
            heads = plain.output  # (B, H, Tq, D)
            weights = plain.weights.detach() if need_weights else None
            scores = plain.scores.detach() if need_scores else None
        else:
            heads = fast_attention(q, k, v, mask, dropout_p)
        if head_gate is not None:
            heads = heads * head_gate.to(heads.dtype).view(1, -1, 1, 1)
        b, _, tq, _ = heads.shape
        out = self.out_proj(heads.transpose(1, 2).reshape(b, tq, -1))  # (B, H, Tq, D) -> (B, Tq, d)
        return AttentionResult(output=out, weights=weights, scores=scores, kv=(k, v))

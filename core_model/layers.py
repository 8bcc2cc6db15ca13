"""Encoder and decoder layers (paper §3.1), with pre- or post-norm written out side by side in each `forward`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import AttentionResult, MultiHeadAttention
from .config import ModelConfig
from .positional import RotaryEmbedding

NORMS: dict[str, type[nn.Module]] = {"layernorm": nn.LayerNorm, "rmsnorm": nn.RMSNorm}
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU}
# The Annotated Transformer's LayerNorm epsilon (PyTorch's default is 1e-5); checkpoints were trained with it.
NORM_EPS = 1e-6


def make_norm(kind: str, d_model: int) -> nn.Module:
    """LayerNorm or RMSNorm by name; an unknown name fails loudly."""
    if kind not in NORMS:
        raise ValueError(f"norm must be one of {sorted(NORMS)}, got {kind!r}")
    return NORMS[kind](d_model, eps=NORM_EPS)


class FeedForward(nn.Module):
    """Position-wise FFN(x) = W2 act(W1 x + b1) + b2 (paper §3.3)."""

    def __init__(self, d_model: int, d_ff: int, activation: str, dropout: float) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff), ACTIVATIONS[activation](), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)  # (B, T, d) -> (B, T, d)


@dataclass
class AttentionRequest:
    """Per-call options an attention sublayer needs besides its inputs."""

    mask: Tensor | None = None
    head_gate: Tensor | None = None  # (H,)
    need_weights: bool = False
    need_scores: bool = False


def drop_path(x: Tensor, p: float, training: bool) -> Tensor:
    """Stochastic depth (Huang et al. 2016): zero the whole branch of a sample with probability p, scale the kept
    ones by 1/(1-p) so the expectation is unchanged; the identity outside training. x: (B, ...) -> same shape.

    As in timm's DropPath (the "inverted" form), not the paper's test-time rescaling by the survival probability.
    """
    if p == 0.0 or not training:
        return x
    keep = 1.0 - p
    mask = torch.rand((x.shape[0],) + (1,) * (x.dim() - 1), device=x.device, dtype=x.dtype) < keep  # (B, 1, 1)
    return x * mask.to(x.dtype) / keep


class NormSlot(nn.Module):
    """One sublayer's residual plumbing: its norm as `.norm`, optional residual scale `.scale`, stochastic depth.

    The norm stays at `.norm` so state_dict keys stay `sub_attn.norm.weight` etc. (every checkpoint saved so far,
    the shipped ones included, uses them), and `.scale` exists only when `residual_scale` is on: a model without
    the options has exactly the keys it always had.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.norm = make_norm(config.norm, config.d_model)
        self.scale = nn.Parameter(torch.ones(())) if config.residual_scale else None  # the seed's res_scale, init 1
        self.drop_path = config.drop_path

    def branch(self, out: Tensor) -> Tensor:
        """What the residual adds: s * DropPath(out). (B, T, d) -> (B, T, d)."""
        out = drop_path(out, self.drop_path, self.training)
        return out if self.scale is None else self.scale * out


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a residual connection with a norm."""

    def __init__(self, config: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.norm_first = config.norm_position == "pre"
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.ff = FeedForward(config.d_model, config.d_ff, config.activation, config.dropout)
        self.sub_attn, self.sub_ff = NormSlot(config), NormSlot(config)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, req: AttentionRequest) -> tuple[Tensor, AttentionResult]:
        """x: (B, S, d) -> (B, S, d) and the self-attention result."""
        s1, s2 = self.sub_attn, self.sub_ff
        if self.norm_first:  # pre-norm: x + f(norm(x))
            out, result = self._sa_block(s1.norm(x), req)
            x = x + s1.branch(out)
            x = x + s2.branch(self._ff_block(s2.norm(x)))
        else:  # post-norm, as in the paper: norm(x + f(x))
            out, result = self._sa_block(x, req)
            x = s1.norm(x + s1.branch(out))
            x = s2.norm(x + s2.branch(self._ff_block(x)))
        return x, result

    def _sa_block(self, x: Tensor, req: AttentionRequest) -> tuple[Tensor, AttentionResult]:
        r = self.self_attn(
            x, x, req.mask, head_gate=req.head_gate, need_weights=req.need_weights, need_scores=req.need_scores
        )
        return self.dropout(r.output), r

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout(self.ff(x))


@dataclass
class LayerCache:
    """Keys/values one decoder layer keeps between decoding steps."""

    self_kv: tuple[Tensor, Tensor] | None = None  # (B, H, t, D) for positions seen so far
    cross_kv: tuple[Tensor, Tensor] | None = None  # (B, H, S, D), computed once from memory


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward."""

    def __init__(self, config: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.norm_first = config.norm_position == "pre"
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.ff = FeedForward(config.d_model, config.d_ff, config.activation, config.dropout)
        self.sub_self, self.sub_cross, self.sub_ff = NormSlot(config), NormSlot(config), NormSlot(config)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_req: AttentionRequest,
        cross_req: AttentionRequest,
        *,
        q_pos: int = 0,
        cache: LayerCache | None = None,
    ) -> tuple[Tensor, AttentionResult, AttentionResult]:
        """x: (B, T, d) targets at positions q_pos...; memory: (B, S, d). Updates cache in place when given."""
        s1, s2, s3 = self.sub_self, self.sub_cross, self.sub_ff
        if self.norm_first:  # pre-norm: x + f(norm(x))
            out, self_result = self._sa_block(s1.norm(x), self_req, q_pos, cache)
            x = x + s1.branch(out)
            out, cross_result = self._ca_block(s2.norm(x), memory, cross_req, q_pos, cache)
            x = x + s2.branch(out)
            x = x + s3.branch(self._ff_block(s3.norm(x)))
        else:  # post-norm, as in the paper: norm(x + f(x))
            out, self_result = self._sa_block(x, self_req, q_pos, cache)
            x = s1.norm(x + s1.branch(out))
            out, cross_result = self._ca_block(x, memory, cross_req, q_pos, cache)
            x = s2.norm(x + s2.branch(out))
            x = s3.norm(x + s3.branch(self._ff_block(x)))
        if cache is not None:
            cache.self_kv, cache.cross_kv = self_result.kv, cross_result.kv
        return x, self_result, cross_result

    def _sa_block(
        self, x: Tensor, req: AttentionRequest, q_pos: int, cache: LayerCache | None
    ) -> tuple[Tensor, AttentionResult]:
        r = self.self_attn(
            x,
            x,
            req.mask,
            q_pos=q_pos,
            past_kv=cache.self_kv if cache else None,
            head_gate=req.head_gate,
            need_weights=req.need_weights,
            need_scores=req.need_scores,
        )
        return self.dropout(r.output), r

    def _ca_block(
        self, x: Tensor, memory: Tensor, req: AttentionRequest, q_pos: int, cache: LayerCache | None
    ) -> tuple[Tensor, AttentionResult]:
        r = self.cross_attn(
            x,
            memory,
            req.mask,
            q_pos=q_pos,
            static_kv=cache.cross_kv if cache else None,
            head_gate=req.head_gate,
            need_weights=req.need_weights,
            need_scores=req.need_scores,
        )
        return self.dropout(r.output), r

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout(self.ff(x))

"""Encoder and decoder layers (paper §3.1), with pre- or post-norm written out side by side."""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from .attention import AttentionResult, MultiHeadAttention
from .config import ModelConfig
from .positional import RotaryEmbedding

NORMS: dict[str, type[nn.Module]] = {"layernorm": nn.LayerNorm, "rmsnorm": nn.RMSNorm}
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU}


def make_norm(kind: str, d_model: int) -> nn.Module:
    """LayerNorm or RMSNorm by name; an unknown name fails loudly."""
    if kind not in NORMS:
        raise ValueError(f"norm must be one of {sorted(NORMS)}, got {kind!r}")
    return NORMS[kind](d_model, eps=1e-6)


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


class Sublayer(nn.Module):
    """Residual + norm around one block: pre-norm x + f(norm(x)), or post-norm norm(x + f(x)) as in the paper."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pre = config.norm_position == "pre"
        self.norm = make_norm(config.norm, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor, block) -> tuple[Tensor, AttentionResult | None]:
        """block maps the (normed, for pre-norm) input to (output, result or None)."""
        if self.pre:
            out, result = block(self.norm(x))
            return x + self.dropout(out), result
        out, result = block(x)
        return self.norm(x + self.dropout(out)), result


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward."""

    def __init__(self, config: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.ff = FeedForward(config.d_model, config.d_ff, config.activation, config.dropout)
        self.sub_attn, self.sub_ff = Sublayer(config), Sublayer(config)

    def forward(self, x: Tensor, req: AttentionRequest) -> tuple[Tensor, AttentionResult]:
        """x: (B, S, d) -> (B, S, d) and the self-attention result."""

        def sa_block(h: Tensor) -> tuple[Tensor, AttentionResult]:
            r = self.self_attn(
                h, h, req.mask, head_gate=req.head_gate, need_weights=req.need_weights, need_scores=req.need_scores
            )
            return r.output, r

        x, result = self.sub_attn(x, sa_block)
        x, _ = self.sub_ff(x, lambda h: (self.ff(h), None))
        return x, result


@dataclass
class LayerCache:
    """Keys/values one decoder layer keeps between decoding steps."""

    self_kv: tuple[Tensor, Tensor] | None = None  # (B, H, t, D) for positions seen so far
    cross_kv: tuple[Tensor, Tensor] | None = None  # (B, H, S, D), computed once from memory


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward."""

    def __init__(self, config: ModelConfig, rope: RotaryEmbedding | None) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout, rope)
        self.ff = FeedForward(config.d_model, config.d_ff, config.activation, config.dropout)
        self.sub_self, self.sub_cross, self.sub_ff = Sublayer(config), Sublayer(config), Sublayer(config)

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

        def sa_block(h: Tensor) -> tuple[Tensor, AttentionResult]:
            r = self.self_attn(
                h, h, self_req.mask, q_pos=q_pos, past_kv=cache.self_kv if cache else None,
                head_gate=self_req.head_gate, need_weights=self_req.need_weights, need_scores=self_req.need_scores,
            )
            return r.output, r

        def ca_block(h: Tensor) -> tuple[Tensor, AttentionResult]:
            r = self.cross_attn(
                h, memory, cross_req.mask, q_pos=q_pos, static_kv=cache.cross_kv if cache else None,
                head_gate=cross_req.head_gate, need_weights=cross_req.need_weights,
                need_scores=cross_req.need_scores,
            )
            return r.output, r

        x, self_result = self.sub_self(x, sa_block)
        x, cross_result = self.sub_cross(x, ca_block)
        x, _ = self.sub_ff(x, lambda h: (self.ff(h), None))
        if cache is not None:
            cache.self_kv, cache.cross_kv = self_result.kv, cross_result.kv
        return x, self_result, cross_result

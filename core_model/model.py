"""The encoder-decoder Transformer (Vaswani et al. 2017), composed from parts, with optional attention capture."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Generic, Literal, TypeVar

import numpy as np
import torch
from torch import Tensor, nn

from .config import ModelConfig
from .layers import AttentionRequest, DecoderLayer, EncoderLayer, LayerCache, make_norm
from .masks import MaskSpec
from .positional import RotaryEmbedding, SinusoidalEncoding
from .vocab import BOS

AttentionKind = Literal["encoder_self", "decoder_self", "cross"]
ATTENTION_KINDS: tuple[AttentionKind, ...] = ("encoder_self", "decoder_self", "cross")
MapT = TypeVar("MapT", Tensor, np.ndarray)  # torch inside the model, numpy past the session boundary


@dataclass(frozen=True)
class HeadGates:
    """Per-head multipliers for each attention kind, each (n_layers, n_heads): 1 on, 0 ablated. None = all on."""

    encoder_self: Tensor | None = None
    decoder_self: Tensor | None = None
    cross: Tensor | None = None

    def layer(self, kind: AttentionKind, index: int) -> Tensor | None:
        gates = getattr(self, kind)
        return None if gates is None else gates[index]

    @classmethod
    def from_numpy(cls, gates: Mapping[str, np.ndarray], device: torch.device | str = "cpu") -> HeadGates:
        """Gates from {kind: (L, H) array of 0/1 or scales}, for front ends that keep numpy state.

        A kind left out stays all on; an unknown kind raises ValueError naming the allowed ones.
        """
        unknown = sorted(set(gates) - set(ATTENTION_KINDS))
        if unknown:
            raise ValueError(f"head gate kinds must be among {list(ATTENTION_KINDS)}, got {unknown}")
        return cls(**{k: torch.as_tensor(v, dtype=torch.float32, device=device) for k, v in gates.items()})


@dataclass(frozen=True)
class AttentionMaps(Generic[MapT]):
    """Post-softmax weights (or pre-softmax scores) per layer, each (B, H, Tq, Tk), detached."""

    encoder_self: tuple[MapT, ...]
    decoder_self: tuple[MapT, ...]
    cross: tuple[MapT, ...]

    def kind(self, name: AttentionKind) -> tuple[MapT, ...]:
        """The maps of one kind chosen by name (front ends loop over ATTENTION_KINDS)."""
        return getattr(self, name)

    def to_numpy(self: AttentionMaps[Tensor]) -> AttentionMaps[np.ndarray]:
        """Float32 numpy copies on the CPU (the session boundary: widgets never see torch)."""
        conv = lambda t: t.detach().to("cpu", torch.float32).numpy().copy()  # noqa: E731
        return AttentionMaps(**{f.name: tuple(conv(t) for t in getattr(self, f.name)) for f in fields(self)})


@dataclass
class Seq2SeqOutput:
    """What the model computed: log-probabilities (B, T, V), and maps when they were asked for."""

    log_probs: Tensor  # (B, T, V); the generator ends in log-softmax, so these are not raw logits
    attention: AttentionMaps[Tensor] | None = None
    scores: AttentionMaps[Tensor] | None = None


@dataclass
class EncoderResult:
    memory: Tensor  # (B, S, d)
    weights: tuple[Tensor, ...] = ()
    scores: tuple[Tensor, ...] = ()


@dataclass
class DecoderResult:
    hidden: Tensor  # (B, T, d)
    self_weights: tuple[Tensor, ...] = ()
    cross_weights: tuple[Tensor, ...] = ()
    self_scores: tuple[Tensor, ...] = ()
    cross_scores: tuple[Tensor, ...] = ()


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder with switchable PE, norms and activations; see ModelConfig for the options."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.src_embed = nn.Embedding(config.vocab_size, d)
        self.tgt_embed = self.src_embed if config.tie_embeddings else nn.Embedding(config.vocab_size, d)
        self.scale = math.sqrt(d)  # paper §3.4: embeddings are multiplied by sqrt(d_model)
        self.sinusoid = (
            SinusoidalEncoding(d, config.max_len, config.pe_base) if config.positional == "sinusoidal" else None
        )
        rope = RotaryEmbedding(config.head_dim, config.max_len, config.pe_base) if config.positional == "rope" else None
        self.rope = rope
        self.dropout = nn.Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(config, rope) for _ in range(config.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config, rope) for _ in range(config.n_decoder_layers))
        # pre-norm leaves the residual stream un-normalised, so it needs final norms; post-norm already ends in one
        pre = config.norm_position == "pre"
        self.encoder_norm = make_norm(config.norm, d) if pre else nn.Identity()
        self.decoder_norm = make_norm(config.norm, d) if pre else nn.Identity()
        self.generator = nn.Linear(d, config.vocab_size)
        self._init_weights()
        if config.tie_embeddings:
            self.generator.weight = self.src_embed.weight

    def _init_weights(self) -> None:
        """Xavier-uniform for every weight matrix, biases zero; embeddings N(0, 1/d_model).

        The embedding deviates from Xavier on purpose (as fairseq does): after the sqrt(d_model) scaling of §3.4
        each component has unit variance, the same scale as the sinusoids, so position is not drowned by content.
        """
        embeddings = {id(self.src_embed.weight), id(self.tgt_embed.weight)}
        embedding_std = self.config.d_model**-0.5  # fairseq's Embedding init, N(0, 1/d_model)
        for name, p in self.named_parameters():
            if id(p) in embeddings:
                nn.init.normal_(p, std=embedding_std)
            elif p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def _embed(self, table: nn.Embedding, tokens: Tensor, offset: int) -> Tensor:
        x = table(tokens) * self.scale  # (B, T) -> (B, T, d); paper §3.4
        if self.sinusoid is not None:
            x = self.sinusoid(x, offset)
        elif offset + tokens.shape[1] > self.config.max_len:
            raise ValueError(f"sequence of {offset + tokens.shape[1]} positions exceeds max_len {self.config.max_len}")
        return self.dropout(x)

    def encode(
        self,
        src: Tensor,
        masks: MaskSpec | None = None,
        head_gates: HeadGates | None = None,
        *,
        need_weights: bool = False,
        need_scores: bool = False,
    ) -> EncoderResult:
        """src: (B, S) token ids -> memory (B, S, d) and, when asked, per-layer self-attention."""
        masks, gates = masks or MaskSpec(), head_gates or HeadGates()
        mask = masks.encoder_self(src)
        x, weights, scores = self._embed(self.src_embed, src, 0), [], []
        for i, layer in enumerate(self.encoder_layers):
            x, r = layer(x, AttentionRequest(mask, gates.layer("encoder_self", i), need_weights, need_scores))
            weights.append(r.weights)
            scores.append(r.scores)
        return EncoderResult(self.encoder_norm(x), _kept(weights), _kept(scores))

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src: Tensor,
        masks: MaskSpec | None = None,
        head_gates: HeadGates | None = None,
        *,
        need_weights: bool = False,
        need_scores: bool = False,
        q_pos: int = 0,
        caches: list[LayerCache] | None = None,
    ) -> DecoderResult:
        """tgt: (B, T) ids at positions q_pos... (earlier ones live in caches) -> hidden (B, T, d)."""
        masks, gates = masks or MaskSpec(), head_gates or HeadGates()
        # cached positions hold real tokens, never PAD: <bos> stands in for them in the padding mask
        keys = tgt if q_pos == 0 else torch.cat((tgt.new_full((tgt.shape[0], q_pos), BOS), tgt), dim=1)
        self_mask = masks.decoder_self(keys, q_offset=q_pos)
        cross_mask = masks.cross(src, tq=tgt.shape[1], q_offset=q_pos)
        x = self._embed(self.tgt_embed, tgt, q_pos)
        sw, cw, ss, cs = [], [], [], []
        for i, layer in enumerate(self.decoder_layers):
            x, rs, rc = layer(
                x,
                memory,
                AttentionRequest(self_mask, gates.layer("decoder_self", i), need_weights, need_scores),
                AttentionRequest(cross_mask, gates.layer("cross", i), need_weights, need_scores),
                q_pos=q_pos,
                cache=caches[i] if caches is not None else None,
            )
            sw.append(rs.weights)
            cw.append(rc.weights)
            ss.append(rs.scores)
            cs.append(rc.scores)
        return DecoderResult(self.decoder_norm(x), *map(_kept, (sw, cw, ss, cs)))

    def log_probs(self, hidden: Tensor) -> Tensor:
        """Generator: linear then log-softmax. (B, T, d) -> (B, T, V)."""
        return torch.log_softmax(self.generator(hidden), dim=-1)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        masks: MaskSpec | None = None,
        head_gates: HeadGates | None = None,
        *,
        return_attention: bool = False,
        return_scores: bool = False,
    ) -> Seq2SeqOutput:
        """src (B, S), tgt (B, T) decoder inputs (starting with <bos>) -> log-probs (B, T, V) and maps."""
        enc = self.encode(src, masks, head_gates, need_weights=return_attention, need_scores=return_scores)
        dec = self.decode(
            tgt, enc.memory, src, masks, head_gates, need_weights=return_attention, need_scores=return_scores
        )
        out = Seq2SeqOutput(self.log_probs(dec.hidden))
        if return_attention:
            out.attention = AttentionMaps(enc.weights, dec.self_weights, dec.cross_weights)
        if return_scores:
            out.scores = AttentionMaps(enc.scores, dec.self_scores, dec.cross_scores)
        return out

    def residual_scales(self) -> dict[str, float]:
        """Each sublayer's learned residual scale by name ("encoder.0.attn", ...); empty when the option is off."""
        slots = {"sub_attn": "attn", "sub_self": "self", "sub_cross": "cross", "sub_ff": "ff"}
        out: dict[str, float] = {}
        for stack, layers in (("encoder", self.encoder_layers), ("decoder", self.decoder_layers)):
            for i, layer in enumerate(layers):
                for attr, short in slots.items():
                    slot = getattr(layer, attr, None)
                    if slot is not None and slot.scale is not None:
                        out[f"{stack}.{i}.{short}"] = float(slot.scale.detach())
        return out

    def parameter_count(self) -> int:
        """Distinct trainable parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _kept(items: list[Tensor | None]) -> tuple[Tensor, ...]:
    return tuple(t for t in items if t is not None)


def build_model(
    config: ModelConfig, device: torch.device | str | None = None, seed: int | None = None
) -> Seq2SeqTransformer:
    """Factory: a freshly initialised model on `device`; `seed` makes the initialisation reproducible."""
    if seed is None:
        model = Seq2SeqTransformer(config)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = Seq2SeqTransformer(config)
    return model.to(device) if device is not None else model

"""Views of attention beyond the raw weights: norm-weighted attention and attention rollout.

Norm-weighted (Kobayashi et al. 2020, "Attention is Not Only a Weight"): what key j adds to query i through head
h is the vector a_ij f_h(x_j) with f_h(x) = W_O^h (W_V^h x + b_V^h); its length ||a_ij f_h(x_j)|| is a better
measure of influence than a_ij alone. The value bias b_V is kept inside f, as in the paper: it is part of what
the head writes for every key, and since the weights of a row sum to 1 it adds W_O^h b_V^h once per query. Our
output projection has no bias (see attention.py), so nothing is left outside. A head gate g_h scales the head's
output (ablation), so the view shows g_h ||a_ij f_h(x_j)||: an ablated head writes nothing.

Rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): per layer average the heads, add
the residual as 0.5 A + 0.5 I, re-normalise rows, and multiply across layers: R^l = Ã^l R^(l-1), R^0 = I.
Heads switched off by a gate are left out of the average (they do not reach the output); a layer with no head
on is the residual alone (Ã = I).

Decoder rollout (our definition; the paper treats a single stack). A decoder position's representation mixes
target tokens (self-attention) and source tokens (cross-attention over the encoder memory), so we track one
row-stochastic matrix over T + S inputs, split into D (T, T: share from target tokens) and C (T, S: share from
source tokens), starting at D = I, C = 0. Per layer:
  self step:  [D C] <- Ã_self [D C]                       (Ã_self as in the encoder, causal mask included)
  cross step: [D C] <- (0.5 [D C] + 0.5 [0, X R_enc]) / (0.5 + 0.5 rowsum X)
where X (T, S) is the head-averaged cross attention and R_enc the encoder's final rollout (memory position ->
source token). The feed-forward blocks and norms are ignored, as in the paper. Rows of [D C] sum to 1.

Per-head maps: the head column h shows the same layer update with head h in place of the head average, for an
ablated head too (what it would route). Every step is affine in the averaged matrix, so the mean of the columns of
the heads that are on is exactly the rollout; the mean of all columns is not once a head is off.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor

from .attention import MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer
from .masks import MaskSpec
from .model import ATTENTION_KINDS, AttentionKind, AttentionMaps, HeadGates, Seq2SeqOutput, Seq2SeqTransformer

VIEW_MODES = ("weights", "scores", "norms", "rollout")


@dataclass(frozen=True)
class LayerInputs:
    """The key/value-side input x of every attention sublayer, each (B, Tk, d): what f(x_j) is computed from."""

    encoder_self: tuple[Tensor, ...]
    decoder_self: tuple[Tensor, ...]
    cross: tuple[Tensor, ...]


@dataclass(frozen=True)
class CapturedPass:
    """One forward pass with post-softmax weights, pre-softmax scores and the attention sublayers' inputs."""

    output: Seq2SeqOutput
    inputs: LayerInputs


@dataclass(frozen=True)
class RolloutMaps:
    """Rollout per layer (L, B, Tq, Tk) and per head (L, B, H, Tq, Tk) of each kind (decoder kinds: D and C)."""

    encoder_self: Tensor  # (L, B, S, S)
    decoder_self: Tensor  # (L, B, T, T): D, the share of each target token
    cross: Tensor  # (L, B, T, S): C, the share of each source token
    heads: AttentionMaps[Tensor]  # per kind, per layer (B, H, Tq, Tk): the layer update through one head


def attention_modules(model: Seq2SeqTransformer) -> dict[AttentionKind, list[MultiHeadAttention]]:
    """Each kind's attention sublayers in layer order."""
    # torch's ModuleList is not generic: its items type as Module, so name the layers model.py puts in each stack
    encoder = cast(list[EncoderLayer], list(model.encoder_layers))
    decoder = cast(list[DecoderLayer], list(model.decoder_layers))
    return {
        "encoder_self": [layer.self_attn for layer in encoder],
        "decoder_self": [layer.self_attn for layer in decoder],
        "cross": [layer.cross_attn for layer in decoder],
    }


def run_with_inputs(
    model: Seq2SeqTransformer, src: Tensor, tgt: Tensor, masks: MaskSpec | None = None, gates: HeadGates | None = None
) -> CapturedPass:
    """A forward pass that also records each attention sublayer's key/value input through forward pre-hooks.

    Hooks leave layers.py untouched: the input x_kv is the second positional argument of MultiHeadAttention.
    """
    found: dict[str, list[Tensor]] = {"encoder_self": [], "decoder_self": [], "cross": []}
    modules = [(m, kind) for kind, attns in attention_modules(model).items() for m in attns]

    thread = threading.get_ident()  # another thread's pass on the same model (e.g. a cell recomputation) is not ours

    def hook_for(kind: str):
        def hook(_module, args, kwargs=None):
            if threading.get_ident() == thread:
                found[kind].append((args[1] if len(args) > 1 else kwargs["x_kv"]).detach())

        return hook

    handles = [m.register_forward_pre_hook(hook_for(kind), with_kwargs=True) for m, kind in modules]
    try:
        out = model(src, tgt, masks, gates, return_attention=True, return_scores=True)
    finally:
        for handle in handles:
            handle.remove()
    return CapturedPass(out, LayerInputs(*(tuple(found[k]) for k in ("encoder_self", "decoder_self", "cross"))))


def value_norms(attn: MultiHeadAttention, x: Tensor) -> Tensor:
    """||f_h(x_j)|| = ||W_O^h (W_V^h x_j + b_V^h)|| for every head and key. x (B, Tk, d) -> (B, H, Tk)."""
    b, tk, _ = x.shape
    n_heads, head_dim = attn.n_heads, attn.head_dim
    v = attn.v_proj(x).view(b, tk, n_heads, head_dim)  # (B, Tk, H, D), bias included
    w_o = attn.out_proj.weight.view(-1, n_heads, head_dim)  # (d, H*D) -> (d, H, D)
    f = torch.einsum("bthe,dhe->bhtd", v, w_o)  # (B, H, Tk, d): each head's output vector for key j
    return f.norm(dim=-1)


def norm_weighted(
    model: Seq2SeqTransformer, weights: AttentionMaps[Tensor], inputs: LayerInputs, gates: HeadGates | None = None
) -> AttentionMaps[Tensor]:
    """g_h a_ij ||f_h(x_j)|| per kind and layer, each (B, H, Tq, Tk) (Kobayashi et al. 2020, §3)."""
    gates = gates or HeadGates()
    result: dict[AttentionKind, tuple[Tensor, ...]] = {}
    for kind, attns in attention_modules(model).items():
        maps = []
        for i, attn in enumerate(attns):
            a = weights.kind(kind)[i]
            norms = value_norms(attn, getattr(inputs, kind)[i]).detach().to(a.dtype)  # (B, H, Tk); maps are detached
            scaled = a * norms[:, :, None, :]  # (B, H, Tq, Tk) * (B, H, 1, Tk)
            gate = gates.layer(kind, i)
            if gate is not None:
                scaled = scaled * gate.to(scaled.dtype).view(1, -1, 1, 1)
            maps.append(scaled)
        result[kind] = tuple(maps)
    return AttentionMaps(*(result[kind] for kind in ATTENTION_KINDS))


def _head_mean(a: Tensor, gate: Tensor | None) -> Tensor:
    """Mean over heads (B, H, Tq, Tk) -> (B, Tq, Tk), over heads with a nonzero gate when gates are given."""
    if gate is None:
        return a.mean(dim=1)
    on = (gate != 0).to(a.dtype).view(1, -1, 1, 1)
    count = on.sum()
    return (a * on).sum(dim=1) / count if count > 0 else torch.zeros_like(a[:, 0])


def with_residual(a: Tensor) -> Tensor:
    """0.5 A + 0.5 I, rows re-normalised; a fully masked (all-zero) row becomes the identity row. (..., T, T)."""
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    mixed = 0.5 * a + 0.5 * eye
    return mixed / mixed.sum(dim=-1, keepdim=True)


def _cross_step(d: Tensor, c: Tensor, x: Tensor, r_enc: Tensor) -> tuple[Tensor, Tensor]:
    """Mix the residual [D C] with the cross attention X (.., T, S) routed through the encoder rollout R_enc."""
    total = 0.5 + 0.5 * x.sum(dim=-1, keepdim=True)  # 1 unless a row is fully masked
    return 0.5 * d / total, (0.5 * c + 0.5 * x @ r_enc) / total  # (.., T, S) @ (B, S, S) -> (.., T, S)


def rollout(weights: AttentionMaps[Tensor], gates: HeadGates | None = None) -> RolloutMaps:
    """Attention rollout (Abnar & Zuidema 2020) of the encoder, and of the decoder as defined in the module doc.

    Args: weights post-softmax per kind and layer (B, H, Tq, Tk); gates leave switched-off heads out of averages.
    """
    gates = gates or HeadGates()
    enc, enc_heads = _encoder_rollout(weights.encoder_self, gates)
    src_len = weights.cross[0].shape[-1] if weights.cross else 0
    ref = weights.decoder_self[0] if weights.decoder_self else None
    r_enc = enc[-1] if enc else None
    dec_d, dec_c, self_heads, cross_heads = [], [], [], []
    if ref is not None:
        b, _, t, _ = ref.shape
        d = torch.eye(t, dtype=ref.dtype, device=ref.device).expand(b, t, t)
        c = ref.new_zeros(b, t, src_len)
        if r_enc is None:
            r_enc = torch.eye(src_len, dtype=ref.dtype, device=ref.device).expand(b, src_len, src_len)
        for i, (a_self, a_cross) in enumerate(zip(weights.decoder_self, weights.cross)):
            s_bar = with_residual(_head_mean(a_self, gates.layer("decoder_self", i)))  # (B, T, T)
            x_bar = _head_mean(a_cross, gates.layer("cross", i))  # (B, T, S)
            s_heads = with_residual(a_self)  # (B, H, T, T)
            d_h, _ = _cross_step(s_heads @ d[:, None], s_heads @ c[:, None], x_bar[:, None], r_enc[:, None])
            d_mid, c_mid = s_bar @ d, s_bar @ c
            _, c_h = _cross_step(d_mid[:, None], c_mid[:, None], a_cross, r_enc[:, None])
            d, c = _cross_step(d_mid, c_mid, x_bar, r_enc)
            dec_d.append(d)
            dec_c.append(c)
            self_heads.append(d_h)
            cross_heads.append(c_h)
    stack = lambda items, like: torch.stack(items) if items else like.new_zeros((0,))  # noqa: E731
    heads = AttentionMaps(tuple(enc_heads), tuple(self_heads), tuple(cross_heads))
    like = weights.encoder_self[0] if weights.encoder_self else ref
    return RolloutMaps(stack(enc, like), stack(dec_d, like), stack(dec_c, like), heads)


def _encoder_rollout(layers: Sequence[Tensor], gates: HeadGates) -> tuple[list[Tensor], list[Tensor]]:
    """R^l = Ã^l R^(l-1) per layer (B, S, S), and Ã_h^l R^(l-1) per head (B, H, S, S)."""
    per_layer, per_head = [], []
    r = None
    for i, a in enumerate(layers):
        if r is None:
            s = a.shape[-1]
            r = torch.eye(s, dtype=a.dtype, device=a.device).expand(a.shape[0], s, s)
        per_head.append(with_residual(a) @ r[:, None])  # (B, H, S, S) @ (B, 1, S, S)
        r = with_residual(_head_mean(a, gates.layer("encoder_self", i))) @ r
        per_layer.append(r)
    return per_layer, per_head


def view_maps(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    mode: str,
    masks: MaskSpec | None = None,
    gates: HeadGates | None = None,
) -> tuple[Seq2SeqOutput, AttentionMaps[Tensor]]:
    """The maps of one view mode per kind and layer, each (B, H, Tq, Tk), with the pass's output.

    "weights" and "scores" are the model's own; "norms" is norm_weighted; "rollout" is rollout's per-head maps
    (the mean of those of the heads that are on is the rollout).
    """
    if mode not in VIEW_MODES:
        raise ValueError(f"mode must be one of {list(VIEW_MODES)}, got {mode!r}")
    captured = run_with_inputs(model, src, tgt, masks, gates)
    out = captured.output
    weights, scores = out.attention, out.scores
    assert weights is not None and scores is not None  # run_with_inputs asks the model for both
    if mode == "weights":
        return out, weights
    if mode == "scores":
        return out, scores
    if mode == "norms":
        return out, norm_weighted(model, weights, captured.inputs, gates)
    return out, rollout(weights, gates).heads

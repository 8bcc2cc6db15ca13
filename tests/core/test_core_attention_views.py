"""Norm-weighted attention and rollout against computations written out here: loops, explicit matrices, float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core_model import BOS, PAD, HeadGates, MaskSpec, ModelConfig, build_model
from core_model.attention_views import norm_weighted, rollout, run_with_inputs, view_maps
from core_model.layers import AttentionRequest

EXACT = 1e-12
SRC = torch.tensor([[3, 4, 5, 6, 7, PAD]])
TGT = torch.tensor([[BOS, 3, 4, 5, 6, 7, PAD]])


def tiny(norm_position: str = "pre", positional: str = "rope", seed: int = 0):
    config = ModelConfig(
        d_model=16,
        n_heads=2,
        d_ff=32,
        max_len=64,
        n_encoder_layers=3,
        n_decoder_layers=2,
        norm_position=norm_position,
        positional=positional,
    )
    model = build_model(config, seed=seed).to(torch.float64).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # biases start at zero: give them values so that b_V's place in f(x) is tested
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
    return model


def sublayer_inputs(model, src, tgt, masks, gates):
    """The x that each self-attention sees, by running the layers one by one (no hooks)."""
    enc_mask, enc_inputs = masks.encoder_self(src), []
    x = model._embed(model.src_embed, src, 0)
    for i, layer in enumerate(model.encoder_layers):
        enc_inputs.append(layer.sub_attn.norm(x) if layer.norm_first else x)
        x, _ = layer(x, AttentionRequest(enc_mask, gates.layer("encoder_self", i)))
    memory = model.encoder_norm(x)
    self_mask, cross_mask = masks.decoder_self(tgt), masks.cross(src)
    y, dec_inputs = model._embed(model.tgt_embed, tgt, 0), []
    for layer in model.decoder_layers:
        dec_inputs.append(layer.sub_self.norm(y) if layer.norm_first else y)
        y, _, _ = layer(y, memory, AttentionRequest(self_mask), AttentionRequest(cross_mask))
    return enc_inputs, dec_inputs, memory


def loop_norms(attn, a, x, gate=None):
    """g_h a_ij ||W_O^h (W_V^h x_j + b_V^h)||, one head, one key at a time with explicit matrices."""
    a, x = a[0].numpy(), x[0].detach().numpy()  # (H, Tq, Tk), (Tk, d)
    d = attn.head_dim
    wv, bv = attn.v_proj.weight.detach().numpy(), attn.v_proj.bias.detach().numpy()
    wo = attn.out_proj.weight.detach().numpy()
    out = np.zeros_like(a)
    for h in range(a.shape[0]):
        wv_h, bv_h, wo_h = wv[h * d : (h + 1) * d], bv[h * d : (h + 1) * d], wo[:, h * d : (h + 1) * d]
        g = 1.0 if gate is None else float(gate[h])
        for j in range(a.shape[2]):
            f = wo_h @ (wv_h @ x[j] + bv_h)
            out[h, :, j] = g * a[h, :, j] * np.linalg.norm(f)
    return out


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
def test_norm_weighted_equals_a_loop_over_heads(norm_position, positional):
    model, masks = tiny(norm_position, positional), MaskSpec()
    gates = HeadGates(encoder_self=torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.5, 1.0]], dtype=torch.float64))
    captured = run_with_inputs(model, SRC, TGT, masks, gates)
    enc_in, dec_in, memory = sublayer_inputs(model, SRC, TGT, masks, gates)
    got = norm_weighted(model, captured.output.attention, captured.inputs, gates)
    att = captured.output.attention
    for i, layer in enumerate(model.encoder_layers):
        ref = loop_norms(layer.self_attn, att.encoder_self[i], enc_in[i], gates.encoder_self[i])
        np.testing.assert_allclose(got.encoder_self[i][0].numpy(), ref, rtol=0, atol=EXACT)
    for i, layer in enumerate(model.decoder_layers):
        ref = loop_norms(layer.self_attn, att.decoder_self[i], dec_in[i])
        np.testing.assert_allclose(got.decoder_self[i][0].numpy(), ref, rtol=0, atol=EXACT)
        ref = loop_norms(layer.cross_attn, att.cross[i], memory)
        np.testing.assert_allclose(got.cross[i][0].numpy(), ref, rtol=0, atol=EXACT)
    assert float(got.encoder_self[0][0, 1].abs().max()) == 0.0  # the ablated head writes nothing
    assert float(got.encoder_self[0][0, 0].max()) > 0.0


def explicit_rollout(att, gates_on=None):
    """Encoder: R = Ã R per layer. Decoder: a (T, T+S) share matrix, cross step written row by row."""
    enc = [a[0].numpy() for a in att.encoder_self]
    s = enc[0].shape[-1]
    r, enc_r = np.eye(s), []
    for i, a in enumerate(enc):
        heads = range(a.shape[0]) if gates_on is None else [h for h in range(a.shape[0]) if gates_on[i][h]]
        mean = sum(a[h] for h in heads) / len(heads)
        m = 0.5 * mean + 0.5 * np.eye(s)
        m = m / m.sum(axis=1, keepdims=True)
        r = m @ r
        enc_r.append(r)
    t = att.decoder_self[0].shape[-1]
    p = np.hstack([np.eye(t), np.zeros((t, s))])
    dec = []
    for a_self, a_cross in zip(att.decoder_self, att.cross):
        m = 0.5 * a_self[0].numpy().mean(0) + 0.5 * np.eye(t)
        p = (m / m.sum(axis=1, keepdims=True)) @ p
        x = a_cross[0].numpy().mean(0)  # (T, S)
        new = np.zeros_like(p)
        for q in range(t):
            routed = np.zeros(t + s)
            for j in range(s):
                routed[t:] += x[q, j] * r[j]  # memory position j carries source tokens as the encoder rolled out
            new[q] = (0.5 * p[q] + 0.5 * routed) / (0.5 + 0.5 * x[q].sum())
        p = new
        dec.append(p.copy())
    return enc_r, dec


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_rollout_equals_explicit_matrix_products(norm_position):
    model = tiny(norm_position)
    out = model(SRC, TGT, MaskSpec(), return_attention=True)
    got = rollout(out.attention)
    enc_ref, dec_ref = explicit_rollout(out.attention)
    t = TGT.shape[1]
    for layer, ref in enumerate(enc_ref):
        np.testing.assert_allclose(got.encoder_self[layer, 0].numpy(), ref, rtol=0, atol=EXACT)
        np.testing.assert_allclose(got.heads.encoder_self[layer][0].numpy().mean(0), ref, rtol=0, atol=EXACT)
    for layer, ref in enumerate(dec_ref):
        np.testing.assert_allclose(got.decoder_self[layer, 0].numpy(), ref[:, :t], rtol=0, atol=EXACT)
        np.testing.assert_allclose(got.cross[layer, 0].numpy(), ref[:, t:], rtol=0, atol=EXACT)
        np.testing.assert_allclose(got.heads.decoder_self[layer][0].numpy().mean(0), ref[:, :t], rtol=0, atol=EXACT)
        np.testing.assert_allclose(got.heads.cross[layer][0].numpy().mean(0), ref[:, t:], rtol=0, atol=EXACT)


def test_rollout_rows_sum_to_one_even_with_fully_masked_rows():
    model = tiny()
    masks = MaskSpec(encoder_window=1, decoder_window=2)
    out = model(SRC, TGT, masks, return_attention=True)
    got = rollout(out.attention)
    np.testing.assert_allclose(got.encoder_self.sum(-1).numpy(), 1.0, rtol=0, atol=EXACT)
    both = got.decoder_self.sum(-1) + got.cross.sum(-1)  # each decoder row shares 1 between targets and sources
    np.testing.assert_allclose(both.numpy(), 1.0, rtol=0, atol=EXACT)
    assert float(got.cross[-1].sum(-1).min()) > 0.1  # the source reaches the decoder


def test_rollout_leaves_ablated_heads_out_of_the_average():
    model = tiny()
    on = [[True, False], [True, True], [False, True]]
    gates = HeadGates(encoder_self=torch.tensor(on, dtype=torch.float64))
    out = model(SRC, TGT, MaskSpec(), gates, return_attention=True)
    got = rollout(out.attention, gates)
    enc_ref, _ = explicit_rollout(out.attention, on)
    np.testing.assert_allclose(got.encoder_self[-1, 0].numpy(), enc_ref[-1], rtol=0, atol=EXACT)
    plain = rollout(out.attention)
    assert float((plain.encoder_self[-1] - got.encoder_self[-1]).abs().max()) > 1e-3


def test_view_maps_modes_and_refusal():
    model = tiny()
    shapes = {}
    for mode in ("weights", "scores", "norms", "rollout"):
        _, maps = view_maps(model, SRC, TGT, mode)
        shapes[mode] = [tuple(m.shape) for m in maps.encoder_self + maps.decoder_self + maps.cross]
    assert len({tuple(s) for s in shapes.values()}) == 1
    with pytest.raises(ValueError, match="mode must be one of"):
        view_maps(model, SRC, TGT, "gradients")

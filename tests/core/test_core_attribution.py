"""Attribution against autograd loops written here: a forward pass built by hand from the scaled source embeddings
(no hooks), one gradient per output token and path point, and occlusion as one plain forward per edited source."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core_model import BOS, EOS, MaskSpec, ModelConfig, build_model
from core_model.attribution import MAX_IG_STEPS, attribute
from core_model.layers import AttentionRequest

EXACT = 1e-10
SYMBOLS = [3, 4, 5, 6, 7]
SRC = [BOS, 3, 5, 4, 7, EOS]  # anchored: the specials get no gradient attribution and no occlusion
OUTPUT = [3, 5, 4, 7, EOS]


def tiny(positional: str = "rope", norm_position: str = "pre", tie: bool = False):
    config = ModelConfig(
        vocab_size=8,
        d_model=16,
        n_heads=2,
        d_ff=32,
        max_len=32,
        n_encoder_layers=2,
        n_decoder_layers=2,
        positional=positional,
        norm_position=norm_position,
        tie_embeddings=tie,
    )
    return build_model(config, seed=3).to(torch.float64).eval()


def f_of(model, z, src=SRC, output=OUTPUT):
    """log p(output token i) for every i, the encoder fed the scaled embeddings z (S, d) directly."""
    src_t, tgt = torch.tensor([src]), torch.tensor([[BOS, *output[:-1]]])
    masks = MaskSpec()
    x = z[None] if model.sinusoid is None else model.sinusoid(z[None], 0)
    for layer in model.encoder_layers:
        x, _ = layer(x, AttentionRequest(masks.encoder_self(src_t)))
    memory = model.encoder_norm(x)
    y = model._embed(model.tgt_embed, tgt, 0)
    for layer in model.decoder_layers:
        y, _, _ = layer(y, memory, AttentionRequest(masks.decoder_self(tgt)), AttentionRequest(masks.cross(src_t)))
    log_probs = torch.log_softmax(model.generator(model.decoder_norm(y))[0], dim=-1)
    return log_probs[torch.arange(len(output)), torch.tensor(output)]


def embeddings(model, src=SRC):
    x = model.src_embed.weight[torch.tensor(src)].detach() * model.scale
    mean = model.src_embed.weight[torch.tensor(SYMBOLS)].detach().mean(0) * model.scale
    b = torch.stack([mean if t in SYMBOLS else x[j] for j, t in enumerate(src)])
    return x, b


def loop_methods(model, steps):
    x, b = embeddings(model)
    gxd, ig = np.zeros((len(OUTPUT), len(SRC))), np.zeros((len(OUTPUT), len(SRC)))
    for i in range(len(OUTPUT)):
        z = x.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(f_of(model, z)[i], z)
        gxd[i] = ((x - b) * g).sum(-1).numpy()
        total = torch.zeros_like(x)
        for k in range(1, steps + 1):
            z = (b + k / steps * (x - b)).requires_grad_(True)
            (g,) = torch.autograd.grad(f_of(model, z)[i], z)
            total += g
        ig[i] = ((x - b) * total / steps).sum(-1).numpy()
    with torch.no_grad():
        f_x, f_b = f_of(model, x).numpy(), f_of(model, b).numpy()
    return gxd, ig, f_x, f_b


def loop_occlusion(model):
    def f(src):
        with torch.no_grad():
            out = model(torch.tensor([src]), torch.tensor([[BOS, *OUTPUT[:-1]]])).log_probs[0]
        return out[torch.arange(len(OUTPUT)), torch.tensor(OUTPUT)].numpy()

    base, occ = f(SRC), np.zeros((len(OUTPUT), len(SRC)))
    for j, tok in enumerate(SRC):
        if tok in SYMBOLS:
            others = [f(SRC[:j] + [s] + SRC[j + 1 :]) for s in SYMBOLS if s != tok]
            occ[:, j] = base - np.mean(others, axis=0)
    return occ


@pytest.mark.parametrize(
    ("positional", "norm_position", "tie"),
    [("rope", "pre", False), ("sinusoidal", "post", False), ("rope", "pre", True)],
)
def test_every_method_equals_its_loop(positional, norm_position, tie):
    model = tiny(positional, norm_position, tie)
    result = attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=4)
    gxd, ig, f_x, f_b = loop_methods(model, 4)
    np.testing.assert_allclose(result.gradient_x_delta, gxd, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.integrated_gradients, ig, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.f_input, f_x, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.f_baseline, f_b, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.completeness_gap, ig.sum(1) - (f_x - f_b), atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.occlusion, loop_occlusion(model), atol=EXACT, rtol=0)
    assert (result.gradient_x_delta[:, [0, -1]] == 0).all() and (result.occlusion[:, [0, -1]] == 0).all()


def test_integrated_gradients_approach_completeness_as_steps_grow():
    model = tiny()
    coarse = np.abs(attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=2).completeness_gap).max()
    fine = np.abs(attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=128).completeness_gap).max()
    assert fine < coarse / 10 and fine < 1e-2


def test_occlusion_in_several_chunks_equals_one(monkeypatch):
    import core_model.attribution as module

    model = tiny()
    whole = attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=1).occlusion
    monkeypatch.setattr(module, "OCCLUSION_CHUNK", 3)
    np.testing.assert_allclose(attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=1).occlusion, whole, atol=EXACT)


def test_progress_counts_every_output_position_and_occlusion_pass():
    seen = []
    attribute(tiny(), SRC, OUTPUT, SYMBOLS, ig_steps=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, len(OUTPUT)) for i in range(1, 6)] + [(1, 1)]


@pytest.mark.parametrize(
    ("steps", "output", "message"), [(0, OUTPUT, "ig_steps"), (MAX_IG_STEPS + 1, OUTPUT, "ig_steps"), (4, [], "empty")]
)
def test_bad_arguments_are_refused_before_any_pass(steps, output, message):
    with pytest.raises(ValueError, match=message):
        attribute(tiny(), SRC, output, SYMBOLS, ig_steps=steps)


def test_the_model_is_left_as_it_was():
    model = tiny().train()
    attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=2)
    assert model.training and not model.src_embed._forward_hooks
    assert all(p.grad is None for p in model.parameters())


def test_a_float32_model_is_explained_in_float64_and_left_in_float32():
    """The app's models are float32: their attributions are the float64 loop's on the same weights, to 1e-10 (in
    float32 occlusion at a sure output differs by less than float32 resolves, and its ranking by CPU)."""
    model = tiny()
    for parameter in model.parameters():  # as build_model makes them: float32 weights, the float64 position tables
        parameter.data = parameter.data.float()
    result = attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=4)
    wide = tiny()  # the same seed: these weights, in float64
    gxd, ig, f_x, _ = loop_methods(wide, 4)
    np.testing.assert_allclose(result.integrated_gradients, ig, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.gradient_x_delta, gxd, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.f_input, f_x, atol=EXACT, rtol=0)
    np.testing.assert_allclose(result.occlusion, loop_occlusion(wide), atol=EXACT, rtol=0)
    assert all(p.dtype == torch.float32 for p in model.parameters())

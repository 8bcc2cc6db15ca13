"""Activation patching against patching written out here: one run per head, the head's output rebuilt from its
attention weights and values and swapped in through the output projection's matrix (no shared code), float64."""

from __future__ import annotations

import pytest
import torch

from core_model import BOS, ModelConfig, build_model
from core_model.patching import default_position, patch_effects

EXACT = 1e-10
CLEAN = [3, 4, 5, 6, 7, 8]
CORRUPT = [3, 4, 9, 6, 7, 8]  # one symbol changed: a copy model's answer changes at position 2


def tiny(norm_position: str = "pre", positional: str = "rope", seed: int = 0):
    config = ModelConfig(
        d_model=16,
        n_heads=2,
        d_ff=32,
        max_len=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        norm_position=norm_position,
        positional=positional,
    )
    return build_model(config, seed=seed).to(torch.float64).eval()


def run(model, src, target):
    """log p of every output position, teacher-forced with <bos> + target."""
    with torch.no_grad():
        return model(torch.tensor([src]), torch.tensor([[BOS, *target]])).log_probs[0]


def metric(log_probs, position, good, bad) -> float:
    return float(log_probs[position, good] - log_probs[position, bad])


def attention_module(model, kind, layer):
    layers = model.encoder_layers if kind == "encoder_self" else model.decoder_layers
    return getattr(layers[layer], "cross_attn" if kind == "cross" else "self_attn")


def head_outputs(module, call):
    """Run the module as the model does, also returning each head's output weights @ values: (H, Tq, D)."""
    result = call(need_weights=True)
    _k, v = result.kv
    return result, (result.weights.double() @ v)[0]


def patched_head_metric(model, kind, layer, head, position, good, bad) -> float:
    """The corrupted run with one head's output replaced by the clean run's, by overriding the module's forward."""
    module = attention_module(model, kind, layer)
    original = module.forward
    clean_heads = {}

    def capture(*args, **kwargs):
        kwargs["need_weights"] = True
        result, heads = head_outputs(module, lambda **kw: original(*args, **{**kwargs, **kw}))
        clean_heads["value"] = heads
        return result

    def swap(*args, **kwargs):
        kwargs["need_weights"] = True
        result, heads = head_outputs(module, lambda **kw: original(*args, **{**kwargs, **kw}))
        d = module.head_dim
        w_o = module.out_proj.weight[:, head * d : (head + 1) * d]  # (d_model, D)
        result.output = result.output + (clean_heads["value"][head] - heads[head]) @ w_o.T
        return result

    try:
        module.forward = capture
        run(model, CLEAN, CLEAN)
        module.forward = swap
        return metric(run(model, CORRUPT, CLEAN), position, good, bad)
    finally:
        del module.forward


def patched_layer_metric(model, kind, layer, position, good, bad) -> float:
    """The corrupted run with one attention module's whole output taken from the clean run."""
    module = attention_module(model, kind, layer)
    original = module.forward
    clean = {}

    def capture(*args, **kwargs):
        result = original(*args, **kwargs)
        clean["output"] = result.output.clone()
        return result

    def swap(*args, **kwargs):
        result = original(*args, **kwargs)
        result.output = clean["output"]
        return result

    try:
        module.forward = capture
        run(model, CLEAN, CLEAN)
        module.forward = swap
        return metric(run(model, CORRUPT, CLEAN), position, good, bad)
    finally:
        del module.forward


def patched_residual_metric(model, layer, source_position, position, good, bad) -> float:
    """The corrupted run with encoder layer `layer`'s output at one source position taken from the clean run."""
    module = model.encoder_layers[layer]
    original = module.forward
    clean = {}

    def capture(x, req):
        out, result = original(x, req)
        clean["x"] = out.clone()
        return out, result

    def swap(x, req):
        out, result = original(x, req)
        out = out.clone()
        out[:, source_position] = clean["x"][:, source_position]
        return out, result

    try:
        module.forward = capture
        run(model, CLEAN, CLEAN)
        module.forward = swap
        return metric(run(model, CORRUPT, CLEAN), position, good, bad)
    finally:
        del module.forward


@pytest.mark.parametrize(("norm_position", "positional"), [("pre", "rope"), ("post", "sinusoidal")])
def test_every_effect_equals_patching_one_run_at_a_time(norm_position, positional):
    model = tiny(norm_position, positional)
    result = patch_effects(model, CLEAN, CORRUPT, CLEAN, CORRUPT)
    position, good, bad = 2, CLEAN[2], CORRUPT[2]
    assert (result.position, result.clean_token, result.corrupt_token) == (position, good, bad)
    m_clean = metric(run(model, CLEAN, CLEAN), position, good, bad)
    m_corrupt = metric(run(model, CORRUPT, CLEAN), position, good, bad)
    assert result.clean_metric == pytest.approx(m_clean, abs=EXACT)
    assert result.corrupt_metric == pytest.approx(m_corrupt, abs=EXACT)
    assert len(result.heads) == 3 * 2 * 2
    for h in result.heads:
        patched = patched_head_metric(model, h.kind, h.layer, h.head, position, good, bad)
        assert h.effect == pytest.approx((patched - m_corrupt) / (m_clean - m_corrupt), abs=EXACT), h
    assert [(e.kind, e.layer) for e in result.layers] == [
        (kind, layer) for kind in ("encoder_self", "decoder_self", "cross") for layer in range(2)
    ]
    for e in result.layers:
        patched = patched_layer_metric(model, e.kind, e.layer, position, good, bad)
        assert e.effect == pytest.approx((patched - m_corrupt) / (m_clean - m_corrupt), abs=EXACT), e
    assert result.positions.shape == (2, len(CLEAN))
    for layer in range(2):
        for j in range(len(CLEAN)):
            patched = patched_residual_metric(model, layer, j, position, good, bad)
            expected = (patched - m_corrupt) / (m_clean - m_corrupt)
            assert result.positions[layer, j] == pytest.approx(expected, abs=EXACT), (layer, j)


def test_the_first_decoder_self_attention_carries_nothing_the_source_changed():
    """Teacher-forced on the same output, its inputs are identical in both runs: patching it changes nothing."""
    result = patch_effects(tiny(), CLEAN, CORRUPT, CLEAN, CORRUPT)
    first = [h.effect for h in result.heads if h.kind == "decoder_self" and h.layer == 0]
    assert first == pytest.approx([0.0, 0.0], abs=EXACT)
    together = [e.effect for e in result.layers if e.kind == "decoder_self" and e.layer == 0]
    assert together == pytest.approx([0.0], abs=EXACT)
    assert any(abs(h.effect) > 1e-3 for h in result.heads if h.kind == "cross"), "the cross heads read the source"


def test_the_position_defaults_to_the_first_difference_and_can_be_chosen():
    assert default_position([1, 2, 3], [1, 5, 3]) == 1
    assert default_position([1, 2], [1, 2, 3]) == 2  # <eos> against 3
    with pytest.raises(ValueError, match="same expected output"):
        default_position([1, 2], [1, 2])
    model = tiny()
    chosen = patch_effects(model, CLEAN, CORRUPT, CLEAN, CORRUPT, position=2)
    assert chosen.position == 2


@pytest.mark.parametrize(
    ("clean", "corrupt", "position", "message"),
    [
        (CLEAN, CORRUPT[:-1], None, "same length"),
        (CLEAN, CORRUPT, 0, "same token at position 0"),
        (CLEAN, CORRUPT, 99, r"position must be in 0\.\.6"),
    ],
)
def test_bad_inputs_say_what_is_wrong(clean, corrupt, position, message):
    with pytest.raises(ValueError, match=message):
        patch_effects(tiny(), clean, corrupt, clean, corrupt, position=position)


def test_the_model_is_left_as_it_was():
    model = tiny().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    patch_effects(model, CLEAN, CORRUPT, CLEAN, CORRUPT)
    assert model.training
    assert (
        not model.encoder_layers[0]._forward_hooks and not model.encoder_layers[0].self_attn.out_proj._forward_pre_hooks
    )
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())

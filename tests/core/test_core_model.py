"""The full encoder-decoder: every option combination, causality, padding invariance, RoPE shifts, head gates."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from core_model import BOS, PAD, AttentionMaps, HeadGates, MaskSpec, ModelConfig, build_model, sinusoidal_table
from core_model.attention import AttentionResult

EXACT = 1e-12
OPTIONS = {
    "positional": ("sinusoidal", "rope"),
    "norm_position": ("pre", "post"),
    "norm": ("layernorm", "rmsnorm"),
    "activation": ("relu", "gelu"),
    "tie_embeddings": (True, False),
}
COMBOS = [dict(zip(OPTIONS, values)) for values in itertools.product(*OPTIONS.values())]
COMBO_IDS = ["-".join(str(v) for v in c.values()) for c in COMBOS]


def tiny(dtype: torch.dtype = torch.float64, seed: int = 0, **options):
    """A small model (d_model 16, 2 heads, 2+2 layers); float64 for exact comparisons."""
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=64, **options)
    return build_model(config, seed=seed).to(dtype).eval()


def tokens(batch: int, length: int, seed: int, first: int | None = None) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    out = torch.randint(3, 13, (batch, length), generator=gen)
    if first is not None:
        out[:, 0] = first
    return out


SRC = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 11, 12, PAD, PAD]])
TGT = torch.tensor([[BOS, 3, 4, 5, 6, 7, 8], [BOS, 9, 10, 11, 12, PAD, PAD]])


@pytest.mark.parametrize("options", COMBOS, ids=COMBO_IDS)
def test_every_combination_runs_and_trains(options):
    model = tiny(torch.float32, **options).train()
    out = model(SRC, TGT, return_attention=True, return_scores=True)
    assert out.log_probs.shape == (2, 7, 13)
    assert (out.log_probs.exp().sum(-1) - 1).abs().max() < 1e-5  # log-probabilities
    check_maps(out.attention, out.scores, model.config)
    loss = -out.log_probs.gather(-1, TGT.roll(-1, 1)[..., None]).mean()
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
    assert sum(float(p.grad.abs().sum()) for p in model.parameters()) > 0


def check_maps(maps: AttentionMaps, scores: AttentionMaps, config: ModelConfig) -> None:
    b, h, s, t = 2, config.n_heads, SRC.shape[1], TGT.shape[1]
    shapes = {"encoder_self": (b, h, s, s), "decoder_self": (b, h, t, t), "cross": (b, h, t, s)}
    for kind, shape in shapes.items():
        layers = config.n_encoder_layers if kind == "encoder_self" else config.n_decoder_layers
        assert len(maps.kind(kind)) == len(scores.kind(kind)) == layers
        for w, sc in zip(maps.kind(kind), scores.kind(kind)):
            assert w.shape == sc.shape == shape
            assert not w.requires_grad and not sc.requires_grad
            assert (w.sum(-1) - 1).abs().max() < 1e-5
            assert (torch.softmax(sc, -1) - w).abs().max() < 1e-5
    assert (maps.cross[0][1, :, :, 4:] == 0).all()  # source pads get no weight
    assert torch.isneginf(scores.cross[0][1, :, :, 4:]).all()
    assert (torch.triu(maps.decoder_self[0], 1) == 0).all()  # causal


@pytest.mark.parametrize(
    "masks",
    [MaskSpec(), MaskSpec(decoder_window=2), MaskSpec(decoder_padding=False)],
    ids=["default", "window", "no-pad"],
)
@pytest.mark.parametrize("options", COMBOS, ids=COMBO_IDS)
def test_decoder_is_causal(options, masks):
    model = tiny(**options)
    src, tgt = tokens(2, 5, seed=1), tokens(2, 7, seed=2, first=BOS)
    reference = model(src, tgt, masks).log_probs
    for t in (0, 3):
        changed = tgt.clone()
        changed[:, t + 1 :] = (tgt[:, t + 1 :] - 3 + 1) % 10 + 3  # other symbols after position t
        changed_log_probs = model(src, changed, masks).log_probs
        assert (changed_log_probs[:, : t + 1] - reference[:, : t + 1]).abs().max() <= EXACT
        assert (changed_log_probs[:, t + 1 :] - reference[:, t + 1 :]).abs().max() > 1e-6  # the change did matter later


@pytest.mark.parametrize("masks", [MaskSpec(), MaskSpec(encoder_window=2, decoder_window=3)], ids=["full", "window"])
@pytest.mark.parametrize("options", COMBOS[::3], ids=COMBO_IDS[::3])
def test_source_padding_does_not_change_real_positions(options, masks):
    model = tiny(**options)
    src, tgt = tokens(2, 5, seed=3), tokens(2, 6, seed=4, first=BOS)
    padded = torch.cat((src, torch.full((2, 3), PAD)), dim=1)
    memory = model.encode(src, masks).memory
    padded_memory = model.encode(padded, masks).memory
    assert (padded_memory[:, :5] - memory).abs().max() <= EXACT
    out = model(src, tgt, masks, return_attention=True)
    out_padded = model(padded, tgt, masks, return_attention=True)
    assert (out_padded.log_probs - out.log_probs).abs().max() <= EXACT
    assert (out_padded.attention.cross[-1][..., 5:] == 0).all()
    unmasked = dataclasses.replace(masks, encoder_padding=False, cross_padding=False)
    assert (model(padded, tgt, unmasked).log_probs - out.log_probs).abs().max() > 1e-6  # without masks pads leak in


def test_target_padding_does_not_change_real_positions():
    model = tiny()
    src, tgt = tokens(2, 5, seed=5), tokens(2, 6, seed=6, first=BOS)
    padded = torch.cat((tgt, torch.full((2, 2), PAD)), dim=1)
    assert (model(src, padded).log_probs[:, :6] - model(src, tgt).log_probs).abs().max() <= EXACT


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_rope_encoder_is_shift_invariant(norm_position):
    """With RoPE the encoder only sees offsets: left-padding (masked) shifts positions and changes nothing."""
    src = tokens(2, 5, seed=7)
    shifted = torch.cat((torch.full((2, 4), PAD), src), dim=1)
    rope = tiny(positional="rope", norm_position=norm_position)
    enc, enc_shifted = rope.encode(src, need_weights=True), rope.encode(shifted, need_weights=True)
    assert (enc_shifted.memory[:, 4:] - enc.memory).abs().max() <= 1e-10
    assert (enc_shifted.weights[0][:, :, 4:, 4:] - enc.weights[0]).abs().max() <= 1e-10
    sinusoidal = tiny(positional="sinusoidal", norm_position=norm_position)
    moved = sinusoidal.encode(shifted).memory[:, 4:] - sinusoidal.encode(src).memory
    assert moved.abs().max() > 1e-3  # absolute positions do move


# --- head gates -------------------------------------------------------------------------------------------------


def gates(model, kind: str, layer: int, heads: list[int]) -> HeadGates:
    cfg = model.config
    n_layers = cfg.n_encoder_layers if kind == "encoder_self" else cfg.n_decoder_layers
    g = torch.ones(n_layers, cfg.n_heads)
    g[layer, heads] = 0.0
    return HeadGates(**{kind: g})


def test_gates_of_one_equal_no_gates():
    model = tiny()
    ones = HeadGates(*(torch.ones(2, 2) for _ in range(3)))
    assert torch.equal(model(SRC, TGT, head_gates=ones).log_probs, model(SRC, TGT).log_probs)


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_zeroing_one_head_changes_output(kind):
    model = tiny()
    for layer in (0, 1):
        changed = model(SRC, TGT, head_gates=gates(model, kind, layer, [1])).log_probs
        assert (changed - model(SRC, TGT).log_probs).abs().max() > 1e-6


def attention_module(model, kind: str, layer: int):
    if kind == "encoder_self":
        return model.encoder_layers[layer].self_attn
    block = model.decoder_layers[layer]
    return block.self_attn if kind == "decoder_self" else block.cross_attn


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize(
    ("kind", "layer"), [("encoder_self", 0), ("encoder_self", 1), ("decoder_self", 0), ("cross", 1)]
)
def test_all_heads_off_equals_removing_the_sublayer(kind, layer, norm_position, monkeypatch):
    model = tiny(norm_position=norm_position)
    ablated = model(SRC, TGT, head_gates=gates(model, kind, layer, [0, 1])).log_probs
    monkeypatch.setattr(
        attention_module(model, kind, layer),
        "forward",
        lambda x_q, *args, **kwargs: AttentionResult(output=torch.zeros_like(x_q)),
    )
    removed = model(SRC, TGT).log_probs
    assert torch.equal(ablated, removed)
    monkeypatch.undo()
    assert (model(SRC, TGT).log_probs - removed).abs().max() > 1e-6


def test_gates_from_numpy():
    model = tiny(torch.float32)
    enabled = {"cross": np.array([[1, 0], [1, 1]])}
    gates_np = HeadGates.from_numpy(enabled)
    assert gates_np.encoder_self is None and gates_np.decoder_self is None  # kinds left out stay all on
    assert gates_np.cross.dtype == torch.float32 and gates_np.cross.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    from_numpy = model(SRC, TGT, head_gates=gates_np).log_probs
    assert torch.equal(from_numpy, model(SRC, TGT, head_gates=gates(model, "cross", 0, [1])).log_probs)
    scaled = HeadGates.from_numpy({"encoder_self": np.full((2, 2), 0.5)}, device="cpu")
    assert torch.equal(scaled.encoder_self, torch.tensor([[0.5, 0.5], [0.5, 0.5]]))


def test_gates_from_numpy_refuses_unknown_kinds():
    with pytest.raises(ValueError, match=r"encoder_self.*decoder_self.*cross.*\['self'\]"):
        HeadGates.from_numpy({"self": np.ones((2, 2))})


# --- construction -----------------------------------------------------------------------------------------------


def test_maps_to_numpy():
    model = tiny()
    maps = model(SRC, TGT, return_attention=True).attention.to_numpy()
    assert all(isinstance(m, np.ndarray) and m.dtype == np.float32 for m in maps.encoder_self + maps.cross)
    assert maps.decoder_self[1].shape == (2, 2, 7, 7)


def test_seeded_build_is_reproducible_and_leaves_global_rng_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    a = build_model(ModelConfig(d_model=16, n_heads=2), seed=11)
    assert torch.equal(torch.rand(3), expected)
    b = build_model(ModelConfig(d_model=16, n_heads=2), seed=11)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_tied_embeddings_share_one_matrix():
    tied, untied = tiny(tie_embeddings=True), tiny(tie_embeddings=False)
    assert tied.generator.weight is tied.src_embed.weight is tied.tgt_embed.weight
    assert untied.tgt_embed.weight is not untied.src_embed.weight
    assert untied.parameter_count() - tied.parameter_count() == 2 * 13 * 16


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_sequences_longer_than_max_len_are_refused(positional):
    model = build_model(ModelConfig(d_model=16, n_heads=2, max_len=8, positional=positional))
    with pytest.raises(ValueError, match="exceeds max_len 8"):
        model(tokens(1, 9, seed=0), tokens(1, 3, seed=1, first=BOS))


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_layer_inputs_are_scaled_embeddings_plus_positions(positional):
    """Paper §3.4-3.5: sqrt(d_model) * embedding, plus the sinusoid table (RoPE adds nothing here)."""
    model = tiny(positional=positional, tie_embeddings=False)
    seen: dict[str, torch.Tensor] = {}

    def recorder(name: str):
        def hook(module, args) -> None:
            seen[name] = args[0]

        return hook

    model.encoder_layers[0].register_forward_pre_hook(recorder("enc"))
    model.decoder_layers[0].register_forward_pre_hook(recorder("dec"))
    model(SRC, TGT)
    pe = sinusoidal_table(64, 16) if positional == "sinusoidal" else torch.zeros(64, 16, dtype=torch.float64)
    expected_enc = model.src_embed(SRC) * 4.0 + pe[: SRC.shape[1]]
    expected_dec = model.tgt_embed(TGT) * 4.0 + pe[: TGT.shape[1]]
    assert (seen["enc"] - expected_enc).abs().max() <= EXACT
    assert (seen["dec"] - expected_dec).abs().max() <= EXACT

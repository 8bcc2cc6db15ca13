"""Encoder and decoder layers against PyTorch's nn.TransformerEncoderLayer / DecoderLayer with copied weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core_model import PAD, ModelConfig, causal_mask, padding_mask
from core_model.attention import MultiHeadAttention
from core_model.layers import AttentionRequest, DecoderLayer, EncoderLayer

REF = 1e-10
D, H, FF = 16, 4, 32
SRC = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 10, PAD, PAD]])


def config(norm_position: str, activation: str) -> ModelConfig:
    return ModelConfig(d_model=D, n_heads=H, d_ff=FF, norm_position=norm_position, activation=activation)


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.zero_()  # ours has no output bias


def copy_common(ours, theirs, norms: list[nn.Module]) -> None:
    """Feed-forward and norms; every bias and norm gain is randomised first so a mix-up would show."""
    with torch.no_grad():
        for p in ours.parameters():
            if p.dim() == 1:
                nn.init.normal_(p)
        theirs.linear1.weight.copy_(ours.ff.net[0].weight)
        theirs.linear1.bias.copy_(ours.ff.net[0].bias)
        theirs.linear2.weight.copy_(ours.ff.net[3].weight)
        theirs.linear2.bias.copy_(ours.ff.net[3].bias)
        for mine, torch_norm in zip(norms, (theirs.norm1, theirs.norm2, getattr(theirs, "norm3", None))):
            torch_norm.weight.copy_(mine.weight)
            torch_norm.bias.copy_(mine.bias)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_encoder_layer_equals_torch(norm_position, activation):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ours = EncoderLayer(config(norm_position, activation), rope=None).double()
        theirs = nn.TransformerEncoderLayer(
            D,
            H,
            FF,
            dropout=0.0,
            activation=activation,
            layer_norm_eps=1e-6,
            batch_first=True,
            norm_first=norm_position == "pre",
            dtype=torch.float64,
        )
        copy_common(ours, theirs, [ours.sub_attn.norm, ours.sub_ff.norm])
        with torch.no_grad():
            copy_attention(ours.self_attn, theirs.self_attn)
        x = torch.randn(2, 5, D, dtype=torch.float64)
    mine, result = ours(x, AttentionRequest(padding_mask(SRC), need_weights=True))
    expected = theirs(x, src_key_padding_mask=SRC == PAD)
    assert (mine - expected).abs().max() <= REF
    assert result.weights.shape == (2, H, 5, 5)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_decoder_layer_equals_torch(norm_position, activation):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        ours = DecoderLayer(config(norm_position, activation), rope=None).double()
        theirs = nn.TransformerDecoderLayer(
            D,
            H,
            FF,
            dropout=0.0,
            activation=activation,
            layer_norm_eps=1e-6,
            batch_first=True,
            norm_first=norm_position == "pre",
            dtype=torch.float64,
        )
        copy_common(ours, theirs, [ours.sub_self.norm, ours.sub_cross.norm, ours.sub_ff.norm])
        with torch.no_grad():
            copy_attention(ours.self_attn, theirs.self_attn)
            copy_attention(ours.cross_attn, theirs.multihead_attn)
        x = torch.randn(2, 6, D, dtype=torch.float64)
        memory = torch.randn(2, 5, D, dtype=torch.float64)
    mine, _, _ = ours(x, memory, AttentionRequest(causal_mask(6)), AttentionRequest(padding_mask(SRC)))
    expected = theirs(x, memory, tgt_mask=~causal_mask(6), memory_key_padding_mask=SRC == PAD)
    assert (mine - expected).abs().max() <= REF


def test_state_dict_keys_stay_as_saved_checkpoints_have_them():
    """Checkpoints written before the layers were rewritten use these keys; they must keep loading strictly."""
    cfg = config("pre", "relu")
    attn = [f"{m}.{p}" for m in ("q_proj", "k_proj", "v_proj") for p in ("weight", "bias")] + ["out_proj.weight"]
    ff = ["ff.net.0.weight", "ff.net.0.bias", "ff.net.3.weight", "ff.net.3.bias"]
    norm = lambda slot: [f"{slot}.norm.weight", f"{slot}.norm.bias"]  # noqa: E731
    encoder = [f"self_attn.{k}" for k in attn] + ff + norm("sub_attn") + norm("sub_ff")
    decoder = (
        [f"self_attn.{k}" for k in attn]
        + [f"cross_attn.{k}" for k in attn]
        + ff
        + norm("sub_self")
        + norm("sub_cross")
        + norm("sub_ff")
    )
    assert sorted(EncoderLayer(cfg, rope=None).state_dict()) == sorted(encoder)
    assert sorted(DecoderLayer(cfg, rope=None).state_dict()) == sorted(decoder)

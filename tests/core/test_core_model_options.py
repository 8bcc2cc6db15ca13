"""Stochastic depth and the learnable residual scale (issue 18): eval unchanged, per-sample drops, exact identity."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.config import ModelConfig
from core_model.layers import NormSlot, drop_path
from core_model.model import build_model
from core_model.shipped import resource_path

SMALL = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2, max_len=32)


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 13, (5, 7), generator=g), torch.randint(3, 13, (5, 6), generator=g)


def test_drop_path_is_the_identity_outside_training():
    x = torch.randn(4, 3, 8)
    assert torch.equal(drop_path(x, 0.7, training=False), x)
    assert torch.equal(drop_path(x, 0.0, training=True), x)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.75])
def test_drop_path_rate_and_expectation_over_many_samples(p):
    torch.manual_seed(0)
    n = 40_000
    out = drop_path(torch.ones(n, 3, 2, dtype=torch.float64), p, training=True)
    per_sample = out.reshape(n, -1)
    assert torch.all(per_sample == per_sample[:, :1])  # a whole sample is kept or dropped, never single tokens
    kept = per_sample[:, 0]
    assert set(kept.unique().tolist()) <= {0.0, 1.0 / (1.0 - p)}
    dropped_rate = float((kept == 0).double().mean())
    sigma = (p * (1 - p) / n) ** 0.5
    assert abs(dropped_rate - p) < 5 * sigma
    assert abs(float(kept.mean()) - 1.0) < 5 * sigma / (1 - p)  # E[branch] is the branch itself


def test_model_in_eval_mode_ignores_drop_path():
    a = build_model(SMALL, seed=3).double().eval()
    b = build_model(dataclasses.replace(SMALL, drop_path=0.6), seed=3).double().eval()
    src, tgt = _batch()
    assert torch.equal(a(src, tgt).log_probs, b(src, tgt).log_probs)


def test_model_in_training_drops_branches_per_sample():
    model = build_model(dataclasses.replace(SMALL, drop_path=0.5), seed=3).double().train()
    src, tgt = _batch()
    src = src[:1].expand(64, -1)  # one sample, 64 times: differences can only come from the drops
    tgt = tgt[:1].expand(64, -1)
    torch.manual_seed(1)
    out = model(src, tgt).log_probs
    distinct = {tuple(row.flatten().round(decimals=9).tolist()) for row in out}
    assert 4 < len(distinct) <= 2**10  # 10 sublayers, each on or off per sample


def test_slot_branch_scales_and_drops_whole_samples():
    slot = NormSlot(dataclasses.replace(SMALL, drop_path=0.5, residual_scale=True)).double().train()
    with torch.no_grad():
        slot.scale.fill_(0.25)
    torch.manual_seed(0)
    out = slot.branch(torch.ones(1000, 4, 16, dtype=torch.float64))
    assert set(out.unique().tolist()) == {0.0, 0.25 / 0.5}


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
def test_residual_scale_one_equals_the_model_without_it(norm_position, positional):
    plain_cfg = dataclasses.replace(SMALL, norm_position=norm_position, positional=positional)
    plain = build_model(plain_cfg, seed=5).double().eval()
    scaled = build_model(dataclasses.replace(plain_cfg, residual_scale=True), seed=9).double().eval()
    missing, unexpected = scaled.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and missing and all(k.endswith(".scale") for k in missing)
    assert set(scaled.residual_scales().values()) == {1.0}  # initialised to 1
    src, tgt = _batch()
    diff = (plain(src, tgt).log_probs - scaled(src, tgt).log_probs).abs().max()
    assert diff <= 1e-12
    with torch.no_grad():
        scaled.encoder_layers[0].sub_ff.scale.fill_(0.5)
    assert (plain(src, tgt).log_probs - scaled(src, tgt).log_probs).abs().max() > 1e-3


def test_residual_scale_is_learnable_and_reported():
    model = build_model(dataclasses.replace(SMALL, residual_scale=True), seed=0)
    names = model.residual_scales()
    assert len(names) == 2 * 2 + 2 * 3 and "encoder.0.attn" in names and "decoder.1.cross" in names
    src, tgt = _batch()
    model(src, tgt).log_probs.sum().backward()
    assert model.decoder_layers[1].sub_cross.scale.grad is not None


def test_options_off_keep_the_state_dict_keys_of_shipped_models():
    shipped = load_checkpoint(resource_path("copy_rope.pt"))
    assert set(build_model(shipped.config).state_dict()) == set(shipped.state_dict)
    assert not any("scale" in k for k in build_model(SMALL).state_dict())


def test_options_round_trip_through_a_checkpoint(tmp_path):
    config = dataclasses.replace(SMALL, drop_path=0.2, residual_scale=True)
    model = build_model(config, seed=1)
    with torch.no_grad():
        model.decoder_layers[0].sub_self.scale.fill_(1.75)
    save_checkpoint(tmp_path / "m.pt", model)
    ckpt = load_checkpoint(tmp_path / "m.pt")
    assert ckpt.config == config
    assert ckpt.build().residual_scales() == model.residual_scales()


def test_checkpoint_without_the_new_fields_still_loads(tmp_path):
    save_checkpoint(tmp_path / "old.pt", build_model(SMALL, seed=1))
    payload = torch.load(tmp_path / "old.pt", weights_only=True)
    for key in ("drop_path", "residual_scale"):
        del payload["config"][key]
    torch.save(payload, tmp_path / "old.pt")
    ckpt = load_checkpoint(tmp_path / "old.pt")
    assert ckpt.config.drop_path == 0.0 and ckpt.config.residual_scale is False
    ckpt.build()


def test_architecture_differs_counts_residual_scale_not_drop_path():
    assert not SMALL.architecture_differs(dataclasses.replace(SMALL, drop_path=0.3))
    assert SMALL.architecture_differs(dataclasses.replace(SMALL, residual_scale=True))


@pytest.mark.parametrize(("field", "value"), [("drop_path", 1.0), ("drop_path", -0.1), ("residual_scale", 1)])
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(SMALL, **{field: value})


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_estimated_bytes_stays_an_honest_upper_bound(norm_position):
    config = dataclasses.replace(ModelConfig(), residual_scale=True, norm_position=norm_position)
    model = build_model(config)
    actual = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    assert actual <= config.estimated_bytes < actual * 1.1
    off = dataclasses.replace(config, residual_scale=False)
    assert config.estimated_bytes - off.estimated_bytes == 4 * len(model.residual_scales())  # float32 scalars

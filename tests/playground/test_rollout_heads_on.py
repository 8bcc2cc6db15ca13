"""With heads ablated, the rollout view's head columns average to the rollout over the heads that are on, not all.

The rollout and its per-head steps are written out here with numpy loops from the post-softmax weights (Abnar &
Zuidema 2020 for the encoder, the decoder as core_model/attention_views.py defines it), ablated heads left out of Ā.
"""

from __future__ import annotations

import numpy as np
import torch

from core_model import BOS, PAD, HeadGates, MaskSpec, ModelConfig, build_model
from core_model.attention_views import rollout, view_maps

EXACT = 1e-12
SRC = torch.tensor([[3, 4, 5, 6, 7, PAD]])
TGT = torch.tensor([[BOS, 3, 4, 5, 6, 7, PAD]])
ON = {
    "encoder_self": [[1, 0, 1], [0, 0, 0], [1, 1, 0]],  # the middle encoder layer has every head off
    "decoder_self": [[1, 1, 0], [1, 1, 1]],
    "cross": [[0, 1, 1], [1, 0, 1]],
}


def residual(a: np.ndarray) -> np.ndarray:
    """rownorm(0.5 A + 0.5 I)."""
    m = 0.5 * a + 0.5 * np.eye(a.shape[-1])
    return m / m.sum(axis=-1, keepdims=True)


def mean_on(a: np.ndarray, on: list[int]) -> np.ndarray:
    """Mean of the heads that are on; zeros (so Ã = I, the residual alone) when none is."""
    heads = [a[h] for h in range(len(on)) if on[h]]
    return sum(heads) / len(heads) if heads else np.zeros_like(a[0])


def cross_step(p: np.ndarray, x: np.ndarray, r_enc: np.ndarray, t: int) -> np.ndarray:
    """Each decoder row: half its share so far, half the cross weights routed through the encoder's rollout."""
    out = np.zeros_like(p)
    for q in range(p.shape[0]):
        routed = np.concatenate([np.zeros(t), x[q] @ r_enc])
        out[q] = (0.5 * p[q] + 0.5 * routed) / (0.5 + 0.5 * x[q].sum())
    return out


def by_hand(att) -> tuple[dict, dict]:
    """Rollout per kind and layer, and each head's column: the same step through that head alone."""
    enc = [a[0].numpy() for a in att.encoder_self]
    s = enc[0].shape[-1]
    r = np.eye(s)
    roll, heads = {k: [] for k in ON}, {k: [] for k in ON}
    for i, a in enumerate(enc):
        heads["encoder_self"].append(np.stack([residual(a[h]) @ r for h in range(a.shape[0])]))
        r = residual(mean_on(a, ON["encoder_self"][i])) @ r
        roll["encoder_self"].append(r)
    t = att.decoder_self[0].shape[-1]
    p = np.hstack([np.eye(t), np.zeros((t, s))])
    for i, (a_self, a_cross) in enumerate(zip(att.decoder_self, att.cross)):
        a_self, a_cross = a_self[0].numpy(), a_cross[0].numpy()
        x_bar = mean_on(a_cross, ON["cross"][i])
        mid = residual(mean_on(a_self, ON["decoder_self"][i])) @ p
        heads["decoder_self"].append(
            np.stack([cross_step(residual(a_self[h]) @ p, x_bar, r, t)[:, :t] for h in range(a_self.shape[0])])
        )
        heads["cross"].append(np.stack([cross_step(mid, a_cross[h], r, t)[:, t:] for h in range(a_cross.shape[0])]))
        p = cross_step(mid, x_bar, r, t)
        roll["decoder_self"].append(p[:, :t])
        roll["cross"].append(p[:, t:])
    return roll, heads


def test_the_mean_of_the_columns_of_the_heads_that_are_on_is_the_rollout():
    config = ModelConfig(d_model=24, n_heads=3, d_ff=32, max_len=32, n_encoder_layers=3, n_decoder_layers=2)
    model = build_model(config, seed=4).to(torch.float64).eval()
    gates = HeadGates(**{k: torch.tensor(v, dtype=torch.float64) for k, v in ON.items()})
    with torch.no_grad():
        out, columns = view_maps(model, SRC, TGT, "rollout", MaskSpec(), gates)
    got = rollout(out.attention, gates)
    roll, heads = by_hand(out.attention)
    all_heads_gap = 0.0
    for kind, layers in ON.items():
        for layer, on in enumerate(layers):
            shown = columns.kind(kind)[layer][0].numpy()  # (H, Tq, Tk): what the head columns draw
            np.testing.assert_allclose(shown, heads[kind][layer], rtol=0, atol=EXACT)
            np.testing.assert_allclose(getattr(got, kind)[layer, 0].numpy(), roll[kind][layer], rtol=0, atol=EXACT)
            if any(on):
                on_mean = shown[[h for h in range(len(on)) if on[h]]].mean(axis=0)
                np.testing.assert_allclose(on_mean, roll[kind][layer], rtol=0, atol=EXACT)
                all_heads_gap = max(all_heads_gap, float(np.abs(shown.mean(axis=0) - roll[kind][layer]).max()))
    assert all_heads_gap > 0.01  # the mean over every column, ablated ones included, is not the rollout
    # a layer with every head off adds only the residual: the rollout passes through it unchanged
    np.testing.assert_allclose(got.encoder_self[1, 0].numpy(), got.encoder_self[0, 0].numpy(), rtol=0, atol=EXACT)

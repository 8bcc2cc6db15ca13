"""The decomposition of one attention cell: equal to the captured maps, and to an independent numpy computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core_model import PAD, MaskSpec, ModelConfig, build_model
from core_model.cell_decomposition import decompose_cell
from core_model.model import ATTENTION_KINDS, HeadGates

SRC = torch.tensor([[4, 7, 5, 9, 3, PAD]])
TGT = torch.tensor([[1, 4, 7, 5, 9, 3, 2]])


def make_model(positional: str, dtype: torch.dtype = torch.float32, norm_position: str = "pre"):
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=32, positional=positional, norm_position=norm_position)
    return build_model(config, seed=3).to(dtype).eval()


def every_cell(kind: str, n_layers: int = 2, n_heads: int = 2):
    tq = SRC.shape[1] if kind == "encoder_self" else TGT.shape[1]
    tk = TGT.shape[1] if kind == "decoder_self" else SRC.shape[1]
    for layer in range(n_layers):
        for head in range(n_heads):
            for i in range(tq):
                for j in range(tk):
                    yield layer, head, i, j


@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_weight_and_score_equal_the_captured_maps_float32(positional, kind):
    model = make_model(positional)
    masks = MaskSpec(encoder_window=3)
    gates = HeadGates(decoder_self=torch.tensor([[1.0, 0.0], [1.0, 1.0]]))
    with torch.no_grad():
        out = model(SRC, TGT, masks, gates, return_attention=True, return_scores=True)
    weights, scores = out.attention.kind(kind), out.scores.kind(kind)
    checked = 0
    for layer, head, i, j in every_cell(kind):
        cell = decompose_cell(model, SRC, TGT, kind, layer, head, i, j, masks=masks, head_gates=gates)
        assert cell.weight == pytest.approx(float(weights[layer][0, head, i, j]), abs=1e-6)
        captured = float(scores[layer][0, head, i, j])
        assert cell.visible == math.isfinite(captured)
        if cell.visible:
            assert cell.scaled == pytest.approx(captured, abs=1e-5)
        assert torch.allclose(cell.row_weights, weights[layer][0, head, i], atol=1e-6)
        checked += 1
    assert checked > 50


def reference(module, x_q, x_kv, mask, q_pos, head, i, j, base):
    """Independent float64 numpy: projections, RoPE by explicit angles, dot, softmax, weighted values."""
    d = module.head_dim
    cols = slice(head * d, (head + 1) * d)

    def project(linear, x):
        w, b = linear.weight.detach().numpy(), linear.bias.detach().numpy()
        return (x @ w.T + b)[:, cols]

    q, k, v = project(module.q_proj, x_q), project(module.k_proj, x_kv), project(module.v_proj, x_kv)
    q_raw, k_raw = q.copy(), k.copy()
    angles_q = angles_k = None
    if module.rope is not None:
        theta = np.array([base ** (-2.0 * p / d) for p in range(d // 2)])

        def rotate(rows, first_pos):
            out = rows.copy()
            for t in range(rows.shape[0]):
                a = (first_pos + t) * theta
                out[t, 0::2] = rows[t, 0::2] * np.cos(a) - rows[t, 1::2] * np.sin(a)
                out[t, 1::2] = rows[t, 0::2] * np.sin(a) + rows[t, 1::2] * np.cos(a)
            return out

        q, k = rotate(q, q_pos), rotate(k, 0)
        angles_q, angles_k = (q_pos + i) * theta, j * theta
    shape = (1, module.n_heads, x_q.shape[0], k.shape[0])  # batch of one
    visible = np.ones(k.shape[0], bool) if mask is None else np.broadcast_to(mask.numpy(), shape)[0, head, i]
    row = np.array([sum(q[i, c] * k[t, c] for c in range(d)) for t in range(k.shape[0])]) / math.sqrt(d)
    weights = np.zeros_like(row)
    row_max = row[visible].max() if visible.any() else -np.inf
    if visible.any():
        e = np.where(visible, np.exp(row - row[visible].max()), 0.0)
        weights = e / e.sum()
    return dict(
        q_raw=q_raw[i],
        k_raw=k_raw[j],
        q=q[i],
        k=k[j],
        product=q[i] * k[j],
        scaled=row[j],
        row_weights=weights,
        values=v,
        output=weights @ v,
        angles_q=angles_q,
        angles_k=angles_k,
        visible=visible,
        row_max=row_max,
    )


def captured_inputs(model, kind, layer):
    layers = model.encoder_layers if kind == "encoder_self" else model.decoder_layers
    module = getattr(layers[layer], "cross_attn" if kind == "cross" else "self_attn")
    seen = {}
    handle = module.register_forward_pre_hook(
        lambda mod, args, kwargs: seen.setdefault("call", (args, kwargs)), with_kwargs=True
    )
    return module, seen, handle


@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
@pytest.mark.parametrize("kind", ATTENTION_KINDS)
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_every_intermediate_equals_an_independent_float64_computation(positional, kind, norm_position):
    model = make_model(positional, torch.float64, norm_position)
    masks = MaskSpec(decoder_window=3, cross_painted={(2, 1)})
    layer, head = 1, 1
    module, seen, handle = captured_inputs(model, kind, layer)
    with torch.no_grad():
        model(SRC, TGT, masks)
    handle.remove()
    args, kwargs = seen["call"]
    x_q, x_kv = args[0][0].numpy(), args[1][0].numpy()
    for i, j in [(2, 1), (4, 0), (0, 3)]:
        cell = decompose_cell(model, SRC, TGT, kind, layer, head, i, j, masks=masks)
        ref = reference(module, x_q, x_kv, args[2], kwargs.get("q_pos", 0), head, i, j, model.config.pe_base)
        n = cell.to_numpy()
        for name in ("q_raw", "k_raw", "q", "k", "product", "row_weights", "values"):
            np.testing.assert_allclose(getattr(n, name), ref[name], rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(n.head_output, ref["output"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(n.weighted_values.sum(0), ref["output"], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(n.row_visible, ref["visible"])
        assert n.dot == pytest.approx(float(ref["product"].sum()), abs=1e-12)
        assert n.scaled == pytest.approx(ref["scaled"], abs=1e-12)
        assert n.sqrt_d == pytest.approx(math.sqrt(8), abs=1e-15)
        assert n.weight == pytest.approx(ref["row_weights"][j], abs=1e-12)
        assert n.numerator / n.denominator == pytest.approx(ref["row_weights"][j], abs=1e-12)
        assert n.row_max == pytest.approx(ref["row_max"], abs=1e-12)
        if positional == "rope":
            np.testing.assert_allclose(n.angle_q, ref["angles_q"], rtol=0, atol=1e-12)
            np.testing.assert_allclose(n.angle_k, ref["angles_k"], rtol=0, atol=1e-12)
        else:
            assert n.angle_q is None and n.angle_k is None and np.array_equal(n.q, n.q_raw)


def test_masked_cell_weighs_nothing_and_the_row_still_sums_to_one():
    model = make_model("rope")
    cell = decompose_cell(model, SRC, TGT, "decoder_self", 0, 0, 2, 5)  # causal: key 5 is after query 2
    assert not cell.visible and cell.weight == 0.0 and math.isinf(float(cell.row_scores[5]))
    assert float(cell.row_weights.sum()) == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(cell.weighted_values.sum(0), cell.head_output, atol=1e-6)


def test_all_masked_row_gives_zeros_as_the_model_does():
    model = make_model("sinusoidal")
    masks = MaskSpec(encoder_painted={(1, j) for j in range(SRC.shape[1])})
    with torch.no_grad():
        maps = model(SRC, TGT, masks, return_attention=True).attention.encoder_self
    cell = decompose_cell(model, SRC, TGT, "encoder_self", 1, 0, 1, 2, masks=masks)
    assert not cell.row_visible.any() and float(cell.row_weights.abs().sum()) == 0.0
    assert cell.denominator == 0.0 and cell.numerator == 0.0 and cell.row_max == float("-inf")
    assert float(cell.head_output.abs().sum()) == 0.0 and float(maps[1][0, 0, 1].abs().sum()) == 0.0


def test_head_gate_scales_the_output():
    model = make_model("rope")
    gates = HeadGates(cross=torch.tensor([[0.0, 1.0], [1.0, 1.0]]))
    cell = decompose_cell(model, SRC, TGT, "cross", 0, 0, 1, 1, head_gates=gates)
    assert cell.gate == 0.0 and float(cell.gated_output.abs().sum()) == 0.0 and float(cell.head_output.abs().sum()) > 0


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("kind", dict(kind="decoder")),
        ("layer", dict(layer=2)),
        ("head", dict(head=-1)),
        ("query", dict(query=6)),
        ("key", dict(key=99)),
    ],
)
def test_bad_cells_name_the_field(field, kwargs):
    model = make_model("rope")
    args = dict(kind="encoder_self", layer=0, head=0, query=0, key=0) | kwargs
    with pytest.raises(ValueError, match=field):
        decompose_cell(model, SRC, TGT, **args)


def test_json_has_no_infinities():
    model = make_model("rope")
    data = decompose_cell(model, SRC, TGT, "encoder_self", 0, 0, 0, 5).to_json()
    assert data["row_scores"][5] is None and data["visible"] is False and len(data["q"]) == 8


def test_passes_on_another_thread_do_not_reach_the_recording_hooks():
    """A cell recomputation and a views pass may share the model across threads: each records only its own calls."""
    import threading

    from core_model.attention_views import run_with_inputs

    model = make_model("rope")
    other_done = []

    def other_pass(mod, args, kwargs):
        if threading.current_thread() is threading.main_thread() and not other_done:
            other_done.append(1)
            worker = threading.Thread(target=lambda: model(SRC[:, :3], TGT[:, :4]))
            worker.start()
            worker.join()

    handle = model.encoder_layers[0].self_attn.register_forward_pre_hook(other_pass, with_kwargs=True)
    try:
        captured = run_with_inputs(model, SRC, TGT)
        other_done.clear()
        cell = decompose_cell(model, SRC, TGT, "cross", 1, 0, 2, 1)
    finally:
        handle.remove()
    assert other_done and [x.shape[1] for x in captured.inputs.encoder_self] == [SRC.shape[1]] * 2
    with torch.no_grad():
        maps = model(SRC, TGT, return_attention=True).attention.cross
    assert cell.weight == pytest.approx(float(maps[1][0, 0, 2, 1]), abs=1e-6)

"""One cell of an attention map taken apart: every number between the layer's input and the weight drawn.

For (kind, layer, head, query i, key j) this recomputes, from the very inputs the model's attention sublayer
received in a normal forward pass, the steps of paper eq. 1 for that head: q_i and k_j (before and after the RoPE
rotation of RoFormer, with the angle of each dimension pair), their elementwise product, its sum, the division by
sqrt(d_k), the mask, the softmax across row i, the value vectors weighted by that row and the head's output.

The layer input is taken with a forward pre-hook on the attention module rather than by re-running the layer
stack here, so whatever the layers do around attention (norm position, residual scaling) is followed as it is.
The hook only records calls made on the calling thread, so another thread using the same model is not disturbed.
"""

from __future__ import annotations

import inspect
import math
import threading
from dataclasses import dataclass, fields
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from torch import Tensor

from .attention import MultiHeadAttention, attention
from .config import check_int
from .masks import MaskSpec
from .model import ATTENTION_KINDS, HeadGates, Seq2SeqTransformer
from .positional import rope_frequencies

ArrayT = TypeVar("ArrayT", Tensor, np.ndarray)


@dataclass(frozen=True)
class CellDecomposition(Generic[ArrayT]):
    """Every intermediate of one attention cell (kind, layer, head, query, key); vectors are (D,), D = d_k."""

    kind: str
    layer: int
    head: int
    query: int  # row of the map (query index)
    key: int  # column of the map (key index)
    query_position: int  # position the query was rotated at (RoPE); equals `query` in a full forward pass
    key_position: int
    q_raw: ArrayT  # (D,) W_q x_i + b_q for this head, before RoPE
    k_raw: ArrayT  # (D,) W_k x_j + b_k
    q: ArrayT  # (D,) after RoPE (equal to q_raw without RoPE)
    k: ArrayT  # (D,)
    angle_q: ArrayT | None  # (D/2,) radians, query_position * theta_p per dimension pair p; None without RoPE
    angle_k: ArrayT | None  # (D/2,) key_position * theta_p
    product: ArrayT  # (D,) q * k elementwise
    dot: float  # sum of product = q . k
    sqrt_d: float  # sqrt(d_k)
    scaled: float  # dot / sqrt(d_k): the pre-softmax score before masking
    visible: bool  # the mask value: True = the query may attend to this key
    row_visible: ArrayT  # (Tk,) bool, the mask of the whole row
    row_scores: ArrayT  # (Tk,) pre-softmax scores of the row, -inf where masked
    row_weights: ArrayT  # (Tk,) softmax of the row; 0 where masked, all 0 when the whole row is masked
    row_max: float  # m, the largest visible score of the row (softmax subtracts it; -inf for an empty row)
    numerator: float  # exp(s_key - m); 0 when masked
    denominator: float  # sum over the row's visible keys of exp(s_k - m); 0 for an empty row
    weight: float  # row_weights[key] = numerator / denominator: the map's cell
    values: ArrayT  # (Tk, D) value vectors W_v x_k + b_v of this head
    weighted_values: ArrayT  # (Tk, D) row_weights[k] * values[k]
    head_output: ArrayT  # (D,) sum over keys of weighted_values
    gate: float  # the head gate (1 on, 0 ablated)
    gated_output: ArrayT  # (D,) gate * head_output: what enters the output projection

    @property
    def rope(self) -> bool:
        return self.angle_q is not None

    def to_numpy(self: CellDecomposition[Tensor]) -> CellDecomposition[np.ndarray]:
        """Float64 numpy copies (bool for masks): what crosses into a GUI thread or a JSON file."""

        def conv(value: Any) -> Any:
            if not isinstance(value, Tensor):
                return value
            t = value.detach().cpu()
            return t.numpy().copy() if t.dtype == torch.bool else t.to(torch.float64).numpy().copy()

        return CellDecomposition(**{f.name: conv(getattr(self, f.name)) for f in fields(self)})

    def to_json(self) -> dict[str, Any]:
        """Plain lists and numbers (masked scores as None: JSON has no -inf)."""
        data = self.to_numpy() if isinstance(self.q, Tensor) else self
        out: dict[str, Any] = {}
        for f in fields(data):
            value = getattr(data, f.name)
            if isinstance(value, np.ndarray):
                value = np.where(np.isfinite(value), value, np.nan) if value.dtype != bool else value
                value = (
                    [[_num(v) for v in row] for row in value.tolist()]
                    if value.ndim == 2
                    else [_num(v) for v in value.tolist()]
                )
            out[f.name] = value
        return out


def _num(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


class _Captured(Exception):
    """Raised by the hook to stop the forward pass once the attention inputs are recorded."""


def attention_module(model: Seq2SeqTransformer, kind: str, layer: int) -> MultiHeadAttention:
    """The attention sublayer of (kind, layer); ValueError naming the field for an unknown kind or layer."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {list(ATTENTION_KINDS)}, got {kind!r}")
    layers = model.encoder_layers if kind == "encoder_self" else model.decoder_layers
    check_int("layer", layer, 0, len(layers) - 1)
    return getattr(layers[layer], "cross_attn" if kind == "cross" else "self_attn")


def capture_attention_inputs(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    kind: str,
    layer: int,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
) -> dict[str, Any]:
    """Run the model until the chosen attention module is called; return its bound arguments (x_q, x_kv, mask...)."""
    module = attention_module(model, kind, layer)
    signature = inspect.signature(module.forward)
    thread = threading.get_ident()
    seen: dict[str, Any] = {}

    def hook(mod: Any, args: tuple, kwargs: dict | None = None) -> None:
        # kwargs may be missing when another thread's pass calls the hook between registration and removal
        if threading.get_ident() == thread and not seen and kwargs is not None:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            seen.update(bound.arguments)
            raise _Captured

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            enc = model.encode(src, masks, head_gates)
            model.decode(tgt, enc.memory, src, masks, head_gates)
    except _Captured:
        pass
    finally:
        handle.remove()
    if not seen:
        raise RuntimeError(f"the {kind} attention of layer {layer} was never called")
    return seen


def decompose_cell(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    kind: str,
    layer: int,
    head: int,
    query: int,
    key: int,
    *,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    batch: int = 0,
) -> CellDecomposition[Tensor]:
    """Every step from the layer input to the weight of cell (query, key) of one head (paper eq. 1).

    Args: src (B, S) and tgt (B, T) are the model's inputs exactly as for `model(src, tgt, masks, head_gates)`;
    the cell's weight equals that call's captured map [batch, head, query, key] for `kind` and `layer`.
    Call it with the model in eval mode (dropout would make the pass random).
    """
    if model.training and model.config.dropout > 0:
        raise ValueError("put the model in eval mode first: dropout makes the forward pass random")
    module = attention_module(model, kind, layer)
    check_int("head", head, 0, module.n_heads - 1)
    check_int("batch", batch, 0, src.shape[0] - 1)
    args = capture_attention_inputs(model, src, tgt, kind, layer, masks, head_gates)
    x_q, x_kv = args["x_q"], args["x_kv"]
    check_int("query", query, 0, x_q.shape[1] - 1)
    check_int("key", key, 0, x_kv.shape[1] - 1)
    with torch.no_grad():
        return _decompose(module, args, (kind, layer, head, query, key), batch, model.config.pe_base)


def _head_rows(linear: torch.nn.Module, x: Tensor, head: int, d: int, batch: int) -> Tensor:
    """This head's slice of a projection, computed as the model does (whole projection, then split). -> (T, D)."""
    b, t, _ = x.shape
    return linear(x).view(b, t, -1, d)[batch, :, head]  # (B, T, d) -> (B, T, H, D) -> (T, D)


def _decompose(
    module: MultiHeadAttention, args: dict[str, Any], cell: tuple[str, int, int, int, int], batch: int, pe_base: float
) -> CellDecomposition[Tensor]:
    kind, layer, head, i, j = cell
    d = module.head_dim
    q_pos = int(args["q_pos"])
    q_raw = _head_rows(module.q_proj, args["x_q"], head, d, batch)  # (Tq, D)
    k_raw = _head_rows(module.k_proj, args["x_kv"], head, d, batch)  # (Tk, D)
    v = _head_rows(module.v_proj, args["x_kv"], head, d, batch)  # (Tk, D)
    q, k, angle_q, angle_k = q_raw, k_raw, None, None
    if module.rope is not None:  # same rotation the module applies, at the same positions (keys from 0)
        q = module.rope.rotate(q_raw[None, None], q_pos)[0, 0]
        k = module.rope.rotate(k_raw[None, None], 0)[0, 0]
        theta = rope_frequencies(d, pe_base)  # (D/2,) float64
        angle_q, angle_k = (q_pos + i) * theta, j * theta
    tk = k.shape[0]
    mask = args["mask"]
    row_visible = torch.ones(tk, dtype=torch.bool, device=q.device)
    if mask is not None:  # any shape that broadcasts to the scores (B, H, Tq, Tk)
        shape = (args["x_q"].shape[0], module.n_heads, args["x_q"].shape[1], tk)
        row_visible = torch.broadcast_to(mask, shape)[batch, head, i].clone()
    plain = attention(q[i][None, None, None], k[None, None], v[None, None], row_visible[None, None, None])
    row_weights, row_scores = plain.weights[0, 0, 0], plain.scores[0, 0, 0]  # (Tk,)
    visible_scores = row_scores[row_visible]
    row_max = float(visible_scores.max()) if visible_scores.numel() else float("-inf")
    shifted = torch.exp(row_scores - row_max) if visible_scores.numel() else torch.zeros_like(row_scores)
    gate_tensor = args["head_gate"]
    gate = 1.0 if gate_tensor is None else float(gate_tensor[head])
    product = q[i] * k[j]
    sqrt_d = math.sqrt(d)
    weighted = row_weights[:, None] * v  # (Tk, 1) * (Tk, D) -> (Tk, D)
    head_output = plain.output[0, 0, 0]  # (D,): the row's weights @ values, as the model computes it
    return CellDecomposition(
        kind=kind,
        layer=layer,
        head=head,
        query=i,
        key=j,
        query_position=q_pos + i,
        key_position=j,
        q_raw=q_raw[i],
        k_raw=k_raw[j],
        q=q[i],
        k=k[j],
        angle_q=angle_q,
        angle_k=angle_k,
        product=product,
        dot=float(product.sum()),
        sqrt_d=sqrt_d,
        scaled=float(product.sum()) / sqrt_d,
        visible=bool(row_visible[j]),
        row_visible=row_visible,
        row_scores=row_scores,
        row_weights=row_weights,
        row_max=row_max,
        numerator=float(shifted[j]),
        denominator=float(shifted.sum()),
        weight=float(row_weights[j]),
        values=v,
        weighted_values=weighted,
        head_output=head_output,
        gate=gate,
        gated_output=head_output * gate,
    )

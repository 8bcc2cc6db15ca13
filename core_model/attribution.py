"""Attribution of each output token to each source token: gradient x delta, integrated gradients, occlusion.

For a source and the output the model writes for it (teacher-forced), f_i = log p(output token i). The input is the
scaled source token embedding x_j = sqrt(d) E[tok_j] (before any positional encoding, anchors included); the
baseline b_j is the mean scaled embedding of the task's source symbols (its source alphabet, structural ones such as
"+" included) at positions holding one, and x_j itself at special tokens (so specials get no attribution from the
gradient methods).
- gradient x delta: sum_d (x - b)_jd df_i/dx_jd at x (Shrikumar et al. 2016's input x gradient, from b).
- integrated gradients (Sundararajan et al. 2017): sum_d (x - b)_jd times the mean of df_i/dx_jd over the m points
  b + (k/m)(x - b), k = 1..m (a right Riemann sum). Its rows sum to f_i(x) - f_i(b) as m grows: the completeness
  gap says how far m is from that.
- occlusion: f_i minus the mean of f_i over the source with symbol j replaced by each other symbol it may hold
  (`replacements`; by default every other source symbol). A front end that knows the task passes only the edits
  that keep the source valid (source_analysis.occlusion_edits): an edit that breaks the grammar (the "+" of an
  addition replaced, a recall key made a duplicate, a bracket flipped) is skipped, since the model never saw such
  a source. A position with no edit left, like a special token, has occlusion 0.
A confident model saturates: its gradients at x vanish while f still depends on x, so gradient x delta is near 0
where integrated gradients and occlusion are not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .float64 import in_float64
from .inputs import decoder_input
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer

MAX_IG_STEPS = 512  # one batched pass holds m + 1 copies of the source
OCCLUSION_CHUNK = 256  # most rows per occlusion pass: a long source over many symbols would not fit in one


@dataclass(frozen=True)
class Attribution:
    """Each method's (output position, source position) matrix, with what integrated gradients should sum to."""

    output: tuple[int, ...]
    gradient_x_delta: np.ndarray  # (T, S)
    integrated_gradients: np.ndarray  # (T, S)
    occlusion: np.ndarray  # (T, S)
    ig_steps: int
    f_input: np.ndarray  # (T,): f_i(x)
    f_baseline: np.ndarray  # (T,): f_i(b)

    @property
    def completeness_gap(self) -> np.ndarray:
        """sum_j IG_ij - (f_i(x) - f_i(b)) per output position: 0 for an exact integral."""
        return self.integrated_gradients.sum(axis=1) - (self.f_input - self.f_baseline)


def _scores(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    output: Tensor,
    options: tuple[MaskSpec | None, HeadGates | None],
    embedded: Tensor | None = None,
) -> Tensor:
    """f (B, T): log p(output token) per row; `embedded` (B, S, d) replaces the scaled source embeddings."""
    handle: torch.utils.hooks.RemovableHandle | None = None
    calls: list[None] = []

    def source_only(_module: torch.nn.Module, _args: object, out: Tensor) -> Tensor:
        calls.append(None)  # the encoder embeds first; a tied decoder embedding (the same module) comes second
        return embedded / model.scale if len(calls) == 1 and embedded is not None else out

    if embedded is not None:  # _embed multiplies the table's output by the scale: hand it embedded / scale
        handle = model.src_embed.register_forward_hook(source_only)
    try:
        log_probs = model(src, tgt.expand(src.shape[0], -1), *options).log_probs
    finally:
        if handle is not None:
            handle.remove()
    return log_probs.gather(-1, output.expand(src.shape[0], -1)[..., None])[..., 0]


def attribute(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    output: Sequence[int],
    symbol_ids: Sequence[int],
    *,
    ig_steps: int = 32,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    progress: Callable[[int, int], None] | None = None,
    occlusion_chunk: int = OCCLUSION_CHUNK,
    replacements: Sequence[Sequence[int]] | None = None,
) -> Attribution:
    """The three attributions for encoder ids `src` and the output the decoder writes (with <eos>).

    `symbol_ids`: the task's source symbols (the baseline's mean); other ids are specials. `replacements`: per
    encoder position, the ids occlusion puts there in turn (None: every other of `symbol_ids` at each position
    holding one of them).
    `progress(done, total)` is called after each output position's gradients and each occlusion pass.
    `occlusion_chunk`: occluded sources per pass (analysis_cost.occlusion_chunk keeps a pass within the budget).
    """
    if not 1 <= ig_steps <= MAX_IG_STEPS:
        raise ValueError(f"ig_steps must be in 1..{MAX_IG_STEPS}, got {ig_steps}")
    if not output:
        raise ValueError("the output is empty: there is nothing to attribute")
    model = in_float64(model)  # the explanation's values, not float32's rounding of them
    device = next(model.parameters()).device
    options = (masks, head_gates)
    src_t = torch.tensor([list(src)], device=device)
    tgt = torch.tensor([decoder_input(list(output)[:-1])], device=device)
    out_t = torch.tensor([list(output)], device=device)
    grads = _gradients(model, src_t, tgt, out_t, symbol_ids, ig_steps, options, progress)
    edits = occlusion_pairs(src, symbol_ids, replacements)
    with torch.no_grad():
        occlusion = _occlusion(model, src_t, tgt, out_t, edits, options, (max(1, occlusion_chunk), progress))
    gxd, ig, f_x, f_b = grads
    return Attribution(tuple(int(t) for t in output), gxd, ig, occlusion, ig_steps, f_x, f_b)


def _gradients(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    output: Tensor,
    symbol_ids: Sequence[int],
    steps: int,
    options: tuple[MaskSpec | None, HeadGates | None],
    progress: Callable[[int, int], None] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gradient x delta and integrated gradients from one batch: the baseline, then the m points up to x."""
    with torch.no_grad():
        x = model.src_embed(src)[0] * model.scale  # (S, d)
        symbols = torch.tensor(list(symbol_ids), device=src.device)
        mean = model.src_embed(symbols).mean(0) * model.scale
        is_symbol = torch.isin(src[0], symbols)[:, None]
        delta = torch.where(is_symbol, x - mean, torch.zeros_like(x))  # x - b: 0 at specials
        alphas = torch.arange(steps + 1, device=src.device, dtype=x.dtype) / steps  # 0 (baseline), 1/m, ..., 1
        path = (x - delta)[None] + alphas[:, None, None] * delta[None]
    path.requires_grad_(True)
    f = _scores(model, src.expand(steps + 1, -1), tgt, output, options, path)  # (m + 1, T)
    n_out = f.shape[1]
    gxd, ig = torch.zeros(n_out, x.shape[0], dtype=x.dtype), torch.zeros(n_out, x.shape[0], dtype=x.dtype)
    for i in range(n_out):
        (grad,) = torch.autograd.grad(f[:, i].sum(), path, retain_graph=i + 1 < n_out)  # rows are independent
        gxd[i] = (delta * grad[-1]).sum(-1).detach().cpu()
        ig[i] = (delta * grad[1:].mean(0)).sum(-1).detach().cpu()
        if progress is not None:
            progress(i + 1, n_out)
    f = f.detach()
    return (
        gxd.double().numpy(),
        ig.double().numpy(),
        f[-1].double().cpu().numpy(),
        f[0].double().cpu().numpy(),
    )


def occlusion_pairs(
    src: Sequence[int], symbol_ids: Sequence[int], replacements: Sequence[Sequence[int]] | None = None
) -> list[tuple[int, int]]:
    """Occlusion's edits as (encoder position, id put there), position by position: `replacements[j]` at position
    j, or every other of `symbol_ids` at each position holding one of them."""
    if replacements is None:
        return [(j, s) for j, tok in enumerate(src) if tok in symbol_ids for s in symbol_ids if s != tok]
    if len(replacements) != len(src):
        raise ValueError(f"replacements must name one list per encoder position ({len(src)}), got {len(replacements)}")
    return [(j, s) for j, tok in enumerate(src) for s in replacements[j] if s != tok]


def _occlusion(
    model: Seq2SeqTransformer,
    src: Tensor,
    tgt: Tensor,
    output: Tensor,
    edits: list[tuple[int, int]],
    options: tuple[MaskSpec | None, HeadGates | None],
    chunk: tuple[int, Callable[[int, int], None] | None],
) -> np.ndarray:
    """f_i minus its mean over each position's edits, in passes of chunk[0] sources (progress chunk[1] after each)."""
    size, progress = chunk
    base = _scores(model, src, tgt, output, options)[0]  # (T,)
    ids = src[0].tolist()
    result = torch.zeros(output.shape[1], len(ids), dtype=base.dtype, device=base.device)
    counts = torch.zeros(len(ids), dtype=base.dtype, device=base.device)
    chunks = range(0, len(edits), size)
    for done, start in enumerate(chunks, 1):
        part = edits[start : start + size]
        rows = src.expand(len(part), -1).clone()
        positions = torch.tensor([j for j, _ in part], device=src.device)
        rows[torch.arange(len(part), device=src.device), positions] = torch.tensor(
            [s for _, s in part], device=src.device
        )
        f = _scores(model, rows, tgt, output, options)  # (rows, T)
        result.index_add_(1, positions, f.T)
        counts.index_add_(0, positions, torch.ones(len(part), dtype=base.dtype, device=base.device))
        if progress is not None:
            progress(done, len(chunks))
    occluded = torch.where(counts > 0, base[:, None] - result / counts.clamp(min=1), torch.zeros_like(result))
    return occluded.double().cpu().numpy()

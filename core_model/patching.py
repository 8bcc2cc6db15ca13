"""Activation patching: which attention head carries the answer from a clean source into a corrupted one.

Two sources of the same length differ in a symbol or two; their expected outputs differ at some position P. The
decoder is teacher-forced with the clean expected output on both, and the metric at P is
m = log p(clean token at P) - log p(corrupt token at P). Patching one head means running the corrupted source with
that head's output (its slice of the output projection's input, at every query position) taken from the clean run;
its effect is (m_patched - m_corrupt) / (m_clean - m_corrupt): 0 when the head carries nothing the clean source
changed, 1 when that head alone restores the clean answer. All the heads of one attention layer are also patched
together: heads that share the work each restore only part of it alone, and the layer's effect says how much they
carry between them. The same is done for the residual stream after each encoder layer at one source position
(which position, at which depth, holds what the answer needs).

Every patched run is one row of a batched forward pass (one pass for all, or passes of a given number of rows):
forward pre-hooks on the heads' output projections and forward hooks on the encoder layers overwrite each row's own
slice with the clean run's values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .analysis_cost import patch_rows
from .attention import MultiHeadAttention
from .inputs import decoder_input
from .masks import MaskSpec
from .model import ATTENTION_KINDS, AttentionKind, HeadGates, Seq2SeqTransformer
from .vocab import EOS

MIN_METRIC_GAP = 1e-6  # |m_clean - m_corrupt| below this: the corruption changes nothing to explain


@dataclass(frozen=True)
class HeadEffect:
    """One head's share of the answer: 1 restores the clean metric, 0 changes nothing, negative works against it."""

    kind: AttentionKind
    layer: int
    head: int
    effect: float


@dataclass(frozen=True)
class LayerEffect:
    """The effect of patching every head of one attention layer at once (its whole output projection input)."""

    kind: AttentionKind
    layer: int
    effect: float


@dataclass(frozen=True)
class PatchResult:
    """Every head's effect and the encoder residual sweep, with the metric's two ends they are measured between."""

    position: int  # the output position P the metric reads
    clean_token: int
    corrupt_token: int
    clean_metric: float
    corrupt_metric: float
    heads: tuple[HeadEffect, ...]  # encoder self, decoder self, cross; layer by layer, head by head
    positions: np.ndarray  # (encoder layers, source length): the residual after layer l patched at position j
    layers: tuple[LayerEffect, ...] = ()  # in the order of `heads`: each attention layer's heads patched together


def labels_for(target: Sequence[int]) -> list[int]:
    """The tokens the decoder should write for a target: the target, then <eos> (as the task's batches score it)."""
    return [*target, EOS]


def default_position(clean_target: Sequence[int], corrupt_target: Sequence[int]) -> int:
    """The first output position where the two expected outputs differ; ValueError when they never do."""
    clean, corrupt = labels_for(clean_target), labels_for(corrupt_target)
    for p, (a, b) in enumerate(zip(clean, corrupt)):
        if a != b:
            return p
    if len(clean) != len(corrupt):
        return min(len(clean), len(corrupt))
    raise ValueError("the two sources have the same expected output: there is no answer to carry")


def _attention(model: Seq2SeqTransformer) -> list[tuple[AttentionKind, int, MultiHeadAttention]]:
    """Every multi-head attention module with its kind and layer, in the order PatchResult.heads lists them."""
    found: list[tuple[AttentionKind, int, MultiHeadAttention]] = []
    for kind in ATTENTION_KINDS:
        layers = model.encoder_layers if kind == "encoder_self" else model.decoder_layers
        name = "cross_attn" if kind == "cross" else "self_attn"
        found += [(kind, i, _as_attention(getattr(layer, name))) for i, layer in enumerate(layers)]
    return found


def _as_attention(module: object) -> MultiHeadAttention:
    assert isinstance(module, MultiHeadAttention)
    return module


def _metric(log_probs: Tensor, position: int, good: int, bad: int) -> Tensor:
    """m per batch row: log p(good) - log p(bad) at the output position."""
    return log_probs[:, position, good] - log_probs[:, position, bad]


class _Hooks:
    """Hooks removed on exit, so a failed pass never leaves a model patched."""

    def __init__(self) -> None:
        self.handles: list[torch.utils.hooks.RemovableHandle] = []

    def __enter__(self) -> _Hooks:
        return self

    def __exit__(self, *_exc: object) -> None:
        for handle in self.handles:
            handle.remove()


def _capture(store: dict[object, Tensor], key: object) -> Callable[..., None]:
    def pre_hook(_module: nn.Module, args: tuple[Tensor, ...]) -> None:
        store[key] = args[0].detach()

    return pre_hook


def _capture_output(store: dict[object, Tensor], key: object) -> Callable[..., None]:
    def hook(_module: nn.Module, _args: tuple[Tensor, ...], output: tuple[Tensor, object]) -> None:
        store[key] = output[0].detach()

    return hook


def _clean_run(
    model: Seq2SeqTransformer, src: Tensor, tgt: Tensor, masks: MaskSpec | None, gates: HeadGates | None
) -> tuple[Tensor, dict[object, Tensor]]:
    """Clean and corrupt rows in one pass: their log-probs, and the clean row's head inputs and encoder residuals."""
    store: dict[object, Tensor] = {}
    with _Hooks() as hooks:
        for kind, layer, module in _attention(model):
            hooks.handles.append(module.out_proj.register_forward_pre_hook(_capture(store, (kind, layer))))
        for layer, encoder_layer in enumerate(model.encoder_layers):
            hooks.handles.append(encoder_layer.register_forward_hook(_capture_output(store, ("residual", layer))))
        log_probs = model(src, tgt, masks, gates).log_probs
    return log_probs, {key: value[0] for key, value in store.items()}  # row 0 is the clean source


def _patch_heads(rows: Tensor, heads: Tensor, clean: Tensor, head_dim: int) -> Callable[..., tuple[Tensor]]:
    """A pre-hook: row rows[i] gets the slices of the heads marked in heads[i] (an (n_heads,) bool row) of the clean
    (Tq, d) projection input."""

    def pre_hook(_module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor]:
        x = args[0]
        mask = torch.zeros(x.shape[0], 1, x.shape[2], dtype=torch.bool, device=x.device)
        columns = torch.arange(x.shape[2], device=x.device) // head_dim
        mask[rows, 0] = heads[:, columns]
        return (torch.where(mask, clean[None], x),)

    return pre_hook


def _patch_positions(rows: Tensor, positions: Tensor, clean: Tensor) -> Callable[..., tuple[Tensor, object]]:
    """A forward hook on an encoder layer: row rows[i] gets the clean residual at source position positions[i]."""

    def hook(_module: nn.Module, _args: tuple[Tensor, ...], output: tuple[Tensor, object]) -> tuple[Tensor, object]:
        x, result = output
        mask = torch.zeros(x.shape[0], x.shape[1], 1, dtype=torch.bool, device=x.device)
        mask[rows, positions] = True
        return torch.where(mask, clean[None], x), result

    return hook


def patch_effects(
    model: Seq2SeqTransformer,
    clean_src: Sequence[int],
    corrupt_src: Sequence[int],
    clean_target: Sequence[int],
    corrupt_target: Sequence[int],
    position: int | None = None,
    *,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    rows_per_pass: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PatchResult:
    """Every head's and every (encoder layer, source position)'s patching effect on the metric at `position`.

    clean_src / corrupt_src: encoder inputs of the same length (build them with core_model.inputs); the targets are
    the expected outputs (no specials). `position` defaults to the first one where the expected outputs differ.
    `rows_per_pass`: patched runs per batched pass (default: all in one; analysis_cost.patch_chunk keeps a pass
    within the memory budget); `progress(done, total)` after each pass, in patched runs.
    """
    if len(clean_src) != len(corrupt_src):
        raise ValueError(f"the sources must have the same length, got {len(clean_src)} and {len(corrupt_src)}")
    position = default_position(clean_target, corrupt_target) if position is None else position
    clean_labels, corrupt_labels = labels_for(clean_target), labels_for(corrupt_target)
    if not 0 <= position < min(len(clean_labels), len(corrupt_labels)):
        raise ValueError(f"position must be in 0..{min(len(clean_labels), len(corrupt_labels)) - 1}, got {position}")
    good, bad = clean_labels[position], corrupt_labels[position]
    if good == bad:
        raise ValueError(f"both expected outputs have the same token at position {position}: the metric is 0")
    device = next(model.parameters()).device
    src = torch.tensor([list(clean_src), list(corrupt_src)], device=device)
    tgt = torch.tensor([decoder_input(clean_target)] * 2, device=device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            log_probs, clean = _clean_run(model, src, tgt, masks, head_gates)
            m_clean, m_corrupt = (float(v) for v in _metric(log_probs, position, good, bad))
            if abs(m_clean - m_corrupt) < MIN_METRIC_GAP:
                raise ValueError("the corruption does not change the metric: there is no effect to share out")
            metric = (position, good, bad)
            chunk = (rows_per_pass or patch_rows(model.config, len(clean_src)), progress)
            patched = _patched_metrics(model, src[1], tgt[0], clean, (masks, head_gates), metric, chunk)
    finally:
        model.train(was_training)
    effects = (patched - m_corrupt) / (m_clean - m_corrupt)
    modules, n_heads = _attention(model), model.config.n_heads
    heads = tuple(
        HeadEffect(kind, layer, head, float(effects[i * n_heads + head]))
        for i, (kind, layer, _module) in enumerate(modules)
        for head in range(n_heads)
    )
    first = len(modules) * n_heads
    layers = tuple(
        LayerEffect(kind, layer, float(effects[first + i])) for i, (kind, layer, _module) in enumerate(modules)
    )
    sweep = effects[first + len(modules) :].reshape(len(model.encoder_layers), len(clean_src))
    return PatchResult(position, good, bad, m_clean, m_corrupt, heads, sweep, layers)


def _patched_metrics(
    model: Seq2SeqTransformer,
    corrupt: Tensor,
    tgt: Tensor,
    clean: dict[object, Tensor],
    options: tuple[MaskSpec | None, HeadGates | None],
    metric: tuple[int, int, int],
    chunk: tuple[int, Callable[[int, int], None] | None],
) -> np.ndarray:
    """The corrupted source's patched runs, `chunk[0]` rows per pass (progress `chunk[1]` after each): a row per
    head, a row per attention layer (all its heads), then a row per (encoder layer, source position)."""
    modules, length = _attention(model), corrupt.shape[0]
    n_rows = patch_rows(model.config, length)
    rows_per_pass, progress = chunk
    out = []
    for start in range(0, n_rows, rows_per_pass):
        stop = min(n_rows, start + rows_per_pass)
        with _Hooks() as hooks:
            for rows, module, hook in _row_hooks(model, modules, clean, length):
                keep = (rows >= start) & (rows < stop)  # this pass's rows, numbered from its first
                if bool(keep.any()):
                    hooks.handles.append(hook(module, rows[keep] - start, keep))
            n = stop - start
            log_probs = model(corrupt.expand(n, -1), tgt.expand(n, -1), *options).log_probs
        out.append(_metric(log_probs, *metric).double().cpu().numpy())
        if progress is not None:
            progress(stop, n_rows)
    return np.concatenate(out)


_Hook = Callable[[nn.Module, Tensor, Tensor], torch.utils.hooks.RemovableHandle]


def _row_hooks(
    model: Seq2SeqTransformer,
    modules: list[tuple[AttentionKind, int, MultiHeadAttention]],
    clean: dict[object, Tensor],
    length: int,
) -> list[tuple[Tensor, nn.Module, _Hook]]:
    """Per hooked module: its rows (numbered over all patched runs), the module, and how to hook a subset of them."""
    device = next(model.parameters()).device
    n_heads = model.config.n_heads
    heads_of = torch.cat(
        [torch.eye(n_heads, dtype=torch.bool, device=device), torch.ones(1, n_heads, dtype=torch.bool, device=device)]
    )  # (n_heads + 1, n_heads): one head each, then all of them
    found: list[tuple[Tensor, nn.Module, _Hook]] = []
    for i, (kind, layer, module) in enumerate(modules):
        own = torch.arange(i * n_heads, (i + 1) * n_heads, device=device)
        rows = torch.cat([own, torch.tensor([len(modules) * n_heads + i], device=device)])

        def head_hook(target: nn.Module, local: Tensor, keep: Tensor, key: object = (kind, layer)) -> Any:
            attn = _as_attention(target)
            pre_hook = _patch_heads(local, heads_of[keep], clean[key], attn.head_dim)
            return attn.out_proj.register_forward_pre_hook(pre_hook)

        found.append((rows, module, head_hook))
    first = len(modules) * (n_heads + 1)
    positions = torch.arange(length, device=device)
    for layer, encoder_layer in enumerate(model.encoder_layers):
        rows = torch.arange(first + layer * length, first + (layer + 1) * length, device=device)

        def position_hook(target: nn.Module, local: Tensor, keep: Tensor, key: object = ("residual", layer)) -> Any:
            return target.register_forward_hook(_patch_positions(local, positions[keep], clean[key]))

        found.append((rows, encoder_layer, position_hook))
    return found

"""One forward pass with attention capture, turned into the numpy snapshot the grids draw (the session boundary)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import torch

from core_model import MaskSpec, Vocabulary
from core_model.attention_views import view_maps
from core_model.decoding import choosable
from core_model.model import ATTENTION_KINDS, HeadGates, Seq2SeqTransformer

from .snapshots import KindMaps, MapsSnapshot


@dataclass(frozen=True)
class Capture:
    """The maps snapshot, the mask previews and the log-probabilities of the first decoder position."""

    maps: MapsSnapshot
    previews: Mapping[str, np.ndarray]
    first_log_probs: torch.Tensor  # (V,) float32 on the CPU


def capture_maps(
    model: Seq2SeqTransformer,
    vocab: Vocabulary,
    src: torch.Tensor,
    tgt: torch.Tensor,
    masks: MaskSpec,
    gates: HeadGates | None,
    mode: str,
    highlight: int | None,
) -> Capture:
    """src (1, S), tgt (1, T) -> every kind's (L, H, Tq, Tk) maps as float32 numpy, with token labels.

    mode: "weights" and "scores" come from the model; "norms" and "rollout" from core_model.attention_views.
    Rollout spreads across layers beyond what one layer's mask allows, so in that mode no cell is blanked.
    """
    start = time.perf_counter()
    with torch.inference_mode():  # cheaper than no_grad on every keystroke; nothing here needs autograd
        if mode in ("weights", "scores"):
            out = model(src, tgt, masks, gates, return_attention=mode == "weights", return_scores=mode == "scores")
            torch_maps = out.attention if mode == "weights" else out.scores
        else:
            out, torch_maps = view_maps(model, src, tgt, mode, masks, gates)
    numpy_maps = torch_maps.to_numpy()
    log_probs = out.log_probs
    predicted = choosable(log_probs[0], len(vocab)).argmax(-1).tolist()  # what Step would choose at each position
    first = log_probs[0, 0].float().cpu()
    forward_ms = (time.perf_counter() - start) * 1000.0
    valid = valid_masks(masks, src, tgt)
    shown = {k: frozen(np.ones_like(v)) for k, v in valid.items()} if mode == "rollout" else valid
    src_labels, tgt_labels = tuple(vocab.tokens(src[0].tolist())), tuple(vocab.tokens(tgt[0].tolist()))
    labels = {
        "encoder_self": (src_labels, src_labels),
        "decoder_self": (tgt_labels, tgt_labels),
        "cross": (tgt_labels, src_labels),
    }
    maps: dict[str, KindMaps] = {}
    for kind in ATTENTION_KINDS:
        values = frozen(np.stack([layer[0] for layer in numpy_maps.kind(kind)]))  # L x (H, Tq, Tk) -> (L, H, Tq, Tk)
        q, k = labels[kind]
        maps[kind] = KindMaps(kind, values, shown[kind], q, k, None if kind == "encoder_self" else highlight)
    snap = MapsSnapshot(
        MappingProxyType(maps),
        mode,
        forward_ms,
        tuple(vocab.tokens(predicted)),
        MappingProxyType({"stepping": highlight is not None}),
    )
    return Capture(snap, MappingProxyType(valid), first)


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only array: a frame is shared by every view that draws it, so none may change it."""
    array.flags.writeable = False
    return array


def valid_masks(masks: MaskSpec, src: torch.Tensor, tgt: torch.Tensor) -> dict[str, np.ndarray]:
    """(Tq, Tk) bool per kind: where the masks let a query see a key."""
    s, t = src.shape[1], tgt.shape[1]

    def dense(mask: torch.Tensor | None, tq: int, tk: int) -> np.ndarray:
        full = torch.ones(tq, tk, dtype=torch.bool, device=src.device)
        if mask is not None:
            full = (full & mask).reshape(-1, tq, tk)[0]
        return frozen(full.cpu().numpy().copy())

    return {
        "encoder_self": dense(masks.encoder_self(src), s, s),
        "decoder_self": dense(masks.decoder_self(tgt), t, t),
        "cross": dense(masks.cross(src, tq=t), t, s),
    }

"""The numbers an exported page shows: one input's maps in one view, as plain JSON-ready data.

The input is built as the playground and the `views` verb build it: the source plus `pads` <pad>s, the
teacher-forced target <bos> + the task's expected output + the same pads, every mask on. Each kind's maps are
(L, H, Tq, Tk) lists of floats with None where a value is not finite (a masked score is -inf), exactly the
numbers `attention-playground views --json` prints. Masked cells are marked per kind in `valid`, as the app greys
them; rollout spreads beyond one layer's mask, so in that view no cell is blanked (as in the app).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import torch

from .attention_views import VIEW_MODES, view_maps
from .decoding import choosable
from .inputs import decoder_input, encoder_input
from .masks import MaskSpec
from .model import ATTENTION_KINDS, Seq2SeqTransformer
from .tasks import TaskSpec, expected_output, max_source_len
from .view_formulas import MODE_INFO
from .vocab import EOS

DIVERGING_VIEWS = ("scores",)  # signed values: a scale centred on 0
UNIT_VIEWS = ("weights",)  # softmax weights: the fixed [0, 1] scale
KIND_TITLES = {"encoder_self": "Encoder self", "decoder_self": "Decoder self", "cross": "Cross"}
KIND_SIDES = {"encoder_self": ("source", "source"), "decoder_self": ("target", "target"), "cross": ("target", "source")}


def finite_or_none(values: Any) -> Any:
    """Nested lists of floats with every non-finite number as None (strict JSON, as `views --json` writes it)."""
    if isinstance(values, list):
        return [finite_or_none(v) for v in values]
    return values if math.isfinite(values) else None


def head_average(maps: list, valid: list[list[bool]]) -> list:
    """Per layer the mean over heads of each shown cell (L, Tq, Tk): finite values in unmasked cells, else None."""
    layers = []
    for heads in maps:
        rows = []
        for i, valid_row in enumerate(valid):
            row = []
            for j, ok in enumerate(valid_row):
                cells = [head[i][j] for head in heads if head[i][j] is not None] if ok else []
                row.append(sum(cells) / len(cells) if cells else None)
            rows.append(row)
        layers.append(rows)
    return layers


def colour_levels(view: str, maps: list, average: list) -> list[float]:
    """The values at the colour scale's ends, one shared scale per kind as the app draws it: [0, 1] for weights,
    centred on 0 for scores, 0 to the largest value for norms and rollout."""
    if view in UNIT_VIEWS:
        return [0.0, 1.0]
    found = [v for v in _flat(maps) if v is not None] + [v for v in _flat(average) if v is not None]
    lo, hi = (min(found), max(found)) if found else (0.0, 1.0)
    if view in DIVERGING_VIEWS:
        m = max(abs(lo), abs(hi))
        return [-m, m]
    return [0.0, hi]


def _flat(values: Any) -> list:
    return [x for v in values for x in _flat(v)] if isinstance(values, list) else [values]


def _valid(src: torch.Tensor, tgt: torch.Tensor) -> dict[str, list[list[bool]]]:
    """(Tq, Tk) per kind: where the default masks (the ones the pass used) let a query see a key."""
    masks, s, t = MaskSpec(), src.shape[1], tgt.shape[1]
    found = {
        "encoder_self": masks.encoder_self(src),
        "decoder_self": masks.decoder_self(tgt),
        "cross": masks.cross(src),
    }
    shapes = {"encoder_self": (s, s), "decoder_self": (t, t), "cross": (t, s)}
    result = {}
    for kind, mask in found.items():
        full = torch.ones(shapes[kind], dtype=torch.bool, device=src.device)
        if mask is not None:
            full = (full & mask).reshape(-1, *shapes[kind])[0]
        result[kind] = full.cpu().tolist()
    return result


def page_info(view: str) -> dict[str, str]:
    """The app's words for the view, less what only makes sense inside the app (switching heads off, its files)."""
    info = asdict(MODE_INFO[view])
    info["equation"] = info["equation"].replace("mean of the heads on", "mean of the heads")
    info["citation"] = info["citation"].replace(
        "; decoder: see core_model/attention_views.py", "; extended to the decoder as the line above says"
    )
    return info


def model_summary(model: Seq2SeqTransformer, task: TaskSpec) -> dict[str, Any]:
    """What the page says about the model: its configuration, its size and its task."""
    return {
        "config": asdict(model.config),
        "parameters": sum(p.numel() for p in model.parameters()),
        "task": asdict(task),
    }


def page_data(model: Seq2SeqTransformer, task: TaskSpec, source: str, view: str = "weights", pads: int = 2) -> dict:
    """Everything the page embeds for one source and view (see the module doc).

    Raises VocabularyError for an unknown symbol, ValueError for a bad view or a source the model cannot take.
    """
    if view not in VIEW_MODES:
        raise ValueError(f"view must be one of {list(VIEW_MODES)}, got {view!r}")
    vocab = task.vocabulary
    ids = vocab.encode(source)
    longest = max_source_len(model.config.max_len)
    if not ids:  # as the Playground and every other verb: a page of padding alone shows nothing
        raise ValueError("it is empty: give at least one symbol")
    if not 1 <= len(ids) + pads <= longest:
        raise ValueError(f"the source plus pads must be 1 to {longest} symbols, got {len(ids) + pads}")
    device = next(model.parameters()).device
    src = torch.tensor([encoder_input(ids, pads, anchored=task.anchored)], device=device)
    expected = expected_output(task, ids)
    tgt = torch.tensor([decoder_input(expected, pads)], device=device)
    with torch.inference_mode():
        out, maps = view_maps(model, src, tgt, view)
    valid = _valid(src, tgt)
    kinds = {}
    for kind in ATTENTION_KINDS:
        values = finite_or_none(torch.stack([m[0] for m in maps.kind(kind)]).cpu().double().tolist())
        shown = [[True] * len(row) for row in valid[kind]] if view == "rollout" else valid[kind]
        average = head_average(values, shown)
        kinds[kind] = {
            "title": KIND_TITLES[kind],
            "sides": list(KIND_SIDES[kind]),
            "maps": values,
            "average": average,
            "valid": [[int(ok) for ok in row] for row in shown],
            "levels": colour_levels(view, values, average),
        }
    return {
        "view": view,
        "info": page_info(view),
        "diverging": view in DIVERGING_VIEWS,
        "source": source,
        "pads": pads,
        "source_tokens": vocab.tokens(src[0].tolist()),
        "target_tokens": vocab.tokens(tgt[0].tolist()),
        "output_tokens": vocab.tokens(choosable(out.log_probs[0], len(vocab)).argmax(-1).tolist()),
        "expected_tokens": vocab.tokens(expected),
        "label_tokens": vocab.tokens([*expected, EOS]),  # what each decoder position should predict
        "model": model_summary(model, task),
        "kinds": kinds,
    }

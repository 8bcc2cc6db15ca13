"""`views`: one input's attention maps in one view (weights, scores, norm-weighted, rollout), one JSON line out.

The input is built as the playground builds it: the source plus --pads <pad>s, and the teacher-forced target
<bos> + the task's expected output + the same pads (core_model.inputs); every mask on. No sampling: --seed is
accepted like every verb's and changes nothing. Non-finite cells (masked scores, -inf) are
null, and "notes" counts them per map kind and says why.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.budget import attention_weights, check_budget
from visualizer.cli.common import Verb, checked_source, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import deterministic_seed_option, device_option, task_option
from visualizer.cli.output import json_line

MODES = ("weights", "scores", "norms", "rollout")  # core_model.attention_views.VIEW_MODES (torch-free here)


def add_options(p: argparse.ArgumentParser) -> None:
    """The `views` subcommand's options."""
    p.add_argument("path", type=Path)
    p.add_argument("--source", required=True, help="source symbols, e.g. 0123")
    p.add_argument("--mode", choices=MODES, default="weights")
    p.add_argument(
        "--pads", default=2, **ranged("views", "--pads", "<pad> tokens after source and target (as the playground)")
    )
    task_option(p)
    device_option(p, "cpu")
    deterministic_seed_option(p, "views")


def _clean(values: Any, counts: list[int]) -> Any:
    """Nested lists of floats with non-finite numbers as None (strict JSON); counts: [nulls, cells] so far."""
    if isinstance(values, list):
        return [_clean(v, counts) for v in values]
    counts[1] += 1
    if math.isfinite(values):
        return values
    counts[0] += 1
    return None


def _clean_maps(maps: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The maps as strict JSON, and one note per kind with null cells (a note per cell would dwarf the maps)."""
    clean, notes = {}, []
    for kind, values in maps.items():
        counts = [0, 0]
        clean[kind] = _clean(values, counts)
        if counts[0]:
            notes.append(
                f"maps.{kind}: {counts[0]} of {counts[1]} cells are null: a mask hides that key from that "
                "query, so its pre-softmax score is -inf (not a JSON number)"
            )
    return clean, notes


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print {"mode", "source_tokens", "target_tokens", "maps": {kind: (L, H, Tq, Tk)}, "notes" if null, ...}."""
    import torch

    from core_model import VocabularyError
    from core_model.attention_views import rollout, view_maps
    from core_model.decoding import choosable
    from core_model.inputs import decoder_input, encoder_input
    from core_model.tasks import expected_output, max_source_len

    device = device_arg(ns.device or "cpu")
    model, task, trained = load_trained(ns.path, device, ns.task)
    vocab = task.vocabulary
    try:
        ids = vocab.encode(ns.source)
    except VocabularyError as exc:
        parser.error(f"--source: {exc.counted_from_one()}")
    if not ids:  # as the Playground and every other verb
        parser.error("--source is empty: give at least one symbol")
    if not 1 <= len(ids) + ns.pads <= max_source_len(model.config.max_len):
        parser.error(f"--source plus --pads must be 1 to {max_source_len(model.config.max_len)} symbols")
    checked_source(task, ids, "--source")
    n_src = len(encoder_input(ids, ns.pads, anchored=task.anchored))
    weights = attention_weights(model.config, 1, n_src, len(ids) + ns.pads + 2)
    check_budget(weights, f"{len(ids)} symbols and --pads {ns.pads}", "use fewer --pads or a shorter --source")
    src = torch.tensor([encoder_input(ids, ns.pads, anchored=task.anchored)], device=device)
    tgt = torch.tensor([decoder_input(expected_output(task, ids), ns.pads)], device=device)
    with torch.inference_mode():
        out, maps = view_maps(model, src, tgt, ns.mode)
    clean, notes = _clean_maps(
        {
            k: torch.stack([m[0] for m in maps.kind(k)]).cpu().double().tolist()
            for k in ("encoder_self", "decoder_self", "cross")
        }
    )
    result: dict[str, Any] = {
        "mode": ns.mode,
        "task": task.task,
        "source_tokens": vocab.tokens(src[0].tolist()),
        "target_tokens": vocab.tokens(tgt[0].tolist()),
        **trained_fields(trained, len(ids)),
        "output_tokens": vocab.tokens(choosable(out.log_probs[0], len(vocab)).argmax(-1).tolist()),
        "maps": clean,
        "device": str(device),
    }
    if notes:
        result["notes"] = notes
    if ns.mode == "rollout":
        assert out.attention is not None  # view_maps runs the model with its attention weights
        r = rollout(out.attention)
        result["rollout"] = {
            k: getattr(r, k)[:, 0].cpu().double().tolist() for k in ("encoder_self", "decoder_self", "cross")
        }
    sys.stdout.write(json_line(result))
    return 0


VERB = Verb(
    "views",
    "FILE --source TEXT [--mode weights|scores|norms|rollout] [options]",
    "one input's attention maps: weights, scores, norm-weighted or rollout",
    add_options,
    run,
)

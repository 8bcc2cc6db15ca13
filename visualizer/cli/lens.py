"""`lens`: the logit lens for the decoder, what each decoder layer would output if the model stopped there, as JSON.

The decoder is teacher-forced with the model's own greedy output (core_model.logit_lens), so the last layer's row is
that output. No sampling: --seed is accepted like every verb's and changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.budget import analysis_refusals, decoded
from visualizer.cli.common import ArgumentError, Verb, checked_source, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import deterministic_seed_option, device_option
from visualizer.cli.output import json_line


def add_options(p: argparse.ArgumentParser) -> None:
    """The `lens` subcommand's options."""
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument("--source", required=True, metavar="SYMBOLS", help="source symbols, e.g. 31415926")
    p.add_argument("--pads", default=0, **ranged("lens", "--pads", "<pad> tokens appended to the source (default 0)"))
    device_option(p)
    deterministic_seed_option(p, "lens")


def source_ids(text: str, task: Any, pads: int, limit: int) -> list[int]:
    """Symbol ids of --source; ArgumentError (exit 2) naming the option when unusable: an unknown symbol, empty, too
    long, or a source the task does not take (its rule named)."""
    from core_model import VocabularyError

    try:
        ids = task.vocabulary.encode(text)
    except VocabularyError as exc:
        raise ArgumentError(f"--source: {exc.counted_from_one()}") from None
    if not ids:
        raise ArgumentError("--source is empty: give at least one symbol")
    if len(ids) + pads > limit:
        raise ArgumentError(f"--source has {len(ids)} symbols and {pads} pads; this model takes at most {limit}")
    return checked_source(task, ids, "--source")


def most_common_fields(lens: Any, layer: int, token: Any) -> dict[str, Any]:
    """The token a layer writes at most positions and how many: a layer that writes one token nearly everywhere
    matches the output by chance wherever the answer is that token (the tab says so beside its row)."""
    token_id, count = lens.most_common(layer)
    return {"token": token(token_id), "count": count}


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Decode greedily, run the lens and print one JSON line; a bad source, or one whose lens is over the analysis
    budget, exits 2 naming --source. A long decoding counts its tokens on stderr."""
    from core_model.analysis_budget import Knobs
    from core_model.source_lens import source_lens
    from core_model.tasks import max_source_len

    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device)
    vocab = task.vocabulary
    ids = source_ids(ns.source, task, ns.pads, max_source_len(model.config.max_len))
    with analysis_refusals():
        knobs = Knobs(source="--source")
        found = decoded(lambda bar: source_lens(model, task, ids, pads=ns.pads, knobs=knobs, decoding=bar))
    lens = found.lens
    out = {
        "source_tokens": vocab.tokens(found.source),
        "output_tokens": vocab.tokens(found.output),
        "expected": vocab.tokens(found.expected) + ["<eos>"],
        "layers": [
            {
                "layer": layer,
                "top_tokens": vocab.tokens(lens.top_tokens[layer].tolist()),
                "top_log_probs": lens.top_log_probs[layer].tolist(),
                "output_log_probs": lens.output_log_probs[layer].tolist(),
                "most_common_top": most_common_fields(lens, layer, vocab.token),
            }
            for layer in range(lens.top_tokens.shape[0])
        ],
        "task": task.task,
        **trained_fields(trained, len(ids)),
        "device": str(device),
        "path": str(ns.path),
    }
    sys.stdout.write(json_line(out))
    return 0


VERB = Verb(
    "lens",
    "FILE --source SYMBOLS [--pads N] [options]",
    "the logit lens: each decoder layer's prediction at every output position",
    add_options,
    run,
)

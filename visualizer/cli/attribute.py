"""`attribute`: each output token attributed to each source token three ways, and how attention agrees, as JSON.

The output is the model's own greedy output, teacher-forced (core_model.attribution); the agreement is the Spearman
rank correlation per output position of each method's magnitude with each attention view over the source's symbols,
and whether the symbol of largest magnitude is the one attended most (core_model.attribution_agreement). No
sampling: --seed is accepted like every verb's and changes nothing.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from visualizer.cli.budget import analysis_refusals, decoding_bar
from visualizer.cli.common import ProgressBar, Verb, device_arg, load_trained, trained_fields
from visualizer.cli.lens import source_ids
from visualizer.cli.limits import ranged
from visualizer.cli.options import deterministic_seed_option, device_option
from visualizer.cli.output import json_line

DEFAULT_IG_STEPS = 32


def add_options(p: argparse.ArgumentParser) -> None:
    """The `attribute` subcommand's options."""
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument("--source", required=True, metavar="SYMBOLS", help="source symbols, e.g. 31415926")
    p.add_argument(
        "--ig-steps",
        default=DEFAULT_IG_STEPS,
        **ranged("attribute", "--ig-steps", f"integrated gradients' path points (default {DEFAULT_IG_STEPS})"),
    )
    device_option(p)
    deterministic_seed_option(p, "attribute")


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Attribute, compare with attention and print one JSON line; a bad source, or one whose attribution is over the
    analysis budget, exits 2 naming --source or --ig-steps. Progress (each output position, each occlusion pass)
    goes to stderr."""
    from core_model.analysis_budget import Knobs
    from core_model.source_analysis import analyse_source, occlusion_passes
    from core_model.tasks import max_source_len

    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device)
    vocab = task.vocabulary
    ids = source_ids(ns.source, task, 0, max_source_len(model.config.max_len))
    # the tokens decoded (shown once decoding has run a moment), then a step per output position and occlusion pass,
    # one bar after the other: the second is made, and the first ended, once the output is known
    decoding, end_decoding = decoding_bar()
    bars: list[ProgressBar] = []
    steps = itertools.count(1)

    def decoded(output: list[int]) -> None:
        end_decoding()
        passes = occlusion_passes(model, task, task.source_ids(ids), len(output))
        bars.append(ProgressBar(len(output) + passes, sys.stderr))

    try:
        with analysis_refusals():
            found = analyse_source(
                model,
                task,
                ids,
                ns.ig_steps,
                knobs=Knobs(source="--source", ig_steps="--ig-steps"),
                decoding=decoding,
                decoded=decoded,
                progress=lambda _done, _total: bars[-1].count(next(steps), "attribution steps"),
            )
    finally:
        end_decoding()
        for bar in bars:
            bar.close()
    result, src, output = found.attribution, found.source, found.output
    out = {
        "source_tokens": vocab.tokens(src),
        "output_tokens": vocab.tokens(output),
        "ig_steps": result.ig_steps,
        "methods": {
            "gradient_x_delta": result.gradient_x_delta.tolist(),
            "integrated_gradients": result.integrated_gradients.tolist(),
            "occlusion": result.occlusion.tolist(),
        },
        "f": result.f_input.tolist(),
        "f_baseline": result.f_baseline.tolist(),
        "completeness_gap": result.completeness_gap.tolist(),
        "agreement": found.agreement,
        "top1_agreement": found.top1,
        "task": task.task,
        **trained_fields(trained, len(ids)),
        "device": str(device),
        "path": str(ns.path),
    }
    sys.stdout.write(json_line(out))
    return 0


VERB = Verb(
    "attribute",
    "FILE --source SYMBOLS [--ig-steps M] [options]",
    "gradient x delta, integrated gradients and occlusion per output token, and their agreement with attention",
    add_options,
    run,
)

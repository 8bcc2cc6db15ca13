"""`circuits`: every head's QK and OV circuit over tokens, its copying score, its score over positions, and how heads
compose, as JSON.

Read from the weights alone (core_model.circuits, core_model.position_circuits, core_model.head_composition; Elhage
et al. 2021): no source is run, unless --source asks for each head's agreement with a run on it
(core_model.run_agreement). The arithmetic is float64 on the CPU whatever --device says, so every device prints
the same numbers. --seed seeds the random matrices of the composition baseline, --baseline-samples says how many
pairs it draws, and --positions how many positions the position tables span.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.budget import analysis_refusals
from visualizer.cli.common import ArgumentError, ProgressBar, Verb, checked_source, device_arg, load_trained
from visualizer.cli.limits import ranged
from visualizer.cli.options import device_option, seed_option
from visualizer.cli.output import json_line

DEFAULT_BASELINE_SAMPLES = 100


def add_options(p: argparse.ArgumentParser) -> None:
    """The `circuits` subcommand's options."""
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument(
        "--baseline-samples",
        default=DEFAULT_BASELINE_SAMPLES,
        **ranged(
            "circuits",
            "--baseline-samples",
            f"pairs of random heads the composition baseline averages (default {DEFAULT_BASELINE_SAMPLES})",
        ),
    )
    p.add_argument(
        "--positions",
        default=None,
        **ranged(
            "circuits",
            "--positions",
            "positions each head's position table spans (default: the task's longest source plus <bos> and <eos>, "
            "within the model's max_len)",
        ),
    )
    p.add_argument(
        "--source",
        default=None,
        help="also run this source as the Playground does (its 2 pads, teacher-forced, every mask on) and print, "
        "per head, on how many query positions the direct path picks the run's key",
    )
    seed_option(p, "circuits", "seed of the random matrices of the composition baseline (default 0)", 0)
    device_option(p, "cpu; the circuits are computed in float64 on the CPU whatever the device")


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Read the circuits and composition scores from the checkpoint and print one JSON line; a model or options over
    the analysis budget exit 2 before anything is computed. Its four parts are counted on stderr."""
    from core_model.analysis_budget import Knobs
    from core_model.circuits_report import STEPS, read_circuits
    from core_model.position_circuits import default_positions

    device = device_arg(ns.device or "cpu")
    model, task, _trained = load_trained(ns.path, device)
    n_positions = default_positions(model.config, task) if ns.positions is None else ns.positions
    if n_positions > model.config.max_len:
        raise ArgumentError(f"--positions {n_positions} is more than this model's max_len {model.config.max_len}")
    ids = _source_ids(ns, parser, task)
    knobs = Knobs(positions="--positions", samples="--baseline-samples")
    bar = ProgressBar(len(STEPS), sys.stderr)
    parts = ("tokens", "positions", "composition", "baseline")  # what each of STEPS reads, counted after it

    def counted(done: int, _total: int) -> None:
        if done:
            bar.count(done, f"circuits parts ({parts[done - 1]})")

    try:
        with analysis_refusals():
            report = read_circuits(model, n_positions, ns.baseline_samples, ns.seed, knobs=knobs, progress=counted)
    finally:
        bar.close()
    out = {
        "tokens": task.vocabulary.tokens(range(model.config.vocab_size)),
        **report.to_dict(),
        "task": task.task,
        "device": str(device),
        "path": str(ns.path),
    }
    if ids is not None:
        out["run"] = _run_agreement(model, task, ids, device, list(report.positions))
    sys.stdout.write(json_line(out))
    return 0


PLAYGROUND_PADS = 2  # the Playground's extra <pad>s after the source and the target, as `views` defaults to


def _source_ids(ns: argparse.Namespace, parser: argparse.ArgumentParser, task: Any) -> list[int] | None:
    """--source's symbol ids (None without it), checked before anything is computed: an unknown symbol, an empty
    source or one the task does not take (its rule named) exits 2."""
    from core_model import VocabularyError

    if ns.source is None:
        return None
    try:
        ids = task.vocabulary.encode(ns.source)
    except VocabularyError as exc:
        parser.error(f"--source: {exc.counted_from_one()}")
    if not ids:
        parser.error("--source is empty: give at least one symbol")
    return checked_source(task, ids, "--source")


def _run_agreement(model: Any, task: Any, ids: list[int], device: Any, positions: list[Any]) -> dict[str, Any]:
    """The source's tokens and each head's agreement between its position table and its map on that source."""
    import torch

    from core_model.inputs import decoder_input, encoder_input
    from core_model.run_agreement import run_agreements
    from core_model.tasks import expected_output

    src = torch.tensor([encoder_input(ids, PLAYGROUND_PADS, anchored=task.anchored)], device=device)
    tgt = torch.tensor([decoder_input(expected_output(task, ids), PLAYGROUND_PADS)], device=device)
    agreements = run_agreements(model, src, tgt, positions)
    return {
        "source_tokens": task.vocabulary.tokens(src[0].tolist()),
        "target_tokens": task.vocabulary.tokens(tgt[0].tolist()),
        "agreement": [{**p.ref.to_dict(), **a.to_dict()} for p, a in zip(positions, agreements, strict=True)],
    }


VERB = Verb(
    "circuits",
    "FILE [--positions N] [--baseline-samples N] [--seed S] [options]",
    "each head's QK and OV circuit over tokens and positions, its copying score, and how heads compose",
    add_options,
    run,
)

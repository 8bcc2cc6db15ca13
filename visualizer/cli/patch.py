"""`patch`: activation patching, which heads carry the answer from a clean source into a corrupted one, as JSON.

Both sources are teacher-forced with the clean expected output; the metric at output position P is
log p(clean token) - log p(corrupt token); each head's effect is (m_patched - m_corrupt) / (m_clean - m_corrupt)
(core_model.patching). No sampling: --seed is accepted like every verb's and changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.budget import analysis_refusals
from visualizer.cli.common import ProgressBar, Verb, checked_source, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import deterministic_seed_option, device_option, task_option
from visualizer.cli.output import json_line


def add_options(p: argparse.ArgumentParser) -> None:
    """The `patch` subcommand's options."""
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument("--clean", required=True, metavar="SYMBOLS", help="the clean source, e.g. 31415926")
    p.add_argument("--corrupt", required=True, metavar="SYMBOLS", help="the corrupted source, as long as the clean one")
    p.add_argument(
        "--position",
        default=None,
        **ranged("patch", "--position", "0-based output position of the metric (default: the first that differs)"),
    )
    task_option(p)
    device_option(p)
    deterministic_seed_option(p, "patch")


def _symbols(parser: argparse.ArgumentParser, vocab: Any, text: str, option: str) -> list[int]:
    from core_model import VocabularyError

    try:
        ids = vocab.encode(text)
    except VocabularyError as exc:
        parser.error(f"{option}: {exc.counted_from_one()}")
    if not ids:
        parser.error(f"{option} is empty")
    return ids


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Patch every head and every encoder position and print one JSON line; bad sources exit 2, naming the option.
    Sources whose patching is over the analysis budget exit 2 too, before any pass; progress goes to stderr."""
    from core_model.analysis_budget import Knobs
    from core_model.analysis_cost import patch_rows
    from core_model.source_patching import patch_sources
    from core_model.tasks import max_source_len

    model, task, trained = load_trained(ns.path, device_arg(ns.device), ns.task)
    vocab = task.vocabulary
    clean, corrupt = _symbols(parser, vocab, ns.clean, "--clean"), _symbols(parser, vocab, ns.corrupt, "--corrupt")
    if len(clean) != len(corrupt):
        parser.error(f"--clean has {len(clean)} symbols and --corrupt {len(corrupt)}: patching needs the same length")
    longest = max_source_len(model.config.max_len)  # the same rule as every verb and the Playground
    if len(clean) > longest:
        parser.error(f"--clean has {len(clean)} symbols; this model takes at most {longest}")
    checked_source(task, clean, "--clean")
    checked_source(task, corrupt, "--corrupt")
    src_clean, src_corrupt = task.source_ids(clean), task.source_ids(corrupt)
    bar = ProgressBar(patch_rows(model.config, len(src_clean)), sys.stderr)
    try:
        with analysis_refusals():
            result = patch_sources(
                model,
                task,
                clean,
                corrupt,
                ns.position,
                knobs=Knobs(source="--clean and --corrupt"),
                progress=lambda done, _total: bar.count(done, "patched runs"),
            )
    except ValueError as exc:
        parser.error(str(exc))
    finally:
        bar.close()
    out = {
        "position": result.position,
        "clean_token": vocab.token(result.clean_token),
        "corrupt_token": vocab.token(result.corrupt_token),
        "clean_metric": result.clean_metric,
        "corrupt_metric": result.corrupt_metric,
        "heads": [{"kind": h.kind, "layer": h.layer, "head": h.head, "effect": h.effect} for h in result.heads],
        "layers": [{"kind": e.kind, "layer": e.layer, "effect": e.effect} for e in result.layers],
        "positions": result.positions.tolist(),
        "clean_tokens": vocab.tokens(src_clean),
        "corrupt_tokens": vocab.tokens(src_corrupt),
        "task": task.task,
        **trained_fields(trained, len(clean)),
        "path": str(ns.path),
    }
    sys.stdout.write(json_line(out))
    return 0


VERB = Verb(
    "patch",
    "FILE --clean SYMBOLS --corrupt SYMBOLS [--position P] [options]",
    "activation patching: which heads carry the answer from the clean source into the corrupted one",
    add_options,
    run,
)

"""`eval`: greedy exact match of a checkpoint on fresh sequences, per source length, one JSON line out."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from pathlib import Path
from typing import Any

from visualizer.cli.common import ArgumentError, CliError, ProgressBar, Verb, device_arg, load_trained, trained_fields
from visualizer.cli.limits import (
    EVAL_WORK_RULE,
    eval_sources_that_fit,
    eval_work_check,
    exhaustive_check,
    exhaustive_help,
    length_range,
    lengths_help,
    ranged,
)
from visualizer.cli.options import device_option, seed_option, task_option
from visualizer.cli.output import json_line

log = logging.getLogger(__name__)
DEFAULT_N = 1000  # sources per length when --n is not given


def add_options(ev: argparse.ArgumentParser) -> None:
    """The `eval` subcommand's options."""
    ev.add_argument("path", type=Path)
    task_option(ev)
    ev.add_argument(
        "--n",
        **ranged(
            "eval",
            "--n",
            f"number of sequences per length (default {DEFAULT_N}, fewer when a long sweep would pass the cap: "
            f"{EVAL_WORK_RULE})",
        ),
    )
    seed_option(ev, "eval", "seed of the evaluation sequences (default 1234)", 1234)
    ev.add_argument(
        "--lengths",
        metavar="A-B",
        type=length_range,
        help=lengths_help(),
    )
    ev.add_argument(
        "--length", **ranged("eval", "--length", "one source length only, with the teacher-forced loss (older output)")
    )
    ev.add_argument(
        "--repeated",
        action="store_true",
        help='also every one-symbol source ("0000") of each length, or the task\'s hard cases ("999+100") where it '
        "takes none: repeated_per_length",
    )
    ev.add_argument("--exhaustive", **ranged("eval", "--exhaustive", exhaustive_help(), "K"))
    device_option(ev)
    ev.add_argument(
        "--rope-scaling",
        choices=("none", "pi", "ntk"),
        default="none",
        help="stretch a RoPE model past --train-len, to each length evaluated: pi = position "
        "interpolation, ntk = NTK-aware base (docs/MODEL.md: Model options)",
    )
    ev.add_argument(
        "--train-len",
        **ranged("eval", "--train-len", "where --rope-scaling starts (default: the checkpoint's task max_len)"),
    )


def lengths_within(span: tuple[int, int], limit: int) -> list[int]:
    """--lengths (already 1 <= A <= B) as the list A..B; B beyond the model's `limit` is an ArgumentError."""
    low, high = span
    if high > limit:
        raise ArgumentError(f"--lengths goes to {high}, but this model takes sources of at most {limit} symbols")
    return list(range(low, high + 1))


def task_lengths(ns: argparse.Namespace, task: Any, limit: int) -> list[int]:
    """The lengths to evaluate: --length, --lengths or the trained range, each the ones the task takes (addition:
    3, 5, 7, ...); none is an ArgumentError naming the option and the task's rule."""
    from core_model.length_eval import task_lengths as taken

    if ns.length is not None:
        asked, option = [ns.length], f"--length {ns.length}"
    elif ns.lengths is not None:
        asked, option = lengths_within(ns.lengths, limit), f"--lengths {ns.lengths[0]}-{ns.lengths[1]}"
    else:
        asked, option = [n for n in task.lengths() if n <= limit], "the trained lengths"
    lengths = list(taken(task, asked))
    if not lengths:
        raise ArgumentError(f"{option}: no length {task.task} takes ({task.definition.length_rule(task.n_symbols)})")
    return lengths


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Evaluate the checkpoint and print one JSON line; a bad file is a one-line error (exit 1)."""
    from core_model.tasks import max_source_len

    if ns.length is not None and ns.lengths is not None:
        raise ArgumentError("give --length or --lengths, not both")
    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device, ns.task)
    limit = max_source_len(model.config.max_len)
    if task.vocab_size > model.config.vocab_size:
        raise CliError(f"the task needs vocab_size >= {task.vocab_size}, the model has {model.config.vocab_size}")
    ns.hook = _rope_hook(model, task, ns)
    if ns.exhaustive is not None:  # before any work: how many sources K means depends on the checkpoint
        exhaustive_check(ns.exhaustive, len(task.definition.source_alphabet(task.n_symbols)), limit)
    if ns.length is not None and not 1 <= ns.length <= limit:
        parser.error(f"--length must be in [1, {limit}], got {ns.length}")
    lengths = task_lengths(ns, task, limit)
    repeated = _hard_per_length(task, lengths) if ns.repeated and ns.length is None else 0
    ns.n = _sources_per_length(ns.n, lengths, repeated)
    eval_work_check(ns.n, lengths, repeated, one_length=ns.length is not None)  # before any work, as --exhaustive
    start = time.perf_counter()
    if ns.length is not None:
        out = _one_length(model, task, ns, device) | trained_fields(trained, ns.length)
    else:
        out = _per_length(model, task, lengths, ns, device)
        out.update(_source_sets(model, task, lengths, ns), **trained_fields(trained, *lengths))
    out.update(seconds=round(time.perf_counter() - start, 3), device=str(device), path=str(ns.path))
    sys.stdout.write(json_line(out))
    return 0


def _hard_per_length(task: Any, lengths: list[int]) -> int:
    """The most hard sources --repeated decodes at one of `lengths` (every one-symbol source: n_symbols for copy)."""
    from core_model.length_eval import repeated_symbol_sources

    return max(len(repeated_symbol_sources(task, [length])) for length in lengths)


def _sources_per_length(given: int | None, lengths: list[int], repeated: int) -> int:
    """--n as given; without it DEFAULT_N, or as many as keep a long sweep within the cap (said on stderr)."""
    if given is not None:
        return given
    fits = eval_sources_that_fit(lengths, repeated)
    if fits < DEFAULT_N:
        log.warning(
            "decoding %s sources per length instead of %s, to keep lengths %s-%s within eval's cap (%s); give --n to "
            "choose",
            max(fits, 1),
            DEFAULT_N,
            lengths[0],
            lengths[-1],
            EVAL_WORK_RULE,
        )
    return max(1, min(DEFAULT_N, fits))  # below 1, eval_work_check refuses the lengths themselves


def _one_length(model: Any, task: Any, ns: argparse.Namespace, device: Any) -> dict[str, Any]:
    from core_model.training import evaluate

    with ns.hook(model, ns.length) if ns.hook is not None else contextlib.nullcontext():
        result = evaluate(model, task, n=ns.n, length=ns.length, seed=ns.seed, device=device)
    return {
        "rope_scaling": ns.rope_scaling,
        "exact_match": result.exact_match,
        "token_accuracy": result.token_accuracy,
        "loss": result.loss,
        "n": result.n,
        "task": task.task,
        "length": ns.length,
        "seed": ns.seed,
    }


def _per_length(model: Any, task: Any, lengths: list[int], ns: argparse.Namespace, device: Any) -> dict[str, Any]:
    from core_model.length_eval import evaluate_lengths

    bar = ProgressBar(len(lengths) * ns.n, sys.stderr, quiet_start=True)  # a long sweep says how far it is
    sweep = evaluate_lengths(
        model,
        task,
        lengths,
        n=ns.n,
        seed=ns.seed,
        device=device,
        position_scaling=ns.hook,
        progress=lambda done, _total: bar.count(done, "sources"),
    )
    bar.close()
    results = list(sweep.per_length.values())
    return {
        "rope_scaling": ns.rope_scaling,
        "per_length": {str(r.length): r.exact_match for r in results},
        "token_accuracy_per_length": {str(r.length): r.token_accuracy for r in results},
        "exact_match": sum(r.exact_match for r in results) / len(results),  # every length weighs the same
        "worst_length": min(results, key=lambda r: r.exact_match).length,
        "lengths": lengths,
        "n": ns.n,
        "seed": ns.seed,
        "task": task.task,
    }


def _rope_hook(model: Any, task: Any, ns: argparse.Namespace) -> Any:
    """evaluate_lengths' position_scaling for --rope-scaling (None for none); a model without RoPE is exit 2."""
    from core_model.length_curves import rope_length_scaling

    if ns.rope_scaling != "none" and model.config.positional != "rope":
        raise ArgumentError(
            f"--rope-scaling {ns.rope_scaling} needs a RoPE model; {ns.path.name} uses "
            f"{model.config.positional} positional encoding"
        )
    return rope_length_scaling(model, ns.rope_scaling, ns.train_len or task.max_len)


def _source_sets(model: Any, task: Any, lengths: list[int], ns: argparse.Namespace) -> dict[str, Any]:
    """--repeated and --exhaustive: exact match on fixed sets of sources, with the first few wrong ones as text."""
    from core_model.length_eval import exhaustive_sources, repeated_symbol_sources, wrong_sources

    out: dict[str, Any] = {}
    vocab = task.vocabulary
    if ns.repeated:
        per = {}
        for length in lengths:
            sources = repeated_symbol_sources(task, [length])
            per[str(length)] = 1 - len(wrong_sources(model, task, sources)) / len(sources)
        out["repeated_per_length"] = per
    if ns.exhaustive is not None:  # K and the number of sources were checked in run
        sources = exhaustive_sources(task, ns.exhaustive)
        wrong = wrong_sources(model, task, sources)
        out["exhaustive"] = {
            "max_len": ns.exhaustive,
            "sources": len(sources),
            "exact_match": 1 - len(wrong) / len(sources),
            "wrong_examples": [f"{vocab.decode(s)} -> {vocab.decode(o)}" for s, o in wrong[:5]],
        }
    return out


VERB = Verb(
    "eval",
    "FILE [--lengths A-B] [--rope-scaling none|pi|ntk] [options]",
    "greedy exact match of a checkpoint per source length (beyond the trained range, with RoPE scaling)",
    add_options,
    run,
)

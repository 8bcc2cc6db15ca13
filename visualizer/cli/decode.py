"""`decode`: beam search or sampling of one source with a checkpoint, one JSON line out.

`beams` lists {"tokens", "log_prob", "finished"} best first: tokens after <bos>, ending in <eos> when produced,
chosen among `choices` (the task symbols and <eos>); log_prob is the sum of the model's log-probabilities of those
tokens (softmax over its whole vocabulary: never tempered, filtered or renormalised; `scoring` says so in the JSON),
so it equals a teacher-forced pass. With --tree (beam search only), `tree` lists every node beam search expanded
({"parent", "token", "step", "log_prob", "score", "kept"}; parent -1 is <bos>).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.common import ArgumentError, Verb, checked_source, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import device_option, seed_option
from visualizer.cli.output import json_line

SAMPLING_FLAGS = ("temperature", "top_k", "top_p", "seed", "samples")
DEFAULT_SEED = 0
SCORING = (
    "log_prob: sum of the model's log p(token | source, tokens before), softmax over its whole vocabulary; "
    "untempered, unfiltered, not renormalised over the choices, so equal to a teacher-forced pass"
)


def add_options(dec: argparse.ArgumentParser) -> None:
    """The `decode` subcommand's options."""
    dec.add_argument("path", type=Path, help="checkpoint file")
    dec.add_argument("source", help="source symbols, e.g. 0123 (spaces ignored)")
    dec.add_argument(
        "--beam", **ranged("decode", "--beam", "beam width K (default 1: greedy); not with sampling options", "K")
    )
    dec.add_argument(
        "--temperature", **ranged("decode", "--temperature", "sampling: divide log-probs by T (default 1)", "T")
    )
    dec.add_argument("--top-k", **ranged("decode", "--top-k", "sampling: keep the K most likely tokens", "K"))
    dec.add_argument(
        "--top-p", **ranged("decode", "--top-p", "sampling: keep the smallest set with probability >= P", "P")
    )
    seed_option(dec, "decode", f"sampling: seed of the torch.Generator (default {DEFAULT_SEED}); not with --beam")
    dec.add_argument("--samples", **ranged("decode", "--samples", "sampling: number of samples (default 1)"))
    dec.add_argument(
        "--max-new", **ranged("decode", "--max-new", "most tokens to generate (default: the model's limit)")
    )
    dec.add_argument(
        "--pads", default=0, **ranged("decode", "--pads", "<pad> tokens appended to the source (the GUI's padding)")
    )
    device_option(dec)
    dec.add_argument("--tree", action="store_true", help="beam search: also print every expanded node (the GUI's tree)")


def _check_numbers(ns: argparse.Namespace) -> bool:
    """Validate the options; returns True for sampling, False for beam search."""
    sampling = any(getattr(ns, name) is not None for name in SAMPLING_FLAGS)
    if sampling and ns.beam is not None:
        raise ArgumentError("--beam is beam search; --temperature/--top-k/--top-p/--seed/--samples sample: choose one")
    return sampling  # each number is within its range already (cli/limits.py)


def _source_ids(ns: argparse.Namespace, task: Any, limit: int) -> list[int]:
    """SOURCE's symbol ids; ArgumentError (exit 2) when a symbol is unknown, it is empty or too long, or the task does
    not take it (its rule named)."""
    from core_model import VocabularyError

    try:
        ids = task.vocabulary.encode(ns.source)
    except VocabularyError as exc:
        raise ArgumentError(f"SOURCE: {exc.counted_from_one()}") from None
    if not ids:
        raise ArgumentError("SOURCE is empty: give at least one symbol")
    if len(ids) + ns.pads > limit:
        raise ArgumentError(f"SOURCE has {len(ids)} symbols and {ns.pads} pads; this model takes at most {limit}")
    return checked_source(task, ids, "SOURCE")


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Decode and print one JSON line; bad symbols or options are one line on stderr (exit 2)."""
    import torch

    from core_model import EOS
    from core_model.beam_search import beam_search
    from core_model.inputs import encoder_input
    from core_model.sampling import SamplingConfig, sample_decode
    from core_model.tasks import expected_output, max_source_len

    sampling = _check_numbers(ns)
    if sampling and ns.tree:
        raise ArgumentError(
            "--tree lists beam search's expanded nodes; samples have none: drop --tree or the sampling options"
        )
    # the options' ranges (cli/limits.py) lie inside SamplingConfig's, so the values parsed always make a config
    config = SamplingConfig(1.0 if ns.temperature is None else ns.temperature, ns.top_k, ns.top_p) if sampling else None
    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device)
    vocab = task.vocabulary
    ids = _source_ids(ns, task, max_source_len(model.config.max_len))
    src = torch.tensor([encoder_input(ids, ns.pads, anchored=task.anchored)], dtype=torch.long, device=device)
    out: dict[str, Any] = {
        "source": vocab.tokens(ids),
        "pads": ns.pads,
        "task": task.task,
        "expected": vocab.tokens(expected_output(task, ids)) + ["<eos>"],
        **trained_fields(trained, len(ids)),
    }
    if config is not None:  # sampling
        seed = DEFAULT_SEED if ns.seed is None else ns.seed
        gen = torch.Generator(device=device).manual_seed(seed)
        hyps = sample_decode(model, src, ns.samples or 1, config, gen, ns.max_new, n_tokens=len(vocab))
        hyps = tuple(sorted(hyps, key=lambda h: -h.log_prob))
        out.update(mode="sample", temperature=config.temperature, top_k=config.top_k, top_p=config.top_p, seed=seed)
    else:
        result = beam_search(model, src, ns.beam or 1, ns.max_new, n_tokens=len(vocab))
        hyps = result.hypotheses
        out.update(mode="beam", beam=ns.beam or 1)
        if ns.tree:
            out["tree"] = [
                {
                    "parent": n.parent,
                    "token": vocab.token(n.token),
                    "step": n.step,
                    "log_prob": n.log_prob,
                    "score": n.score,
                    "kept": n.kept,
                }
                for n in result.nodes
            ]
    out.update(choices=vocab.tokens([*vocab.symbol_ids, EOS]), scoring=SCORING)
    out["beams"] = [{"tokens": vocab.tokens(h.tokens), "log_prob": h.log_prob, "finished": h.finished} for h in hyps]
    out.update(device=str(device), path=str(ns.path))
    sys.stdout.write(json_line(out))
    return 0


VERB = Verb(
    "decode",
    "FILE SOURCE [--beam K | --temperature T --top-k K --top-p P --seed S] [options]",
    "beam search or sampling of one source: every hypothesis with its log-probability",
    add_options,
    run,
)

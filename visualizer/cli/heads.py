"""`heads`: every head's role (scored against the task's answer) and importance (single-head ablation), one JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visualizer.cli.budget import attention_weights, check_budget, lower_to
from visualizer.cli.common import CliError, Verb, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import device_option, seed_option, task_option
from visualizer.cli.output import json_line


def add_options(hd: argparse.ArgumentParser) -> None:
    """The `heads` subcommand's options."""
    hd.add_argument("path", type=Path)
    task_option(hd)
    hd.add_argument("--n", default=200, **ranged("heads", "--n", "number of task sequences (default 200)"))
    seed_option(hd, "heads", "seed of the task sequences (default 1234)", 1234)
    device_option(hd, "cpu, so numbers match the app's")


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Analyse the checkpoint's heads and print one JSON line; a bad file is a one-line error (exit 1)."""
    from core_model.head_importance import analyse_heads

    device = device_arg(ns.device or "cpu")
    model, task, trained = load_trained(ns.path, device, ns.task)
    try:
        task.check_vocab(model.config.vocab_size)
        task.check_fits(model.config.max_len)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    src_len = task.max_len + 2  # <bos> ... <eos> at most
    tgt_len = task.longest_target() + 1  # the decoder reads <bos>, then the longest expected output
    one = attention_weights(model.config, 1, src_len, tgt_len)
    hint = lower_to("--n", one) or "not even one sequence of this task's longest length fits one command"
    check_budget(ns.n * one, f"--n {ns.n} on sources of up to {task.max_len} symbols", hint)
    analysis = analyse_heads(model, task, n=ns.n, seed=ns.seed, device=device)
    lengths = task.lengths()  # the sources analysed
    sys.stdout.write(json_line(analysis.to_dict() | trained_fields(trained, *lengths)))
    return 0


VERB = Verb(
    "heads",
    "FILE [--task T] [--n N] [--seed S] [options]",
    "each attention head's role and importance (ablation), one JSON object",
    add_options,
    run,
)

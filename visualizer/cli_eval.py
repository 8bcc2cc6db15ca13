"""`eval`: greedy exact match of a checkpoint on fresh sequences, one JSON line out."""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from visualizer.cli_common import CliError, device_arg
from visualizer.cli_output import json_line


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The `eval` subcommand's options."""
    ev = sub.add_parser("eval", help="greedy exact match of a checkpoint on fresh sequences")
    ev.add_argument("path", type=Path)
    ev.add_argument("--task", choices=("copy", "reverse", "sort"), help="default: the task stored in the checkpoint")
    ev.add_argument("--n", type=int, default=1000, help="number of sequences")
    ev.add_argument("--seed", type=int, default=1234, help="seed of the evaluation sequences")
    ev.add_argument("--length", type=int, help="source length (default: the task's max_len)")
    ev.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: best available)")
    return ev


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Evaluate the checkpoint and print one JSON line; a bad file is a one-line error (exit 1)."""
    from core_model.checkpoint import CheckpointError, load_checkpoint
    from core_model.tasks import max_source_len
    from core_model.training import evaluate

    if ns.n < 1:
        parser.error(f"--n must be >= 1, got {ns.n}")
    device = device_arg(ns.device)
    try:
        ckpt = load_checkpoint(ns.path)
        model = ckpt.build(device)
        task = ckpt.task
    except CheckpointError as exc:
        raise CliError(str(exc)) from None
    if ns.task is not None:
        task = replace(task, task=ns.task)
    length = task.max_len if ns.length is None else ns.length
    if not 1 <= length <= max_source_len(model.config.max_len):
        parser.error(f"--length must be in [1, {max_source_len(model.config.max_len)}], got {length}")
    if task.vocab_size > model.config.vocab_size:
        raise CliError(f"the task needs vocab_size >= {task.vocab_size}, the model has {model.config.vocab_size}")
    start = time.perf_counter()
    result = evaluate(model, task, n=ns.n, length=length, seed=ns.seed, device=device)
    out = {"exact_match": result.exact_match, "token_accuracy": result.token_accuracy, "loss": result.loss,
           "n": result.n, "task": task.task, "length": length, "seed": ns.seed,
           "seconds": round(time.perf_counter() - start, 3), "device": str(device), "path": str(ns.path)}
    sys.stdout.write(json_line(out))
    return 0

"""`heads`: every head's role (scored against the task's answer) and importance (single-head ablation), one JSON."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli_common import CliError, device_arg, load_trained, trained_fields
from visualizer.cli_limits import device_option, ranged, threads_option
from visualizer.cli_output import json_line


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The `heads` subcommand's options."""
    hd = sub.add_parser("heads", help="role and ablation importance of every attention head")
    hd.add_argument("path", type=Path)
    hd.add_argument("--task", choices=("copy", "reverse", "sort"), help="default: the task stored in the checkpoint")
    hd.add_argument("--n", default=200, **ranged("heads", "--n", "number of task sequences (default 200)"))
    hd.add_argument("--seed", default=1234, **ranged("heads", "--seed", "seed of the task sequences (default 1234)"))
    device_option(hd, "cpu, so numbers match the app's")
    threads_option(hd, "heads")
    hd.add_argument("--json", action="store_true", help="print one JSON object (the only output format)")
    return hd


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
    analysis = analyse_heads(model, task, n=ns.n, seed=ns.seed, device=device)
    lengths = range(task.min_len, task.max_len + 1)  # the sources analysed
    sys.stdout.write(json_line(analysis.to_dict() | trained_fields(trained, *lengths)))
    return 0

"""The options every verb spells the same way (--json, --device, --seed, --threads, --task), and each verb's parser.

`verb_parser` builds a verb's sub-parser from its registry entry and adds --json and --threads, which mean the same
in every verb; each verb adds its own --device and --seed, whose defaults and meaning differ, through the helpers
here. --task takes every task of the registry (the `tasks` verb lists them); their names are written out (importing
core_model would import torch before parsing), and tests hold them equal to core_model.tasks.TASK_NAMES.
"""

from __future__ import annotations

import argparse
from typing import Any

from visualizer.cli.common import Verb
from visualizer.cli.limits import device_name, ranged

TASK_CHOICES = (  # core_model.tasks.TASK_NAMES, in its order, torch-free here
    "copy",
    "reverse",
    "sort",
    "rotate1",
    "rotate2",
    "interleave",
    "copy_memory",
    "dedupe",
    "histogram",
    "most_frequent",
    "addition",
    "running_sum",
    "recall",
    "dyck_depth",
)
JSON_HELP = "print one JSON object on one line (every verb's only output format; accepted by every verb)"


def verb_parser(sub: Any, verb: Verb) -> argparse.ArgumentParser:
    """`verb`'s sub-parser: its summary as help, its own options, then the options every verb shares."""
    parser = sub.add_parser(verb.name, help=verb.summary, description=verb.summary)
    verb.add_options(parser)
    parser.add_argument("--json", action="store_true", help=verb.json_help or JSON_HELP)
    threads_option(parser, verb.name)
    return parser


def threads_option(parser: argparse.ArgumentParser, verb: str) -> None:
    """--threads for a verb that runs torch: one thread unless told (the CLI applies it before any work)."""
    parser.add_argument(
        "--threads",
        default=1,
        **ranged(
            verb,
            "--threads",
            "CPU threads for torch (default 1: toy models gain nothing from more, and a busy machine "
            "makes several threads wait on each other)",
        ),
    )


def device_option(parser: argparse.ArgumentParser, default_text: str = "best available") -> None:
    """--device for a verb; availability is checked when the verb runs (common.device_arg)."""
    parser.add_argument("--device", type=device_name, help=f"cpu, cuda, cuda:N or mps (default: {default_text})")


def seed_option(parser: argparse.ArgumentParser, verb: str, text: str, default: int | None = None) -> None:
    """--seed with its range (0 to 2**32 - 1); `text` says what the seed draws, or that the verb draws nothing."""
    parser.add_argument("--seed", default=default, **ranged(verb, "--seed", text))


def deterministic_seed_option(parser: argparse.ArgumentParser, verb: str) -> None:
    """--seed for a verb that draws nothing at random: accepted so every verb takes the same options, and ignored."""
    seed_option(
        parser, verb, f"accepted for uniformity; {verb} draws nothing at random, so every seed gives the same output"
    )


def task_option(
    parser: argparse.ArgumentParser, text: str = "default: the task stored in the checkpoint", required: bool = False
) -> None:
    """--task, one of the registry's tasks."""
    parser.add_argument("--task", choices=TASK_CHOICES, required=required, help=text)

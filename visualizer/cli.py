"""The headless verbs' dispatcher: each verb is a module with `add_parser(subparsers)` and `run(ns, parser)`.

To add a verb, write `visualizer/cli_<verb>.py` with those two functions and list it in VERBS (and in
`visualizer/__main__.py`'s VERBS and usage). Every number an option takes has its range in cli_limits. No verb
imports Qt; torch is imported once parsing has succeeded.
"""
from __future__ import annotations

import argparse
import sys
from types import ModuleType

from visualizer import cli_cell, cli_decode, cli_eval, cli_heads, cli_train, cli_views
from visualizer.cli_common import PROG, ArgumentError, CliError, OneLineParser, printable

VERBS: dict[str, ModuleType] = {"train": cli_train, "eval": cli_eval, "views": cli_views, "decode": cli_decode,
                                "heads": cli_heads, "cell": cli_cell}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top parser and each verb's parser, all with one-line errors."""
    parser = OneLineParser(prog=PROG, description="Train, evaluate or analyse a model without a window.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    return parser, {name: module.add_parser(sub) for name, module in VERBS.items()}


def main(args: list[str]) -> int:
    """Run one verb; returns 0 ok, 1 on divergence or I/O errors, 2 on bad arguments."""
    parser, parsers = build_parser()
    prog = PROG  # whose --help the hint names
    try:
        ns, extra = parser.parse_known_args(args)
        if extra:  # reported by the verb's parser, so the hint names the verb's --help
            parsers[ns.command].error(f"unrecognized arguments: {' '.join(extra)}")
        prog = parsers[ns.command].prog
        _use_threads(ns.threads)
        return VERBS[ns.command].run(ns, parsers[ns.command])
    except SystemExit as exc:  # argparse: 2 for bad arguments, 0 for --help
        return exc.code if isinstance(exc.code, int) else 2
    except CliError as exc:
        sys.stderr.write(f"{PROG}: error: {printable(str(exc))}\n")
        return 1
    except ArgumentError as exc:  # found once the verb ran, e.g. a source longer than the model takes
        sys.stderr.write(f"{PROG}: error: {printable(str(exc))} (see '{prog} --help')\n")
        return 2


def _use_threads(threads: int) -> None:
    """torch's CPU threads for the whole command (--threads, already within its range), set before any work."""
    import torch

    torch.set_num_threads(threads)

"""The headless verbs' dispatcher: each verb is a module with `add_parser(subparsers)` and `run(ns, parser)`.

To add a verb, write `visualizer/cli_<verb>.py` with those two functions and list it in VERBS (and in
`visualizer/__main__.py`'s VERBS and usage). No verb imports Qt; torch is imported inside `run`.
"""
from __future__ import annotations

import argparse
import sys
from types import ModuleType

from visualizer import cli_cell, cli_decode, cli_eval, cli_heads, cli_train, cli_views
from visualizer.cli_common import PROG, ArgumentError, CliError

VERBS: dict[str, ModuleType] = {"train": cli_train, "eval": cli_eval, "views": cli_views, "decode": cli_decode,
                                "heads": cli_heads, "cell": cli_cell}


def main(args: list[str]) -> int:
    """Run one verb; returns 0 ok, 1 on divergence or I/O errors, 2 on bad arguments."""
    parser = argparse.ArgumentParser(prog=PROG, description="Train, evaluate or analyse a model without a window.")
    sub = parser.add_subparsers(dest="command", required=True)
    parsers = {name: module.add_parser(sub) for name, module in VERBS.items()}
    try:
        ns = parser.parse_args(args)
        return VERBS[ns.command].run(ns, parsers[ns.command])
    except SystemExit as exc:  # argparse: 2 for bad arguments, 0 for --help
        return exc.code if isinstance(exc.code, int) else 2
    except CliError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    except ArgumentError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2

"""Entry point: `attention-playground` opens the window; `attention-playground train|eval ...` runs headless."""
from __future__ import annotations

import difflib
import os
import sys

VERBS = ("train", "eval", "views", "decode", "heads", "cell")
HELP_FLAGS = ("-h", "--help")
VERSION_FLAGS = ("-V", "--version")
USAGE = """usage: attention-playground [Qt options]          open the window
       attention-playground --version             print the version and exit
       attention-playground train --task TASK --out FILE [options]
       attention-playground eval FILE [--lengths A-B] [--rope-scaling none|pi|ntk] [--json] [options]
       attention-playground views FILE --source TEXT [--mode weights|scores|norms|rollout]
       attention-playground decode FILE SOURCE [--beam K | --temperature T --top-k K --top-p P --seed S] --json
       attention-playground heads FILE [--task T] [--n N] [--seed S] --json
       attention-playground cell FILE SOURCE --kind KIND --query I --key J [options]

Headless commands (no window, no display needed):
  train   train a model on a toy task and save a checkpoint
  eval    greedy exact match of a checkpoint per source length (beyond the trained range, with RoPE scaling)
  views   one input's attention maps: weights, scores, norm-weighted or rollout
  decode  beam search or sampling of one source: every hypothesis with its log-probability
  heads   each attention head's role and importance (ablation), one JSON object
  cell    one attention cell taken apart: q, k, q*k, scaling, mask, softmax, weighted values
Run `attention-playground VERB --help` (e.g. `decode --help`) for a verb's options and the range of each number;
each verb prints one JSON object.
Options starting with '-' (e.g. -platform offscreen, -style fusion) go to Qt when the window opens.
"""


def main(argv: list[str] | None = None) -> int:
    """Dispatch before importing Qt so headless commands, --help and typos never need a display."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in VERBS:
        from visualizer.cli import main as cli_main

        return cli_main(args)
    if any(arg in HELP_FLAGS for arg in args):
        sys.stdout.write(USAGE)
        return 0
    if any(arg in VERSION_FLAGS for arg in args):
        sys.stdout.write(f"attention-playground {version()}\n")
        return 0
    if args and not args[0].startswith("-"):  # a word that is not a verb nor an option: a mistyped command
        return _unknown_command(args[0])
    from visualizer.display_check import missing_display

    if problem := missing_display(args, os.environ):  # else Qt aborts, blaming the xcb-cursor library
        sys.stderr.write(problem + "\n")
        return 1
    from visualizer.app import run_app

    return run_app(args)


def version() -> str:
    """The installed distribution's version; "unknown" when run from a tree that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("attention-playground")
    except PackageNotFoundError:
        return "unknown"


def _unknown_command(word: str) -> int:
    """One line on stderr naming the closest verb when there is one, and where the usage is; exit status 2."""
    close = difflib.get_close_matches(word, VERBS, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"choose from {', '.join(map(repr, VERBS))}"
    sys.stderr.write(f"attention-playground: error: unknown command {word[:60]!r}: {hint} "
                     "(see 'attention-playground --help')\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())

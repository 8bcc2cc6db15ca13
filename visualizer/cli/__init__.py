"""The headless verbs (`attention-playground VERB ...`): the one registry of verbs, and the dispatcher.

To add a verb, write `visualizer/cli/<verb>.py` with `add_options(parser)`, `run(ns, parser)` and a `VERB` record
(common.Verb: name, usage synopsis, one-line summary), and list its VERB in VERBS below: the top-level usage, the
parser and the "did you mean" answer to a mistyped verb all come from VERBS. Every number an option takes has its
range in limits; --json, --device, --seed and --threads are spelled the same in every verb (options). No verb
imports Qt; torch is imported once parsing has succeeded.
"""

from __future__ import annotations

import argparse
import logging
import sys

from visualizer.cli import attribute, cell, circuits, decode, evaluate, heads, lens, page, patch, tasks, train, views
from visualizer.cli.common import PROG, ArgumentError, CliError, Interrupted, OneLineParser, Verb
from visualizer.cli.options import verb_parser
from visualizer.cli.top_help import unknown_verb, usage_for
from visualizer.headless.interrupts import INTERRUPTED, said_for
from visualizer.state.failures import first_line, printable

log = logging.getLogger(__name__)
OUT_OF_MEMORY = "try smaller numbers (sequences, batch, source length, pads, IG steps)"

VERBS: dict[str, Verb] = {
    verb.name: verb
    for verb in (
        train.VERB,
        evaluate.VERB,
        views.VERB,
        decode.VERB,
        heads.VERB,
        cell.VERB,
        patch.VERB,
        lens.VERB,
        attribute.VERB,
        circuits.VERB,
        page.VERB,
        tasks.VERB,
    )
}

__all__ = ["VERBS", "build_parser", "main", "usage"]


def usage() -> str:
    """The top-level usage (`attention-playground --help`) for the verbs registered now."""
    return usage_for(VERBS)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top parser and each verb's parser, all with one-line errors."""
    parser = OneLineParser(prog=PROG, description="Train, evaluate or analyse a model without a window.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    return parser, {name: verb_parser(sub, verb) for name, verb in VERBS.items()}


def main(args: list[str]) -> int:
    """Run one verb; returns 0 ok, 1 on divergence or I/O errors, 2 on bad arguments or an unknown verb, 130 when a
    quit signal (Ctrl+C, SIGTERM, SIGHUP) ended it."""
    if args and not args[0].startswith("-") and args[0] not in VERBS:
        sys.stderr.write(unknown_verb(args[0], VERBS) + "\n")
        return 2
    _warnings_to_stderr()
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
    except Interrupted as exc:
        return _say(f"interrupted{f' ({exc.said})' if exc.said else ''}: {exc}", INTERRUPTED)
    except KeyboardInterrupt as exc:  # Ctrl+C, or SIGTERM / SIGHUP as the entry point's QuitOnSignals raises them
        return _say(f"interrupted ({said_for(exc)}): nothing was written", INTERRUPTED)
    except CliError as exc:
        return _say(f"error: {exc}", 1)
    except ArgumentError as exc:  # found once the verb ran, e.g. a source longer than the model takes
        return _say(f"error: {exc} (see '{prog} --help')", 2)
    except MemoryError:
        return _say(f"error: out of memory: {OUT_OF_MEMORY}", 1)
    except Exception as exc:  # noqa: BLE001 - any other failure is one line too, never a traceback
        log.debug("%s failed", args[:1], exc_info=True)
        line = first_line(exc)
        hint = f": {OUT_OF_MEMORY}" if "allocate" in line.lower() else ""  # torch's CPU allocator says "can't allocate"
        return _say(f"error: {line}{hint}", 1)


class _WarningLine(logging.Formatter):
    """A warning as one line like the errors, control characters escaped: a file's name may carry escape codes."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{PROG}: warning: {printable(record.getMessage())}"


def _warnings_to_stderr() -> None:
    """Warnings the verbs log (a stored recipe not used, ...) go to stderr escaped, unless logging is set up."""
    root = logging.getLogger()
    if not root.handlers:  # else Python's last-resort handler writes them raw
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(_WarningLine())
        root.addHandler(handler)


def _say(text: str, status: int) -> int:
    """One line on stderr, control characters escaped; the exit status."""
    try:
        sys.stderr.write(f"{PROG}: {printable(text)}\n")
    except OSError:
        pass  # stderr itself is gone: the status still says what happened
    return status


def _use_threads(threads: int) -> None:
    """torch's CPU threads for the whole command (--threads, already within its range), set before any work."""
    import torch

    torch.set_num_threads(threads)

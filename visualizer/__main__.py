"""Entry point: `attention-playground` opens the window; `attention-playground VERB ...` runs headless."""

from __future__ import annotations

import os
import sys

HELP_FLAGS = ("-h", "--help")
VERSION_FLAGS = ("-V", "--version")


def main(argv: list[str] | None = None) -> int:
    """Dispatch before importing Qt so headless commands, --help and typos never need a display."""
    args = list(sys.argv[1:] if argv is None else argv)
    word = args[0] if args and not args[0].startswith("-") else None  # a verb, or a mistyped one
    if word is not None and (status := _headless(args, whole_process=argv is None)) is not None:
        return status
    if any(arg in HELP_FLAGS for arg in args):
        sys.stdout.write(_cli().usage())
        return 0
    if any(arg in VERSION_FLAGS for arg in args):
        sys.stdout.write(f"attention-playground {version()}\n")
        return 0
    if word is not None:  # a word that is not a verb nor an option: the CLI names the closest verb
        return _cli().main(args)
    from visualizer.display_check import missing_display

    if problem := missing_display(args, os.environ):  # else Qt aborts, blaming the xcb-cursor library
        sys.stderr.write(problem + "\n")
        return 1
    from visualizer.app import run_app

    return run_app(args)


def _headless(args: list[str], whole_process: bool) -> int | None:
    """The verb args[0] names, with the quit signals taken first; None when args[0] is no verb.

    SIGINT, SIGTERM and SIGHUP raise QuitSignal from before the CLI's modules load until the verb returns, so each
    ends the command with one line and status 130 whenever it comes; the CLI reports those that reach it, and this
    reports those that come before it starts. whole_process (the command line's own entry point): the handlers stay
    while the interpreter exits, ignoring later signals, so the verb's status stands; else they are given back.
    """
    from visualizer.headless.interrupts import QuitOnSignals, said_for, say_interrupted

    quits = QuitOnSignals().install()
    try:
        try:
            status = _cli().main(args) if args[0] in _cli().VERBS else None
        finally:
            quits.finished = True  # from here a signal changes nothing: the verb's status stands
            if not whole_process:
                quits.restore()
    except KeyboardInterrupt as exc:
        return say_interrupted(said_for(exc))
    return status


def _cli():
    """The headless CLI package (argparse only: no Qt, no torch), imported only when a command line needs it."""
    import visualizer.cli

    return visualizer.cli


def version() -> str:
    """The installed distribution's version; "unknown" when run from a tree that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("attention-playground")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())

"""Entry point: `attention-playground` opens the window; `attention-playground train|eval ...` runs headless."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch before importing Qt so the headless commands never need a display."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("train", "eval"):
        from visualizer.cli import main as cli_main

        return cli_main(args)
    from visualizer.app import run_app

    return run_app(args)


if __name__ == "__main__":
    sys.exit(main())

"""Render the real window to a PNG, for the README and for looking at the app as a person would.

Run under a display, e.g.:  xvfb-run -a -s "-screen 0 1600x1000x24" python resources/make_screenshot.py OUT.png
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--source", default="3141592653")
    parser.add_argument("--steps", type=int, default=4, help="decoder steps to take before the shot")
    parser.add_argument("--tab", default="cross", choices=["encoder_self", "decoder_self", "cross"])
    parser.add_argument("--page", type=int, default=0, help="main tab index (0 playground, 1 PE, 2 trainer)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from visualizer.app import make_application
    from visualizer.composition import Application

    app = make_application([])
    root = Application()
    window = root.window
    window.resize(1500, 940)
    window.show()
    root.start_loading()
    deadline = time.monotonic() + 60
    while root.hub is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    if root.hub is None:
        raise SystemExit("the model did not load within 60 s")
    field = root.playground.input_panel.source
    field.setText(args.source)
    field.textEdited.emit(args.source)
    for _ in range(args.steps):
        root.session.step()
    root.playground.grid_tabs.setCurrentWidget(root.playground.grids[args.tab])
    window.tabs.setCurrentIndex(args.page)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.02)
    shot = window.screen().grabWindow(window.winId())
    if shot.isNull():
        shot = window.grab()
    shot.save(str(args.out))
    root.hub.dirty = False
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())

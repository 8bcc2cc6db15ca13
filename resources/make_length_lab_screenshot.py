"""Render the app on its Length lab tab after it evaluated the shipped pair, one length clicked (the docs figure).

Run under a display, e.g.:
    xvfb-run -a -s "-screen 0 1920x1080x24" python resources/make_length_lab_screenshot.py OUT.png
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1400x880", help="window size WxH")
    parser.add_argument("--scaling", default="none", choices=("none", "pi", "ntk"))
    parser.add_argument("--n", type=int, default=100, help="sources per length")
    parser.add_argument("--length", type=int, default=24, help="the length clicked")
    parser.add_argument("--source", default="random", choices=("random", "repeated"))
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from visualizer.app import make_application
    from visualizer.composition import Application

    app = make_application([])
    root = Application()
    width, height = (int(v) for v in args.size.split("x"))
    root.window.resize(width, height)
    root.window.show()
    root.start_loading()

    def pump(done, limit: float) -> None:
        end = time.monotonic() + limit
        while not done() and time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    pump(lambda: getattr(root, "length_lab", None) is not None, 90)
    lab, tab = root.length_lab, root.length_lab_tab
    tab.n_spin.setValue(args.n)
    tab.scaling_combo.setCurrentIndex(tab.scaling_combo.findData(args.scaling))
    root.window.tabs.setCurrentWidget(tab)  # the first show evaluates the shipped pair
    pump(lambda: lab.busy, 10)
    pump(lambda: not lab.busy, 900)
    tab.kind_combo.setCurrentIndex(tab.kind_combo.findData(args.source))
    tab._on_length(args.length)  # as a click on the plot at that length
    pump(lambda: lab.probe is not None and lab.probe.length == args.length and lab.probe.kind == args.source, 60)
    for _ in range(30):
        app.processEvents()
        time.sleep(0.02)
    root.window.statusBar().clearMessage()  # start-up messages are about the playground's model, not the lab
    root.window.grab().save(str(args.out))
    lab.shutdown()
    root.hub.dirty = False
    root.window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())

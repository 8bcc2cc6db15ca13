"""Create the QApplication and show the window at once; the model loads behind it."""
from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

ORG, APP = "AttentionPlayground", "Attention Playground"


def make_application(argv: list[str] | None = None) -> QApplication:
    """The one QApplication, named so QSettings finds the user's preferences."""
    QCoreApplication.setOrganizationName(ORG)
    QCoreApplication.setApplicationName(APP)
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    return app  # type: ignore[return-value]


def run_app(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = make_application(argv)
    from visualizer.composition import Application  # Qt only here: torch loads in the background after first paint
    from visualizer.startup_probe import install_if_requested

    root = Application()
    probe = install_if_requested(root.window, root.ready)  # benchmark hook, inert unless its variable is set
    root.window.show()
    root.start_loading()
    code = app.exec()
    del probe
    return code

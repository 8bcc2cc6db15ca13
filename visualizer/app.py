"""Create the QApplication and show the window at once; the model loads behind it."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from visualizer.quit_signals import signals_quit_via
from visualizer.state.failures import PrintableFormatter
from visualizer.workers.gc_policy import GcHold, freeze_long_lived

if TYPE_CHECKING:
    from visualizer.composition import Application
    from visualizer.startup_probe import StartupProbe

log = logging.getLogger(__name__)
ORG, APP = "AttentionPlayground", "Attention Playground"
_startup_hold: GcHold | None = None  # the collector's pause from launch until the model is ready


def make_application(argv: list[str] | None = None) -> QApplication:
    """The one QApplication, named so QSettings finds the user's preferences."""
    QCoreApplication.setOrganizationName(ORG)
    QCoreApplication.setApplicationName(APP)
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    return app  # type: ignore[return-value]


def pause_gc_for_startup() -> None:
    """No garbage collection from launch until the model is ready: while torch, Qt and the tabs load, the collector
    would run hundreds of times, full passes over everything loaded so far among them, a visible share of launch to
    model ready (bench: start-up), for little: `keep_startup_objects_out_of_gc` (ready) or `resume_gc` (a failed
    start) turns it back on. The price: what start-up threw away in reference cycles (small objects: functions,
    cells, tuples, no tensors) is frozen with the rest and never freed; collecting it at ready would stall the
    window instead."""
    global _startup_hold
    resume_gc()  # a second launch in one process (tests) ends the first one's hold rather than orphaning it
    _startup_hold = GcHold()


def resume_gc(_message: str = "") -> None:
    if _startup_hold is not None:
        _startup_hold.end()


def keep_startup_objects_out_of_gc() -> None:
    """Move every object alive once the model is ready (torch, Qt, the model: hundreds of thousands tracked) out of
    the collector's reach, then collect as usual.

    They live as long as the app, yet each full collection walked them all: a stall of the GUI thread whenever one
    came, mid-keystroke or mid-training (QT-NOTES.md). Frozen, they cost a full collection nothing (bench:
    full_gc_ms). Frozen with them: start-up's garbage in reference cycles (see `pause_gc_for_startup`). Only the app
    does this; tests build windows by the hundred, and would keep each one's garbage.
    """
    frozen = freeze_long_lived()
    resume_gc()
    log.debug("froze %d start-up objects out of garbage collection", frozen)


def log_escaped() -> None:
    """The app's log on stderr, each message escaped: a file's name may hold escape codes or a newline."""
    logging.basicConfig(level=logging.INFO)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))


def launch(argv: list[str] | None = None) -> tuple[QApplication, Application, StartupProbe | None]:
    """Show the window at once and start loading the model behind it; `run_app` then runs the event loop."""
    pause_gc_for_startup()
    try:
        log_escaped()
        app = make_application(argv)
        from visualizer.composition import Application  # Qt only here: torch loads in the background later
        from visualizer.startup_probe import install_if_requested

        root = Application()
        root.ready.connect(keep_startup_objects_out_of_gc)
        root.failed.connect(resume_gc)
        probe = install_if_requested(root.window, root.ready)  # benchmark hook, inert unless its variable is set
        root.window.show()
        root.start_loading()
    except BaseException:
        resume_gc()  # no window to wait for
        raise
    return app, root, probe


def run_app(argv: list[str] | None = None) -> int:
    """Launch and run the event loop; a quit signal (Ctrl+C, kill, logout) saves unsaved training and quits."""
    app, root, probe = launch(argv)
    with signals_quit_via(root.quit_on_signal):
        code = app.exec()
    del probe
    return code

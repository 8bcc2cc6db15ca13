"""The one place that switches Python's garbage collector.

A full collection holds the GIL and walks every tracked object, long enough for the GUI thread to visibly stall
(QT-NOTES.md). Start-up, training and background jobs therefore pause the collector while they allocate heavily.
They overlap (a Length-lab job during training), so each pause is a counted hold: the collector stays off while any
hold is alive and comes back on, as it was before the first one, only when the last one ends. A hold that each
party toggled itself would let the first to finish switch the collector on under the others.

Collections run on the GUI thread only, once the app runs (`collect_on_gui_thread`). Python's own collector runs in
whichever thread allocates past its threshold, so a pool thread (loading a checkpoint, a forward pass) would finalize
the Qt garbage left in reference cycles (a closed dialog, replaced plot items) there, running the C++ destructors
off their thread: a crash, or a deadlock waiting for the GIL inside one. Python's collector is therefore off for
good, and a GUI-thread timer collects by Python's rules; "the collector is on" means that timer collects.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QCoreApplication, QThread, QTimer

COLLECT_EVERY_MS = 250  # how often the GUI thread looks at the allocation counts
FULL_AFTER_GROWTH = 0.25  # a full collection waits until the old generation grew by this share since the last

_lock = threading.Lock()
_holds = 0
_restore = False  # whether the collector was on when the first live hold began


class _GuiThreadCollector:
    """Python's automatic collection, run by a timer on the GUI thread by Python's own rules: a generation is
    collected once its count passes its threshold, and a full collection waits until the old generation grew by a
    quarter since the last one (Python's guard against walking a big heap over and over)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self._old_size = 0  # objects in the old generation after the last full collection
        self._old_checked = -1  # the old generation's count when its size was last weighed (once per rise)
        self._timer = QTimer(QCoreApplication.instance())
        self._timer.setInterval(COLLECT_EVERY_MS)
        self._timer.timeout.connect(self.tick)
        self._timer.start()

    def tick(self) -> None:
        if self.on:
            self.collect_due()

    def collect_due(self) -> None:
        if gc.isenabled():  # something switched Python's collector on again: it would collect on any thread
            gc.disable()
        (young, middle, old), (limit0, limit1, limit2) = gc.get_count(), gc.get_threshold()
        if limit0 == 0 or young <= limit0:  # a threshold of 0 switches collection off, as in Python
            return
        if sys.version_info >= (3, 14):  # an incremental collector: the young objects and one slice of the old
            gc.collect(1)
            return
        if old > limit2 and old != self._old_checked:
            self._old_checked = old
            if len(gc.get_objects(2)) > (1 + FULL_AFTER_GROWTH) * self._old_size:
                gc.collect(2)
                self._old_size = len(gc.get_objects(2))
                return
        gc.collect(1 if middle > limit1 else 0)


_collector: _GuiThreadCollector | None = None


def _is_on() -> bool:
    return _collector.on if _collector is not None else gc.isenabled()


def _switch(on: bool) -> None:
    if _collector is not None:
        _collector.on = on
    elif on:
        gc.enable()
    else:
        gc.disable()


def collect_on_gui_thread() -> None:
    """From now on only the GUI thread collects (called there, with the QApplication made; once per process)."""
    global _collector
    app = QCoreApplication.instance()
    if app is None or app.thread() != QThread.currentThread():
        raise RuntimeError("collect_on_gui_thread needs the QApplication, and its thread")
    with _lock:
        if _collector is not None:
            return
        _collector = _GuiThreadCollector(on=gc.isenabled() and _holds == 0)  # a live hold's end decides later
        gc.disable()


def collect_if_due() -> None:
    """Collect now if a collection is due (between tests, where no event loop turns the timer; GUI thread)."""
    if _collector is not None and _collector.on:
        _collector.collect_due()


def collecting() -> bool:
    """Whether garbage is collected now: no hold is alive and the collector was not switched off before."""
    with _lock:
        return _is_on()


class GcHold:
    """One party's pause of the collector; `end` is idempotent so a failure path and a success path may both call it."""

    def __init__(self) -> None:
        global _holds, _restore
        self._live = True
        with _lock:
            if _holds == 0:
                _restore = _is_on()
                _switch(False)
            _holds += 1

    def end(self) -> None:
        """Give the hold back; the last one switches the collector back on. No forced collection here: from a worker
        thread a full pass would stall the GUI just the same, and could run Qt objects' finalizers off their thread;
        the collector's own thresholds start the next pass."""
        global _holds
        with _lock:
            if not self._live:
                return
            self._live = False
            _holds -= 1
            if _holds == 0 and _restore:  # under the lock: a hold taken meanwhile must not see it half switched
                _switch(True)


def holds() -> int:
    """How many pauses are alive (0 once every task that paused the collector has ended)."""
    return _holds


@contextmanager
def gc_paused() -> Iterator[GcHold]:
    """The collector is off inside the block, unless nothing else holds it and it was off before."""
    hold = GcHold()
    try:
        yield hold
    finally:
        hold.end()


def freeze_long_lived() -> int:
    """Move every object alive now out of the collector's reach (the app calls it once the model is ready: torch,
    Qt and the model live as long as the app, and a full collection no longer walks them). Returns how many."""
    gc.freeze()
    return gc.get_freeze_count()

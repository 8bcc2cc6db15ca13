"""The one place that switches Python's garbage collector.

A full collection holds the GIL and walks every tracked object: 100-900 ms in which the GUI thread cannot run
(QT-NOTES.md). Start-up, training and background jobs therefore pause the collector while they allocate heavily.
They overlap (a Length-lab job during training), so each pause is a counted hold: the collector stays off while any
hold is alive and comes back on, as it was before the first one, only when the last one ends. A hold that each
party toggled itself would let the first to finish switch the collector on under the others.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holds = 0
_restore = False  # whether the collector was on when the first live hold began


class GcHold:
    """One party's pause of the collector; `end` is idempotent so a failure path and a success path may both call it."""

    def __init__(self) -> None:
        global _holds, _restore
        self._live = True
        with _lock:
            if _holds == 0:
                _restore = gc.isenabled()
                gc.disable()
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
                gc.enable()


def holds() -> int:
    """How many pauses are alive (tests check that none is left over)."""
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

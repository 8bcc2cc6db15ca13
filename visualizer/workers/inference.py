"""The playground's keystroke path: a coalescing TaskSlot whose waiting pass, during a burst of keys, waits for a
pause in the typing.

The slot (workers/tasks.py) runs at most one pass and keeps at most one waiting; a newer key replaces the waiting
pass, and a finished pass whose successor already waits is dropped unseen. Keys that arrive while a pass runs mark
a burst: when passes take at least SETTLE_S, the waiting pass then starts when the typing pauses (SETTLE_S) or after
MAX_WAIT_PASSES passes' time; a quicker pass starts at once. "Passes take" is the longest of the last RECENT_PASSES
that succeeded: one quick pass (a shorter input) must not switch the rule off in the middle of a burst. The
decoder stepper's commands are the slot's ordered tasks. The tasks are plain functions over immutable requests
(`visualizer.state.playground_inference.run_pass`); this module knows nothing about what they compute.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from PySide6.QtCore import QObject

from visualizer.workers.tasks import TaskSlot, one_warm_thread
from visualizer.workers.torch_threads import use_inference_threads

SETTLE_S = 0.025  # during a burst, a pause in the typing this long starts the next pass (fast keys: 10-20 ms apart)
MAX_WAIT_PASSES = 3.0  # ... and it never waits longer than this many times a pass's duration
RECENT_PASSES = 3  # how many pass durations decide whether a burst waits for a pause


class TypingPace:
    """The keystroke slot's Pacing: a pass started mid-burst is stale before it ends, so during a burst of keys
    faster than the passes the waiting pass waits for a pause. A burst of 8 keys 10 ms apart on a 33 ms model then
    costs 1-2 passes after the first instead of 3, and its final maps arrive no later."""

    def __init__(self) -> None:
        self._submitted_at = 0.0  # monotonic time of the newest plain submission
        self._burst = False  # a key arrived while a pass was running: the user types faster than passes run
        self._deadline: float | None = None  # when the current wait for a pause ends at the latest
        self._recent: deque[float] = deque(maxlen=RECENT_PASSES)  # seconds, newest last

    def submitted(self, running: bool) -> None:
        self._submitted_at = time.monotonic()
        self._burst = self._burst or running

    def delay_s(self) -> float:
        """Waiting pays only for passes longer than the pause it waits for: started at once, the final text's maps
        come at most two passes after its key, sooner than a SETTLE_S wait plus one pass."""
        pass_s = max(self._recent, default=0.0)
        if not self._burst or pass_s < SETTLE_S:
            return 0.0
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + max(SETTLE_S, MAX_WAIT_PASSES * pass_s)
        return max(0.0, min(self._submitted_at + SETTLE_S, self._deadline) - now)

    def started(self) -> None:
        self._burst, self._deadline = False, None

    def ran(self, seconds: float) -> None:
        self._recent.append(seconds)


def keystroke_slot(parent: QObject | None = None, **options: Any) -> TaskSlot:
    """The slot the playground's forward passes and stepper commands run on (the composition root builds it)."""
    options.setdefault("pool", one_warm_thread())
    return TaskSlot("Forward pass", parent, pacing=TypingPace(), threads=use_inference_threads, **options)

"""Keystroke-to-repaint latency in the real window: a key typed into the source field until the visible grid has
painted that key's maps (and the rest of its frame). bench.py turns these into rows against latency_bench's floor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from ui_bench import DIGITS, PaintCounter, wait_events

if TYPE_CHECKING:
    from visualizer.composition import Application


@dataclass(frozen=True)
class KeystrokeResult:
    """Latency from a key press in the source field to the visible grid repainted, per visible grid tab."""

    length: int  # source length typed at (it alternates length - 1 and length)
    p95_ms: dict[str, float]
    median_ms: dict[str, float]
    paints_per_key: dict[str, float]  # paints of the visible grid per keystroke (>= 1, or nothing was shown)

    @property
    def worst_p95_ms(self) -> float:
        return max(self.p95_ms.values())


def set_source_length(window: Application, length: int) -> int:
    """Put a digit string of `length` (capped at what the model takes) in the source field; returns the length."""
    session = window.session
    length = max(2, min(length, session.max_source_len))
    text = (DIGITS * (length // len(DIGITS) + 1))[:length]
    edit = window.playground.input_panel.source
    edit.setText(text)
    edit.end(False)
    if not session.set_source(text):
        raise RuntimeError(f"the session refused a source of length {length}: {session.last_error}")
    session.wait_idle(60)
    QApplication.processEvents()
    return length


class FramePaints:
    """Paints of a grid's viewport that show a frame: counted only after the session handed that frame over.

    A paint left over from switching the tab (or any other reason) before the key's frame arrived must not end the
    measurement early: the next key would then land in the middle of this key's pass.
    """

    def __init__(self, session, counter: PaintCounter) -> None:
        self.counter, self.frames, self.paints_at_frame = counter, 0, 0
        self._session = session
        session.frame_changed.connect(self._on_frame)

    def _on_frame(self, _frame) -> None:
        self.frames += 1
        self.paints_at_frame = self.counter.count

    def shown_since(self, frames_before: int) -> bool:
        """A frame arrived after `frames_before`, no newer one is on its way, and the grid painted after it."""
        return self.frames > frames_before and self._session.idle and self.counter.count > self.paints_at_frame

    def detach(self) -> None:
        self._session.frame_changed.disconnect(self._on_frame)


def _keystroke_ms(edit: QWidget, key: Qt.Key, paints: FramePaints, timeout_s: float = 2.0) -> float:
    """One key press until the visible grid has painted the key's new maps, then the rest of that frame.

    The key runs textEdited -> PlaygroundSession.set_source, which hands the pass to the inference thread; its frame
    comes back through the event loop (frame_changed -> every grid's set_maps), and the grid's paint too, as for a
    user. A key that never paints raises.
    """
    frames = paints.frames
    start = time.perf_counter()
    QTest.keyClick(edit, key)
    while not paints.shown_since(frames):  # sleeps in the event loop: the inference thread keeps the GIL meanwhile
        wait_events()
        if time.perf_counter() - start > timeout_s:
            raise RuntimeError("the grid did not repaint after a keystroke")
    QApplication.processEvents()  # the rest of the frame: line edit, labels, previews, status bar
    return (time.perf_counter() - start) * 1e3


def measure_with_floor(
    window: Application,
    length: int,
    n_keys: int,
    blocks: int = 4,
    warmup: int = 8,
    settle: int = 2,
    painted: Callable[[QWidget], QWidget] | None = None,
) -> tuple[KeystrokeResult, dict[str, float]]:
    """Backspace and '7' alternately (the length stays put) with each grid tab visible in turn, and the keystrokes'
    floor (latency_bench.BareFloor), per tab in alternating blocks.

    A key ends when the grid's viewport has painted its frame; `painted(grid)` names another widget that shows the
    grid's maps instead (keystroke_bound.py's stand-ins).

    The first keys after a new length or tab pay one-time costs (buffers for the new shapes, text measured once):
    up to about six keys on the first tab, so `warmup` keys per tab are typed and not counted.

    This machine's speed drifts by a third between runs, and within one: measured one after the other, a slow spell
    during the keystrokes and a quick one during the floor (or the reverse) moved the ratio at length 128 between
    1.4 and 1.8 x from run to run. Alternating blocks weigh a drift on both sides alike. Each block starts with
    `settle` keys or passes not counted: the first after the other kind of work runs colder (or warmer).
    """
    import latency_bench

    length = set_source_length(window, length)
    view = window.playground
    edit = view.input_panel.source
    keys = [Qt.Key.Key_Backspace, Qt.Key.Key_7]  # an even number per block: each floor block sees the same length
    p95, median, paints, floor = {}, {}, {}, {}
    per_block = -(-n_keys // blocks)
    for kind, grid in view.grids.items():
        view.grid_tabs.setCurrentWidget(grid)
        QApplication.processEvents()
        counter = PaintCounter(painted(grid) if painted else grid.graphics.viewport())
        watch = FramePaints(window.session, counter)
        for i in range(warmup):
            _keystroke_ms(edit, keys[i % 2], watch)
        bare = latency_bench.BareFloor(window, grid)
        times, floor_times, counted = [], [], 0
        for _ in range(blocks):
            for i in range(settle):
                _keystroke_ms(edit, keys[i % 2], watch)
            before = counter.count
            times += [_keystroke_ms(edit, keys[i % 2], watch) for i in range(per_block)]
            counted += counter.count - before
            bare.passes(settle)
            floor_times += bare.passes(per_block)
        bare.close()
        watch.detach()
        counter.detach()
        p95[kind], median[kind] = float(np.percentile(times, 95)), float(np.median(times))
        paints[kind], floor[kind] = counted / len(times), float(np.percentile(floor_times, 95))
    if len(edit.text()) not in (length - 1, length):
        raise RuntimeError(f"typing went wrong: the source has {len(edit.text())} symbols, expected ~{length}")
    return KeystrokeResult(length, p95, median, paints), floor

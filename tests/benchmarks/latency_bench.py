"""Keystroke latency against its floor, a burst of keys on a slow model, and model-ready against `import torch`.

The floor of a keystroke is what no implementation can avoid: one forward pass with capture (the same
`capture_maps` the session runs, numpy copy included) plus uploading and painting the very pixels the grid shows in a
bare pyqtgraph `ImageItem` of the same size. It is measured in the same run as the keystrokes, so the ratio holds
on any machine. bench.py turns these into rows.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyqtgraph as pg
import torch
import ui_bench
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

BURST_KEYS = "13572468"  # 8 keys
BURST_GAP_MS = 10


# ----- the floor ----------------------------------------------------------------------------------------------
class BareFloor:
    """The floor of one grid tab: a bare pyqtgraph ImageItem of the grid's size showing the grid's own pixels."""

    def __init__(self, window, grid) -> None:
        self._session = window.session
        self._pixels = np.array(grid.image_item.image, copy=True)
        self._widget = pg.GraphicsLayoutWidget()
        self._item = pg.ImageItem(axisOrder="row-major")
        self._widget.addPlot().addItem(self._item)
        self._widget.resize(grid.graphics.size())
        self._widget.show()
        self._item.setImage(self._pixels, autoLevels=False)
        QApplication.processEvents()
        self._counter = ui_bench.PaintCounter(self._widget.viewport())

    def passes(self, n: int) -> list[float]:
        """ms of each of n passes: capture_maps on the session's current input, then setImage and paint."""
        from visualizer.state.playground_capture import capture_maps

        s = self._session
        src, tgt = s._src_tensor(), s._target_tensor()  # noqa: SLF001 - exactly the session's own inputs
        times = []
        for _ in range(n):
            before, start = self._counter.count, time.perf_counter()
            capture_maps(s.hub.model, s.vocabulary, src, tgt, s.masks, s.head_gates(), s.mode, None)
            self._item.setImage(self._pixels, autoLevels=False)
            while self._counter.count == before:
                QApplication.processEvents()
            times.append((time.perf_counter() - start) * 1e3)
        return times

    def close(self) -> None:
        self._counter.detach()
        self._widget.close()
        self._widget.deleteLater()
        QApplication.processEvents()


def forward_after_pause(window, n: int, pause_s: float = 0.005) -> tuple[float, float]:
    """p95 ms of the session's capture_maps back to back, and after `pause_s` of sleep (as after a frame).

    The floor runs its passes nearly back to back; a keystroke's pass follows a painted frame and an idle wait.
    On the 2-core box the same pass then takes ~1.6x as long (caches and predictors cold): this pair shows how
    much of a keystroke / floor ratio is that, not drawing.
    """
    from visualizer.state.playground_capture import capture_maps

    session = window.session
    src, tgt = session._src_tensor(), session._target_tensor()  # noqa: SLF001 - exactly the session's own inputs

    def run(pause: float) -> float:
        times = []
        for _ in range(n):
            if pause:
                time.sleep(pause)
            start = time.perf_counter()
            capture_maps(
                session.hub.model, session.vocabulary, src, tgt, session.masks, session.head_gates(), session.mode, None
            )
            times.append((time.perf_counter() - start) * 1e3)
        return float(np.percentile(times, 95))

    return run(0.0), run(pause_s)


# ----- a burst of keys on a slow model ------------------------------------------------------------------------
@dataclass(frozen=True)
class BurstResult:
    passes_after_first: int  # forward passes the burst started after the first key's
    max_gap_ms: float  # the GUI thread's longest stall (a 100 Hz timer) from the first key to the final frame
    final_matches: bool  # the final maps equal a direct forward pass on the final text
    pass_ms: float  # one forward pass of the slow model, for the note


def _stamp(stamps: list[float]) -> None:
    stamps.append(time.perf_counter())


def slow_view():
    """A Playground tab as the app builds it (the keystroke slot) on a d_model 512, 6+6 layer model."""
    from core_model import ModelConfig, build_model
    from core_model.tasks import TaskSpec
    from visualizer.state.model_hub import ModelHub
    from visualizer.state.playground import PlaygroundSession
    from visualizer.state.playground_tools import playground_tools
    from visualizer.widgets.playground.view import PlaygroundView
    from visualizer.workers.inference import keystroke_slot

    config = ModelConfig(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6)
    hub = ModelHub(build_model(config, seed=0), TaskSpec(), device=torch.device("cpu"), origin="bench")
    session = PlaygroundSession(hub, runner=keystroke_slot())
    view = PlaygroundView(session, playground_tools(session))
    view.resize(1400, 900)
    view.show()
    return view


def measure_burst(repeats: int = 3) -> BurstResult:
    """8 keys 10 ms apart into the real source field; worst of `repeats` bursts."""
    view = slow_view()
    session, runner, field = view.session, view.session.runner, view.input_panel.source
    try:
        field.setFocus()
        field.setText("0123")
        field.textEdited.emit("0123")
        session.wait_idle(60)
        start = time.perf_counter()
        session.recompute()
        session.wait_idle(60)
        pass_ms = (time.perf_counter() - start) * 1e3
        passes, gaps, matches = [], [], True
        for _ in range(repeats):
            field.setText("0123")
            field.textEdited.emit("0123")
            session.wait_idle(60)
            stamps: list[float] = []
            timer = QTimer()
            timer.setTimerType(Qt.TimerType.PreciseTimer)
            timer.timeout.connect(partial(_stamp, stamps))
            first = runner.started
            timer.start(10)
            t0 = time.perf_counter()
            for i, ch in enumerate(BURST_KEYS):  # key i at t0 + 10 i ms, as a fast typist's keys arrive
                while time.perf_counter() < t0 + i * BURST_GAP_MS / 1000:
                    ui_bench.wait_events(1)
                stamps.append(time.perf_counter())
                QTest.keyClick(field, ch)
            while not session.idle:
                ui_bench.wait_events(5)
            stamps.append(time.perf_counter())
            timer.stop()
            passes.append(runner.started - first - 1)
            gaps.append(float(np.diff(stamps).max() * 1e3))
            matches &= _final_maps_match(view, field.text())
        return BurstResult(max(passes), max(gaps), matches, pass_ms)
    finally:
        runner.shutdown()
        view.close()
        view.deleteLater()
        QApplication.processEvents()


def _final_maps_match(view, text: str) -> bool:
    from core_model import BOS

    s = view.session
    pads = [0] * s.extra_pads
    src = torch.tensor([s.vocabulary.encode(text) + pads])
    tgt = torch.tensor([[BOS] + s.expected_ids() + pads])
    with torch.inference_mode():
        att = s.hub.model(src, tgt, s.masks, None, return_attention=True).attention
    shown = s.last_frame.maps.maps
    return all(
        np.allclose(shown[k].values, np.stack([a[0].numpy() for a in att.kind(k)]), atol=1e-5) for k in shown
    ) and shown["encoder_self"].key_labels[: len(text)] == tuple(text)


# ----- start-up ------------------------------------------------------------------------------------------------
def import_torch_s(runs: int) -> float:
    """Median seconds of a bare `python -c "import torch"`, launch to exit."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ----- garbage collection in the ready app ----------------------------------------------------------------------
def full_gc_ms(runs: int = 3) -> tuple[float, float]:
    """(after, before): median ms of a full `gc.collect()` in the ready app after and before the start-up freeze.

    A full collection holds the GIL, so while it runs the GUI thread stalls; the app freezes what start-up built
    (visualizer.app.keep_startup_objects_out_of_gc), as this does, so later collections skip it.
    """
    from visualizer.app import keep_startup_objects_out_of_gc

    def median_ms() -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            gc.collect()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    before = median_ms()
    keep_startup_objects_out_of_gc()
    return median_ms(), before

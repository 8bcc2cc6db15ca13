"""Start-up: model-ready close to `import torch` (the shipped checkpoint must not pull in torch._dynamo), and what
start-up leaves behind kept out of the garbage collector's full passes."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from core_model import MaskSpec, ModelConfig, build_model
from core_model.checkpoint_validation import expected_shapes
from visualizer.startup_probe import ENV as PROBE_ENV
from visualizer.workers.gc_policy import collecting

REPO = Path(__file__).resolve().parents[2]


def test_loading_the_shipped_model_does_not_import_torch_dynamo():
    code = (
        "import sys, torch\n"
        "from visualizer.workers.loader import load_startup_model\n"
        "startup = load_startup_model(None)\n"
        "assert startup.warning is None, startup.warning\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"  # importing it cost more than import torch itself (bench: model ready)


def test_what_the_gui_thread_imports_before_loading_starts_leaves_pyqtgraph_and_torch_to_the_loaders():
    """The window shows and the loaders start once these are in: pyqtgraph imported here (the Help list names the
    large view's keys) would run on the GUI thread ahead of `import torch` instead of beside it (bench: model ready)."""
    code = (
        "import sys\n"
        "import visualizer.app, visualizer.composition, visualizer.startup_probe\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyqtgraph', 'torch', 'numpy'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_shape_check_leaves_the_callers_random_stream_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    shapes = expected_shapes(ModelConfig())
    assert torch.equal(torch.rand(3), expected)
    assert shapes["src_embed.weight"] == torch.Size([ModelConfig().vocab_size, ModelConfig().d_model])


def test_the_launched_app_collects_no_garbage_while_starting_then_freezes_its_start_up_objects(tmp_path):
    """Full collections walked ~225k start-up objects: 50-100 ms stalls of the GUI thread, mid-keystroke."""
    probe = tmp_path / "probe.json"
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen", **{PROBE_ENV: str(probe)})
    out = subprocess.run(
        [sys.executable, "-m", "visualizer"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    stamped = json.loads(probe.read_text())
    assert stamped["gc_frozen"] > 50_000  # torch, Qt and the model, at the least
    # none while the model loads (~490 of them took ~0.1 s of launch to model ready), and back on after; the ~45
    # counted come before the pause (interpreter start, importing Qt)
    assert stamped["gc_collections"] < 100
    assert stamped["gc_collecting"] is True


def test_a_frozen_model_is_still_freed_when_dropped():
    """Freezing keeps objects from the cycle collector only: a model in no reference cycle (after a pass with
    capture) is freed by its reference count when the app lets it go, e.g. after a new architecture."""
    model = build_model(ModelConfig(), seed=0).eval()
    src, tgt = torch.tensor([[1, 5, 6, 7, 2]]), torch.tensor([[1, 5, 6, 7]])
    with torch.inference_mode():
        model(src, tgt, MaskSpec(), None, return_attention=True)
    alive = weakref.ref(model)
    gc.freeze()
    try:
        del model
        assert alive() is None
    finally:
        gc.unfreeze()


def test_the_startup_probe_stamps_model_ready_once_the_ready_window_has_painted(qtbot, tmp_path, monkeypatch):
    """Not at a 5 ms poll: queued before or behind the ready window's first paint (~55 ms), a poll made the
    benchmark's model-ready wander by that much. Now always after that paint, the loaded tabs on screen."""
    from PySide6.QtCore import QEvent, QObject, Signal
    from PySide6.QtWidgets import QMainWindow

    from visualizer import startup_probe

    class Root(QObject):
        ready = Signal()

    class Paints(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def eventFilter(self, obj, event) -> bool:  # Qt's name
            if event.type() == QEvent.Type.Paint:
                self.times.append(time.time())
            return False

    quits = []  # the probe quits the app once it has written its file; here it must not end the test session
    monkeypatch.setattr(
        startup_probe, "QApplication", SimpleNamespace(instance=lambda: SimpleNamespace(quit=lambda: quits.append(1)))
    )
    window, root, path, paints = QMainWindow(), Root(), tmp_path / "probe.json", Paints()
    qtbot.addWidget(window)
    probe = startup_probe.StartupProbe(window, root.ready, path)
    window.installEventFilter(paints)
    window.show()
    qtbot.waitUntil(lambda: "first_paint" in probe.times, timeout=5000)
    qtbot.wait(20)  # painted, nothing ready: nothing written
    assert not path.exists()
    before = time.time()
    root.ready.emit()
    qtbot.waitUntil(path.exists, timeout=5000)
    times = json.loads(path.read_text())
    after_ready = [t for t in paints.times if t >= before]
    assert times["first_paint"] <= before <= times["ready_signal"]
    assert after_ready and after_ready[0] <= times["model_ready"]  # a paint after ready, then the stamp
    qtbot.waitUntil(lambda: quits == [1], timeout=2000)


@pytest.mark.real_dialogs
def test_a_failed_start_says_why_and_turns_garbage_collection_back_on(qtbot, monkeypatch):
    """Start-up pauses the collector until the model is ready; a start that never gets there must not leave the
    app running without one (a window with an error can stay open for hours)."""
    import visualizer.app as app_module
    import visualizer.composition as composition

    def no_model(path, device):
        raise RuntimeError("torch would not load")

    monkeypatch.setattr(composition, "load_startup_model", no_model)
    monkeypatch.setattr(composition, "import_gui_modules", lambda: None)  # done at once: nothing left running
    monkeypatch.delenv(PROBE_ENV, raising=False)
    shown: list[tuple[str, bool]] = []  # (the box's text, whether GC was on while it was up)
    tries = iter(range(1000))  # 10 s at most: a box that never comes must not leave this timer to later tests

    def read_and_dismiss_the_box():
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            shown.append((box.text(), collecting()))
            box.done(QMessageBox.StandardButton.Ok)
        elif next(tries, None) is not None:
            QTimer.singleShot(10, read_and_dismiss_the_box)

    QTimer.singleShot(10, read_and_dismiss_the_box)
    try:
        _app, root, _probe = app_module.launch([])
        qtbot.addWidget(root.window)
        assert not collecting()  # paused while the model loads
        qtbot.waitUntil(lambda: bool(shown), timeout=10_000)
        # back on before the box (a modal box can stay up for hours), and after it
        assert shown == [("Could not start the model:\ntorch would not load", True)]
        assert collecting()
        assert root.window.loading_label.text() == "Could not start the model: torch would not load"
    finally:
        app_module.resume_gc()  # a failure above must not leave later tests without a collector

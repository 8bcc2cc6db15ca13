"""Shared test setup: headless Qt, isolated QSettings, one torch thread (the app's own setting)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # without a display Qt would abort the run

import pytest
import torch

torch.set_num_threads(1)  # the app runs one thread; two starve each other on a busy 2-core machine


@pytest.fixture
def one_torch_thread():
    """One torch thread for the test, whatever an earlier test left set (files that train or time use it)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _gui_thread_collects(request):
    """As in the app (Application does the same): only the GUI thread collects garbage once a QApplication exists,
    so a test's pool thread never finalizes an earlier test's Qt objects. A collection that came due during the test
    runs after it: tests without an event loop never turn the collector's timer."""
    from visualizer.workers import gc_policy

    if "qtbot" in request.fixturenames or "qapp" in request.fixturenames:
        request.getfixturevalue("qapp")
        gc_policy.collect_on_gui_thread()
    yield
    gc_policy.collect_if_due()


@pytest.fixture(autouse=True)
def _mouse_put_away(request):
    """The cursor is shared by every window of the process: left over a grid's map it would hover the next test's
    grid (a readout, an outline, a hidden role badge). Qt tests start and end with it far off every window."""
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QCursor

    QCursor.setPos(QPoint(-10_000, -10_000))
    yield
    QCursor.setPos(QPoint(-10_000, -10_000))


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, request, monkeypatch):
    """Point QSettings and the app's data folder (recovery files) at temporary folders so tests never read or write
    the user's preferences or unsaved training."""
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    from PySide6.QtCore import QCoreApplication, QSettings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # QStandardPaths' AppDataLocation on Linux

    QCoreApplication.setOrganizationName("AttentionPlaygroundTests")
    QCoreApplication.setApplicationName("AttentionPlaygroundTests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    if not request.node.get_closest_marker("first_launch"):  # the lessons' first-launch card stays out of layouts
        QSettings().setValue("lessons/first_card_done", True)
    yield


MODAL_CALLS = {
    "QMessageBox": ("question", "critical", "warning", "information", "about", "exec"),
    "QFileDialog": ("getOpenFileName", "getSaveFileName", "getExistingDirectory", "exec"),
    "QDialog": ("exec",),
    "QInputDialog": ("getText", "getInt", "getDouble", "getItem", "exec"),
}


@pytest.fixture(autouse=True)
def _no_unexpected_modal_dialogs(request, monkeypatch):
    """A modal dialog offscreen waits forever for a click: fail the test at once, naming the dialog, instead.

    Tests that expect a dialog substitute their own answer (monkeypatch after this fixture), or mark themselves
    `real_dialogs` and dismiss the real one.
    """
    if "qtbot" not in request.fixturenames or request.node.get_closest_marker("real_dialogs"):
        yield
        return
    from PySide6 import QtWidgets

    def refuse(cls_name: str, name: str):
        def call(*args, **kwargs):
            texts = [a for a in args if isinstance(a, str)]
            raise AssertionError(f"unexpected modal dialog {cls_name}.{name}{tuple(texts)!r}")

        return call

    for cls_name, names in MODAL_CALLS.items():
        for name in names:
            monkeypatch.setattr(getattr(QtWidgets, cls_name), name, staticmethod(refuse(cls_name, name)))
    yield


@pytest.fixture
def hub():
    """A tiny model (5 copy symbols, lengths 3-5) in a ModelHub: enough for the training tests to run in seconds."""
    from core_model import ModelConfig, build_model
    from core_model.tasks import TaskSpec
    from visualizer.state.model_hub import ModelHub

    config = ModelConfig(
        vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=16
    )
    return ModelHub(
        build_model(config, seed=0),
        TaskSpec("copy", n_symbols=5, min_len=3, max_len=5),
        device=torch.device("cpu"),
        origin="test",
    )


@pytest.fixture
def state(qtbot, hub):
    """A TrainingState on `hub`, stopped and joined at teardown (QT-NOTES: a live QThread aborts pytest)."""
    from visualizer.state.training import TrainingState
    from visualizer.workers.training_worker import TrainingRun

    st = TrainingState(hub, TrainingRun)
    yield st
    assert st.shutdown(20_000)
    assert st.training_thread is None

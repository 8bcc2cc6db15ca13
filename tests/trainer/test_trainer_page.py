"""The Trainer page builds its tab on first show with what the composition root handed in: the question asked before
unsaved training is replaced, and the runner that writes the attention movie off the GUI thread."""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QWidget

from visualizer.widgets.training import tab as trainer_tab
from visualizer.widgets.training.page import TrainerPage
from visualizer.widgets.training.questions import SCRATCH_QUESTION
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 60_000


class _Gates(QWidget):
    """Stands in for the Playground session's head switches (the page only reads them and listens)."""

    changed = Signal(object)


def test_the_page_builds_its_tab_with_the_injected_question_and_runner(qtbot, hub, state, tmp_path, monkeypatch):
    asked: list[str] = []
    threads: list[int] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return False  # Cancel: nothing changes

    class Slot(TaskSlot):  # the app's slot, noting the thread each task runs on
        def submit(self, fn, *inputs):
            super().submit(lambda state, *a: (threads.append(threading.get_ident()), fn(state, *a))[1], *inputs)

    gates = _Gates()
    page = TrainerPage(hub, state, dict, gates.changed, confirm_discard=confirm, make_slot=Slot)
    qtbot.addWidget(page)
    assert not page.built  # nothing of the tab until it is shown
    with qtbot.waitExposed(page):
        page.show()
    assert page.built
    tab = page.tab()
    assert tab.isVisible() and tab.train_button.text() == "Continue training"

    tab.form.steps_spin.setValue(30)
    tab.form.batch_spin.setValue(16)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    assert hub.dirty  # trained and not saved
    generation, weights = hub.generation, {k: v.clone() for k, v in hub.model.state_dict().items()}

    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    assert asked == [SCRATCH_QUESTION]  # the app's question, not the tab's own dialog (which would block here)
    assert hub.generation == generation and state.state == "finished"
    assert all(np.array_equal(weights[k].numpy(), v.numpy()) for k, v in hub.model.state_dict().items())

    folder = tmp_path / "movie"
    monkeypatch.setattr(trainer_tab, "_choose_folder", lambda parent: str(folder))
    with qtbot.waitSignal(tab.movie_exported, timeout=WAIT_MS) as blocker:
        qtbot.mouseClick(tab.probe.export_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0]["frames"] == len(sorted(folder.glob("frame_*.png"))) > 0
    assert threads and threads[0] != threading.get_ident()  # written by the injected runner, off the GUI thread
    assert tab.status_label.text().startswith(f"Exported {blocker.args[0]['frames']} frames to {folder}")

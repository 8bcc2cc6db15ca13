"""Every tab at 1280x800, as a laptop shows it after its analysis ran: each plot keeps a data area a person can read
(at least 120 px high), no label, button, list or progress text is cut, and no short table hides rows behind its
own scroll bar (the page scrolls instead)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QProgressBar, QPushButton, QTabWidget
from qt_helpers import shown_app, wait_frame
from screen_fit import clipped_texts, plot_data_heights, plot_texts_cut, squeezed_plots, tables_hiding_rows

from core_model.shipped import resource_path

CTRL = Qt.KeyboardModifier.ControlModifier
WAIT_MS = 180_000


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.session is not None and app.session.last_frame is not None, timeout=60_000)
    qtbot.waitUntil(lambda: app.heads.roles is not None, timeout=60_000)
    wait_frame(qtbot, app.session)
    assert (app.window.width(), app.window.height()) == (1280, 800)
    yield app
    app.hub.dirty = False
    app.training.shutdown(5000)
    app.window.close()


def open_tab(qtbot, app, key: Qt.Key):
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    qtbot.keyClick(app.window, key, CTRL)
    page = app.window.tabs.currentWidget()
    QApplication.processEvents()
    return page


def button(page, text: str) -> QPushButton:
    return next(b for b in page.findChildren(QPushButton) if b.text().replace("&", "") == text and b.isVisible())


def run_and_wait(qtbot, page, text: str) -> None:
    """Press the page's run button as a user does and wait until it can be pressed again (the run is over)."""
    run = button(page, text)
    qtbot.mouseClick(run, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not run.isEnabled(), timeout=5_000)
    qtbot.waitUntil(run.isEnabled, timeout=WAIT_MS)


def settle(qtbot) -> None:
    """Layouts and plots finish on later turns of the event loop: what a person sees a moment after."""
    for _ in range(5):
        qtbot.wait(50)
        QApplication.processEvents()


def check(page) -> None:
    heights = plot_data_heights(page)
    assert not squeezed_plots(page), (squeezed_plots(page), heights)
    assert not clipped_texts(page), clipped_texts(page)
    assert not tables_hiding_rows(page), tables_hiding_rows(page)
    assert not plot_texts_cut(page), plot_texts_cut(page)


def test_the_playground(qtbot, app):
    page = open_tab(qtbot, app, Qt.Key.Key_1)
    settle(qtbot)
    check(page)


def test_positional_encoding(qtbot, app):
    page = open_tab(qtbot, app, Qt.Key.Key_2)
    settle(qtbot)
    assert len(plot_data_heights(page)) >= 4
    check(page)


def test_the_trainer_with_the_shipped_models_curves(qtbot, app):
    page = open_tab(qtbot, app, Qt.Key.Key_3)
    settle(qtbot)
    assert len(plot_data_heights(page)) >= 4  # loss, accuracy, learning rate, head roles
    check(page)


def test_the_trainer_beside_the_lessons_after_a_short_run(qtbot, app):
    """Lesson 7 has the student watch the curves with the lessons open beside them: every curve stays readable."""
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)
    page = open_tab(qtbot, app, Qt.Key.Key_3)
    qtbot.keyClick(app.window, Qt.Key.Key_F9)
    qtbot.waitUntil(app.lessons.dock.isVisible)
    tab = app.trainer_tab
    tab.form.steps_spin.setFocus()
    tab.form.steps_spin.selectAll()
    qtbot.keyClicks(tab.form.steps_spin, "10")
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.state_label.text() == "Finished" and not tab.state.busy, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: app.hub.dirty)  # the run's weights reached the model: closing would ask to save them
    app.hub.dirty = False
    settle(qtbot)
    assert len(plot_data_heights(page)) >= 4
    check(page)


@pytest.mark.parametrize(("key", "run"), [(Qt.Key.Key_4, "Analyse heads"), (Qt.Key.Key_6, "Patch")])
def test_heads_and_causal_patching_after_their_run(qtbot, app, key, run):
    page = open_tab(qtbot, app, key)
    run_and_wait(qtbot, page, run)
    settle(qtbot)
    check(page)


@pytest.mark.parametrize("dock", [False, True], ids=["alone", "beside the lessons"])
def test_the_length_lab_while_and_after_it_evaluates(qtbot, app, dock):
    if dock:  # as a student in lesson 5 has it
        app.lessons.dock.show()
        qtbot.waitUntil(app.lessons.dock.isVisible)
    page = open_tab(qtbot, app, Qt.Key.Key_5)
    progress = next(bar for bar in page.findChildren(QProgressBar) if bar.isTextVisible())
    qtbot.waitUntil(lambda: "points" in progress.text(), timeout=WAIT_MS)  # it starts by itself: "16 of 64 points"
    assert not clipped_texts(page), clipped_texts(page)
    qtbot.waitUntil(lambda: button(page, "Evaluate").isEnabled(), timeout=WAIT_MS)
    settle(qtbot)
    check(page)


def test_causal_lens_and_attribution(qtbot, app):
    page = open_tab(qtbot, app, Qt.Key.Key_6)
    inner = next(t for t in page.findChildren(QTabWidget) if t.tabText(1) == "Lens and attribution")
    bar = inner.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    run_and_wait(qtbot, inner.currentWidget(), "Analyse")
    settle(qtbot)
    assert len(plot_data_heights(page)) == 8  # three attributions and five attention views, all drawn
    check(page)


def test_circuits(qtbot, app):
    page = open_tab(qtbot, app, Qt.Key.Key_7)
    view = page.content()
    qtbot.waitUntil(lambda: view.frame is not None, timeout=WAIT_MS)
    settle(qtbot)
    for index in range(view.qk_tabs.count()):  # both QK tables: by token, and by position beside the run's map
        bar = view.qk_tabs.tabBar()
        qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
        settle(qtbot)
        check(page)

"""Crafted lesson files in the lessons folder: the window still builds, the good lessons load, and the Lessons panel
names each file that could not be used. Text from a file (a lesson, a file name) is shown as written, never as
markup: no heading, no image, no link. Each test drives the whole window."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import QApplication, QMessageBox
from qt_helpers import seen_text

from core_model.shipped import resource_path
from visualizer.composition import Application

WAIT_MS = 60_000
HTML_SAY = '<img src="/etc/hosts.png"> Read <a href="http://e">this</a>.'
HTML_LESSON = f"""
title = "<h1>Big</h1>"
order = 2
summary = "<img src='x.png'> a summary"
[[steps]]
say = '{HTML_SAY}'
explain = "<b>{{source}}</b> is the source."
"""


def crafted_folder(folder: Path) -> Path:
    """One shipped lesson, one lesson with HTML in every text, and one file per way a file can break the app."""
    folder.mkdir()
    shutil.copy(resource_path("lessons") / "01-one-map.toml", folder)
    (folder / "09-html.toml").write_text(HTML_LESSON, encoding="utf-8")
    (folder / "02-deep.toml").write_text("a = " + "[" * 50_000 + "]" * 50_000)
    os.mkfifo(folder / "03-fifo.toml")
    step = '[[steps]]\nsay = "s"\n'
    for name, explain in (("04-precision", "{weight:.999999999f}"), ("05-width", "{weight:999999999}")):
        until = 'until = { event = "cell_hovered", kind = "cross" }'
        (folder / f"{name}.toml").write_text(f'title = "t"\norder = 4\n{step}{until}\nexplain = "{explain}"\n')
    (folder / "06-steps.toml").write_text('title = "t"\norder = 6\n' + step * 200_000)
    (folder / "07-text.toml").write_text(f'title = "t"\norder = 7\n[[steps]]\nsay = "{"a" * 30_000}"\n')
    setup = 'setup = [{ action = "set_heads_sequences", n = 9000000000000 }]'
    (folder / "08-sequences.toml").write_text(f'title = "t"\norder = 8\n{step}{setup}\n')
    return folder


@pytest.fixture
def crafted_app(qtbot, tmp_path):
    app = Application(checkpoint=resource_path("copy_rope.pt"), device="cpu", lessons=crafted_folder(tmp_path / "l"))
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=WAIT_MS)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_each_crafted_file_is_named_in_the_panel_and_the_good_lessons_load(qtbot, crafted_app):
    app = crafted_app
    assert app.window.stack.currentWidget() is app.window.tabs  # the window built: no "Loading the model…" left
    panel = app.lessons.panel
    app.lessons.open()
    qtbot.waitUntil(panel.problems_label.isVisible)
    shown = seen_text(panel.problems_label).splitlines()
    assert shown == [
        "lesson 02-deep.toml: nested deeper than 8 levels of tables and arrays",
        "lesson 03-fifo.toml: not a file (it is a named pipe (FIFO)); a lesson is a .toml text file",
        "lesson 04-precision.toml: steps[0].explain: format {weight:.999999999f}: a width or precision has at most "
        "3 digits",
        "lesson 05-width.toml: steps[0].explain: format {weight:999999999}: a width or precision has at most 3 digits",
        "lesson 06-steps.toml: the file is larger than 1,024 KiB; a lesson is a short text",
        "lesson 07-text.toml: steps[0].say: 30,000 characters; a text may have at most 20,000",
        "lesson 08-sequences.toml: steps[0].setup[0].n: must be a whole number from 1 to 1,000",
    ]
    rows = [panel.lesson_list.item(i).text() for i in range(panel.lesson_list.count())]
    assert rows == ["1. What one attention map is", "2. <h1>Big</h1>"]  # a list row is always plain text
    assert panel.title_label.text() == "Pick a lesson and press Start lesson."


def test_html_in_a_lesson_is_shown_as_written(qtbot, crafted_app):
    app = crafted_app
    panel = app.lessons.panel
    app.lessons.open()
    tip = panel.lesson_list.item(1).toolTip()
    assert QTextDocumentFragment.fromHtml(tip).toPlainText() == "<img src='x.png'> a summary"  # as a tooltip shows it
    panel.lesson_list.setCurrentRow(1)
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.done and panel.explain_label.isVisible(), timeout=WAIT_MS)
    assert seen_text(panel.title_label) == "<h1>Big</h1>"
    assert seen_text(panel.say_label) == HTML_SAY  # the image is not loaded, the link is not one
    assert seen_text(panel.explain_label) == f"<b>{app.session.source_text}</b> is the source."


def test_a_lesson_file_that_hangs_leaves_the_window_working(qtbot, tmp_path, monkeypatch):
    """A read that does not return (a stalled network disk, faked here) holds up the lessons, not the window."""
    folder = tmp_path / "l"
    folder.mkdir()
    shutil.copy(resource_path("lessons") / "01-one-map.toml", folder)
    stalled, release, read_on = threading.Event(), threading.Event(), []
    real_read = os.read

    def stalling_read(fd: int, n: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
            read_on.append(threading.current_thread())
            stalled.set()
            release.wait(WAIT_MS / 1000)  # bounded: a regression that reads on the GUI thread must still end
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", stalling_read)
    app = Application(checkpoint=resource_path("copy_rope.pt"), device="cpu", lessons=folder)
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.lessons is not None and stalled.is_set(), timeout=WAIT_MS)
    try:
        assert read_on[0] is not threading.main_thread()
        assert app.window.stack.currentWidget() is app.window.tabs
        app.lessons.open()
        assert app.lessons.panel.title_label.text() == "Loading the lessons…"
    finally:
        release.set()
    qtbot.waitUntil(lambda: app.lessons.loaded, timeout=WAIT_MS)
    assert app.lessons.panel.title_label.text() == "Pick a lesson and press Start lesson."
    assert app.lessons.panel.lesson_list.item(0).text() == "1. What one attention map is"
    app.window.close()


@pytest.mark.real_dialogs
def test_an_error_about_a_file_named_in_html_shows_the_name_as_written(qtbot, tmp_path):
    """File › Open on a broken file whose name is markup: the dialog shows the characters and has no link."""
    app = Application(checkpoint=resource_path("copy_rope.pt"), device="cpu")
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=WAIT_MS)
    name = '<h1>x<h1><a href="http:e">y<a>.pt'  # a heading and a link, as far as a name without "/" can go
    path = tmp_path / name
    path.write_bytes(b"not a checkpoint")
    seen: list[str] = []
    tries = iter(range(3000))  # 30 s at most: a box that never comes must not leave this timer to later tests

    def read_and_dismiss_the_box() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(seen_text(box))
            box.done(QMessageBox.StandardButton.Ok)
        elif next(tries, None) is not None:
            QTimer.singleShot(10, read_and_dismiss_the_box)

    QTimer.singleShot(10, read_and_dismiss_the_box)
    app.checkpoints.open_path(path)
    qtbot.waitUntil(lambda: bool(seen), timeout=WAIT_MS)
    assert name in seen[0], seen
    app.window.close()


MISSING_HEAD_LESSON = """
title = "A head this model lacks"
order = 1
summary = "waits on cross L5 H1"
[[steps]]
say = "Press Analyse heads."
setup = [{ action = "set_heads_sequences", n = 4 }]
until = { event = "heads_analysed", kind = "cross", layer = 5, head = 1 }
explain = "{delta_exact_match:+.3f}"
"""


def test_a_step_waiting_on_a_head_the_model_lacks_waits_and_says_why_in_the_log(qtbot, tmp_path, caplog):
    """The lesson's head is beyond the model open (2 layers): the analysis ends, the step keeps waiting, no
    traceback comes out of the slot, and the log names the head."""
    from test_lessons_play import start

    folder = tmp_path / "l"
    folder.mkdir()
    (folder / "01-missing.toml").write_text(MISSING_HEAD_LESSON, encoding="utf-8")
    app = Application(checkpoint=resource_path("copy_rope.pt"), device="cpu", lessons=folder)
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=WAIT_MS)
    start(qtbot, app, "A head this model lacks")
    with qtbot.waitSignal(app.heads.frame_changed, timeout=WAIT_MS):
        app.window.tabs.setCurrentWidget(app.heads_view)
        qtbot.mouseClick(app.heads_view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: any("L5 H1" in r.getMessage() for r in caplog.records))
    assert not app.lessons.runner.done
    warned = [r for r in caplog.records if "L5 H1" in r.getMessage()]
    assert warned[0].getMessage() == "a lesson step waits for cross L5 H1, which this model does not have"
    app.hub.dirty = False
    app.window.close()

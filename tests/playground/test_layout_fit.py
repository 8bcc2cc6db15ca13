"""The window on a 1280x800 screen: it fits, the Playground's column is never cut off and never jumps, and no spin box
or drop-down list changes on the mouse wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QLabel, QWidget
from qt_helpers import start_app, wait_frame
from test_playground_column import clipped_widgets
from widget_readers import force_buttons

ROOT = Path(__file__).resolve().parents[2]
SOURCE_40 = "0123456789" * 4


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot, (1280, 800))
    yield app
    app.hub.dirty = False
    app.training.shutdown(5000)
    app.window.close()


def type_source(qtbot, app, text: str) -> None:
    field = app.playground.input_panel.source
    field.setText(text)
    field.textEdited.emit(text)
    wait_frame(qtbot, app.session)
    QApplication.processEvents()


def click(qtbot, app, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    QApplication.processEvents()


def labels_cut_off(app) -> list[str]:
    """Form labels of the column whose text is not wholly inside the scroll area's viewport."""
    scroll = app.playground.control_scroll
    viewport = scroll.viewport()
    cut = []
    for label in scroll.widget().findChildren(QLabel):
        if label.isVisibleTo(scroll.widget()) and label.text().endswith(":") and label.buddy() is not None:
            left = label.mapTo(viewport, QPoint(0, 0)).x()
            if left < 0 or left + label.fontMetrics().horizontalAdvance(label.text()) > viewport.width():
                cut.append(label.text())
    return cut


def test_a_forty_symbol_source_in_teacher_forcing_fits_the_column_at_1280(qtbot, app):
    """Source, Task, prefix, pads, the Model combos and Apply stay inside the column, at its default width and at
    its narrowest; Apply taking the focus never scrolls the column sideways (which cut "Positional:" to "ositional")."""
    view = app.playground
    type_source(qtbot, app, SOURCE_40)
    click(qtbot, app, view.decoder_panel.mode_buttons["teacher"])
    assert view.decoder_panel.mode_buttons["teacher"].isChecked()
    assert clipped_widgets(app) == []
    total = sum(view.splitter.sizes())
    view.splitter.setSizes([view.control_scroll.minimumWidth(), total])  # the handle dragged as far left as it goes
    QApplication.processEvents()
    assert view.splitter.sizes()[0] == view.control_scroll.minimumWidth()
    assert clipped_widgets(app) == []
    assert view.control_scroll.horizontalScrollBar().maximum() == 0  # nothing to scroll sideways to
    click(qtbot, app, view.decoder_panel.mode_buttons["stepping"])
    for _ in range(3):
        click(qtbot, app, view.decoder_panel.buttons["step"])
    assert force_buttons(view.decoder_panel) and clipped_widgets(app) == []
    panel = view.model_panel
    panel.spins["n_heads"].setValue(2)
    view.control_scroll.ensureWidgetVisible(panel.apply_button)
    click(qtbot, app, panel.apply_button)
    qtbot.waitUntil(lambda: app.hub.config.n_heads == 2, timeout=10000)
    QApplication.processEvents()
    assert view.control_scroll.horizontalScrollBar().value() == 0
    assert labels_cut_off(app) == []
    assert clipped_widgets(app) == []


def test_teacher_forcing_stepping_and_long_sources_never_move_the_splitter(qtbot, app):
    view, panel = app.playground, app.playground.decoder_panel
    sizes = view.splitter.sizes()
    column = view.control_scroll.widget().minimumSizeHint().width()
    type_source(qtbot, app, SOURCE_40)
    for mode in ("stepping", "teacher", "stepping", "teacher"):
        click(qtbot, app, panel.mode_buttons[mode])
        assert view.splitter.sizes() == sizes, mode
        assert view.control_scroll.widget().minimumSizeHint().width() == column, mode
    click(qtbot, app, panel.buttons["step"])
    type_source(qtbot, app, "3")
    assert view.splitter.sizes() == sizes


def test_no_blank_line_under_the_expected_chips(qtbot, app):
    """The stepper's chips end with the Expected line: no empty line is reserved below it."""
    from visualizer.widgets.playground.token_chips import GAP

    chips = app.playground.decoder_panel.token_chips
    for text in ("0123456789", "31415926", SOURCE_40):
        type_source(qtbot, app, text)
        bottom = max(chip.rect.bottom() for chip in chips.chips(1))
        assert chips.height() == bottom + 1 + GAP, text


def test_the_window_opens_inside_the_free_area_of_its_screen(qtbot):
    """A window with no saved geometry fits the screen's available area (offscreen: 800x600), frame room included;
    1400x900 where there is room, centred."""
    from visualizer.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    available = window.screen().availableGeometry()
    assert available.contains(window.frameGeometry())
    assert window.width() <= available.width() - 16 and window.height() <= available.height() - 48
    from visualizer.main_window import initial_geometry

    big = initial_geometry(QRect(0, 0, 1920, 1080))
    assert big.size().toTuple() == (1400, 900) and big.topLeft().toTuple() == (252, 66)
    small = initial_geometry(QRect(0, 32, 1280, 768))
    assert small.size().toTuple() == (1264, 720) and small.topLeft().toTuple() == (0, 32)


def test_the_whole_window_fits_1280x800_with_a_long_source(qtbot, app):
    """Its minimum size (every tab's, the column's) leaves room for a window frame on a 1280x800 screen."""
    type_source(qtbot, app, SOURCE_40)
    for index in range(app.window.tabs.count()):
        app.window.tabs.setCurrentIndex(index)
        QApplication.processEvents()
    app.window.tabs.setCurrentIndex(0)
    hint = app.window.minimumSizeHint()
    assert hint.width() <= 1280 - 16 and hint.height() <= 800 - 48, hint


FRESH_APP = """
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import visualizer.app as app_module

real_launch = app_module.launch

def launch(argv):
    qapp, root, probe = real_launch(argv)
    def report():
        window, screen = root.window, root.window.screen()
        print(json.dumps({"frame": window.frameGeometry().getRect(), "size": window.size().toTuple(),
                          "available": screen.availableGeometry().getRect()}), flush=True)
        root.hub.dirty = False
        QApplication.quit()
    root.ready.connect(lambda: QTimer.singleShot(200, report))
    root.failed.connect(lambda message: (print(message, file=sys.stderr), QApplication.exit(3)))
    return qapp, root, probe

app_module.launch = launch
sys.exit(app_module.run_app([]))
"""


def test_a_fresh_app_fits_a_1280x800_screen(tmp_path):
    """The real app, started with no saved settings on a 1280x800 screen, opens inside it."""
    screen = tmp_path / "screen.json"
    screen.write_text(
        json.dumps(
            {
                "screens": [
                    {
                        "name": "s",
                        "x": 0,
                        "y": 0,
                        "width": 1280,
                        "height": 800,
                        "logicalDpi": 96,
                        "logicalBaseDpi": 96,
                        "dpr": 1,
                    }
                ]
            }
        )
    )
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": f"offscreen:configfile={screen}",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_APP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tuple(facts["available"]) == (0, 0, 1280, 800)
    assert QRect(*facts["available"]).contains(QRect(*facts["frame"])), facts
    assert facts["size"][0] <= 1280 - 16 and facts["size"][1] <= 800 - 48, facts


def wheel(widget, steps: int) -> bool:
    """Turn the wheel over `widget`; whether the widget kept the event (a refused one goes on to the scroll area
    around it when it comes from a real mouse)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def control_value(control) -> object:
    return control.currentIndex() if isinstance(control, QComboBox) else control.text()


def test_no_spin_box_or_combo_box_anywhere_changes_on_the_wheel_focused_or_not(qtbot, app):
    """Every spin box and drop-down list of every tab (built lazily or not) and of the compare page: a wheel turned
    over it, with the focus on it or elsewhere, leaves its value as it was and is passed on (the column scrolls)."""
    view = app.playground
    view.compare_button.click()  # builds the compare page
    view.compare_button.click()
    for lazy in (app.pe_tab, app.trainer_tab, app.length_lab_tab):
        assert lazy is not None
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    controls = [
        w for w in app.window.findChildren(QWidget) if isinstance(w, (QAbstractSpinBox, QComboBox)) and w.isEnabled()
    ]
    assert view.compare_panel.findChildren(QComboBox) and set(view.compare_panel.findChildren(QComboBox)) <= set(
        controls
    )
    assert len(controls) >= 30
    changed = []
    for control in controls:
        app.window.tabs.setCurrentWidget(
            next(
                p
                for p in (app.window.tabs.widget(i) for i in range(app.window.tabs.count()))
                if p.isAncestorOf(control)
            )
        )
        for focused in (False, True):
            if focused:
                control.setFocus()
                QApplication.processEvents()
                if not control.hasFocus():  # hidden (a folded section, the compare page): focus cannot go there
                    continue
            before = control_value(control)
            kept = [wheel(control, steps) for steps in (1, -1, -1)]
            QApplication.processEvents()
            if control_value(control) != before or any(kept):
                changed.append(f"{type(control).__name__} {control.toolTip()[:40]!r} focused={focused}")
    assert changed == []


def test_the_trainer_curves_legends_fit_inside_their_plots_at_1280(qtbot, app):
    """Every entry of the Loss and Accuracy legends is drawn inside its plot's data area, none over the step axis:
    all of them, after a short run from scratch (the evaluation curves and the previous run have joined)."""
    app.window.tabs.setCurrentWidget(app.trainer_page)
    tab = app.trainer_tab
    curves = tab.curves
    qtbot.waitUntil(curves.metric_plot.isVisible)
    tab.form.steps_spin.setFocus()
    tab.form.steps_spin.selectAll()
    qtbot.keyClicks(tab.form.steps_spin, "10")
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.state_label.text() == "Finished" and not tab.state.busy, timeout=60_000)
    qtbot.waitUntil(lambda: app.hub.dirty)  # the run's weights reached the model: closing would ask to save them
    app.hub.dirty = False
    QApplication.processEvents()
    for plot, entries in ((curves.loss_plot, 3), (curves.metric_plot, 4)):
        item = plot.getPlotItem()
        legend, area = item.legend, item.vb.sceneBoundingRect()
        assert len(legend.items) == entries, [label.text for _, label in legend.items]
        for sample, label in legend.items:
            for part in (sample, label):
                rect = part.sceneBoundingRect()
                assert area.contains(rect), f"{label.text} of '{item.titleLabel.text}' at {rect} outside {area}"

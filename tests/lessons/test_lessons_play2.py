"""Lessons 3 to 8 played in the real window at 1280x800, each step done as a learner does it: a right-click menu, the
Heads tab's key, a mask checkbox, a painted cell, a clicked cell, Train from scratch, Patch. Each step completes only
on its own action, and every number its explanation quotes is one the window shows at that moment."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from qt_helpers import CTRL, SHIFT, cell_pos, key, retype, shown_app, shown_menu, wait_frame
from test_lessons_play import app, hover, press_next, start  # noqa: F401 - `app` is the shared fixture

from visualizer.widgets.training.forming import FormingCurves

NUMBER = re.compile(r"[+−-]?\d+(?:\.\d+)?")


def numbers(text: str) -> list[str]:
    """The numbers a text quotes, as written (a sign kept; a typographic minus read as "-")."""
    return [n.replace("−", "-") for n in NUMBER.findall(text)]


def all_quoted_are_shown(text: str, shown: list[str]) -> None:
    """Every number of the explanation appears in one of the texts the window shows."""
    seen = set()
    for s in shown:
        seen |= set(numbers(s)) | {n.lstrip("+-") for n in numbers(s)}
    missing = [n for n in numbers(text) if n not in seen and n.lstrip("+-") not in seen]
    assert not missing, (missing, text, shown)


def map_centre(grid, layer: int, head: int) -> QPoint:
    rect = grid.map_rect(layer, head)
    centre = QPointF(rect.x() + rect.width() / 2, rect.y() + rect.height() / 2)
    return grid.graphics.mapFromScene(grid.atlas_plot.to_scene(centre))


def choose_from_menu(qtbot, grid, layer: int, head: int, text: str) -> None:
    """Right-click a map and click one entry of the menu that pops up."""
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.RightButton, pos=map_centre(grid, layer, head))
    qtbot.waitUntil(lambda: shown_menu(grid) is not None)
    menu = shown_menu(grid)
    action = next(a for a in menu.actions() if a.text() == text)
    qtbot.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(action).center())


def fmt_like(text: str, figure: str) -> str:
    """The number the lesson six explanation quotes for q·k ("dot"), the score ("scaled") or the weight."""
    patterns = {"dot": r"q·k = (-?\d+\.\d+)", "scaled": r"the score (-?\d+\.\d+)", "weight": r"weight (\d+\.\d+)"}
    found = re.search(patterns[figure], text)
    assert found is not None, (figure, text)
    return found.group(1)


def in_the_docks_view(label) -> bool:
    """Whether the whole label stands inside the lesson dock's visible area (from its first line where it is taller
    than the dock), at the window's size."""
    viewport = label.parentWidget().parentWidget()
    top = label.mapTo(viewport, QPoint(0, 0)).y()
    return 0 <= top and top + min(label.height(), viewport.height()) <= viewport.height()


def wrong_positions(prediction: str, expected: str) -> int:
    said, wanted = prediction.split(), expected.split()
    return sum(1 for i, t in enumerate(wanted) if i >= len(said) or said[i] != t)


def output_shown(app) -> tuple[str, str, str]:
    """The Prediction line as a lesson quotes it (up to its first <eos>, the dimmed tail left out) and the expected."""
    full = app.playground.output_slot.full_text().split()
    prediction = " ".join(full[: full.index("<eos>") + 1] if "<eos>" in full else full)
    expected = app.playground.input_panel.expected_slot.full_text()
    return prediction, expected, str(wrong_positions(prediction, expected))


def open_large(qtbot, app, kind: str, layer: int, head: int):
    """Click a map: its large view opens (the Playground's own reaction to a click)."""
    grid = app.playground.grids[kind]
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.LeftButton, pos=map_centre(grid, layer, head))
    qtbot.waitUntil(grid.large_view.is_visible)
    dialog = grid.large_view._dialog
    qtbot.waitExposed(dialog)
    return dialog


def test_lesson_three_breaks_the_copy_and_quotes_the_heads_tab(qtbot, app):
    panel, runner = start(qtbot, app, "Break it: switch a head off"), app.lessons.runner
    grid = app.playground.grids["cross"]
    assert app.session.source_text == "947196593423"
    choose_from_menu(qtbot, grid, 1, 1, "Ablate L2 H2 (cross)")  # only the head the lesson names
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    off = {kind: np.argwhere(~np.asarray(gates)).tolist() for kind, gates in app.session.gates().items()}
    assert off == {**{kind: [] for kind in off}, "cross": [[1, 1]]}  # L2 H2 alone is off
    prediction, expected, wrong = output_shown(app)
    text = panel.explain_label.text()
    assert f'reads "{prediction}"' in text and f'is "{expected}"' in text and f": {wrong} of those" in text
    assert "<eos>" not in prediction.split()[:-1]  # quoted up to its first <eos>
    said, wanted = prediction.split(), expected.split()
    failed = [t for i, t in enumerate(wanted) if i >= len(said) or said[i] != t]
    assert int(wrong) > 0 and set(failed) == {"9"}, (prediction, expected)  # the positions holding a 9
    assert runner.payload["map"] == "L2 H2"
    all_quoted_are_shown(text, [prediction, expected, wrong, "L2 H2"])
    press_next(qtbot, app, panel)
    assert app.heads_view.n_box.value() == 30
    key(qtbot, app, Qt.Key.Key_4, CTRL)
    assert app.window.tabs.currentWidget() is app.heads_view
    key(qtbot, app, Qt.Key.Key_A, CTRL | SHIFT)
    qtbot.waitUntil(lambda: runner.done, timeout=60_000)
    text = panel.explain_label.text()
    table = app.heads_view.maps.tables["cross"]
    cell = table.item(1, 1).text()
    baseline = app.heads_view.maps.baseline_label.text()
    assert f"L2 H2, changes it by {cell}; " in text
    cells = {
        (i, j): float(table.item(i, j).text()) for i in range(table.rowCount()) for j in range(table.columnCount())
    }
    badges = app.badges["cross"].texts()
    assert len(badges) == len(cells) and all(t.startswith("reads ") for t in badges.values())  # every head aligns
    (i, j), darkest = min(cells.items(), key=lambda item: item[1])  # the head whose loss hurts most, as the table shows
    assert f"the most important of them is L{i + 1} H{j + 1}, the darkest red cell" in text
    assert f"changes the exact match by {table.item(i, j).text()}. " in text and darkest < 0
    all_quoted_are_shown(text, [cell, baseline, "L2 H2", table.item(1, 1).toolTip(), table.item(i, j).text()])


def test_lesson_four_toggles_the_causal_mask_and_paints_a_cell(qtbot, app):
    panel, runner = start(qtbot, app, "Masks: what the decoder may not see"), app.lessons.runner
    box = app.playground.mask_panel.flag_boxes["decoder_causal"]
    assert box.isChecked() and app.playground.current_grid() is app.playground.grids["decoder_self"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    text = panel.explain_label.text()
    hidden = str(int(np.isnan(app.playground.grids["decoder_self"].displayed_matrix(0, 0)).sum()))
    assert not box.isChecked() and "Decoder causal is off" in text and f"has {hidden} grey" in text
    maps = app.playground.grids["decoder_self"].current_maps()
    blank = np.argwhere(np.isnan(app.playground.grids["decoder_self"].displayed_matrix(0, 0)))
    assert len(blank) and all("<pad>" in (maps.query_labels[i], maps.key_labels[j]) for i, j in blank)  # padding
    all_quoted_are_shown(text, [*output_shown(app), hidden])
    press_next(qtbot, app, panel)
    assert box.isChecked()  # the step's set-up pressed Reset masks
    dialog = open_large(qtbot, app, "cross", 1, 1)
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=cell_pos(dialog, 1, 2))
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    text = panel.explain_label.text()
    assert (
        text.startswith("Cross-attention cells painted out: 1. Close the large window (Esc)")
        and "1 cross" in app.playground.mask_panel.painted_label.text()
    )
    cross = app.playground.grids["cross"]
    shape = cross.current_maps().values.shape
    assert all(
        np.isnan(cross.displayed_matrix(layer, head)[1, 2]) for layer in range(shape[0]) for head in range(shape[1])
    )
    all_quoted_are_shown(text, [*output_shown(app), app.playground.mask_panel.painted_label.text()])
    dialog.close()


def test_lesson_five_compares_encodings_types_0000_and_opens_the_length_lab(qtbot, app):
    panel, runner = start(qtbot, app, "Position: sinusoidal and RoPE"), app.lessons.runner
    grid = app.playground.grids["cross"]
    assert app.hub.path.name == "copy_sinusoidal.pt" and "sinusoidal PE" in app.window.model_label.text()
    hover(qtbot, grid, 1, 0, 1, 1)  # the last layer: not where the step asks
    hover(qtbot, grid, 0, 0, 1, 2)  # the first layer, one step right of its diagonal
    assert not runner.done
    readout = hover(qtbot, grid, 0, 0, 1, 1)  # no <bos>: query 1 reads key 1
    qtbot.waitUntil(lambda: runner.done)
    assert "copy_sinusoidal.pt" in panel.explain_label.text() and float(readout.rsplit(": ", 1)[1]) > 0.9
    all_quoted_are_shown(panel.explain_label.text(), [readout, "L1 H1"])
    press_next(qtbot, app, panel)
    assert app.hub.path.name == "copy_rope.pt"
    readout = hover(qtbot, grid, 1, 0, 2, 3)
    qtbot.waitUntil(lambda: runner.done)
    all_quoted_are_shown(panel.explain_label.text(), [readout, "L2 H1"])
    assert grid.large_view.is_visible()
    press_next(qtbot, app, panel)  # type into the Source field: the large window the lesson opened would cover it
    assert not grid.large_view.is_visible()
    source = app.playground.input_panel.source
    retype(qtbot, source, "000")
    assert not runner.done  # 000 is not the text the step asks for
    qtbot.keyClicks(source, "0")
    qtbot.waitUntil(lambda: runner.done)
    assert panel.explain_label.text().startswith("The source is 0000.")
    wait_frame(qtbot, app.session)  # a person rests the mouse on the maps of 0000, once they are drawn
    press_next(qtbot, app, panel)
    readout = hover(qtbot, grid, 1, 1, 1, 2)
    qtbot.waitUntil(lambda: runner.done)
    all_quoted_are_shown(panel.explain_label.text(), [readout, "L2 H2"])
    press_next(qtbot, app, panel)  # a RoPE model without anchors: right on 31415, wrong on 0000
    assert app.hub.path.name == "copy_rope_unanchored.pt" and not app.hub.task.anchored
    prediction, expected, wrong = output_shown(app)
    assert app.session.source_text == "31415" and prediction.split()[:-1] == expected.split() and wrong == "0"
    assert "copies 31415 right" in panel.say_label.text()
    retype(qtbot, source, "0000")
    qtbot.keyClicks(source, "00")  # typed on before the maps of 0000 are drawn: the step waits for 0000 itself
    wait_frame(qtbot, app.session)
    qtbot.wait(200)
    assert not runner.done, panel.explain_label.text()
    retype(qtbot, source, "0000")
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    prediction, expected, wrong = output_shown(app)
    assert int(wrong) >= 2 and len(prediction.split()) < len(expected.split()), (prediction, expected)  # too short
    text = panel.explain_label.text()
    assert text.startswith(f'On 0000 it writes "{prediction}" where the expected output is "{expected}": {wrong} ')
    all_quoted_are_shown(text, [prediction, expected, wrong, app.playground.input_panel.source.text()])
    retype(qtbot, source, "000000")  # six zeros: the answer stays as short
    wait_frame(qtbot, app.session)
    assert output_shown(app)[0] == prediction
    press_next(qtbot, app, panel)
    key(qtbot, app, Qt.Key.Key_5, CTRL)
    lab = app.length_lab_tab
    qtbot.mouseClick(lab.repeat_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: runner.done, timeout=60_000)
    caption = lab.selected_label.text()
    assert f'"{caption}"' in panel.explain_label.text() and caption.startswith("Length 7, one repeated symbol")
    all_quoted_are_shown(panel.explain_label.text(), [caption])


def test_lesson_six_takes_a_clicked_cell_apart_with_the_panels_numbers(qtbot, app):
    panel, runner = start(qtbot, app, "Inside one cell: q·k/√d_k"), app.lessons.runner
    dialog = open_large(qtbot, app, "decoder_self", 0, 0)
    hint = dialog.hint_label  # how to click and paint: read in a few lines, not a word per line
    assert hint.isVisible() and hint.height() <= 3 * hint.fontMetrics().lineSpacing() + 4, hint.height()
    header = dialog.cell_panel.header

    def click(i: int, j: int) -> None:
        before = header.text()
        qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=cell_pos(dialog, i, j))
        qtbot.waitUntil(lambda: header.text() != before, timeout=20_000)  # the panel took the cell apart

    click(1, 3)  # above the diagonal: masked, its weight 0 before any softmax
    assert not runner.done and not panel.explain_label.isVisible()
    app.window.resize(1280, 600)  # a laptop's window under a taskbar: the explanation lands past the dock's fold
    click(3, 1)
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    text = panel.explain_label.text()
    shown = [label.text() for label in dialog.cell_panel.steps.values()] + [header.text()]
    assert text.startswith("L1 H1, query 3 → key 1.")
    all_quoted_are_shown(text, [re.sub("<[^>]+>", " ", s) for s in shown])
    qtbot.waitUntil(lambda: in_the_docks_view(panel.explain_label), timeout=5000)  # no scrolling to find them
    summary = dialog.cell_panel.summary  # and the panel's numbers in view without scrolling its steps
    assert summary.visibleRegion().boundingRect().height() == summary.height() > 0
    seen = re.sub("<[^>]+>", " ", summary.text())
    for figure in ("dot", "scaled", "weight"):
        assert fmt_like(text, figure) in seen, (figure, seen)
    click(1, 2)  # masked again: the explanation stays on the last cell the mask lets through
    assert panel.explain_label.text() == text
    dialog.close()


def test_lesson_seven_trains_from_scratch_and_quotes_the_formed_line(qtbot, app):
    panel, runner = start(qtbot, app, "Train: watch the diagonal form"), app.lessons.runner
    tab = app.trainer_tab
    assert app.window.tabs.currentWidget().isAncestorOf(tab) and tab.form.steps_spin.value() == 60
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    try:
        qtbot.waitUntil(lambda: runner.done, timeout=60_000)
        formed = tab.findChild(FormingCurves).formed_label.text()
        text = panel.explain_label.text()
        assert formed in text and tab.state_label.text() in text
        assert "formed at step" in formed
        all_quoted_are_shown(text, [formed, tab.state_label.text()])
    finally:
        assert app.training.shutdown(20_000)  # its last weights reach the hub before the window closes
        app.hub.dirty = False  # closing asks about unsaved training: the trained weights are let go


def test_lesson_eight_patches_and_quotes_the_heads_effect(qtbot, app):
    panel, runner = start(qtbot, app, "Does attention explain?"), app.lessons.runner
    key(qtbot, app, Qt.Key.Key_6, CTRL)
    patching = app.analysis.causal_page.content().patching
    qtbot.waitUntil(patching.isVisible)
    qtbot.mouseClick(patching.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: runner.done, timeout=60_000)
    cell = patching.heads.tables["cross"].item(1, 1).text()
    text = panel.explain_label.text()
    assert f"restores {cell.split()[1]} of" in text
    table = patching.heads.tables["cross"]
    last = [
        table.item(1, head).text().split() for head in range(table.columnCount() - 1)
    ]  # "effect +0.35 reads fit 1.00"
    assert all(float(words[-1]) >= 0.95 for words in last)  # equally clean diagonals ...
    effects = [float(words[1]) for words in last]
    assert max(effects) >= 2 * min(effects)  # ... restore very different shares
    all_quoted_are_shown(text, [cell, patching.clean.text(), patching.corrupt.text(), "L2 H2"])
    press_next(qtbot, app, panel)  # attribution: the same question asked another way
    assert not runner.done
    causal = app.analysis.causal_page.content()
    bar = causal.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())  # "Lens and attribution"
    source = causal.source
    qtbot.waitUntil(source.isVisible)
    assert source.source.text() == "31415"  # it follows the Playground's source
    qtbot.mouseClick(source.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: runner.done, timeout=120_000)
    table = source.agreement
    assert (runner.payload["method_title"], runner.payload["view_title"]) == ("occlusion", "cross, layer 2")  # asked
    row = [table.verticalHeaderItem(r).text() for r in range(table.rowCount())].index(runner.payload["method_title"])
    col = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())].index(runner.payload["view_title"])
    shown = table.item(row, col).text()  # e.g. "top-1 5 of 6 · ρ +0.59"
    text = panel.explain_label.text()
    assert f'reads "{shown}"' in text and runner.payload["view_title"] in text
    all_quoted_are_shown(text, [shown, runner.payload["view_title"]])


def _started(qtbot):
    from core_model.shipped import resource_path

    started = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: started.lessons is not None and started.lessons.loaded, timeout=60_000)
    return started


@pytest.mark.first_launch
def test_the_first_launch_offers_lesson_one_once_and_help_lessons_brings_them_back(qtbot):
    first = _started(qtbot)
    card = first.lessons.card
    qtbot.waitUntil(card.isVisible)
    assert card.geometry().bottom() < first.window.tabs.mapTo(first.window, QPoint(0, 0)).y()  # above the tabs
    assert not first.lessons.dock.isVisible()
    qtbot.mouseClick(card.dismiss_button, Qt.MouseButton.LeftButton)
    assert not card.isVisible()
    first.window.close()
    second = _started(qtbot)  # the dismissal is remembered: no card on the next start
    assert not second.lessons.card.isVisible()
    key(qtbot, second, Qt.Key.Key_F9)  # Help › Lessons
    qtbot.waitUntil(second.lessons.dock.isVisible)
    assert second.lessons.panel.lesson_list.count() == 8


@pytest.mark.first_launch
def test_the_cards_start_button_opens_the_dock_on_lesson_one(qtbot):
    started = _started(qtbot)
    card = started.lessons.card
    qtbot.waitUntil(lambda: card.isVisible() and started.session.idle)
    qtbot.mouseClick(card.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: started.lessons.runner.ready, timeout=30_000)
    assert started.lessons.dock.isVisible() and not card.isVisible()
    assert started.lessons.panel.title_label.text() == "What one attention map is"


def test_a_large_map_opened_beside_the_lessons_panel_leaves_the_panel_readable(qtbot, app):
    start(qtbot, app, "Inside one cell: q·k/√d_k")
    dock = app.lessons.dock
    dialog = open_large(qtbot, app, "decoder_self", 0, 0)
    dock_left = dock.mapToGlobal(dock.rect().topLeft()).x()
    assert dialog.frameGeometry().right() < dock_left  # the lesson's text stays in view beside the window
    assert dialog.width() >= dialog.minimumSizeHint().width() and dialog.cell_panel.isVisible()
    dialog.close()

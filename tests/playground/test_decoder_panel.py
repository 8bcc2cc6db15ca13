"""DecoderPanel: buttons, shortcuts (and their conflict with text editing), chips, the top-k chart and its clicks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QHelpEvent, QKeySequence, QRegion
from PySide6.QtWidgets import QApplication, QLineEdit, QToolTip, QVBoxLayout, QWidget
from widget_readers import candidate_rect, candidate_widths, chip_states, force_buttons

from visualizer.widgets.playground.chip import CHIP_COLOURS
from visualizer.widgets.playground.chip_legend import TITLE
from visualizer.widgets.playground.decoder_panel import DecoderPanel, DecoderView
from visualizer.widgets.playground.token_chips import EMPTY_OUTPUT, GAP

TOP_K = ((7, "4", 0.62), (5, "3", 0.25), (2, "<eos>", 0.09), (9, "9", 0.04))
RUNNING = DecoderView(
    output_labels=("3", "1", "4"),
    correct=(True, False, None),
    expected_labels=("3", "5", "<eos>"),
    top_k=TOP_K,
    finished=False,
    can_back=True,
    position=3,
    forced=(False, True, False),
)
FINISHED_OK = DecoderView(("3", "5", "<eos>"), (True, True, True), ("3", "5", "<eos>"), TOP_K, True, True, 3)
ACTIONS = {"step": "step_requested", "back": "back_requested", "run": "run_requested", "reset": "reset_requested"}


@pytest.fixture
def panel(qtbot) -> DecoderPanel:
    """A shown panel in the running state."""
    widget = DecoderPanel()
    qtbot.addWidget(widget)
    widget.resize(640, 520)
    with qtbot.waitExposed(widget):
        widget.show()
    widget.set_view(RUNNING)
    return widget


@pytest.fixture
def window(qtbot) -> tuple[QWidget, DecoderPanel, QLineEdit]:
    """An active window holding a text field and the panel, as in the app."""
    host = QWidget()
    qtbot.addWidget(host)
    line = QLineEdit("12 34 56")
    panel = DecoderPanel()
    layout = QVBoxLayout(host)
    layout.addWidget(line)
    layout.addWidget(panel)
    host.resize(640, 560)
    with qtbot.waitActive(host):
        host.show()
    panel.set_view(RUNNING)
    return host, panel, line


@pytest.mark.parametrize("action", list(ACTIONS))
def test_buttons_emit_their_signal(qtbot, panel, action):
    with qtbot.waitSignal(getattr(panel, ACTIONS[action]), timeout=1000):
        qtbot.mouseClick(panel.buttons[action], Qt.MouseButton.LeftButton)


@pytest.mark.parametrize(
    ("action", "key", "modifiers"),
    [
        ("step", Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier),
        ("step", Qt.Key.Key_F10, Qt.KeyboardModifier.NoModifier),
        ("back", Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier),
        ("run", Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier),
        ("run", Qt.Key.Key_F5, Qt.KeyboardModifier.NoModifier),
        ("reset", Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier),
    ],
    ids=["ctrl-right", "f10", "ctrl-left", "ctrl-shift-right", "f5", "ctrl-r"],
)
def test_shortcuts_fire_in_the_active_window(qtbot, window, action, key, modifiers):
    host, panel, _ = window
    panel.buttons["reset"].setFocus()  # focus on a non-text widget
    with qtbot.waitSignal(getattr(panel, ACTIONS[action]), timeout=1000):
        qtbot.keyClick(host.focusWidget(), key, modifiers)


@pytest.mark.parametrize(
    ("action", "key", "modifiers"),
    [
        ("step", Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier),
        ("back", Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier),
        ("run", Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier),
    ],
    ids=["ctrl-right", "ctrl-left", "ctrl-shift-right"],
)
def test_word_movement_keys_stay_with_a_focused_line_edit(qtbot, window, action, key, modifiers):
    _, panel, line = window
    line.setFocus()
    qtbot.waitUntil(line.hasFocus)
    line.setCursorPosition(3)
    with qtbot.assertNotEmitted(getattr(panel, ACTIONS[action])):
        qtbot.keyClick(line, key, modifiers)
    assert line.cursorPosition() != 3  # the line edit moved by a word instead
    assert line.text() == "12 34 56"


@pytest.mark.parametrize(
    ("action", "key", "modifiers"),
    [
        ("step", Qt.Key.Key_F10, Qt.KeyboardModifier.NoModifier),
        ("run", Qt.Key.Key_F5, Qt.KeyboardModifier.NoModifier),
        ("reset", Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier),
    ],
    ids=["f10", "f5", "ctrl-r"],
)
def test_non_editing_keys_work_while_typing(qtbot, window, action, key, modifiers):
    _, panel, line = window
    line.setFocus()
    qtbot.waitUntil(line.hasFocus)
    with qtbot.waitSignal(getattr(panel, ACTIONS[action]), timeout=1000):
        qtbot.keyClick(line, key, modifiers)
    assert line.text() == "12 34 56"


def test_shortcuts_are_listed_and_named_in_tooltips(panel):
    keys = {name: seq.toString() for name, seq in panel.shortcuts().items()}
    assert keys == {"Step": "Ctrl+Right", "Back": "Ctrl+Left", "Run to end": "Ctrl+Shift+Right", "Reset": "Ctrl+R"}
    assert [k.toString() for k in panel.shortcut_keys()["Step"]] == ["Ctrl+Right", "F10"]
    assert "F5" in panel.buttons["run"].toolTip()
    for action in ACTIONS:
        key = panel.shortcuts()[panel.buttons[action].text()]
        assert key.toString(QKeySequence.SequenceFormat.NativeText) in panel.buttons[action].toolTip()


def _chip_pixel(panel, chip) -> str:
    """Colour name of the pixel the user sees in the middle of a chip's left padding."""
    image = panel.token_chips.grab().toImage()
    ratio = image.devicePixelRatio()
    point = chip.rect.topLeft() + QPoint(3, chip.rect.height() // 2)
    return QColor(image.pixel(int(point.x() * ratio), int(point.y() * ratio))).name()


def test_chips_show_labels_states_and_forced_marker(panel):
    assert chip_states(panel) == [("3", "correct"), ("1", "wrong"), ("4", "unknown")]
    chips = panel.token_chips.chips(0)
    assert [c.text for c in chips] == ["3", "1", "4"]
    for chip, state in zip(chips, ("correct", "wrong", "unknown")):
        assert _chip_pixel(panel, chip) == CHIP_COLOURS[state][0]  # painted in its state's colour
    assert "forced by you" in chips[1].tooltip and chips[1].forced
    assert "forced by you" not in chips[0].tooltip and not chips[0].forced
    expected = panel.token_chips.chips(1)
    assert [c.text for c in expected] == ["3", "5", "<eos>"]
    assert _chip_pixel(panel, expected[0]) == CHIP_COLOURS["expected"][0]
    for top, bottom in zip(chips, expected):  # output token i sits above expected token i
        assert top.rect.left() == bottom.rect.left() and top.rect.bottom() < bottom.rect.top()
    assert panel.token_chips.chip_at(chips[2].rect.center()) == chips[2]
    assert panel.token_chips.accessibleDescription() == (
        "Output: 3 (correct) 1 (wrong, forced) 4 (unknown). Expected: 3 5 <eos>"
    )
    assert panel.summary.text() == "1 / 1 of the model's tokens correct so far; 1 token you forced differs"


def test_chip_tooltip_names_token_and_state(qtbot, panel):
    chips_widget = panel.token_chips
    chip = chips_widget.chips(0)[1]
    pos = chip.rect.center()
    QApplication.sendEvent(chips_widget, QHelpEvent(QEvent.Type.ToolTip, pos, chips_widget.mapToGlobal(pos)))
    qtbot.waitUntil(QToolTip.isVisible)
    assert QToolTip.text() == "'1' at position 1: differs from the expected token; forced by you"
    QToolTip.hideText()


def test_chips_shrink_when_going_back(panel):
    panel.set_view(DecoderView(("3",), (True,), ("3", "5", "<eos>"), TOP_K, False, True, 1))
    assert chip_states(panel) == [("3", "correct")]
    assert [c.text for c in panel.token_chips.chips(0)] == ["3"]


def test_bars_equal_probabilities_with_labels(panel):
    np.testing.assert_allclose(candidate_widths(panel.chart), [p for _, _, p in TOP_K])
    np.testing.assert_allclose(panel.chart._bars.opts["width"], [p for _, _, p in TOP_K])
    ticks = panel.chart.getPlotItem().getAxis("left")._tickLevels[0]
    assert [label for _, label in ticks] == ["4", "3", "<eos>", "9"]
    texts = [t.textItem.toPlainText() for t in panel.chart._texts if t.isVisible()]
    assert texts == ["0.62", "0.25", "0.09", "0.04"]
    assert panel.chart.getPlotItem().titleLabel.text == "Next token at position 3"


def test_a_finished_decoding_titles_its_empty_chart(panel):
    panel.set_view(DecoderView(("3", "<eos>"), (True, None), ("3", "<eos>"), (), True, True, 2))
    assert panel.chart.getPlotItem().titleLabel.text == "No next token: decoding has finished"
    assert not [t for t in panel.chart._texts if t.isVisible()]


def test_bars_update_in_place(panel):
    bars = panel.chart._bars
    panel.set_view(
        DecoderView(("3", "1"), (True, False), ("3", "5", "<eos>"), ((1, "x", 0.9), (2, "y", 0.1)), False, True, 2)
    )
    assert panel.chart._bars is bars
    np.testing.assert_allclose(candidate_widths(panel.chart), [0.9, 0.1])


def _bar_pixel(panel: DecoderPanel, index: int) -> QPoint:
    """Centre of bar `index` in the chart viewport: view coords -> scene -> widget."""
    chart = panel.chart
    centre = candidate_rect(chart, index).center()
    scene_pos = chart.getPlotItem().vb.mapViewToScene(centre)
    return chart.mapFromScene(scene_pos)


@pytest.mark.parametrize("index", [0, 1, 3])
def test_clicking_a_bar_forces_its_token(qtbot, panel, index):
    pos = _bar_pixel(panel, index)
    assert panel.chart.viewport().rect().contains(pos)
    with qtbot.waitSignal(panel.token_forced, timeout=1000) as blocker:
        qtbot.mouseClick(panel.chart.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [TOP_K[index][0]]


def test_clicking_between_bars_forces_nothing(qtbot, panel):
    between = (_bar_pixel(panel, 0) + _bar_pixel(panel, 1)) / 2
    with qtbot.assertNotEmitted(panel.token_forced):
        qtbot.mouseClick(panel.chart.viewport(), Qt.MouseButton.LeftButton, pos=between)


def test_force_buttons_for_keyboard_users(qtbot, panel):
    buttons = force_buttons(panel)
    assert [b.text() for b in buttons] == ["force 4 (0.62)", "force 3 (0.25)", "force <eos> (0.09)", "force 9 (0.04)"]
    buttons[2].setFocus()
    qtbot.waitUntil(buttons[2].hasFocus)
    with qtbot.waitSignal(panel.token_forced, timeout=1000) as blocker:
        qtbot.keyClick(buttons[2], Qt.Key.Key_Space)
    assert blocker.args == [2]


def test_force_buttons_follow_each_new_set_of_candidates(qtbot, panel):
    """A keystroke that leaves the buttons' texts as they were sets nothing; any change of token, order or shown
    probability reaches the buttons, and a shorter list hides the buttons left over."""
    texts = lambda: [b.text() for b in force_buttons(panel)]  # noqa: E731
    before = texts()
    panel.set_view(dataclasses.replace(RUNNING, top_k=tuple((i, t, p + 0.001) for i, t, p in TOP_K)))
    assert texts() == before  # 0.621 shows as 0.62 again
    panel.set_view(dataclasses.replace(RUNNING, top_k=((5, "2", 0.7), (4, "1", 0.3))))
    assert texts() == ["force 2 (0.70)", "force 1 (0.30)"]
    with qtbot.waitSignal(panel.token_forced, timeout=1000) as blocker:
        qtbot.mouseClick(force_buttons(panel)[1], Qt.MouseButton.LeftButton)
    assert blocker.args == [4]
    panel.set_view(dataclasses.replace(RUNNING, top_k=((5, "2", 0.694), (4, "1", 0.306))))
    assert texts() == ["force 2 (0.69)", "force 1 (0.31)"]
    panel.set_view(RUNNING)
    assert texts() == before


def test_finished_disables_step_and_run_and_clears_candidates(qtbot, panel):
    panel.set_view(FINISHED_OK)
    assert not panel.buttons["step"].isEnabled() and not panel.buttons["run"].isEnabled()
    assert panel.buttons["back"].isEnabled() and panel.buttons["reset"].isEnabled()
    assert candidate_widths(panel.chart).size == 0
    assert force_buttons(panel) == []
    assert "<eos>" in panel.caption.text() and panel.caption.isVisibleTo(panel)
    assert panel.summary.text() == "Done: output matches the expected output"
    with qtbot.assertNotEmitted(panel.step_requested):
        qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)


def test_finished_by_length_limit_says_so(panel):
    panel.set_view(DecoderView(("3", "3"), (True, False), ("3", "5", "<eos>"), (), True, True, 2))
    assert "length limit" in panel.caption.text()
    assert panel.summary.text() == "Done: 1 token wrong"


def test_finished_disables_the_step_shortcut(qtbot, window):
    host, panel, _ = window
    panel.set_view(FINISHED_OK)
    panel.buttons["reset"].setFocus()
    with qtbot.assertNotEmitted(panel.step_requested):
        qtbot.keyClick(host.focusWidget(), Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)


def test_back_disabled_at_the_start(panel):
    panel.set_view(DecoderView((), (), ("3", "<eos>"), TOP_K, False, False, 0, stepping=True))
    assert not panel.buttons["back"].isEnabled()
    assert panel.summary.text() == "Nothing decoded yet: press Step"


def test_under_teacher_forcing_the_summary_says_the_prediction_is_made_all_at_once(panel):
    """Teacher forcing: the Prediction line shows a whole answer while no chip is decoded; "Nothing decoded yet"
    beside it would read as a contradiction."""
    panel.set_view(DecoderView((), (), ("3", "<eos>"), TOP_K, False, False, 0, stepping=False))
    assert panel.summary.text() == "Teacher forcing: all positions at once; Step decodes one by one"


def test_no_expectation_summary(panel):
    panel.set_view(DecoderView(("a", "b"), (None, None), (), TOP_K, False, True, 2))
    assert chip_states(panel) == [("a", "unknown"), ("b", "unknown")]
    assert panel.summary.text() == "2 tokens decoded"
    assert panel.token_chips.chips(1) == []


def test_long_output_wraps_inside_a_narrow_panel_at_a_steady_height(qtbot):
    """A 20-token output in a 440 px panel wraps onto several lines, every chip in sight, nothing scrolls sideways,
    output token i right above expected token i, and the chips keep one height while stepping."""
    panel = DecoderPanel()
    qtbot.addWidget(panel)
    panel.resize(440, 640)
    with qtbot.waitExposed(panel):
        panel.show()
    expected = tuple(str(i % 10) for i in range(19)) + ("<eos>",)
    decoded = tuple("7" if i % 4 == 3 else label for i, label in enumerate(expected))  # a few wrong
    chips_widget = panel.token_chips
    panel.set_view(DecoderView((), (), expected, TOP_K, False, False, 0))
    QApplication.processEvents()
    heights = [chips_widget.height()]
    for n in range(1, 21):
        correct = tuple(decoded[i] == expected[i] for i in range(n))
        panel.set_view(DecoderView(decoded[:n], correct, expected, TOP_K, n == 20, True, n))
        QApplication.processEvents()
        heights.append(chips_widget.height())
    assert set(heights) == {heights[0]}, f"the chips' height changed while stepping: {heights}"
    assert chips_widget.width() <= panel.width()
    visible = chips_widget.visibleRegion().boundingRect()  # what is not clipped by a parent (e.g. a scroll area)
    output, below = chips_widget.chips(0), chips_widget.chips(1)
    assert len(output) == len(below) == 20
    for chip in output + below:
        assert chips_widget.rect().contains(chip.rect) and visible.contains(chip.rect), chip
    assert len({chip.rect.top() for chip in output}) > 1  # wrapped onto more than one line
    for top, bottom in zip(output, below):  # output token i directly above expected token i
        assert top.rect.left() == bottom.rect.left() and top.rect.width() == bottom.rect.width()
        assert 0 < bottom.rect.top() - top.rect.bottom() <= 8
    for chip, want in zip(output, decoded):
        state = "correct" if want == expected[chip.index] else "wrong"
        assert chip.state == state and _chip_pixel(panel, chip) == CHIP_COLOURS[state][0]
    assert _chip_pixel(panel, below[-1]) == CHIP_COLOURS["expected"][0]
    assert chips_widget.chip_at(output[-1].rect.center()) == output[-1]


WRAPPED = [str(i % 10) for i in range(70)]  # three lines or more at 600 px


def _rows(tokens: list[str], wrong: int | None = None) -> tuple[list[tuple[str, str, bool]], list[str]]:
    return [(t, "wrong" if i == wrong else "correct", False) for i, t in enumerate(tokens)], tokens


@pytest.mark.parametrize(
    "first, second",
    [
        (
            ([("1", "correct", False), ("2", "wrong", False), ("3", "correct", False)], ["1", "2", "3"]),
            ([("1", "correct", False), ("2", "correct", False)], ["1", "2"]),
        ),  # one chip gone, one recoloured
        (_rows(WRAPPED), _rows(WRAPPED[:-1])),  # backspace on the last line of a wrapped row
        (_rows(WRAPPED[:-1]), _rows(WRAPPED[:-1] + ["7"])),  # retyped there
        (_rows(WRAPPED), _rows(WRAPPED, wrong=3)),  # a chip on the first line recoloured
        (_rows(WRAPPED), _rows(WRAPPED, wrong=40)),  # ... and one on a middle line
        (
            _rows(WRAPPED),
            _rows(WRAPPED[:40] + ["<pad>"] + WRAPPED[41:]),
        ),  # a wider token pushes chips onto the next line
        ((_rows(WRAPPED + ["1", "2"])[0], WRAPPED), (_rows(WRAPPED + ["1", "3"])[0], WRAPPED)),  # output past expected
    ],
    ids=[
        "short row",
        "backspace, wrapped",
        "retype, wrapped",
        "first line",
        "middle line",
        "wider token",
        "output longer",
    ],
)
def test_chips_repainted_in_part_look_exactly_like_chips_drawn_whole(qtbot, first, second):
    """A keystroke repaints only the chips that changed; the pixels must equal a widget that drew the same rows from
    scratch (a removed chip erased, a recoloured one redrawn, the rest untouched), on any line of a wrapped row."""
    from PySide6.QtWidgets import QApplication

    from visualizer.widgets.playground.token_chips import TokenChips

    def shown(rows_list):
        chips = TokenChips()
        qtbot.addWidget(chips)
        chips.resize(600, chips.height())
        chips.show()
        qtbot.waitExposed(chips)
        for output, expected in rows_list:
            chips.set_rows(output, expected)
            QApplication.processEvents()  # each state's (partial) repaint lands in the window, as between keys
        # what the window shows (its backing store); grab() would repaint the whole widget and hide a stale chip
        return chips, chips.screen().grabWindow(chips.winId()).toImage()

    _, typed = shown([first, second])
    widget, fresh = shown([second])
    assert typed.size() == fresh.size()
    assert typed == fresh
    for row in (0, 1):  # ... and that drawing is right: every chip of both rows in its colour
        for chip in widget.chips(row):
            point = (chip.rect.topLeft() + QPoint(3, chip.rect.height() // 2)) * typed.devicePixelRatio()
            assert QColor(typed.pixel(point)).name() == chip.colours[0], f"row {row} chip {chip.index}"


def test_every_wrapped_block_shows_its_row_titles_after_full_and_partial_paints(qtbot):
    """Each block of a wrapped row starts with "Output:" over "Expected:" in the window's text colour, and a paint of
    a region reaching one block's title column draws that block's titles (a paint draws the blocks it reaches)."""
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QApplication

    from visualizer.widgets.playground.token_chips import TokenChips

    chips = TokenChips()
    qtbot.addWidget(chips)
    chips.resize(600, chips.height())
    chips.show()
    qtbot.waitExposed(chips)
    chips.set_rows(*_rows(WRAPPED))
    QApplication.processEvents()
    ink = chips.palette().windowText().color().lightness()
    tops = sorted({c.rect.top() for row in (0, 1) for c in chips.chips(row)})
    assert len(tops) >= 6  # three blocks or more, two rows each

    def inked(image: QImage, top: int) -> int:
        ratio = image.devicePixelRatio()
        box = [
            QColor(image.pixel(round(x * ratio), round(y * ratio))).lightness()
            for x in range(2, chips._title_width - 4)
            for y in range(top, top + chips._chip_height)
        ]
        return sum(abs(v - ink) < 60 for v in box)

    whole = chips.screen().grabWindow(chips.winId()).toImage()
    gap = QColor(whole.pixel(2, round((tops[1] + chips._chip_height + 1) * whole.devicePixelRatio())))
    assert abs(gap.lightness() - ink) > 100  # the background is far from the text colour: no title reads as ink
    for top in tops:
        assert inked(whole, top) >= 10, f"no title text in the line at y={top}"
    strip = QRect(0, tops[2], chips._title_width, tops[3] + chips._chip_height - tops[2])  # the second block's titles
    partial = QImage(chips.size(), QImage.Format.Format_ARGB32)
    partial.fill(Qt.GlobalColor.white)
    painter = QPainter(partial)
    chips.render(painter, strip.topLeft(), QRegion(strip))  # the region drawn where it sits in the widget
    painter.end()
    assert inked(partial, tops[2]) >= 10 and inked(partial, tops[3]) >= 10
    assert inked(partial, tops[0]) == 0  # outside the region nothing was painted


@pytest.mark.parametrize(
    "edit",
    ["append", "backspace", "change the middle", "wider token", "narrower widget", "narrower token at a line start"],
)
def test_chips_laid_out_after_an_edit_equal_chips_laid_out_from_scratch(qtbot, edit):
    """Chips before the first changed column are kept from the last layout; every chip must still sit exactly where
    a widget laying out the new rows from scratch puts it, across wrapped lines (60 tokens in 500 px). Line breaks
    before the edit are kept too: a narrower token that opened a line must move back onto the line above."""
    from visualizer.widgets.playground.token_chips import TokenChips

    def widget(width: int) -> TokenChips:
        chips = TokenChips()
        qtbot.addWidget(chips)
        chips.resize(width, chips.height())
        chips.show()
        qtbot.waitExposed(chips)
        return chips

    tokens = [str(i % 10) for i in range(60)]
    output = [(t, "correct", False) for t in tokens[:5]]  # the same in both frames: only the expected row moves
    typed = widget(500)
    typed.set_rows(output, tokens + ["<eos>"])
    per_line = sum(c.rect.top() == typed.chips(1)[0].rect.top() for c in typed.chips(1))
    new, first_change = {
        "append": (tokens + ["7"], 60),
        "backspace": (tokens[:-1], 59),
        "change the middle": (tokens[:30] + ["8"] + tokens[31:], 30),
        "wider token": (tokens[:40] + ["<pad>"] + tokens[41:], 40),
        "narrower widget": (tokens + ["7"], 60),
        "narrower token at a line start": (tokens, per_line - 1),
    }[edit]
    if edit == "narrower token at a line start":  # a wide token in the last column of line 1 opens line 2
        typed.set_rows(output, tokens[: per_line - 1] + ["<bos><bos>"] + tokens[per_line:] + ["<eos>"])
        assert typed.chips(1)[per_line - 1].rect.left() == typed.chips(1)[0].rect.left()
    if edit == "narrower widget":
        typed.resize(430, typed.height())  # laid out again at the new width, then the edit below
    before = typed.chips(1)
    typed.set_rows(output, new + ["<eos>"])
    fresh = widget(typed.width())
    fresh.set_rows(output, new + ["<eos>"])
    for row in (0, 1):
        assert [(c.index, c.text, c.state, c.rect) for c in typed.chips(row)] == [
            (c.index, c.text, c.state, c.rect) for c in fresh.chips(row)
        ]
    assert len({c.rect.top() for c in typed.chips(1)}) > 1  # the row wraps: later lines are checked too
    after = typed.chips(1)  # the columns before the edit kept their chips; the edited one is new
    assert all(after[i] is before[i] for i in range(first_change))
    assert after[first_change] is not before[first_change]


def test_a_token_decoded_onto_the_output_row_keeps_every_expected_chip(qtbot):
    """Stepping adds output chips one by one; the expected row underneath stays as it was, chip for chip."""
    from visualizer.widgets.playground.token_chips import TokenChips

    chips = TokenChips()
    qtbot.addWidget(chips)
    chips.resize(500, chips.height())
    expected = [str(i % 10) for i in range(40)] + ["<eos>"]
    chips.set_rows([("0", "correct", False)], expected)
    before = chips.chips(1)
    chips.set_rows([("0", "correct", False), ("1", "correct", False)], expected)
    assert all(a is b for a, b in zip(chips.chips(1), before)) and len(chips.chips(1)) == len(before)
    assert [c.text for c in chips.chips(0)] == ["0", "1"]


def test_typing_and_deleting_across_a_line_break_keeps_the_chips_height(qtbot):
    """Backspace and retype at the length where the expected row needs one more line: the height (and everything
    below it) stays put; it resized on every key, and each resize repainted all the chips. A larger deletion
    still gives the room back."""
    from visualizer.widgets.playground.token_chips import TokenChips

    def fresh_height(n: int) -> int:
        chips = TokenChips()
        qtbot.addWidget(chips)
        chips.resize(300, chips.height())
        chips.set_rows([], [str(i % 10) for i in range(n)] + ["<eos>"])
        return chips.height()

    breaks = [n for n in range(2, 120) if fresh_height(n) > fresh_height(n - 1)]  # one more token, one more line
    n = breaks[3]
    chips = TokenChips()
    qtbot.addWidget(chips)
    chips.resize(300, chips.height())
    chips.show()
    qtbot.waitExposed(chips)
    heights = []
    for length in (n, n - 1, n, n - 1, n):
        chips.set_rows([], [str(i % 10) for i in range(length)] + ["<eos>"])
        QApplication.processEvents()
        heights.append(chips.height())
    assert heights == [fresh_height(n)] * 5
    for length in (n - 1, n - 2):  # a second change that still needs a line less gives the line back
        chips.set_rows([], [str(i % 10) for i in range(length)] + ["<eos>"])
        heights.append(chips.height())
    assert heights[-2:] == [fresh_height(n), fresh_height(n - 2)] and fresh_height(n - 2) < fresh_height(n)
    short = breaks[0] - 1  # one line: deleting more than a line's worth gives the room back at once
    chips.set_rows([], [str(i % 10) for i in range(short)] + ["<eos>"])
    assert chips.height() == fresh_height(short) < heights[0]
    chips.set_rows([], [])  # cleared: one line's height, no blank line kept
    assert chips.height() == fresh_height(0)


@pytest.mark.parametrize("width", [300, 333, 401, 478, 555])
def test_the_reserved_height_is_the_lines_the_expected_row_takes(qtbot, width):
    """The chips reserve exactly the lines their expected row fills at this width: no blank line below the last
    chip and none missing, for every length up to 120 tokens (each line boundary included)."""
    from visualizer.widgets.playground.token_chips import TokenChips

    for n in range(1, 121):
        chips = TokenChips()
        qtbot.addWidget(chips)
        chips.resize(width, chips.height())
        chips.set_rows([], [str(i % 10) for i in range(n)])
        bottom = max(chip.rect.bottom() for chip in chips.chips(1))
        assert chips.height() == bottom + 1 + GAP, f"{n} tokens at {width} px"


@pytest.mark.parametrize("width", [300, 478])
def test_an_output_wider_than_the_expected_row_grows_the_chips_and_keeps_them_grown(qtbot, width):
    """The reserve is the expected row's own lines (no blank line under it); an output of wider tokens (here every
    one "<eos>") that needs more lines grows the chips as it is decoded, never shrinks them, and stays inside them."""
    from visualizer.widgets.playground.token_chips import TokenChips

    for n in (10, 25, 70):
        chips = TokenChips()
        qtbot.addWidget(chips)
        chips.resize(width, chips.height())
        expected = [str(i % 10) for i in range(n)] + ["<eos>"]
        chips.set_rows([], expected)
        reserved = chips.height()
        assert reserved == max(chip.rect.bottom() for chip in chips.chips(1)) + 1 + GAP
        heights = []
        for k in range(1, n + 2):
            chips.set_rows([("<eos>", "wrong", False)] * k, expected)
            heights.append(chips.height())
        assert heights == sorted(heights) and heights[-1] > reserved, f"{n} tokens at {width} px"
        assert heights[-1] == max(chip.rect.bottom() for chip in chips.chips(0) + chips.chips(1)) + 1 + GAP


def _ink(widget: QWidget, rect: QRect) -> int:
    """Pixels inside `rect` that differ from the widget's background: drawn text or chips."""
    image = widget.grab().toImage()
    background = widget.palette().window().color().rgb()
    rect = rect.intersected(image.rect())
    return sum(
        image.pixel(x, y) != background
        for x in range(rect.left(), rect.right())
        for y in range(rect.top(), rect.bottom())
    )


class PaintedRegion(QObject):
    """The union of the regions a widget repaints on screen (a widget's grab() repaints all of it anyway)."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self.region = QRegion()
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.region += event.region()
        return False


def test_an_empty_output_row_says_how_to_fill_it_and_the_words_go_with_the_first_token(qtbot, panel):
    """Teacher forcing decodes nothing one by one: the Output row would stand empty beside a full Prediction line."""
    chips = panel.token_chips
    panel.set_view(DecoderView((), (), ("3", "5", "<eos>"), TOP_K, False, False, 0))
    expected = chips.chips(1)[0].rect
    row = QRect(
        expected.left(), expected.top() - expected.height() - GAP, chips.width() - expected.left(), expected.height()
    )
    qtbot.waitUntil(lambda: _ink(chips, row) > 50)  # the grey words are drawn
    assert EMPTY_OUTPUT in chips.accessibleDescription()

    painted = PaintedRegion(chips)
    panel.set_view(dataclasses.replace(RUNNING, output_labels=("3",), correct=(True,), forced=(False,)))
    first = chips.chips(0)[0].rect
    assert first.top() == row.top()
    beyond = QRect(first.right() + 2, row.top(), chips.width() - first.right() - 2, row.height())
    qtbot.waitUntil(lambda: painted.region.intersected(QRegion(beyond)) == QRegion(beyond))  # repainted on screen
    assert _ink(chips, beyond) == 0  # and nothing of the words is left beside the chip
    assert EMPTY_OUTPUT not in chips.accessibleDescription()


def test_the_chip_legend_is_titled_as_a_legend_before_its_first_chip(qtbot, panel):
    """Coloured words in a row read as buttons; a title before them says what they are."""
    legend = panel.legend
    title = QRect(0, 0, legend.fontMetrics().horizontalAdvance(TITLE), legend.fontMetrics().height())
    assert _ink(legend, title) > 20  # the title's letters
    image = legend.grab().toImage()
    first_chip = QColor(CHIP_COLOURS["correct"][0]).rgb()
    columns = [x for x in range(image.width()) if image.pixel(x, title.height() // 2 + 3) == first_chip]
    assert columns and min(columns) > title.right()  # the first chip comes after the title

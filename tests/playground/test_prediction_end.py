"""The Prediction line never presents what comes after the end as output.

The decoder predicts at every position it reads, padding included. Under teacher forcing the launch line reads
"0 1 2 3 4 5 6 7 8 9 <eos> <eos> 6": the last two are predictions made where the decoder reads <pad>. They are drawn
dimmed, and hovering them says they are after the end and not part of the output. While stepping, the bright part
is exactly the decoded output the chips show and the "N tokens wrong" line counts.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QFontMetrics, QHelpEvent
from PySide6.QtWidgets import QApplication, QToolTip
from qt_helpers import start_app, wait_frame
from widget_readers import chip_states, force_buttons

END = "<eos>"


def darkest(label, x0: int, x1: int) -> int:
    """The darkest grey level the label draws between x0 and x1 (its glyphs: the text's colour)."""
    image = label.grab().toImage()
    scale = image.width() / label.width()
    pixels = np.array(
        [
            [image.pixelColor(x, y).lightness() for x in range(int(x0 * scale), int(x1 * scale))]
            for y in range(image.height())
        ]
    )
    return int(pixels.min())


def split_x(label, head_tokens: int) -> tuple[int, int]:
    """Where, in the label, the first `head_tokens` tokens end and where the whole line ends (pixels)."""
    text, metrics, left = label.text(), label.fontMetrics(), label.contentsRect().left()
    head = " ".join(text.split(" ")[:head_tokens]) + " "
    return left + metrics.horizontalAdvance(head), left + metrics.horizontalAdvance(text)


def ink_right(label) -> int:
    """The rightmost pixel column the label draws anything in (text or note), in label pixels."""
    image = label.grab().toImage()
    scale = image.width() / label.width()
    back = image.pixelColor(image.width() - 1, 0).lightness()
    columns = [
        x
        for x in range(image.width())
        if any(image.pixelColor(x, y).lightness() < back - 40 for y in range(image.height()))
    ]
    return int(max(columns) / scale)


def tooltip_at(label, x: int) -> str:
    pos = QPoint(x, label.height() // 2)
    QToolTip.hideText()
    QApplication.sendEvent(label, QHelpEvent(QEvent.Type.ToolTip, pos, label.mapToGlobal(pos)))
    return QToolTip.text() if QToolTip.isVisible() else ""


def assert_dimmed_after(label, head_tokens: int) -> str:
    """The first `head_tokens` tokens in the text colour, the rest clearly lighter; returns the rest's tooltip."""
    split, end = split_x(label, head_tokens)
    assert darkest(label, 0, split - 2) < 60, "the output tokens are drawn in the text colour"
    assert darkest(label, split + 1, end) > 90, f"the tokens after {label.text().split()[:head_tokens]} are dimmed"
    return tooltip_at(label, (split + end) // 2)


def test_the_predictions_at_padding_positions_are_dimmed_and_say_so(qtbot):
    """At launch (copy, 0123456789, two extra pads) the line ends "<eos> <eos> 6": the first <eos> closes the output,
    and "<eos> 6" were predicted where the decoder reads <pad>."""
    app = start_app(qtbot)
    label = app.playground.output_label
    tokens = label.text().split()
    assert tokens[:11] == [*"0123456789", END] and len(tokens) == 13
    assert app.session.last_frame.maps.maps["cross"].query_labels[11:] == ("<pad>", "<pad>")
    tip = assert_dimmed_after(label, 11)
    assert tip == (
        "Dimmed: the predictions at positions 11–12 come after the end and are not part of the output: "
        "the output ends at the first <eos> (position 10); from position 11 on the decoder reads <pad> "
        "(padding)."
    )
    over_output = tooltip_at(label, label.contentsRect().left() + 4)  # over "0": the line's own tooltip
    assert over_output.startswith("The model's argmax prediction at each decoder position")
    assert tip in over_output  # and it names the dimmed part too
    app.hub.dirty = False


def test_reverse_dims_everything_after_its_first_end(qtbot):
    """Reverse at launch ended "<eos> <pad> <eos>" (or "<eos> <eos> <eos>"), all drawn like output."""
    app = start_app(qtbot)
    label, combo = app.playground.output_label, app.playground.input_panel.task
    before = label.text()
    combo.setCurrentIndex(combo.findData("reverse"))
    qtbot.waitUntil(lambda: label.text() != before, timeout=30_000)
    wait_frame(qtbot, app.session)
    tokens = label.text().split()
    assert tokens[:11] == [*"9876543210", END] and len(tokens) == 13
    assert "after the end and are not part of the output" in assert_dimmed_after(label, 11)
    app.hub.dirty = False


def test_stepping_dims_only_what_follows_the_decoded_end_like_the_chips_count(qtbot):
    """Run to end: the bright tokens are the chips' output, token for token, and the summary counts only those."""
    app = start_app(qtbot)
    panel, label = app.playground.decoder_panel, app.playground.output_label
    source = app.playground.input_panel.source
    source.selectAll()
    qtbot.keyClicks(source, "31415")
    wait_frame(qtbot, app.session)
    qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    wrong = next(b for b in force_buttons(panel) if "force 1 " not in b.text() and "<eos>" not in b.text())
    qtbot.mouseClick(wrong, Qt.MouseButton.LeftButton)  # a wrong second token, forced
    wait_frame(qtbot, app.session)
    qtbot.mouseClick(panel.buttons["run"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.summary.text().startswith("Done"), timeout=30_000)
    wait_frame(qtbot, app.session)
    chips = chip_states(panel)
    assert chips[-1][0] == END
    forced = [chip.forced for chip in panel.token_chips.chips(0)]
    n_wrong = sum(state == "wrong" and not f for (_, state), f in zip(chips, forced))
    n_forced = sum(state == "wrong" and f for (_, state), f in zip(chips, forced))
    assert n_forced == 1  # the forced token differs from the expectation: no mistake of the model's
    if n_wrong:
        said = f"Done: {n_wrong} token{'s' * (n_wrong != 1)} wrong; 1 token you forced differs"
    else:
        said = "Done: 1 token you forced differs from the expected output; the model's own match"
    assert panel.summary.text() == said
    struck = label.mark_rects("struck")
    assert (
        len(struck) == 1
        and "at position 1 the model predicted" in label.toolTip() + app.playground.output_label.toolTip()
    )
    tokens = label.text().split()
    assert len(tokens) == len(chips) + 1  # one more position: the one reading the decoded <eos>
    tip = assert_dimmed_after(label, len(chips))
    assert tip == (
        f"Dimmed: the prediction at position {len(chips)} comes after the end and is not part of the "
        f"output: the decoded output ends with <eos> at position {len(chips) - 1}."
    )
    app.hub.dirty = False


def test_the_line_says_in_words_after_it_that_the_dimmed_part_is_not_output(qtbot):
    """The note is drawn after the line where it fits, in the dimmed colour; with nothing dimmed there is none."""
    app = start_app(qtbot)
    label = app.playground.output_label
    _, end = split_x(label, 11)
    background = darkest(label, label.width() - 3, label.width())
    assert darkest(label, end + 4, label.width()) < background - 40, "no note after the dimmed predictions"
    assert tooltip_at(label, end + 30).startswith("Dimmed: the predictions at positions 11–12")
    pads = app.playground.input_panel.pads
    pads.selectAll()
    qtbot.keyClicks(pads, "0")  # no padding: "0 … 9 <eos>" is all output
    qtbot.waitUntil(lambda: label.text().split()[-1] == END and len(label.text().split()) == 11)
    wait_frame(qtbot, app.session)
    _, end = split_x(label, 11)
    assert darkest(label, end + 4, label.width()) >= background - 5, "a note with nothing dimmed"
    app.hub.dirty = False


def test_while_stepping_the_next_token_is_dimmed_and_named_as_not_decoded_yet(qtbot):
    """Stepping, before <eos> is decoded, the decoder reads <bos> and what was decoded: its last prediction is the
    token Step would decode next. Bright: exactly the decoded chips; dimmed: that next token, and the line says so."""
    app = start_app(qtbot)
    panel, label = app.playground.decoder_panel, app.playground.output_label
    qtbot.mouseClick(panel.mode_buttons["stepping"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert label.text().split() == ["0"] and chip_states(panel) == []  # nothing decoded: the one token is next
    split, end = split_x(label, 0)
    assert darkest(label, split + 1, end) > 90, "the next token is dimmed"
    for _ in range(3):
        qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
        wait_frame(qtbot, app.session)
    assert [token for token, _ in chip_states(panel)] == ["0", "1", "2"]
    assert label.text().split() == ["0", "1", "2", "3"]
    tip = assert_dimmed_after(label, 3)
    assert tip == (
        "Dimmed: the prediction at position 3 is the next token the model would decode (Step decodes it); it is "
        "not decoded yet, so it is not part of the output."
    )
    _, end = split_x(label, 4)
    background = darkest(label, label.width() - 3, label.width())
    assert darkest(label, end + 4, label.width()) < background - 40, "no note after the next token"
    plain = label.font()
    plain.setBold(False)
    note = "   ← next: not decoded yet"
    assert abs(ink_right(label) - (end + 2 + QFontMetrics(plain).horizontalAdvance(note))) <= 4  # that note, whole
    assert tooltip_at(label, end + 30) == tip
    app.hub.dirty = False


def test_a_forced_eos_is_credited_to_the_user_and_the_prediction_it_replaced_is_struck_out(qtbot):
    """Step three times on the copy model, then force <eos>: the panel says the user ended it, the model's own
    tokens are all right, and the Prediction line strikes out the 3 the model wanted (the output has <eos> there)."""
    app = start_app(qtbot)
    panel, label = app.playground.decoder_panel, app.playground.output_label
    source = app.playground.input_panel.source
    source.selectAll()
    qtbot.keyClicks(source, "0123456789")
    wait_frame(qtbot, app.session)
    for _ in range(3):
        qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
        wait_frame(qtbot, app.session)
    eos = next(b for b in force_buttons(panel) if "<eos>" in b.text())
    qtbot.mouseClick(eos, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.summary.text().startswith("Done"), timeout=30_000)
    wait_frame(qtbot, app.session)
    assert [t for t, _ in chip_states(panel)] == ["0", "1", "2", END]
    assert panel.caption.text() == "Finished: you forced <eos>. Back or Reset to continue exploring."
    assert panel.summary.text() == "Done: 1 token you forced differs from the expected output; the model's own match"
    assert label.text().split()[:4] == ["0", "1", "2", "3"]
    (struck,) = label.mark_rects("struck")
    x0, x1 = split_x(label, 3)
    assert struck.left() == x0 and struck.width() == QFontMetrics(label.font()).horizontalAdvance("3")
    assert darkest(label, struck.left(), struck.right()) > darkest(label, 0, x0 - 4) + 40  # dimmed, not bold black
    image = label.grab().toImage()
    scale = image.width() / label.width()
    back = image.pixelColor(int((struck.right() + 1) * scale), 1).lightness()
    ink_rows = {
        y
        for y in range(image.height())
        if sum(
            image.pixelColor(x, y).lightness() < back - 30
            for x in range(int(struck.left() * scale), int(struck.right() * scale))
        )
        >= 0.8 * struck.width() * scale
    }
    assert ink_rows  # a line across the whole glyph: struck out
    tip = tooltip_at(label, struck.center().x())
    assert tip == "Struck out: at position 3 the model predicted 3, you forced <eos>. The output holds what you forced."
    app.hub.dirty = False


def test_under_teacher_forcing_a_prediction_that_differs_from_the_expected_token_is_red(qtbot):
    """A source longer than the copy model was trained on: some positions predict another symbol than the one
    expected there. Each such token is drawn red (as a wrong chip), its tooltip naming position and both tokens;
    the others keep the text's colour."""
    app = start_app(qtbot)
    label = app.playground.output_label
    source = app.playground.input_panel.source
    text = "0123456789012345678901234567"
    source.selectAll()
    qtbot.keyClicks(source, text)
    wait_frame(qtbot, app.session)
    tokens = label.text().split()
    expected = [*text, END]
    wrong = [i for i, (got, want) in enumerate(zip(tokens, expected)) if got != want and i < len(text)]
    assert wrong  # this length is beyond what the model was trained on
    rects = label.mark_rects("wrong")
    assert len(rects) == len(wrong)
    image = label.grab().toImage()
    scale = image.width() / label.width()
    for i, rect in zip(wrong, rects):
        x0, _ = split_x(label, i)
        assert rect.left() == x0
        colours = {
            image.pixelColor(int(x * scale), int(y * scale)).name()
            for x in range(rect.left(), rect.right())
            for y in range(rect.top(), rect.bottom())
        }
        assert "#c62828" in colours  # its glyph in the wrong chip's red
        assert f"position {i}: {tokens[i]} where {expected[i]} is expected" in tooltip_at(label, rect.center().x())
    right = split_x(label, 1)[0] - 4  # the first token is right: drawn in the text's colour
    assert darkest(label, 0, right) < 60
    app.hub.dirty = False


def test_a_decoded_token_past_the_expected_end_is_red_as_its_chip_is():
    from visualizer.widgets.playground.prediction_line import prediction_text

    line = prediction_text(
        ("3", "1", "4", "1", END, "7"), ("<bos>", "3", "1", "4", "1", END), stepping=True, expected=("3", "1", END)
    )
    (wrong,) = line.marks  # decoded 3 1 4 1 <eos> against 3 1 <eos>: the chips mark the last three wrong
    assert wrong.kind == "wrong" and [line.text[a:b] for a, b in wrong.spans] == ["4", "1", END]
    assert "position 3: 1 where nothing is expected" in wrong.note

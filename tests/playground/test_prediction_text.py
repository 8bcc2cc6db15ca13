"""Which predictions the Prediction line presents as output while stepping, as pure functions over the tokens: the
decoded ones only; the next token, a prediction past the decoded <eos> or one never decoded at the length limit is
dimmed, each with its own reason."""

from __future__ import annotations

import pytest

from visualizer.widgets.playground.prediction_line import NEXT_HINT, TAIL_HINT, prediction_text

BOS, EOS = "<bos>", "<eos>"


@pytest.mark.parametrize(
    "outputs, inputs, finished, bright, hint, reason",
    [
        (["0"], [BOS], False, "", NEXT_HINT, "position 0 is the next token"),  # nothing decoded yet
        (["0", "1", "2", "3"], [BOS, "0", "1", "2"], False, "0 1 2", NEXT_HINT, "position 3 is the next token"),
        (["0", "1", "2"], [BOS, "0", "9"], False, "0 1", NEXT_HINT, "position 2 is the next token"),  # 9 forced
        (["0", "1", "2"], [BOS, "0", "1"], True, "0 1", TAIL_HINT, "position 2 is never decoded"),  # length limit
        (["<eos>", "5"], [BOS, EOS], True, "<eos>", TAIL_HINT, "ends with <eos> at position 0"),  # <eos> decoded first
        (["0", EOS, "7"], [BOS, "0", EOS], True, "0 <eos>", TAIL_HINT, "ends with <eos> at position 1"),
    ],
)
def test_while_stepping_only_the_decoded_tokens_are_bright(outputs, inputs, finished, bright, hint, reason):
    line = prediction_text(outputs, inputs, stepping=True, finished=finished)
    assert line.text == " ".join(outputs)
    assert line.text[: line.tail_start].strip() == bright
    assert line.hint == hint and reason in line.tail_note


def test_nothing_is_dimmed_without_predictions_or_under_teacher_forcing_with_no_end():
    assert prediction_text([], [], stepping=True).tail_note == ""
    line = prediction_text(["0", "1"], [BOS, "0"], stepping=False)
    assert line.tail_start == len(line.text) and line.tail_note == ""

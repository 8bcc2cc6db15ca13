"""The Prediction line above the grids: the model's argmax at each decoder position, with what lies past the end dimmed.

The decoder predicts at every position it reads, padding included: under teacher forcing "0 1 … 9 <eos> <eos> 6"
holds two predictions made at <pad> positions. The output ends at the first <eos>, so what follows it, and anything
predicted where the decoder reads <pad>, is drawn dimmed, with a short note where the line has room; hovering says
why. While stepping, the decoder reads what was decoded (forced tokens included): the end is the decoded <eos>, and
until it is decoded the last prediction is the next token, dimmed as such. A prediction a forced token replaced is
struck out (the output holds the forced token), and one that differs from the expected output is red, as the
decoder panel's chips mark a wrong token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from PySide6.QtCore import QEvent, QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QHelpEvent, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QLabel, QToolTip, QWidget

from core_model.vocab import EOS, PAD, SPECIALS
from visualizer.widgets.common.stable_label import ElidedLabelSlot

EOS_LABEL, PAD_LABEL = SPECIALS[EOS], SPECIALS[PAD]
TAIL_HINT = "   ← dimmed: not part of the output"  # drawn after the line where it fits; hovering says why
WRONG_RED = "#c62828"  # the decoder panel's "wrong" chip
NEXT_HINT = "   ← next: not decoded yet"  # while stepping, after the prediction Step would decode


@dataclass(frozen=True)
class PredictionText:
    """The line as text, the character where its dimmed tail starts (len(text): nothing dimmed) and why."""

    text: str
    tail_start: int
    tail_note: str  # "" when nothing is dimmed
    hint: str = TAIL_HINT  # drawn after the dimmed part where it fits
    marks: tuple[Marked, ...] = ()  # output predictions drawn apart: overridden by a forced token, or wrong

    @property
    def notes(self) -> str:
        """Every reason something is drawn apart, a line each (for the line's tooltip)."""
        return "".join(f"\n{note}" for note in (*(m.note for m in self.marks), self.tail_note) if note)


@dataclass(frozen=True)
class Marked:
    """Output predictions drawn apart, as character spans of the line, and the sentence that says why."""

    kind: str  # "struck": a forced token replaced them; "wrong": they differ from the expected output
    spans: tuple[tuple[int, int], ...]
    note: str


def output_length(outputs: Sequence[str], inputs: Sequence[str], stepping: bool) -> int:
    """How many leading predictions are output (`inputs`: the decoder's input token at each position).

    Teacher forcing: up to and including the first <eos>, and none made where the decoder reads <pad>. Stepping:
    up to the position that reads the decoded <eos> (the one that decoded it is the last); before <eos> is decoded,
    all but the last, which is the next token (not decoded yet)."""
    if stepping:
        return list(inputs).index(EOS_LABEL) if EOS_LABEL in inputs else max(0, len(outputs) - 1)
    n = list(outputs).index(EOS_LABEL) + 1 if EOS_LABEL in outputs else len(outputs)
    return min(n, list(inputs).index(PAD_LABEL)) if PAD_LABEL in inputs else n


def prediction_text(
    outputs: Sequence[str],
    inputs: Sequence[str],
    stepping: bool = False,
    finished: bool = False,
    forced: Sequence[bool] = (),
    expected: Sequence[str] = (),
) -> PredictionText:
    """The tokens joined by spaces, and where (and why) the part that is not output starts (`finished`: stepping
    has ended, at <eos> or at the length limit); `forced`: per decoded position, whether the user chose the token;
    `expected`: the task's expected output, against which output predictions are marked wrong."""
    text, n = " ".join(outputs), output_length(outputs, inputs, stepping)
    spans = _spans(outputs[:n])  # the output part's tokens, measured once for both marks
    struck = overridden(outputs, inputs, forced, spans)
    marks = tuple(m for m in (struck, mismatched(outputs, expected, spans, struck)) if m.spans)
    if n >= len(outputs):
        return PredictionText(text, len(text), "", TAIL_HINT, marks)
    start = len(" ".join(outputs[:n])) + (1 if n else 0)  # past the space after the last output token
    if stepping and EOS_LABEL not in inputs:
        note, hint = (limit_note(n), TAIL_HINT) if finished else (next_note(n), NEXT_HINT)
        return PredictionText(text, start, note, hint, marks)
    return PredictionText(text, start, tail_note(outputs, inputs, n, stepping), TAIL_HINT, marks)


def _spans(outputs: Sequence[str]) -> list[tuple[int, int]]:  # each token's characters in the line
    starts = accumulate((len(t) + 1 for t in outputs[:-1]), initial=0)
    return [(start, start + len(token)) for start, token in zip(starts, outputs)]


def mismatched(
    outputs: Sequence[str], expected: Sequence[str], output: list[tuple[int, int]], struck: Marked
) -> Marked:
    """Output predictions (`output`) that differ from the expected token there; overridden ones are struck out."""
    spans, said, overridden_spans = [], [], set(struck.spans)
    for i, span in enumerate(output if expected else ()):
        want = expected[i] if i < len(expected) else None  # past the expected output's end: wrong, as a chip is
        if outputs[i] != want and span not in overridden_spans:
            spans.append(span)
            said.append(f"position {i}: {outputs[i]} where {want or 'nothing'} is expected")
    return Marked("wrong", tuple(spans), f"Red: differs from the expected output ({'; '.join(said)}).")


def overridden(outputs: Sequence[str], inputs: Sequence[str], forced: Sequence[bool], output: list) -> Marked:
    """Output predictions (`output`) a forced token replaced (the decoder then read it: inputs[i + 1])."""
    spans, said = [], []
    for i, span in enumerate(output if any(forced) else ()):
        chosen = inputs[i + 1] if i + 1 < len(inputs) else None
        if i < len(forced) and forced[i] and chosen is not None and chosen != outputs[i]:
            spans.append(span)
            said.append(f"at position {i} the model predicted {outputs[i]}, you forced {chosen}")
    return Marked("struck", tuple(spans), f"Struck out: {'; '.join(said)}. The output holds what you forced.")


def limit_note(n: int) -> str:
    """Why the last prediction is dimmed once decoding stopped at the length limit, before any <eos>."""
    return (
        f"Dimmed: the prediction at position {n} is never decoded: decoding stopped at the length limit, so it is "
        "not part of the output."
    )


def next_note(n: int) -> str:
    """Why the last prediction is dimmed while stepping: it is the next token, not decoded yet."""
    return (
        f"Dimmed: the prediction at position {n} is the next token the model would decode (Step decodes it); it is "
        "not decoded yet, so it is not part of the output."
    )


def tail_note(outputs: Sequence[str], inputs: Sequence[str], n: int, stepping: bool) -> str:
    """Why predictions n.. are not output: after the (decoded) <eos>, or made where the decoder reads padding."""
    count = len(outputs) - n
    where = f"position {n} comes" if count == 1 else f"positions {n}–{len(outputs) - 1} come"
    reasons = []
    if stepping:
        reasons.append(f"the decoded output ends with <eos> at position {n - 1}")
    elif EOS_LABEL in outputs[:n]:
        reasons.append(f"the output ends at the first <eos> (position {n - 1})")
    pad = list(inputs).index(PAD_LABEL) if PAD_LABEL in inputs else len(outputs)
    if pad < len(outputs) and not stepping:
        reasons.append(f"from position {pad} on the decoder reads <pad> (padding)")
    return (
        f"Dimmed: the prediction{'s' if count > 1 else ''} at {where} after the end and "
        f"{'are' if count > 1 else 'is'} not part of the output: {'; '.join(reasons)}."
    )


def dimmed(palette: QPalette) -> QColor:
    """Half way from the text colour to the background: plainly dimmer, still readable, in light and dark themes."""
    text, back = palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window)
    return QColor((text.red() + back.red()) // 2, (text.green() + back.green()) // 2, (text.blue() + back.blue()) // 2)


class PredictionLabel(QLabel):
    """A one-line plain-text label that draws its characters from `tail_start` on dimmed; hovering them says why."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tail_start: int | None = None
        self._tail_note = ""
        self._tail_hint = TAIL_HINT
        self._hint: tuple[tuple[str, str], QFont, int] | None = None  # ((label font's key, note), note's font, width)
        self._marks: tuple[Marked, ...] = ()

    def set_tail(self, start: int | None, note: str, hint: str = TAIL_HINT) -> None:
        """Dim the text from character `start` on (None: none), with `note` as the dimmed part's tooltip and `hint`
        drawn after it where it fits."""
        if (start, note, hint) != (self._tail_start, self._tail_note, self._tail_hint):
            self._tail_start, self._tail_note, self._tail_hint = start, note, hint
            self.update()

    def set_marks(self, marks: tuple[Marked, ...]) -> None:
        """Draw these output predictions apart: struck out and dimmed (overridden), or red (wrong)."""
        if marks != self._marks:
            self._marks = marks
            self.update()

    def mark_rects(self, kind: str) -> list[QRect]:
        """Where the predictions marked `kind` are drawn now (those the elided line still shows)."""
        text, area, metrics = self.text(), self.contentsRect(), self.fontMetrics()
        shown = len(text) - 1 if text.endswith("…") else len(text)  # an elided line: the "…" is no prediction
        spans = [span for mark in self._marks if mark.kind == kind for span in mark.spans]
        return [
            QRect(
                area.left() + metrics.horizontalAdvance(text[:a]),
                area.top(),
                metrics.horizontalAdvance(text[a:b]),
                area.height(),
            )
            for a, b in spans
            if b <= shown
        ]

    def tail_note(self) -> str:
        """Why the dimmed part is dimmed (its tooltip; "" when nothing is)."""
        return self._tail_note

    def tail_rect(self) -> QRect | None:
        """Where the dimmed part is drawn now (the hint after it follows it); None when none of it is on screen (or
        the line has none)."""
        text, start = self.text(), self._tail_start
        if start is None or start >= len(text):
            return None
        area, metrics = self.contentsRect(), self.fontMetrics()
        left = area.left() + metrics.horizontalAdvance(text[:start])
        return QRect(left, area.top(), metrics.horizontalAdvance(text[start:]), area.height())

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        tail = self.tail_rect()
        if tail is None:
            super().paintEvent(event)
        else:
            self._paint_with_tail(tail)
        if self._marks:
            self._paint_marks()

    def _paint_marks(self) -> None:
        """Each marked prediction again over its plain drawing: struck out and dimmed, or red."""
        painter = QPainter(self)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        text, back = self.text(), self.palette().color(QPalette.ColorRole.Window)
        for mark in self._marks:
            painter.setPen(dimmed(self.palette()) if mark.kind == "struck" else QColor(WRONG_RED))
            for (start, end), rect in zip(mark.spans, self.mark_rects(mark.kind)):
                painter.fillRect(rect.adjusted(0, 0, 1, 0), back)
                painter.drawText(rect.adjusted(0, 0, 2, 0), flags, text[start:end])
                if mark.kind == "struck":  # a font's strike-out falls on a 3's own middle bar: drawn across, in red
                    y = rect.center().y() - self.fontMetrics().xHeight() // 4
                    painter.fillRect(QRect(rect.left() - 1, y - 1, rect.width() + 3, 2), QColor(WRONG_RED))
        painter.end()

    def _paint_with_tail(self, tail: QRect) -> None:
        text, start = self.text(), self._tail_start
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.drawText(self.contentsRect(), flags, text[:start])
        painter.setPen(dimmed(self.palette()))
        painter.drawText(tail.adjusted(0, 0, 2, 0), flags, text[start:])  # 2 px: the last glyph's overhang
        hint = QRect(tail.right() + 2, tail.top(), self.contentsRect().right() - tail.right() - 2, tail.height())
        font, width = self._hint_font()
        if width <= hint.width():  # a long line keeps its room
            painter.setFont(font)
            painter.drawText(hint, flags, self._tail_hint)
        painter.end()

    def _hint_font(self) -> tuple[QFont, int]:
        """The note's font (the label's, not bold) and its width, measured once per label font and note: a paint per
        frame."""
        key = (self.font().key(), self._tail_hint)
        if self._hint is None or self._hint[0] != key:
            plain = self.font()
            plain.setBold(False)
            self._hint = (key, plain, QFontMetrics(plain).horizontalAdvance(self._tail_hint))
        return self._hint[1], self._hint[2]

    def event(self, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            tail = self.tail_rect()
            if tail is not None and event.pos().x() >= tail.left():
                QToolTip.showText(event.globalPos(), self._tail_note, self, tail)
                return True
            for mark in self._marks:
                for rect in self.mark_rects(mark.kind):
                    if rect.contains(event.pos()):
                        QToolTip.showText(event.globalPos(), mark.note, self, rect)
                        return True
        return super().event(event)


class PredictionSlot(ElidedLabelSlot):
    """The prediction line in its fixed slot: elided at the right edge, right-click copies it whole."""

    label_class = PredictionLabel
    label: PredictionLabel

    def show_prediction(
        self,
        outputs: Sequence[str],
        inputs: Sequence[str],
        stepping: bool,
        finished: bool = False,
        forced: Sequence[bool] = (),
        expected: Sequence[str] = (),
    ) -> PredictionText:
        """Show the predictions at each decoder position, dimmed past the end, struck out where a forced token
        replaced them and red where they differ from `expected`; returns what was shown."""
        line = prediction_text(outputs, inputs, stepping, finished, forced, expected)
        self.label.set_tail(line.tail_start if line.tail_note else None, line.tail_note, line.hint)
        self.label.set_marks(line.marks)
        self.set_text(line.text)
        return line
